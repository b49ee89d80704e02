"""What the Megatron tracking end-to-end tests share: the catalogue of tiny runs (one per toggle
combination, each also carrying some spec parameters), the runs themselves — started at most once per
session, two at a time, because several test modules assert on the same run — and the read-back of
every sink a run wrote: TensorBoard event files, the W&B offline run files, the real MLflow server.

Expected tags are written out per run as {tag: [steps]}: upstream's tags at every iteration, Primus's
perf/* figures from the second log step on (the first log step is the baseline of the interval timer:
it would include start-up)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from support.host_reads import host_reads_env
from support.journal_files import run_dirs_under
from support.launch import EVERY_STEP_EXIT_DEADLINE_S, tracker_shortfalls
from support.otlp_receiver import OtlpReceiver
from support.readers import mlflow_history, read_tb_scalars, read_wandb_history, wandb_files, wandb_run_ids
from support.run_pool import RunPool
from support.upstreams import releases, upstream_env

from primus.tracking.goodput.accounting import DEVIATION, EVERY_LOG_STEP
from primus.tracking.measure.names import mlflow_key
from primus.tracking.measure.progress import AT_EVERY_LOG_STEP, FROM_THE_SECOND_LOG_STEP

TB, WANDB, MLFLOW = "tensorboard", "wandb", "mlflow"
SINKS = (TB, WANDB, MLFLOW)
VS_SAMPLES = " vs samples"

# upstream's training_log sends this one to its W&B writer only; the hub routes it to every tracker
SAMPLES_VS_STEPS = "samples vs steps"
UPSTREAM = ("lm loss", "learning-rate", "loss-scale", "grad-norm", SAMPLES_VS_STEPS)
PERF = ("perf/tokens_per_sec", "perf/tokens_per_sec_per_gpu", "perf/tflops_per_gpu", "perf/iteration_time_ms")
PERF_AVG = ("perf/iteration_time_ms_avg", "perf/tokens_per_sec_per_gpu_avg", "perf/tflops_per_gpu_avg")
# mlflow_upload_performance_metrics on a CPU host (every tracker gets them): no device memory or utilisation to read
SYSTEM = ("mem/host_rss_gib", "mem/host_peak_rss_gib", "sys/cpu_util_pct", "sys/host_mem_used_pct")
ACROSS_RANKS = tuple(f"{name}/{stat}" for name in SYSTEM for stat in ("min", "mean", "max"))
# timers.write at --timing-log-level 1 on one CPU process: the timers upstream started (the others are absent)
TIMERS_LEVEL_1 = ("forward-backward-time", "optimizer-time", "optimizer-inner-step-time",
                  "optimizer-copy-to-main-grad-time", "all-grads-sync-time", "embedding-grads-all-reduce-time")
# upstream's tags that also have a "<tag> vs samples" twin (TensorBoard only)
WITH_SAMPLES_AXIS = (*(t for t in UPSTREAM if t != SAMPLES_VS_STEPS), "params-norm", "num-zeros", "world-size", "batch-size", "lm loss validation",
                     "lm loss validation ppl")
MEMORY = ("mem-reserved-bytes", "mem-allocated-bytes", "mem-max-allocated-bytes", "mem-allocated-count")


def at(steps: Iterable[int], *tags: str) -> dict[str, list[int]]:
    return {tag: list(steps) for tag in tags}


def progress_at(log_steps: list[int]) -> dict[str, list[int]]:
    """Primus's progress figures, with any tracker on: at every log step of one process, their rates from its
    second."""
    return at(log_steps, *AT_EVERY_LOG_STEP) | (at(log_steps[1:], *FROM_THE_SECOND_LOG_STEP) if log_steps[1:] else {})


def toggles(tensorboard: bool, wandb: bool, mlflow: bool) -> list[str]:
    """Every toggle given explicitly, as the YAML presets do."""
    return ["--disable-tensorboard", str(not tensorboard).lower(), "--disable-wandb", str(not wandb).lower(),
            "--disable-mlflow", str(not mlflow).lower()]


@dataclass(frozen=True)
class RunSpec:
    """One tiny training: which sinks are on, its extra arguments, and what each enabled sink must hold."""
    on: frozenset[str]
    experiment: str  # every run names its MLflow experiment (ignored when MLflow is off) for the look-up
    expected: Mapping[str, list[int]]  # {tag: steps} for every enabled sink
    args: tuple[str, ...] = ()
    iterations: int = 3
    nproc: int = 1
    release: str | None = None  # another supported megatron-core release (upstream-matrix.txt); None: the pinned one
    env: Mapping[str, str] = field(default_factory=dict)  # the launcher's, as a Slurm job under pyxis would have


def with_goodput(expected: Mapping[str, list[int]]) -> dict[str, list[int]]:
    """``expected`` and the goodput figures, which join every logged step's record (primus/tracking/goodput/accounting.py);
    the step time's deviation from the second (the first log step's interval is start-up)."""
    steps = sorted({step for steps in expected.values() for step in steps})
    return {**expected, **at(steps, *EVERY_LOG_STEP), **at(steps[1:], DEVIATION)} if steps else dict(expected)


EXIT_DEADLINE = ("--primus-exit-deadline", str(EVERY_STEP_EXIT_DEADLINE_S))


def spec(name: str, on: Iterable[str], *args: str, expected: Mapping[str, list[int]], iterations: int = 3,
         nproc: int = 1, release: str | None = None, env: Mapping[str, str] | None = None) -> RunSpec:
    on = frozenset(on)
    return RunSpec(on, f"h6-{name}", with_goodput(expected),
                   (*toggles(TB in on, WANDB in on, MLFLOW in on), "--mlflow-experiment-name", f"h6-{name}",
                    *EXIT_DEADLINE, *args),
                   iterations, nproc, release, dict(env or {}))


# test_tracking_resume.py and test_checkpoint_patches.py: a job that checkpoints at iteration 2 and stops, then
# resumes from it (the runs: conftest.py); W&B (offline) and MLflow on, TensorBoard off
RESUME_EXPERIMENT = "h6-resume"
RESUME_ARGS = (*toggles(False, True, True), "--wandb-project", RESUME_EXPERIMENT, "--mlflow-experiment-name",
               RESUME_EXPERIMENT, "--log-progress", "--save-interval", "2", *EXIT_DEADLINE)

STEPS = [1, 2, 3]
PERF_STEPS = [2, 3]
AVG_STEPS = [3]  # log_avg_skip_iterations 2 (the default): log entries 1 (clock start) and 2 left out
# more than one rank: stragglers on by default; the first log step starts the clock, a log step's figures come at the
# next one
STRAGGLER_STEPS = [3]
STRAGGLERS = ("straggler/busy_s_min", "straggler/busy_s_median", "straggler/busy_s_max", "straggler/slowest_rank",
              "straggler/slowest_over_median", "straggler/missing_ranks")


# the variables a Slurm job step under pyxis, restarted once, has (test_megatron_run_identity.py)
SLURM_ENV = {"SLURM_JOB_ID": "4242", "SLURM_ARRAY_JOB_ID": "4240", "SLURM_ARRAY_TASK_ID": "2",
             "SLURM_RESTART_COUNT": "1", "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_NODELIST": "gpu[007-008]",
             "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image": "nvcr.io#nvidia/pytorch:25.01-py3"}
USER_LABELS = ("--mlflow-tags", "team=llm,owner=ci", "--mlflow-description", "tiny gpt on cpu",
               "--wandb-tags", "cpu,h6", "--wandb-notes", "every tracker on")


def every_tracker_on(name: str, release: str | None = None) -> RunSpec:
    """Every tracker on, named, labelled by the user, in a Slurm-like environment; the perf set (with MLflow on)
    goes to every tracker; One-Logger options accepted without the package."""
    return spec(name, SINKS, "--log-throughput", "--log-params-norm", "--mlflow-run-name", f"h6-{name}-run",
                "--wandb-project", "h6-project", "--wandb-exp-name", f"h6-{name}-wandb", "--wandb-entity", "h6-team",
                "--wandb-save-dir", "my-wandb", "--mlflow-upload-performance-metrics",
                "--one-logger-project", "h6", "--one-logger-run-name", "h6-one", "--one-logger-async",
                "--app-tag-run-name", "h6-app", "--app-tag-run-version", "1.2.3", *USER_LABELS,
                expected=at(STEPS, *UPSTREAM, "params-norm") | at(PERF_STEPS, *PERF, *SYSTEM)
                | at(AVG_STEPS, *PERF_AVG) | progress_at(STEPS), release=release, env=SLURM_ENV)


RUNS: dict[str, RunSpec] = {
    # Every tracker off although their directories and names are given: nothing may be written; the console
    # still shows tokens/s, averages (skip 1: from iteration 2; reset 1: each interval's own) and the ETA.
    "none": spec("none", (), "--tensorboard-dir", "tb", "--wandb-project", "h6-none", "--log-throughput",
                 "--log-params-norm", "--log-progress", "--log-avg-skip-iterations", "1",
                 "--log-avg-reset-interval", "1", expected={}),
    "all": every_tracker_on("all"),
    # TensorBoard only (directory derived), with every per-metric switch and the timers; MLflow's upload
    # switches are ignored with MLflow off. Validation at the last iteration is
    # written three times, as upstream does: the in-loop evaluation, then the final validation and test
    # evaluations (upstream tags the test loss "validation" too).
    "tb": spec("tb", (TB,), "--log-throughput", "--log-timers-to-tensorboard", "--timing-log-level", "1",
               "--log-memory-to-tensorboard", "--log-world-size-to-tensorboard", "--log-validation-ppl-to-tensorboard",
               "--eval-interval", "3", "--eval-iters", "1", "--log-params-norm", "--log-num-zeros-in-grad",
               "--log-batch-size-to-tensorboard", "true", "--tensorboard-queue-size", "7", "--logging-level", "10",
               "--no-one-logger", "--mlflow-upload-performance-metrics", "--mlflow-upload-logs",
               expected=at(STEPS, *UPSTREAM, "params-norm", "num-zeros", "world-size", "batch-size", *MEMORY,
                           "throughput", *TIMERS_LEVEL_1)
               | at(PERF_STEPS, *PERF, "iteration-time") | at(AVG_STEPS, *PERF_AVG)
               | at([3, 3, 3], "lm loss validation", "lm loss validation ppl") | progress_at(STEPS)),
    # W&B only, learning rate and loss scale switched off; averages from the first interval, reset every step.
    "wandb": spec("wandb", (WANDB,), "--wandb-project", "h6-wandb", "--log-throughput",
                  "--log-learning-rate-to-tensorboard", "false", "--no-log-loss-scale-to-tensorboard",
                  "--log-avg-skip-iterations", "0", "--log-avg-reset-interval", "1",
                  expected=at(STEPS, "lm loss", "grad-norm", SAMPLES_VS_STEPS) | at(PERF_STEPS, *PERF, *PERF_AVG)
                  | progress_at(STEPS)),
    # MLflow only: the perf set without --log-throughput (it implies it), logs and traces uploaded (with
    # upstream's memory snapshot), averages over every interval (no reset within 10), timers on the console only,
    # as their maximum. tensorboard_dir given with TensorBoard off: recorded as given, beside the traces folder.
    "mlflow": spec("mlflow", (MLFLOW,), "--tensorboard-dir", "tb-mine", "--mlflow-upload-performance-metrics",
                   "--mlflow-upload-logs", "--record-memory-history",
                   "--mlflow-upload-traces", "--mlflow-upload-tracelens-report", "--profile", "--use-pytorch-profiler", "--profile-step-start", "1",
                   "--profile-step-end", "2", "--log-avg-skip-iterations", "0", "--timing-log-level", "1",
                   "--timing-log-option", "max",
                   expected=at(STEPS, *UPSTREAM) | at(PERF_STEPS, *PERF, *PERF_AVG, *SYSTEM) | progress_at(STEPS)),
    # TensorBoard + W&B, 4 iterations: tensorboard_log_interval 2 halves the steps, log_interval 3 sets the
    # console cadence (iterations 1 and 3) independently.
    "tb_wandb": spec("tb_wandb", (TB, WANDB), "--wandb-project", "h6-intervals", "--train-iters", "4",
                     "--tensorboard-log-interval", "2", "--log-interval", "3",
                     expected=at([2, 4], *UPSTREAM) | progress_at([3]), iterations=4),
    # torchrun, 2 processes; memory and utilisation as min/mean/max over the two ranks, beside the writer's own.
    # Upstream's own iteration time and TFLOP/s/GPU go to the trackers too (the throughput oracle reads them), and
    # averages start at the first interval, so the last step's averages span two intervals of a 2-GPU job.
    "dp2_all": spec("dp2_all", SINKS, "--wandb-project", "h6-dp2", "--log-throughput",
                    "--mlflow-upload-performance-metrics", "--mlflow-performance-metrics-across-ranks",
                    "--log-timers-to-tensorboard", "--log-avg-skip-iterations", "0",
                    expected=at(STEPS, *UPSTREAM, "throughput")
                    | at(PERF_STEPS, *PERF, *PERF_AVG, "iteration-time", *SYSTEM, *ACROSS_RANKS) | progress_at(STEPS)
                    | at(STRAGGLER_STEPS, *STRAGGLERS), nproc=2),
    "pp2_wandb": spec("pp2_wandb", (WANDB,), "--wandb-project", "h6-pp2", "--pipeline-model-parallel-size", "2",
                      "--log-throughput", expected=at(STEPS, *UPSTREAM) | at(PERF_STEPS, *PERF)
                      | at(AVG_STEPS, *PERF_AVG) | progress_at(STEPS) | at(STRAGGLER_STEPS, *STRAGGLERS), nproc=2),
}




def on_release(version: str) -> str:
    """The name of the every-tracker run on another supported megatron-core release (upstream-matrix.txt)."""
    return f"all_mcore{version}"


RUNS |= {on_release(v): every_tracker_on(on_release(v), release=v) for v in releases("megatron-core")}


# -- runs, shared by every module of the session ------------------------------------------------
_POOL = RunPool("megatron-run")

# dp2_all also posts to an OTLP endpoint of this process (test_megatron_otlp.py), with a secret header; the
# endpoint refuses the run's first requests, as a collector that is down would
OTLP_RUN = "dp2_all"
OTLP_SECRET = "otlp-dp2-s3cr3t-bearer"
OTLP_REFUSED = 2
_otlp: list[OtlpReceiver] = []


def otlp_receiver() -> OtlpReceiver:
    """The session's OTLP endpoint for ``OTLP_RUN``, started on first use (kept for the process)."""
    if not _otlp:
        _otlp.append(OtlpReceiver())
        _otlp[0].refuse_requests(OTLP_REFUSED)
    return _otlp[0]


