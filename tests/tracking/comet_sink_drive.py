"""Run on .venv-bridge (the environment with comet_ml): a Comet sink fed a fake run's records, then closed.
``python comet_sink_drive.py RUN_DIR offline|online``; test_comet_sink.py reads the archive back (offline), or the
sink's refusal (online without an API key: exit 3, its message on stdout)."""

from __future__ import annotations

import sys
from pathlib import Path

from primus.tracking.journal.records import METRICS, TEXT, Record
from primus.tracking.journal.run_state import RunState
from primus.tracking.settings.config import CometConfig, TrackingConfig
from primus.tracking.sinks.sink import SinkUnavailable
from primus.tracking.tags.meta import RunMeta
from primus.tracking.trackers.registry import build_sinks, sink_names

STEPS = {1: 2.5, 2: 2.25, 3: 2.0}


def main(run_dir: Path, mode: str) -> int:
    comet = CometConfig(project="p", name="cometed", tags=("a", "b"), offline=mode == "offline")
    cfg = TrackingConfig(run_dir=run_dir, run_name="tiny", comet=comet).resolve({})
    records = [Record(METRICS, step, 0, {"lm loss": loss, "perf/mfu": 0.5}, end=step) for step, loss in STEPS.items()]
    records.append(Record(TEXT, 3, 0, {"tag": "note", "text": "hello"}, end=4))
    meta = RunMeta(params={"lr": 0.1}, tags={"team": "x"}, run_name="tiny", experiment_name="e")
    [sink] = build_sinks(sink_names(cfg), cfg, meta, RunState(run_dir))
    try:
        print("key", sink.open())
    except SinkUnavailable as refused:
        print(refused)
        return 3
    sink.write(records)
    sink.close("FINISHED", True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2]))
