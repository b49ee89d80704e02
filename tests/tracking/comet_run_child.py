"""Run on .venv-bridge (the environment with comet_ml): one process of a tracked run with Comet offline, its sinks
on threads of this process. ``python comet_run_child.py RUN_DIR FIRST LAST finish|kill`` logs steps FIRST..LAST, then
finishes the run, or is SIGKILLed (as a whole job is, with its delivery)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from primus.tracking import CometConfig, TrackingConfig, start_run


def main(run_dir: Path, first: int, last: int, end: str) -> None:
    comet = CometConfig(project="p", name="synced", tags=("a",), offline=True)
    run = start_run(TrackingConfig(run_dir=run_dir, comet=comet, params={"lr": 0.1}, delivery="thread"))
    for step in range(first, last + 1):
        run.log(step, {"lm loss": step / 4})
    if end == "finish":
        run.finish()
        return
    assert run.flush(60, sinks=())  # every step journaled (no sink waited for)
    # Comet has none of them, however far its worker got: only end() writes an archive, and only then does the
    # Comet cursor move (Durability.ON_CLOSE)
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