def start(launcher: Callable[..., Any], mlflow_uri: str, *names: str) -> None:
    """Start these runs in the background (each once per session); ``launcher`` is ``megatron_run``."""
    for name in names:
        run = RUNS[name]
        env = {"WANDB_MODE": "offline", "MLFLOW_TRACKING_URI": mlflow_uri, **run.env}
        if run.release:
            env |= upstream_env("megatron-core", run.release)
        env |= host_reads_env(env)  # counts Primus's host reads of tensors (test_no_host_reads.py)
        if name == OTLP_RUN:
            env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver().url,
                    "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{OTLP_SECRET}"}
        _POOL.start(name, partial(launcher, name, *run.args, nproc=run.nproc, env=env))


def result(launcher: Callable[..., Any], mlflow_uri: str, name: str):
    start(launcher, mlflow_uri, name)
    return _POOL.result(name)


def finished(name: str):
    """A run already started (``start``), once it has ended."""
    return _POOL.result(name)


# -- read-back --------------------------------------------------------------------------------
def tb_event_files(root: Path) -> list[Path]:
    return sorted(root.rglob("events.out.tfevents.*"))


def tb_steps(root: Path) -> dict[str, list[int]]:
    [logdir] = {p.parent for p in tb_event_files(root)}
    return {tag: [step for step, _ in points] for tag, points in read_tb_scalars(logdir).items()}


