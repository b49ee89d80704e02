"""A tiny "training" process for the lifecycle tests: starts a tracked run with exit handlers,
logs five steps, then ends the way argv[3] says."""

import sys
import time
from pathlib import Path

from primus.tracking import MlflowConfig, TrackingConfig, start_run

run = start_run(TrackingConfig(run_dir=Path(sys.argv[1]), experiment_name=sys.argv[2], mlflow=MlflowConfig(),
                               exit_deadline_s=180))
run.install_exit_handlers()
for step in range(5):
    run.log(step, {"loss": float(step)})
assert run.flush(180), run.stats()
ending = sys.argv[3]
if ending == "sys.exit(0)":
    sys.exit(0)
if ending == "sys.exit(3)":
    sys.exit(3)
if ending == "exception":
    raise RuntimeError("boom in training")
if ending == "SIGTERM":
    print("ready", flush=True)
    time.sleep(120)
