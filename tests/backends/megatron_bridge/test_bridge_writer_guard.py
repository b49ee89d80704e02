"""Bridge's writer properties (``GlobalState.tensorboard_logger``, ``wandb_logger``, ``mlflow_logger``,
``comet_logger``) are replaced
by properties, which the handle's guard does not wrap: the patch guards them itself. A failure of our writer turns
the patch off with one loud message and gives Bridge its own writers back, so its training goes on, tracked by
Bridge; Bridge's own errors propagate unchanged. On stand-ins for ``megatron.bridge.training.state``; the real
module is patched by every Bridge training test."""

from __future__ import annotations

import dataclasses
import logging
import types

import pytest

from primus.backends.megatron_bridge.session import TRACKING
from primus.patches import REGISTRY, PatchContext
from primus.patches.catalog import load_all
from primus.patches.handle import PatchHandle

PATCH = "megatron_bridge.tracking.writers"


@dataclasses.dataclass
class TrainState:
    step: int = 0
    consumed_train_samples: int = 0
    floating_point_operations_so_far: int = 0


def state_module(train_state=TrainState):
    class GlobalState:
        """Bridge's: each property makes its writer on first use (here: names it)."""

        asked: list[str] = []

        @property
        def tensorboard_logger(self):
            self.asked.append("tensorboard")
            return "bridge's SummaryWriter"

        @property
        def wandb_logger(self):
            self.asked.append("wandb")
            return "bridge's wandb"

        @property
        def mlflow_logger(self):
            raise ValueError("Please specify the mlflow_run_name for MLFlow logging!")  # Bridge's own error

        @property
        def comet_logger(self):
            self.asked.append("comet")
            return "bridge's comet Experiment"

    return types.SimpleNamespace(
        GlobalState=GlobalState, TrainState=train_state, get_rank_safe=lambda: 0, get_world_size_safe=lambda: 1
    )


@pytest.fixture
def installed():
    """(module, handle, failures): the patch installed on a stand-in, undone after the test."""
    load_all()
    [patch] = [p for p in REGISTRY.patches() if p.id == PATCH]
    failures: list[BaseException] = []
    module = state_module()
    handle = PatchHandle(patch, PatchContext(), lambda handle, error: failures.append(error))
    patch.install(module, handle)
    yield module, handle, failures
    handle.undo()


def test_while_ours_works_bridge_gets_our_writer_and_no_wandb_mlflow_or_comet_of_its_own(installed, monkeypatch):
    module, handle, failures = installed
    monkeypatch.setattr(TRACKING, "writer_for", lambda state, rank, world_size: "our writer")
    state = module.GlobalState()
    writers = (state.tensorboard_logger, state.wandb_logger, state.mlflow_logger, state.comet_logger)
    assert writers == ("our writer", None, None, None)
    assert handle.enabled and not failures and module.GlobalState.asked == []


def test_a_failure_of_ours_hands_bridge_its_own_writers_back_with_one_loud_message(installed, monkeypatch, caplog):
    module, handle, failures = installed
    broken = RuntimeError("plan exploded")

    def writer_for(state, rank, world_size):
        raise broken

    monkeypatch.setattr(TRACKING, "writer_for", writer_for)
    monkeypatch.setattr(TRACKING, "writer", "our writer")
    state = module.GlobalState()
    with caplog.at_level(logging.WARNING):
        assert state.tensorboard_logger == "bridge's SummaryWriter"  # the same call falls back, training goes on
        assert state.wandb_logger == "bridge's wandb"  # and Bridge writes W&B itself from now on
        with pytest.raises(ValueError, match="mlflow_run_name") as raised:
            state.mlflow_logger  # noqa: B018 - Bridge's own error, unchanged
        assert state.tensorboard_logger == "bridge's SummaryWriter"
        assert state.comet_logger == "bridge's comet Experiment"
    assert raised.value.__context__ is None  # nothing of ours chained onto Bridge's error
    assert failures == [broken] and not handle.enabled
    assert TRACKING.writer is None  # the steps Bridge logs no longer reach our run
    loud = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(loud) == 1 and "Bridge's own writers take over" in loud[0].getMessage()
    assert module.GlobalState.asked == ["tensorboard", "wandb", "tensorboard", "comet"]


def test_a_bridge_whose_train_state_lost_a_counter_fails_the_install_naming_it():
    @dataclasses.dataclass
    class Renamed:
        step: int = 0
        consumed_train_samples: int = 0
        flops_so_far: int = 0

    load_all()
    [patch] = [p for p in REGISTRY.patches() if p.id == PATCH]
    handle = PatchHandle(patch, PatchContext())
    with pytest.raises(AttributeError, match="floating_point_operations_so_far"):
        patch.install(state_module(Renamed), handle)
    handle.undo()
