"""Tiny real trainings for the reliability suite, started in the background so a test can act on them
mid-run: wait until a rank reaches a gated step, kill or hang the MLflow server, send a signal, open
the gate, and read back what every tracker received. One ``Backend`` per upstream trainer says how its
command line turns the trackers and checkpoints on; the fault scenarios themselves are shared."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TRAINER = Path(__file__).with_name("reliability_trainer.py")
sys.path.insert(0, str(REPO / "tests" / "backends" / "torchtitan"))
from titan_runs import CPU_CONFIG, TitanRun  # noqa: E402


def _megatron_launch_module() -> Any:
    """tests/backends/megatron/conftest.py holds the tiny GPT and the run reader; loaded under its own name."""
    spec = importlib.util.spec_from_file_location("megatron_launch", REPO / "tests/backends/megatron/conftest.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


_MEGATRON = _megatron_launch_module()
MegatronRun = _MEGATRON.MegatronRun

FAKE_WANDB_KEY = "0123456789abcdef0123456789abcdef01234567"  # well-formed (40 hex), valid nowhere
_NOT_INHERITED = (*_MEGATRON._NOT_INHERITED, "PRIMUS_CONFIG", "PRIMUS_CONFIG_OVERRIDES", "PRIMUS_RUN_DIR")


@dataclass(frozen=True)
class Backend:
    name: str
    loss: str  # a metric every logged step carries
    exit_deadline_flag: str | None  # the argument that sets the exit deadline, where the backend has one

    def args(self, steps: int, experiment: str, *, tensorboard: bool = True, mlflow: bool = True,
             wandb: bool = False) -> list[str]:
        if self.name == "megatron":
            return [*_MEGATRON.TINY_GPT_ARGS, "--train-iters", str(steps), "--disable-tensorboard",
                    str(not tensorboard).lower(), "--disable-mlflow", str(not mlflow).lower(), "--disable-wandb",
                    str(not wandb).lower(), "--mlflow-experiment-name", experiment, "--wandb-project", experiment]
        on = [f"--metrics.enable-{t}" for t, want in (("tensorboard", tensorboard), ("mlflow", mlflow),
                                                      ("wandb", wandb)) if want]
        return [*CPU_CONFIG, "--training.steps", str(steps), "--dump-folder", "dump", "--metrics.log-freq", "1",
                *on, "--metrics.mlflow-experiment-name", experiment]

    def checkpoint(self, every: int, load: bool) -> list[str]:
        if self.name == "megatron":
            return ["--save", "ckpt", "--save-interval", str(every), *(["--load", "ckpt"] if load else [])]
        return ["--checkpoint.enable", "--checkpoint.interval", str(every)]  # loads the latest one by itself

    def exit_deadline(self, seconds: float) -> list[str]:
        return [self.exit_deadline_flag, str(seconds)] if self.exit_deadline_flag else []

    def step_seconds(self, training: Training) -> dict[int, float]:
        """Wall time of each training step as upstream measured it (its printed line, its own metric)."""
        if self.name == "megatron":
            return {i: ms / 1e3 for i, ms in enumerate(training.result().iteration_ms(), start=1)}
        return {r["s"]: r["d"]["time_metrics/end_to_end(s)"] for r in journal(training.run_dir())
                if r["k"] == "m" and "time_metrics/end_to_end(s)" in r["d"]}


MEGATRON = Backend("megatron", "lm loss", "--primus-exit-deadline")
TORCHTITAN = Backend("torchtitan", "loss_metrics/global_avg_loss", None)  # exit deadline: the core's 30 s


class Training:
    """One training started in ``workdir`` (output in <name>.log), not waited for. A restart is a second
    Training in the same ``workdir`` under another name."""

    def __init__(self, backend: Backend, workdir: Path, args: list[str], *, name: str = "run", nproc: int = 1,
                 env: dict[str, str] | None = None, gates: tuple[int, ...] = (), fail_at: int | None = None,
                 count_collectives: bool = False, assets: Path | None = None):
        self.backend = backend
        self.workdir = Path(workdir)
        self.gate_dir = self.workdir / f"gates-{name}"
        self.gate_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.workdir / f"{name}.log"
        self.nproc = nproc
        run_env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
        run_env.update(OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1",
                       HF_DATASETS_OFFLINE="1", RELIABILITY_GATE_DIR=str(self.gate_dir),
                       RELIABILITY_GATES=",".join(map(str, gates)), **(env or {}))
        if fail_at is not None:
            run_env["RELIABILITY_FAIL_AT"] = str(fail_at)
        if count_collectives:
            run_env["RELIABILITY_COLLECTIVES"] = str(self.workdir / f"collectives-{name}")
        if assets is not None:
            from primus.backends.torchtitan.assets import ASSETS_ENV

            run_env[ASSETS_ENV] = str(assets)
        launcher = [sys.executable] if nproc == 1 else [
            sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
        self.name = name
        self.started = time.monotonic()
        self.exited: float | None = None
        self.exited_at: float | None = None  # wall-clock time, to compare with the journal's timestamps
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen([*launcher, str(TRAINER), backend.name, *args], cwd=self.workdir,
                                            env=run_env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        self._watcher = threading.Thread(target=self._watch, name=f"watch-{name}", daemon=True)
        self._watcher.start()

    # -- acting on it mid-run ------------------------------------------------------------------
    def wait_at(self, step: int, timeout: float = 300) -> None:
        """Until every rank waits before ``step`` (steps before it are trained and logged)."""
        deadline = time.monotonic() + timeout
        while len(list(self.gate_dir.glob(f"at-{step}-rank*"))) < self.nproc:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"never reached step {step}: {self.result().explain()}")
            time.sleep(0.05)

    def go(self, step: int) -> None:
        (self.gate_dir / f"go-{step}").touch()

    def signal(self, signum: int) -> None:
        """To the launched process: the trainer, or torchrun (which forwards it to its workers)."""
        self.process.send_signal(signum)

    def wait(self, timeout: float = 300) -> Any:
        """Until the job ended: the launched process and every process of its group (torchrun may exit
        before the workers it signalled)."""
        self._watcher.join(timeout)
        if self._watcher.is_alive():
            os.killpg(self.process.pid, signal.SIGKILL)
            self._watcher.join()
            raise AssertionError(f"timed out after {timeout} s: {self.result().explain()}")
        return self.result()

    def _watch(self) -> None:
        """Notes when the job ended, whenever a test gets to look."""
        self.process.wait()
        while True:
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        self.exited, self.exited_at = time.monotonic(), time.time()

    def result(self) -> Any:
        code = self.process.poll()
        seconds = (self.exited or time.monotonic()) - self.started
        if self.backend.name == "megatron":
            return MegatronRun(code, self.log_path, seconds)
        return TitanRun(code, self.workdir / "dump", self.log_path, seconds)

    # -- what it left ----------------------------------------------------------------------------
    def run_dir(self) -> Path:
        """The tracked run's directory (the writer rank's): the one holding journal.jsonl."""
        [journal] = self.workdir.rglob("journal.jsonl")
        return journal.parent

    def collectives(self) -> dict[str, dict[str, int]]:
        """{rank file: {"<thread>:<collective>": calls}} for a run started with count_collectives."""
        return {p.name: json.loads(p.read_text()) for p in sorted(self.workdir.glob(f"collectives-{self.name}.rank*"))}


def journal(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]


def journal_steps(run_dir: Path, key: str) -> list[int]:
    """Steps at which ``key`` was journaled, in journal order (every process that wrote to the run)."""
    return [r["s"] for r in journal(run_dir) if r["k"] == "m" and key in r["d"]]


def end_events(run_dir: Path) -> list[dict[str, Any]]:
    return [{**r["d"], "t": r["t"]} for r in journal(run_dir) if r["k"] == "e" and r["d"]["event"] == "end"]


def mlflow_run_id(run_dir: Path) -> str:
    return json.loads((run_dir / "run.json").read_text())["mlflow"]["run_id"]


def mlflow_key_of(name: str) -> str:
    from primus.tracking.names import mlflow_key

    return mlflow_key(name)
