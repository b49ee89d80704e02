"""The config a tracked MetricLogger sees: upstream's, with its own TensorBoard and W&B writers off."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from primus.backends.maxtext.logger_config import UpstreamWritersOff


def test_only_upstreams_writers_are_off_and_the_view_is_read_only():
    config = SimpleNamespace(enable_tensorboard=True, enable_wandb=True, log_period=7, get_keys=lambda: {"a": 1})
    view = UpstreamWritersOff(config)
    assert (view.enable_tensorboard, view.enable_wandb, view.log_period, view.get_keys()) == (False, False, 7,
                                                                                              {"a": 1})
    with pytest.raises(ValueError, match="read-only"):
        view.log_period = 1
    assert config.enable_tensorboard is True  # training keeps the real config
