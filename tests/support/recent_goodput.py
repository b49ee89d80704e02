"""The recent goodput and slow-step figures (primus/tracking/goodput/recent.py) read back from a real MLflow run of
any backend: each default window's fraction at every log step, in [0, 1], and the whole run's while the run is
shorter than the window; the step time's deviation where measured, the slow steps' seconds a running total."""

from __future__ import annotations

from typing import Any

import pytest

from primus.tracking.goodput.accounting import FRACTION, SLOW
from primus.tracking.goodput.recent import DEVIATION, window_name
from primus.tracking.settings.config import GOODPUT_WINDOWS
from support.readers import mlflow_history


def assert_recent_goodput_in_mlflow(client: Any, run_id: str, steps: list[int], measured: list[int]) -> None:
    """``steps``: the run's log steps; ``measured``: those whose interval's step time was measured."""
    for seconds in GOODPUT_WINDOWS:
        window = dict(mlflow_history(client, run_id, window_name(seconds)))
        assert sorted(window) == steps, (seconds, window)
        assert all(0.0 <= value <= 1.0 for value in window.values()), window
    # a tiny run lies wholly in the longest window (15 minutes), start-up included: its fraction is the whole run's
    whole = dict(mlflow_history(client, run_id, FRACTION))
    assert window == pytest.approx(whole, abs=2e-4), (window, whole)
    deviation = dict(mlflow_history(client, run_id, DEVIATION))
    assert sorted(deviation) == measured and all(value > 0 for value in deviation.values()), deviation
    slow = [value for _, value in mlflow_history(client, run_id, SLOW)]
    assert len(slow) == len(steps) and slow == sorted(slow) and slow[0] >= 0, slow
