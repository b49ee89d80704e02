"""Real Megatron-Bridge trainings for the tests beside this file: tiny_pretrain.py (a user's own script calling
``pretrain()``) on .venv-bridge's interpreter under ``primus-run`` and torchrun, one process, importing this
checkout's ``primus`` (support/this_primus.py). The session's shared ones are fixtures in conftest.py:

* ``tracked``: 4 steps with Bridge's own logger settings turning TensorBoard, W&B (offline), MLflow (the session's
  server) and Comet (offline) on, saving a checkpoint every 2 steps into ``<workdir>/ckpt`` (so its run directory is
  ``ckpt/primus``) with an experiment (``primus-run --config``) asking for the checkpoints' files in MLflow;
* ``resumed``: one more step, loaded from ``tracked``'s last checkpoint, tracked in MLflow and W&B (offline)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from support.launch import EVERY_STEP_EXIT_DEADLINE_S, FinishedRun, run_env, start, tracker_shortfalls, wait_or_kill
from support.this_primus import with_this_primus

REPO = Path(__file__).resolve().parents[3]
BRIDGE_PYTHON = REPO / ".venv-bridge" / "bin" / "python"
SCRIPT = Path(__file__).with_name("tiny_pretrain.py")
ITERATIONS = 4
STEPS = list(range(1, ITERATIONS + 1))  # Bridge's writers count iterations from 1
SAVE_INTERVAL = 2
EXPERIMENT, RUN_NAME, WANDB_PROJECT, COMET_PROJECT = "bridge-e2e", "tiny-bridge", "bridge-e2e", "bridge-e2e"
RESUMED_EXPERIMENT = "bridge-resumed"
TIMEOUT_S = 400.0
CONSOLE_LOSS = re.compile(r"iteration\s+(\d+)/\s*\d+ \|.*?\| lm loss: (\S+) \|")
CONSOLE_VALIDATION = re.compile(r"validation loss at iteration \d+.*?\| lm loss value: (\S+) \|")
# the Primus options Bridge's logger has no key for, from the experiment (every run here checks what each tracker got)
EXPERIMENT_YAML = """modules:
  bridge:
    framework: megatron_bridge
    config: pre_trainer.yaml
    overrides: {recipe: vanilla_gpt_pretrain_config, primus_exit_deadline: %s%s}
"""


@dataclass(frozen=True)
class BridgeRun:
    finished: FinishedRun
    workdir: Path
    run_root: Path  # where its run directory is: <checkpoint.save>/primus, or a fresh one under PRIMUS_OUTPUT_ROOT

    def console_losses(self) -> dict[int, float]:
        return {int(step): float(value) for step, value in CONSOLE_LOSS.findall(self.finished.output)}

    def console_validation_losses(self) -> list[float]:
        return [float(value) for value in CONSOLE_VALIDATION.findall(self.finished.output)]

    def run_dir(self) -> Path:
        [run_json] = self.run_root.rglob("run.json")
        return run_json.parent

    def run_state(self) -> dict:
        """The run directory's run.json: the training and delivery processes' pids, each tracker's run id."""
        return json.loads((self.run_dir() / "run.json").read_text())


def train(workdir: Path, this_primus: Path, env: dict[str, str], run_root: Path, overrides: str = "") -> BridgeRun:
    """tiny_pretrain.py in ``workdir`` with ``env`` (its TINY_* settings), under ``primus-run --config`` with an
    experiment adding ``overrides`` (YAML flow mapping entries after a comma), waited for; every tracker it turns on
    must have got everything."""
    experiment = workdir / "experiment.yaml"
    experiment.write_text(EXPERIMENT_YAML % (EVERY_STEP_EXIT_DEADLINE_S, overrides))
    command = [shutil.which("primus-run") or str(Path(sys.executable).with_name("primus-run")), "--config",
               str(experiment), str(BRIDGE_PYTHON), "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
               "1", str(SCRIPT)]
    started = time.monotonic()
    process = start(command, workdir, workdir / "run.log", with_this_primus(this_primus, {
        "PRIMUS_OUTPUT_ROOT": str(workdir / "primus"), "PYTHONWARNINGS": "ignore", **env}))
    code = wait_or_kill(process, TIMEOUT_S)
    run = BridgeRun(FinishedRun(code, workdir / "run.log", time.monotonic() - started), workdir, run_root)
    assert code == 0, run.finished.explain()
    assert tracker_shortfalls(run.finished.output) == [], run.finished.explain()
    return run