def tb_values(root: Path, tag: str) -> dict[int, float]:
    [logdir] = {p.parent for p in tb_event_files(root)}
    return dict(read_tb_scalars(logdir).get(tag, []))


def wandb_steps(root: Path) -> dict[str, list[int]]:
    """{key: steps} over the history rows of every W&B run file under ``root`` (W&B's own keys left out)."""
    out: dict[str, list[int]] = {}
    for row in read_wandb_history(root):
        for key in row:
            if not key.startswith("_"):
                out.setdefault(key, []).append(row["_step"])
    return out


def wandb_values(root: Path, key: str) -> dict[int, float]:
    return {row["_step"]: row[key] for row in read_wandb_history(root) if key in row}


def mlflow_runs(client: Any, experiment: str) -> list[Any]:
    found = client.get_experiment_by_name(experiment)
    return [] if found is None else client.search_runs([found.experiment_id])


def mlflow_steps(client: Any, run: Any) -> dict[str, list[int]]:
    return {key: [step for step, _ in mlflow_history(client, run.info.run_id, key)] for key in run.data.metrics}


def written_by(root: Path) -> dict[str, list[Path]]:
    """What each tracker left on disk under ``root``."""
    return {TB: tb_event_files(root),
            WANDB: sorted({*wandb_files(root), *(p for p in root.rglob("wandb") if p.is_dir())}),
            MLFLOW: sorted({*root.rglob("mlflow.db"), *root.rglob("mlruns")})}


