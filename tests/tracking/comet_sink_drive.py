"""Run on .venv-bridge (the environment with comet_ml): a Comet sink, offline, fed a fake run's records, then closed.
``python comet_sink_drive.py RUN_DIR``; test_comet_sink.py reads the archive back."""

from __future__ import annotations

import sys
from pathlib import Path

from primus.tracking.config import CometConfig, TrackingConfig
from primus.tracking.journal import METRICS, TEXT, Record
from primus.tracking.meta import RunMeta
from primus.tracking.sink_registry import build_sinks, sink_names
from primus.tracking.state import RunState

STEPS = {1: 2.5, 2: 2.25, 3: 2.0}


def main(run_dir: Path) -> None:
    cfg = TrackingConfig(
        run_dir=run_dir, run_name="tiny", comet=CometConfig(project="p", name="cometed", tags=("a", "b"), offline=True)
    ).resolve({})
    records = [Record(METRICS, step, 0, {"lm loss": loss, "perf/mfu": 0.5}, end=step) for step, loss in STEPS.items()]
    records.append(Record(TEXT, 3, 0, {"tag": "note", "text": "hello"}, end=4))
    [sink] = build_sinks(
        sink_names(cfg),
        cfg,
        RunMeta(params={"lr": 0.1}, tags={"team": "x"}, run_name="tiny", experiment_name="e"),
        RunState(run_dir),
    )
    print("key", sink.open())
    sink.write(records)
    sink.close("FINISHED", True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
