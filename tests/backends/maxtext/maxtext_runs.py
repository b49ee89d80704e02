"""What the MaxText tests share: the tiny CPU experiment, the metric names upstream computes, and a finished
run's output (the fixtures that start runs are in conftest.py).

MaxText and JAX live in their own environment (.venv-maxtext): every training runs in a subprocess on that
interpreter, and this process (the main .venv) reads back what the trackers received."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from support.launch import EVERY_STEP_EXIT_DEADLINE_S, tracker_shortfalls
from support.readers import mlflow_history, read_tb_scalars, read_wandb_history

from primus.backends.maxtext.upstream_argv import with_experiment
from primus.config import load_experiment
from primus.tracking.goodput.accounting import DEVIATION, EVERY_LOG_STEP
from primus.tracking.measure.names import is_valid_mlflow_key
from primus.tracking.measure.progress import AT_EVERY_LOG_STEP, FROM_THE_SECOND_LOG_STEP

REPO = Path(__file__).resolve().parents[3]
TINY_CPU = REPO / "configs" / "maxtext" / "tiny_cpu.yaml"
UPSTREAM_TRAIN = ("-m", "maxtext.trainers.pre_train.train")  # the user's upstream command
MAXTEXT_ENV = {"JAX_PLATFORMS": "cpu"}  # what a MaxText run needs beyond support.launch's environment
STEPS = 6
EVAL_INTERVAL = 3  # an eval (1 batch) after train steps 0 and 3
EVAL_AT = [0, 3]
TRAIN_STEPS = list(range(STEPS))
SCHEDULE = [f"steps={STEPS}", f"eval_interval={EVAL_INTERVAL}", "eval_steps=1"]
WANDB_PROJECT = "maxtext-e2e"
# Every scalar upstream MaxText 0.2.5 computes for a train step of the tiny dense model (what its own
# TensorBoard writer receives), and the summary of an eval run.
TRAIN_KEYS = frozenset({
    "learning/loss", "learning/lm_loss", "learning/perplexity", "learning/grad_norm", "learning/raw_grad_norm",
    "learning/param_norm", "learning/total_weights", "learning/z_loss", "learning/moe_lb_loss", "learning/mtp_loss",
    "learning/indexer_loss", "learning/current_learning_rate", "perf/step_time_seconds", "perf/per_device_tflops",
    "perf/per_device_tflops_per_sec", "perf/per_device_tokens", "perf/per_device_tokens_per_sec",
})
EVAL_KEYS = frozenset({
    "eval/total_loss", "eval/total_weights", "eval/moe_lb_loss", "eval/indexer_loss", "eval/mtp_loss",
    "eval/mtp_acceptance_rate_percent", "eval/z_loss", "eval/avg_loss", "eval/avg_perplexity", "eval/avg_moe_lb_loss",
    "eval/avg_indexer_loss", "eval/avg_mtp_loss", "eval/avg_mtp_acceptance_rate_percent", "eval/avg_z_loss",
})
PERF_KEYS = frozenset({"perf/tokens_per_sec", "perf/tokens_per_sec_per_gpu", "perf/tflops_per_gpu",
                       "perf/iteration_time_ms", "mem/host_rss_gib", "mem/host_peak_rss_gib", "sys/cpu_util_pct",
                       "sys/host_mem_used_pct"})  # no perf/mfu: a CPU has no datasheet peak
_RUN_DIR_LINE = re.compile(r"^\[primus\] run directory: (.+)$", re.MULTILINE)
_UPSTREAM_STEP_LINE = re.compile(r"completed step: (\d+),")


def every_tracker_args(name: str) -> list[str]:
    """MaxText and Primus keys that turn every tracker on (TensorBoard is on in the tiny experiment), with the
    perf set, MLflow experiment and W&B run named ``name``, waiting at exit until each has everything."""
    return ["enable_wandb=true", "mlflow_upload_performance_metrics=true", f"mlflow_experiment_name={name}",
            f"wandb_project_name={WANDB_PROJECT}", f"wandb_run_name={name}",
            f"primus_exit_deadline={EVERY_STEP_EXIT_DEADLINE_S}"]


def tiny_cpu_args(*, primus_keys: bool) -> list[str]:
    """The tiny CPU experiment as MaxText's own ``key=value`` arguments (Primus's keys left out for an
    unpatched upstream run, which would refuse them)."""
    module = load_experiment(TINY_CPU).modules["pre_trainer"]
    params = {k: v for k, v in module.params.items() if primus_keys or k not in module.primus_keys}
    return with_experiment([], params, None)


@dataclass(frozen=True)
class MaxTextRun:
    returncode: int
    workdir: Path  # the run's own folder: its output, metrics file, W&B directory and log
    seconds: float
    log_name: str = "run.log"  # in workdir

    @property
    def log_path(self) -> Path:
        return self.workdir / self.log_name

    @property
    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    @property
    def wandb_dir(self) -> Path:
        return self.workdir / "wandb"

    def run_dir(self) -> Path:
        """The run directory `primus train` printed."""
        found = _RUN_DIR_LINE.search(self.output)
        assert found, self.explain()
        return Path(found.group(1))

    def explain(self) -> str:
        tail = "\n".join(line[:400] for line in self.output.splitlines()[-40:])
        return f"exit code {self.returncode} after {self.seconds:.1f} s; log {self.log_path}; last lines:\n{tail}"

    def assert_trained(self) -> None:
        assert self.returncode == 0, self.explain()
        steps = [int(s) for s in _UPSTREAM_STEP_LINE.findall(self.output)]
        assert steps == list(range(STEPS)), self.explain()

    def tb_dirs(self) -> list[Path]:
        """Folders holding TensorBoard event files anywhere under the run's folder (or its run directory)."""
        roots = {self.workdir, *([self.run_dir()] if _RUN_DIR_LINE.search(self.output) else [])}
        return sorted({p.parent for root in roots for p in root.rglob("events.out.tfevents.*")})