ONE_LOGGER = "one_logger/"  # upstream's end-to-end figures (test_megatron_one_logger.py asserts on them)


def without_one_logger(steps: Mapping[str, list[int]]) -> dict[str, list[int]]:
    """``steps`` less upstream's One-Logger figures, which One-Logger (on by default) adds at the steps upstream
    logs them (test_megatron_one_logger.py checks those)."""
    return {tag: s for tag, s in steps.items() if not tag.startswith(ONE_LOGGER)}


def assert_same(actual: Any, expected: Any, what: str) -> None:
    """Equality with a readable difference (pytest rewrites asserts in test modules only)."""
    if actual != expected:
        if isinstance(actual, Mapping) and isinstance(expected, Mapping):
            diff = {k: (actual.get(k), expected.get(k)) for k in sorted({*actual, *expected})
                    if actual.get(k) != expected.get(k)}
            raise AssertionError(f"{what}: (got, expected) differ at {diff}")
        raise AssertionError(f"{what}: got {actual!r}, expected {expected!r}")


def assert_sinks(run: Any, spec_: RunSpec, client: Any) -> None:
    """Each enabled sink holds exactly the expected tags, each at exactly the expected steps, from
    exactly one writer (one event file, one W&B run, one MLflow run); each disabled sink wrote nothing."""
    root = run.log_path.parent
    assert tracker_shortfalls(run.output) == []
    expected = dict(spec_.expected)
    on_disk = written_by(root)
    runs = mlflow_runs(client, spec_.experiment)
    if TB in spec_.on:
        assert len(on_disk[TB]) == 1, on_disk[TB]
        steps = tb_steps(root)
        samples = {tag: s for tag, s in steps.items() if tag.endswith(VS_SAMPLES)}
        assert_same(without_one_logger({t: s for t, s in steps.items() if t not in samples}), expected, "TensorBoard steps")
        # the consumed-samples x-axis of upstream's tags stays in TensorBoard, at each logged step
        assert_same(set(samples), {f"{t}{VS_SAMPLES}" for t in expected if t in WITH_SAMPLES_AXIS}, "vs samples tags")
    else:
        assert on_disk[TB] == [], on_disk[TB]
    if WANDB in spec_.on:
        assert len(wandb_run_ids(root)) == 1 and len(wandb_files(root)) == 1, wandb_files(root)
        assert_same(without_one_logger(wandb_steps(root)), expected, "W&B steps")
    else:
        assert on_disk[WANDB] == [], on_disk[WANDB]
    if MLFLOW in spec_.on:
        assert len(runs) == 1, [r.info.run_name for r in runs]
        assert_same(runs[0].info.status, "FINISHED", "MLflow run status")
        want = {mlflow_key(tag): s for tag, s in expected.items()}
        assert_same(without_one_logger(mlflow_steps(client, runs[0])), want, "MLflow steps")
    else:
        assert runs == [], [r.info.run_name for r in runs]
        assert on_disk[MLFLOW] == [], on_disk[MLFLOW]
    if not spec_.on:
        assert run_dirs_under(root) == []
