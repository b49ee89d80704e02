"""Tiny real trainings for the reliability suite, started in the background so a test can act on them
mid-run: wait until a rank reaches a gated step, kill or hang the MLflow server, send a signal, open
the gate, and read back what every tracker received. One ``Backend`` per upstream trainer says how its
command line turns the trackers and checkpoints on; the fault scenarios themselves are shared."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.journal_files import journal_lines, run_dirs_under
from support.launch import start
from support.readers import mlflow_history, read_tb_scalars

from primus.launch.job import interpreter

REPO = Path(__file__).resolve().parents[2]
TRAINER = Path(__file__).with_name("reliability_trainer.py")
sys.path[:0] = [str(REPO / "tests" / "backends" / name) for name in ("megatron", "torchtitan", "maxtext")]
from maxtext_runs import MAXTEXT_ENV, MaxTextRun, tiny_cpu_args  # noqa: E402
from megatron_runs import TINY_GPT_ARGS, MegatronRun  # noqa: E402
from titan_runs import CPU_CONFIG, TitanRun  # noqa: E402

FAKE_WANDB_KEY = "0123456789abcdef0123456789abcdef01234567"  # well-formed (40 hex), valid nowhere


@dataclass(frozen=True)
class Backend:
    name: str
    loss: str  # a metric every logged step carries
    exit_deadline_flag: str | None  # the argument that sets the exit deadline, where the backend has one
    first_step: int = 1  # the number upstream gives its first training step
    write_lag: int = 0  # steps trained before upstream writes a step's metrics (MaxText writes step n during n+1)

    def steps(self, count: int) -> list[int]:
        """The numbers of the first ``count`` training steps."""
        return list(range(self.first_step, self.first_step + count))

    def logged_before(self, gate: int) -> list[int]:
        """The steps upstream has written the metrics of while every rank waits at the gate before ``gate``."""
        return list(range(self.first_step, gate - self.write_lag))

    def args(self, steps: int, experiment: str, *, tensorboard: bool = True, mlflow: bool = True,
             wandb: bool = False) -> list[str]:
        if self.name == "maxtext":
            on = {"tensorboard": tensorboard, "mlflow": mlflow, "wandb": wandb}
            return [*tiny_cpu_args(primus_keys=True), f"steps={steps}", *(f"enable_{t}={str(want).lower()}"
                    for t, want in on.items()), f"mlflow_experiment_name={experiment}",
                    f"wandb_project_name={experiment}", "run_name=run"]
        if self.name == "megatron":
            return [*TINY_GPT_ARGS, "--train-iters", str(steps), "--disable-tensorboard",
                    str(not tensorboard).lower(), "--disable-mlflow", str(not mlflow).lower(), "--disable-wandb",
                    str(not wandb).lower(), "--mlflow-experiment-name", experiment, "--wandb-project", experiment]
        on = [f"--metrics.enable-{t}" for t, want in (("tensorboard", tensorboard), ("mlflow", mlflow),
                                                      ("wandb", wandb)) if want]
        return [*CPU_CONFIG, "--training.steps", str(steps), "--dump-folder", "dump", "--metrics.log-freq", "1",
                *on, "--metrics.mlflow-experiment-name", experiment]

    def placed(self, workdir: Path) -> list[str]:
        """Where upstream writes its output, when it is not the working directory: MaxText's checkpointer
        takes absolute paths only."""
        return [f"base_output_directory={workdir / 'out'}"] if self.name == "maxtext" else []

    def checkpoint(self, every: int, load: bool) -> list[str]:
        if self.name == "maxtext":
            return ["enable_checkpointing=true", f"checkpoint_period={every}"]  # loads the latest one by itself
        if self.name == "megatron":
            return ["--save", "ckpt", "--save-interval", str(every), *(["--load", "ckpt"] if load else [])]
        return ["--checkpoint.enable", "--checkpoint.interval", str(every)]  # loads the latest one by itself

    def exit_deadline(self, seconds: float) -> list[str]:
        return [self.exit_deadline_flag, str(seconds)] if self.exit_deadline_flag else []

    def step_seconds(self, training: Training) -> dict[int, float]:
        """Wall time of each training step as upstream measured it (its printed line, its own metric)."""
        if self.name == "megatron":
            return {i: ms / 1e3 for i, ms in enumerate(training.result().iteration_ms(), start=1)}
        key = "perf/step_time_seconds" if self.name == "maxtext" else "time_metrics/end_to_end(s)"
        return {r["s"]: r["d"][key] for r in journal(training.run_dir()) if r["k"] == "m" and key in r["d"]}


MEGATRON = Backend("megatron", "lm loss", "--primus-exit-deadline")
TORCHTITAN = Backend("torchtitan", "loss_metrics/global_avg_loss", None)  # exit deadline: the core's 30 s
MAXTEXT = Backend("maxtext", "learning/loss", None, first_step=0, write_lag=1)


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
        run_env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "RELIABILITY_GATE_DIR": str(self.gate_dir),
                   "RELIABILITY_GATES": ",".join(map(str, gates)), **(MAXTEXT_ENV if backend.name == "maxtext" else {}),
                   **(env or {})}
        if fail_at is not None:
            run_env["RELIABILITY_FAIL_AT"] = str(fail_at)
        if count_collectives:
            run_env["RELIABILITY_COLLECTIVES"] = str(self.workdir / f"collectives-{name}")
        if assets is not None:
            from primus.backends.torchtitan.assets import ASSETS_ENV

            run_env[ASSETS_ENV] = str(assets)
        launcher = [interpreter(backend.name)] if nproc == 1 else [
            sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
        self.name = name
        self.started = time.monotonic()
        self.exited: float | None = None
        self.exited_at: float | None = None  # wall-clock time, to compare with the journal's timestamps
        self.process = start([*launcher, str(TRAINER), backend.name, *args, *backend.placed(self.workdir)],
                             self.workdir, self.log_path, run_env)
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
        if self.backend.name == "maxtext":
            return MaxTextRun(code, self.workdir, seconds, log_name=self.log_path.name)
        return TitanRun(code, self.log_path, seconds, dump=self.workdir / "dump")

    # -- what it left ----------------------------------------------------------------------------
    def run_dir(self) -> Path:
        """The tracked run's directory (the writer rank's): the one holding the journal."""
        [run_dir] = run_dirs_under(self.workdir)
        return run_dir

    def collectives(self) -> dict[str, dict[str, int]]:
        """{rank file: {"<thread>:<collective>": calls}} for a run started with count_collectives."""
        return {p.name: json.loads(p.read_text()) for p in sorted(self.workdir.glob(f"collectives-{self.name}.rank*"))}


def journal(run_dir: Path) -> list[dict[str, Any]]:
    return journal_lines(run_dir)


def journal_steps(run_dir: Path, key: str) -> list[int]:
    """Steps at which ``key`` was journaled, in journal order (every process that wrote to the run)."""
    return [r["s"] for r in journal(run_dir) if r["k"] == "m" and key in r["d"]]


def end_events(run_dir: Path) -> list[dict[str, Any]]:
    return [{**r["d"], "t": r["t"]} for r in journal(run_dir) if r["k"] == "e" and r["d"]["event"] == "end"]


def mlflow_run_id(run_dir: Path) -> str:
    return json.loads((run_dir / "run.json").read_text())["mlflow"]["run_id"]


def mlflow_steps(client, run_id: str, backend: Backend) -> list[int]:
    """The steps the MLflow run holds the backend's loss at, in MLflow's order (a duplicate shows twice)."""
    from primus.tracking.measure.names import mlflow_key

    return [s for s, _ in mlflow_history(client, run_id, mlflow_key(backend.loss))]


def tb_steps(root: Path, backend: Backend) -> list[int]:
    """The steps of the backend's loss in every TensorBoard event file under ``root``, sorted."""
    logdirs = {p.parent for p in root.rglob("events.out.tfevents.*")}
    return sorted(s for d in logdirs for s, _ in read_tb_scalars(d).get(backend.loss, []))


def delivered(client, training: Training, backend: Backend, expected: list[int], timeout: float = 180) -> str:
    """Wait (the training waits at a gate) until the MLflow run holds exactly the ``expected`` steps; its run id."""
    from mlflow.exceptions import MlflowException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            run_id = mlflow_run_id(training.run_dir())
            if mlflow_steps(client, run_id, backend) == expected:
                return run_id
        except (KeyError, ValueError, OSError, MlflowException):  # no run yet, or the server still starting
            pass
        time.sleep(0.2)
    raise AssertionError(f"MLflow never received steps {expected}: {training.result().explain()}")