def only_run(client, experiment: str):
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert len(runs) == 1, [r.info.run_name for r in runs]
    return runs[0]


def judged_steps() -> list[int]:
    """The train steps whose interval's step time is judged (perf/step_time_deviation): not step 0's (start-up), nor
    those an evaluation takes part of: the one upstream records at step E begins while step E - 1's metrics are
    still buffered, and lasts until E's log (E - 1 and E)."""
    return [s for s in TRAIN_STEPS[1:] if s not in EVAL_AT and s + 1 not in EVAL_AT]


def assert_every_step(history: dict[str, list[int]], keys) -> None:
    """``history``: {name: [steps]}; train keys, Primus's progress and goodput figures at every train step (the
    progress rates from the second: the first starts their interval), eval keys at the eval steps."""
    expected = ({key: TRAIN_STEPS for key in (*keys, *AT_EVERY_LOG_STEP, *EVERY_LOG_STEP)}
                | {key: TRAIN_STEPS[1:] for key in FROM_THE_SECOND_LOG_STEP} | {key: EVAL_AT for key in EVAL_KEYS}
                | {DEVIATION: judged_steps()})
    assert set(history) == set(expected), sorted(set(history) ^ set(expected))
    for key, steps in expected.items():
        assert history[key] == steps, key


def tb_steps(logdir) -> dict[str, list[int]]:
    return {key: [step for step, _ in points] for key, points in read_tb_scalars(logdir).items()}


def assert_every_tracker_holds_every_step(run: MaxTextRun, mlflow_client, experiment: str):
    """A `primus train` run with every tracker on (``every_tracker_args(experiment)``): TensorBoard where
    upstream's writer puts it, the W&B offline run and the MLflow run each hold every metric at every step,
    once; the MLflow run is FINISHED. Returns the MLflow run."""
    run.assert_trained()
    assert tracker_shortfalls(run.output) == []
    expected = TRAIN_KEYS | PERF_KEYS
    [logdir] = run.tb_dirs()
    assert logdir == run.run_dir() / "tensorboard" / run.run_dir().name  # where upstream's writer puts it
    assert_every_step(tb_steps(logdir), expected)

    wandb_steps: dict[str, list[int]] = {}
    for row in read_wandb_history(run.wandb_dir):
        for key in set(row) - {"_step", "_runtime", "_timestamp"}:
            wandb_steps.setdefault(key, []).append(row["_step"])
    assert_every_step(wandb_steps, expected)

    mlflow_run = only_run(mlflow_client, experiment)
    assert mlflow_run.info.status == "FINISHED"
    assert all(is_valid_mlflow_key(k) for k in mlflow_run.data.metrics)
    assert_every_step({k: [s for s, _ in mlflow_history(mlflow_client, mlflow_run.info.run_id, k)]
                       for k in mlflow_run.data.metrics}, expected)
    return mlflow_run