def train_tracked(workdir: Path, this_primus: Path, mlflow_uri: str) -> BridgeRun:
    run = train(workdir, this_primus, {
        "TINY_ITERATIONS": str(ITERATIONS), "TINY_TENSORBOARD_DIR": str(workdir / "tb"),
        "TINY_MLFLOW_EXPERIMENT": EXPERIMENT, "TINY_MLFLOW_RUN_NAME": RUN_NAME, "TINY_MLFLOW_TRACKING_URI": mlflow_uri,
        "TINY_WANDB_PROJECT": WANDB_PROJECT, "TINY_WANDB_EXP_NAME": RUN_NAME, "TINY_WANDB_SAVE_DIR": str(workdir / "wandb"),
        "WANDB_MODE": "offline", "WANDB_DIR": str(workdir / "wandb"), "TINY_MLFLOW_TAGS": "team=bridge,stage=e2e",
        "TINY_COMET_PROJECT": COMET_PROJECT, "TINY_COMET_EXPERIMENT_NAME": RUN_NAME, "TINY_COMET_TAGS": "bridge,e2e",
        "COMET_MODE": "offline", "TINY_SAVE": str(workdir / "ckpt"), "TINY_SAVE_INTERVAL": str(SAVE_INTERVAL),
    }, workdir / "ckpt" / "primus", ", mlflow_upload_checkpoints: true")
    assert sorted(run.console_losses()) == STEPS, run.finished.explain()
    return run


def train_resumed(workdir: Path, this_primus: Path, mlflow_uri: str, checkpoints: Path) -> BridgeRun:
    """One step more than ``checkpoints`` (tracked's folder) holds, loaded from there (nothing saved: its run is a
    fresh one, not tracked's)."""
    run = train(workdir, this_primus, {
        "TINY_ITERATIONS": str(ITERATIONS + 1), "TINY_LOAD": str(checkpoints),
        "TINY_MLFLOW_EXPERIMENT": RESUMED_EXPERIMENT, "TINY_MLFLOW_RUN_NAME": "resumed",
        "TINY_MLFLOW_TRACKING_URI": mlflow_uri,
        "TINY_WANDB_PROJECT": RESUMED_EXPERIMENT, "TINY_WANDB_SAVE_DIR": str(workdir / "wandb"),
        "WANDB_MODE": "offline", "WANDB_DIR": str(workdir / "wandb"),
    }, workdir / "primus")
    assert sorted(run.console_losses()) == [ITERATIONS + 1], run.finished.explain()
    return run


# Bridge's own W&B checkpoint hook, as Bridge calls it after each save with its W&B writer (the wandb module, once
# wandb.init ran): argv is the save folder, the W&B folder, then each checkpoint's folder and iteration
_BRIDGES_OWN_HOOK = """
import sys
import wandb
from megatron.bridge.training.utils import wandb_utils
save_dir, wandb_dir, saves = sys.argv[1], sys.argv[2], sys.argv[3:]
wandb.init(project=%r, dir=wandb_dir, mode="offline")
for path, iteration in zip(saves[::2], saves[1::2]):
    wandb_utils.on_save_checkpoint_success(path, save_dir, int(iteration), wandb)
wandb.finish()
"""


def bridges_own_artifacts(checkpoints: Path, folder: Path) -> Path:
    """What Bridge's own W&B hook logs for each checkpoint in ``checkpoints`` (tracked's), run without Primus on a
    copy of them in ``folder`` under the same name (the artifact's): the copy, its W&B run file under ``wandb``."""
    copy = folder / checkpoints.name
    shutil.copytree(checkpoints, copy, ignore=shutil.ignore_patterns("primus", "latest_wandb_artifact_path.txt"))
    saves = [arg for path in sorted(copy.glob("iter_*")) for arg in (str(path), str(int(path.name.split("_")[1])))]
    script = _BRIDGES_OWN_HOOK % WANDB_PROJECT
    finished = subprocess.run([str(BRIDGE_PYTHON), "-c", script, str(copy), str(folder / "wandb"), *saves],
                              env=run_env({"PYTHONWARNINGS": "ignore"}), capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return copy
