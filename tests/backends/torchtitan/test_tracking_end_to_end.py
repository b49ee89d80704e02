"""Upstream torchtitan trains the llama3 debug model on CPU with Primus's hub behind its metrics processor,
on every supported release: 0.3.0 (the installed one) and 0.2.2 (its TOML job files; upstream's own
debug_model.toml). What every tracker received is read back — TensorBoard event files, the W&B offline run
file, the real MLflow server — and must hold every metric upstream computes at every logged step, once (but
its mfu(%), made up on a CPU); disabled trackers must hold nothing, and training must not change (same
losses as upstream alone). The profiler's traces become artifacts of the MLflow run."""

from __future__ import annotations

import math
import re
import socket
from functools import partial
from pathlib import Path

import pytest
from support.host_reads import host_reads, host_reads_env
from support.journal_files import run_dirs_under
from support.launch import EVERY_STEP_EXIT_DEADLINE_S, tracker_shortfalls
from support.readers import (
    mlflow_history,
    read_tb_scalars,
    read_tb_texts,
    read_wandb_history,
    wandb_config,
    wandb_files,
    wandb_records,
)
from support.recent_goodput import assert_recent_goodput_in_mlflow
from support.run_pool import RunPool
from titan_runs import RELEASES, STEPS, TRACKED_ON_CPU, UPSTREAM_KEYS, V0_2

from primus.backends.torchtitan.assets import VERSION, ensure_tiny_assets
from primus.tracking.goodput.accounting import NAMES as GOODPUT
from primus.tracking.journal.run_state import RunState
from primus.tracking.measure.names import is_valid_mlflow_key, mlflow_key
from primus.tracking.measure.progress import (
    AT_EVERY_LOG_STEP,
    CONSUMED_SAMPLES,
    CONSUMED_TOKENS,
    FROM_THE_SECOND_LOG_STEP,
)
from primus.tracking.settings.config import PUSHGATEWAY_ENV
from primus.tracking.trackers.tensorboard import TAGS_TAG

pytestmark = pytest.mark.slow

STEP_LIST = list(range(1, STEPS + 1))
PERF_KEYS = frozenset({"perf/tokens_per_sec", "perf/tokens_per_sec_per_gpu", "perf/tflops_per_gpu",
                       "perf/iteration_time_ms", "mem/host_rss_gib", "mem/host_peak_rss_gib", "sys/cpu_util_pct",
                       "sys/host_mem_used_pct"})  # no perf/mfu: a CPU has no datasheet peak
CPU_PATCHES_ONLY = "torchtitan.cpu.device,torchtitan.cpu.fsdp_sum_reduction"
WANDB_ENV = {"WANDB_MODE": "offline", "WANDB_PROJECT": "titan-e2e", "WANDB_RUN_NAME": "titan-all-sinks",
             "WANDB_TEAM": "primus-team"}
# the other variables upstream's WandBLogger passes to wandb.init (components/metrics.py)
# forked at step 0: W&B drops a fork's steps up to its branch point, and every step must reach it here
WANDB_RUN_ENV = {"WANDB_RUN_ID": "titan0run", "WANDB_RUN_NOTES": "tiny llama3", "WANDB_RUN_TAGS": "cpu,e2e",
                 "WANDB_RUN_JOB_TYPE": "pretrain", "WANDB_FORK_FROM": "titanparent?_step=0"}

APPTAINER_ENV = {"APPTAINER_CONTAINER": "/images/titan.sif"}  # as Apptainer sets it inside its container
IDENTITY = {"primus.container.image": "/images/titan.sif", "primus.container.image_from": "APPTAINER_CONTAINER",
            "primus.hosts.count": "1", "primus.world_size": "1", "primus.parallel.tp": "1", "primus.parallel.pp": "1",
            "primus.parallel.dp": "1", "primus.parallel.cp": "1", "primus.parallel.ep": "1",
            "team": "titan", "stage": "e2e", "mlflow.note.content": "tiny llama3 on cpu"}

ALL_SINKS_YAML = """
modules:
  pre_trainer:
    framework: torchtitan
    config: pre_trainer.yaml
    overrides:
      {model}
      training: {{steps: 3}}
      metrics:
        log_freq: 1
        enable_tensorboard: true
        enable_wandb: true
        enable_mlflow: true
        mlflow_experiment_name: {experiment}
        mlflow_upload_performance_metrics: true
        mlflow_upload_logs: true
        mlflow_upload_traces: true
        mlflow_tags: {{team: titan, stage: e2e}}
        mlflow_description: tiny llama3 on cpu
        primus_exit_deadline: {exit_deadline}
        disable_color_printing: true
      {profiler}: {{enable_profiling: true, profile_freq: 2, profiler_warmup: 1, profiler_active: 1}}
"""
MFU_NOTICE = "upstream's mfu(%) is not tracked: the peak FLOP/s of 'CPU"


def tb_dirs(dump: Path) -> list[Path]:
    return sorted({p.parent for p in dump.rglob("events.out.tfevents.*")})


def only_run(client, experiment: str):
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert len(runs) == 1, [r.info.run_name for r in runs]
    return runs[0]


def tracked_steps(keys) -> dict[str, list[int]]:
    """{key: steps} a tracked run holds: ``keys`` and Primus's progress figures at every step, the progress rates
    from the second (each process's first log step starts their interval)."""
    return {k: STEP_LIST for k in (*keys, *AT_EVERY_LOG_STEP)} | {k: STEP_LIST[1:] for k in FROM_THE_SECOND_LOG_STEP}


def assert_mlflow_has_every_step(client, run, keys) -> None:
    keys = {*keys, *GOODPUT}  # the run's goodput figures join every logged step
    assert run.info.status == "FINISHED"
    assert all(is_valid_mlflow_key(k) for k in run.data.metrics), sorted(run.data.metrics)
    expected = tracked_steps(keys)
    assert set(run.data.metrics) == {mlflow_key(k) for k in expected}
    # readable keys, no hash suffix (no two of upstream's names meet on one key)
    assert not [k for k in run.data.metrics if re.search(r"_[0-9a-f]{8}$", k)], sorted(run.data.metrics)
    assert {"throughput_tps", "memory/max_active_GiB", "memory/max_reserved_pct"} <= set(run.data.metrics)
    for key, steps in expected.items():
        assert [s for s, _ in mlflow_history(client, run.info.run_id, mlflow_key(key))] == steps, key


def assert_tb_has_every_step(logdir: Path, keys) -> dict[str, list[tuple[int, float]]]:
    keys = {*keys, *GOODPUT}  # the run's goodput figures join every logged step
    scalars = read_tb_scalars(logdir)
    expected = tracked_steps(keys)
    assert set(scalars) == set(expected)
    for key, steps in expected.items():
        assert [s for s, _ in scalars[key]] == steps, key
    return scalars


def release_id(version: str) -> str:
    return f"torchtitan-{version}"


@pytest.fixture(scope="module", params=list(RELEASES), ids=release_id)
def release(request):
    return RELEASES[request.param]


def all_sinks_experiment(release) -> str:
    return f"titan-all-sinks-{release.version}"


ONE_PROCESS_RUNS = RunPool("titan-run")


def start_all_sinks(titan_run, mlflow_server, pushgateway, tmp_path_factory, release) -> None:
    """One process through `primus train`'s entry, the model's config (0.3: the config function, 0.2.2:
    upstream's debug_model.toml) and every tracker named in the experiment YAML; a Pushgateway too."""
    exp = tmp_path_factory.mktemp("exp") / "titan_all_sinks.yaml"
    exp.write_text(ALL_SINKS_YAML.format(model=release.model_overrides, experiment=all_sinks_experiment(release),
                                         profiler=release.profiler_section, exit_deadline=EVERY_STEP_EXIT_DEADLINE_S))
    ONE_PROCESS_RUNS.start(f"all-sinks-{release.version}", partial(
        titan_run, f"all-sinks-{release.version}", release=release, model_from_experiment=True,
        env={"PRIMUS_CONFIG": str(exp), "MLFLOW_TRACKING_URI": mlflow_server.uri, **WANDB_ENV, **WANDB_RUN_ENV,
             **APPTAINER_ENV, PUSHGATEWAY_ENV: pushgateway.url}))


@pytest.fixture(scope="module", autouse=True)
def one_process_runs(request, titan_run, titan_assets, mlflow_server, pushgateway, tmp_path_factory):
    """The one-process runs the module's selected tests read, started two at a time before the first test reads one
    (each uses one core)."""
    selected = [item for item in request.session.items if item.module is request.module]
    ensure_tiny_assets(titan_assets / VERSION)  # built once here, not by two runs' threads at once
    read = {item.callspec.params["release"] for item in selected if "all_sinks" in item.fixturenames}
    for release in (r for version, r in RELEASES.items() if version in read):
        start_all_sinks(titan_run, mlflow_server, pushgateway, tmp_path_factory, release)
    if any("upstream_alone" in item.fixturenames for item in selected):
        # the same training with only the CPU patches: upstream's own TensorBoard logger, no Primus tracking
        ONE_PROCESS_RUNS.start("upstream-alone", partial(
            titan_run, "upstream-alone", "--metrics.enable-tensorboard", launcher="primus-run",
            env={"PRIMUS_PATCHES": CPU_PATCHES_ONLY}))
    if any("toml_under_primus_run" in item.fixturenames for item in selected):
        # torchtitan 0.2.2 as its users run it: upstream's own debug_model.toml, `primus-run torchrun -m
        # torchtitan.train --job.config_file ...`, every tracker and MLflow option on the command line
        ONE_PROCESS_RUNS.start("toml-primus-run", partial(
            titan_run, "toml-primus-run", "--metrics.enable_tensorboard", "--metrics.enable_wandb",
            "--metrics.enable_mlflow", "--metrics.mlflow_experiment_name", "titan-toml-primus-run",
            "--metrics.mlflow_run_name", "toml-job", "--metrics.save_tb_folder", "tb_v0_2",
            "--metrics.save_for_all_ranks", release=V0_2, launcher="primus-run",
            env={"MLFLOW_TRACKING_URI": mlflow_server.uri, **WANDB_ENV}))


@pytest.fixture(scope="module")
def all_sinks(release):
    return ONE_PROCESS_RUNS.result(f"all-sinks-{release.version}")


@pytest.fixture(scope="module")
def upstream_alone():
    return ONE_PROCESS_RUNS.result("upstream-alone")


def test_the_pushgateway_has_the_runs_latest_figures_and_status(all_sinks, release, pushgateway):
    all_sinks.assert_trained()
    group = pushgateway.group(job=all_sinks_experiment(release))
    assert (group["labels"]["backend"], group["labels"]["host"]) == ("torchtitan", socket.gethostname())
    latest = {name: samples[0]["value"] for name, samples in group["metrics"].items() if len(samples) == 1}
    assert latest["primus_step"] == STEPS
    [logdir] = tb_dirs(all_sinks.dump)
    [(step, loss)] = read_tb_scalars(logdir)["loss_metrics/global_avg_loss"][-1:]
    assert step == STEPS and latest["primus_loss_metrics_global_avg_loss"] == pytest.approx(loss, rel=1e-6)
    assert {"primus_perf_tokens_per_sec", "primus_goodput_productive_fraction"} <= latest.keys()
    assert [s["labels"]["status"] for s in group["metrics"]["primus_run_status"]] == ["FINISHED"]


def test_every_sink_gets_every_metric_at_every_step(all_sinks, release, mlflow_client):
    all_sinks.assert_trained()
    assert tracker_shortfalls(all_sinks.output) == []
    assert not [line for line in all_sinks.output.splitlines() if "step:" in line and "\x1b[" in line]  # no colour
    expected = release.tracked_on_cpu | PERF_KEYS
    [logdir] = tb_dirs(all_sinks.dump)
    tb = assert_tb_has_every_step(logdir, expected)

    rows = [r for r in read_wandb_history(all_sinks.dump) if "grad_norm" in r]
    assert [r["_step"] for r in rows] == STEP_LIST
    for row in rows:
        assert expected | set(AT_EVERY_LOG_STEP) <= set(row)
        assert set(FROM_THE_SECOND_LOG_STEP) <= set(row) or row["_step"] == 1
        tb_loss = dict(tb["loss_metrics/global_avg_loss"])[row["_step"]]
        assert row["loss_metrics/global_avg_loss"] == pytest.approx(tb_loss, rel=1e-6)

    run = only_run(mlflow_client, all_sinks_experiment(release))
    assert_mlflow_has_every_step(mlflow_client, run, expected)
    losses = mlflow_history(mlflow_client, run.info.run_id, "loss_metrics/global_avg_loss")
    assert [v for _, v in losses] == pytest.approx([v for _, v in tb["loss_metrics/global_avg_loss"]], rel=1e-6)


def test_goodput_counts_upstreams_data_loading_as_data_wait(all_sinks):
    """TorchTitan times its batches' loading (time_metrics/data_loading): goodput's data wait grows by its share of
    each interval times the interval's seconds per step."""
    [logdir] = tb_dirs(all_sinks.dump)
    tb = {tag: dict(points) for tag, points in read_tb_scalars(logdir).items()}
    waited = [tb["badput/data_wait_s"][s] for s in STEP_LIST]
    assert waited == sorted(waited) and waited[-1] > 0, waited  # a running total, and batches took some time
    loading = sum(tb["time_metrics/data_loading(%)"][s] / 100 * tb["time_metrics/end_to_end(s)"][s] for s in STEP_LIST)
    assert waited[-1] == pytest.approx(loading, abs=1e-3)  # goodput's figures are published in whole milliseconds


def test_recent_goodput_and_slow_steps_read_back_from_mlflow(all_sinks, release, mlflow_client):
    """Each window's goodput at every log step; the step time's deviation at every one too (TorchTitan's record
    gives its seconds per step, so even the first interval is measured); the slow steps' running total."""
    run = only_run(mlflow_client, all_sinks_experiment(release))
    assert_recent_goodput_in_mlflow(mlflow_client, run.info.run_id, STEP_LIST, STEP_LIST)


def test_perf_figures_agree_with_upstreams_own_counts(all_sinks):
    """Primus's throughput and TFLOP/s against upstream's: tokens from its cumulative n_tokens_seen, FLOPs per
    token from its own tflops / throughput(tps), time loosely (both clocks stop at this log step, a few lines
    apart). One process: per GPU is the whole job (the per-GPU division is checked on Megatron's 2-process run)."""
    all_sinks.assert_trained()
    [logdir] = tb_dirs(all_sinks.dump)
    tb = {tag: dict(points) for tag, points in read_tb_scalars(logdir).items()}
    seen = {0: 0.0} | tb["n_tokens_seen"]
    for step in STEP_LIST:
        seconds = tb["perf/iteration_time_ms"][step] / 1e3  # log_freq 1: one step per interval
        tokens = tb["perf/tokens_per_sec_per_gpu"][step] * seconds
        assert tokens == pytest.approx(seen[step] - seen[step - 1], rel=1e-5), step
        flops_per_token = tb["tflops"][step] / tb["throughput(tps)"][step]
        assert tb["perf/tflops_per_gpu"][step] / tb["perf/tokens_per_sec_per_gpu"][step] == pytest.approx(
            flops_per_token, rel=1e-5), step
        assert tb["perf/tokens_per_sec_per_gpu"][step] == pytest.approx(tb["throughput(tps)"][step], rel=0.35), step


def test_consumed_tokens_are_steps_times_the_global_batch_times_the_sequence_length(all_sinks, release,
                                                                                    mlflow_client):
    """In every tracker, exact: one process, local batch 2 (-1 global: no accumulation), 256 tokens a sample."""
    all_sinks.assert_trained()
    samples = {step: step * 2 for step in STEP_LIST}
    tokens = {step: n * 256 for step, n in samples.items()}
    [logdir] = tb_dirs(all_sinks.dump)
    tb = {tag: dict(points) for tag, points in read_tb_scalars(logdir).items()}
    assert (tb[CONSUMED_SAMPLES], tb[CONSUMED_TOKENS]) == (samples, tokens)
    assert {r["_step"]: r[CONSUMED_TOKENS] for r in read_wandb_history(all_sinks.dump) if CONSUMED_TOKENS in r} == tokens
    run = only_run(mlflow_client, all_sinks_experiment(release))
    assert dict(mlflow_history(mlflow_client, run.info.run_id, CONSUMED_TOKENS)) == tokens
    assert tokens[STEPS] == tb["n_tokens_seen"][STEPS]  # upstream's own count of the tokens it trained on


def test_wandb_run_takes_its_settings_from_the_environment(all_sinks):
    all_sinks.assert_trained()
    [run_file] = wandb_files(all_sinks.dump)
    [run] = [r.run for r in wandb_records(run_file) if r.WhichOneof("record_type") == "run"]
    assert (run.project, run.display_name, run.entity) == ("titan-e2e", "titan-all-sinks", "primus-team")
    assert (run.run_id, run.notes, list(run.tags), run.job_type) == ("titan0run", "tiny llama3", ["cpu", "e2e"],
                                                                     "pretrain")
    assert (run.branch_point.run, run.branch_point.value) == ("titanparent", 0)
    assert "is set but not passed to W&B" not in all_sinks.output


def test_mlflow_run_has_the_config_and_this_runs_log(all_sinks, release, mlflow_client):
    run = only_run(mlflow_client, all_sinks_experiment(release))
    params = run.data.params
    assert params["training.steps"] == "3" and params["metrics.enable_mlflow"] == "True"
    assert params["metrics.primus_exit_deadline"] == str(float(EVERY_STEP_EXIT_DEADLINE_S))  # the experiment's
    assert run.data.tags["primus.backend"] == "torchtitan"
    [log] = [a.path for a in mlflow_client.list_artifacts(run.info.run_id, "logs")]
    assert log == "logs/rank_0.log"


def test_profiler_traces_are_artifacts_of_the_mlflow_run(all_sinks, release, mlflow_client):
    all_sinks.assert_trained()
    [run_dir] = run_dirs_under(all_sinks.dump)
    traces = sorted(p.relative_to(run_dir).as_posix() for p in (run_dir / "traces").rglob("*") if p.is_file())
    assert f"traces/{release.trace_file}" in traces  # upstream's profiler wrote where MLflow uploads from
    run = only_run(mlflow_client, all_sinks_experiment(release))
    assert artifact_files(mlflow_client, run.info.run_id, "traces") == traces
    uploaded = Path(mlflow_client.download_artifacts(run.info.run_id, traces[0], str(run_dir.parent / "download")))
    assert uploaded.read_bytes() == (run_dir / traces[0]).read_bytes()


def test_every_tracker_has_the_users_tags_and_where_the_run_ran(all_sinks, release, mlflow_client):
    all_sinks.assert_trained()
    tags = only_run(mlflow_client, all_sinks_experiment(release)).data.tags
    assert {k: tags.get(k) for k in IDENTITY} == IDENTITY
    primus_tags = wandb_config(all_sinks.dump)["primus_tags"]
    assert {k: primus_tags.get(k) for k in IDENTITY} == IDENTITY
    [logdir] = tb_dirs(all_sinks.dump)
    [(_, table)] = read_tb_texts(logdir)[f"{TAGS_TAG}/text_summary"]
    assert "| team | titan |" in table and "| primus.container.image | /images/titan.sif |" in table


@pytest.mark.parametrize("release", ["0.3.0"], indirect=True, ids=release_id)  # 0.2.2 has no structured logger
def test_structured_logs_go_with_the_logs(all_sinks, release, mlflow_client):
    all_sinks.assert_trained()
    [run_dir] = run_dirs_under(all_sinks.dump)
    written = sorted(p.relative_to(run_dir).as_posix() for p in (run_dir / "structured_logs").glob("*.jsonl"))
    assert [Path(w).name.split(".")[:2] for w in written] == [["training", "global_rank_0"]]
    assert not (all_sinks.dump / "structured_logs").exists()  # written in the run directory instead
    run = only_run(mlflow_client, all_sinks_experiment(release))
    assert artifact_files(mlflow_client, run.info.run_id, "structured_logs") == written


def artifact_files(client, run_id: str, path: str) -> list[str]:
    found = []
    for entry in client.list_artifacts(run_id, path):
        found += artifact_files(client, run_id, entry.path) if entry.is_dir else [entry.path]
    return sorted(found)


@pytest.mark.parametrize("release", ["0.3.0"], indirect=True, ids=release_id)  # 0.2.2: see the TOML job's test
def test_losses_are_those_of_upstream_alone(all_sinks, upstream_alone):
    all_sinks.assert_trained()
    upstream_alone.assert_trained()
    assert upstream_alone.console_steps() == all_sinks.console_steps()
    [ours] = tb_dirs(all_sinks.dump)
    [theirs] = tb_dirs(upstream_alone.dump)
    ours, theirs = read_tb_scalars(ours), read_tb_scalars(theirs)
    assert set(theirs) == UPSTREAM_KEYS  # the hub drops nothing upstream's own logger writes but a made-up MFU
    assert set(theirs) - set(ours) == {"mfu(%)"} and all_sinks.output.count(MFU_NOTICE) == 1
    for key in ("loss_metrics/global_avg_loss", "loss_metrics/global_max_loss", "grad_norm", "n_tokens_seen",
                "lr/AdamW"):
        assert ours[key] == theirs[key], key
    assert all(math.isfinite(v) for _, v in ours["loss_metrics/global_avg_loss"])


@pytest.fixture(scope="module")
def toml_under_primus_run():
    return ONE_PROCESS_RUNS.result("toml-primus-run")


@pytest.mark.parametrize("release", ["0.2.2"], indirect=True, ids=release_id)
def test_upstreams_own_toml_job_under_primus_run_is_tracked_at_every_step(toml_under_primus_run, all_sinks,
                                                                          mlflow_client):
    toml_under_primus_run.assert_trained()
    run = only_run(mlflow_client, "titan-toml-primus-run")
    assert run.info.run_name == "toml-job-rank0"  # save_for_all_ranks: one run per rank
    assert_mlflow_has_every_step(mlflow_client, run, V0_2.tracked_on_cpu)  # "lr", where 0.3 logs "lr/AdamW"
    assert run.data.params["job.config_file"] == str(V0_2.model_args[1])
    [logdir] = tb_dirs(toml_under_primus_run.dump)
    assert logdir.name == "rank_0" and logdir.parent.parent == toml_under_primus_run.dump / "tb_v0_2"
    tb = assert_tb_has_every_step(logdir, V0_2.tracked_on_cpu)
    rows = [r for r in read_wandb_history(toml_under_primus_run.dump) if "grad_norm" in r]
    assert [r["_step"] for r in rows] == STEP_LIST and all(V0_2.tracked_on_cpu <= set(r) for r in rows)
    # the same job named in an experiment YAML and run through `primus train`'s entry trains the same
    assert toml_under_primus_run.console_steps() == all_sinks.console_steps()
    assert tb["loss_metrics/global_avg_loss"] == read_tb_scalars(tb_dirs(all_sinks.dump)[0])[
        "loss_metrics/global_avg_loss"]


@pytest.fixture(scope="module")
def fsdp_every_rank(titan_run, mlflow_server):
    """torchrun, 2 processes with FSDP on gloo: the user's upstream command under primus-run, trackers on
    from the command line, one run per rank; W&B stays off."""
    return titan_run("fsdp-all-ranks", "--parallelism.data-parallel-shard-degree", "2", "--metrics.enable-tensorboard",
                     "--metrics.enable-mlflow", "--metrics.save-for-all-ranks",
                     "--metrics.mlflow-experiment-name", "titan-fsdp-all-ranks", nproc=2, launcher="primus-run",
                     env={"MLFLOW_TRACKING_URI": mlflow_server.uri, **WANDB_ENV, **host_reads_env({})})


def test_save_for_all_ranks_gives_one_run_per_rank(fsdp_every_rank, mlflow_client):
    fsdp_every_rank.assert_trained()
    experiment = mlflow_client.get_experiment_by_name("titan-fsdp-all-ranks").experiment_id
    runs = sorted(mlflow_client.search_runs([experiment]), key=lambda r: r.info.run_name)
    assert [r.info.run_name[-6:] for r in runs] == ["-rank0", "-rank1"]
    assert runs[0].info.run_name[:-6] == runs[1].info.run_name[:-6]  # one job: the ranks agree on its name
    for run in runs:
        assert_mlflow_has_every_step(mlflow_client, run, TRACKED_ON_CPU)
    logdirs = tb_dirs(fsdp_every_rank.dump)
    assert [d.name for d in logdirs] == ["rank_0", "rank_1"] and logdirs[0].parent == logdirs[1].parent
    losses = [assert_tb_has_every_step(d, TRACKED_ON_CPU)["loss_metrics/global_avg_loss"] for d in logdirs]
    assert losses[0] == losses[1]  # the global average, the same on every rank
    # the node's two ranks shared one delivery process, neither rank's own
    states = [RunState(d) for d in run_dirs_under(fsdp_every_rank.dump)]
    delivery = {s.section("run")["delivery_pid"] for s in states}
    trainers = {s.section("run")["pid"] for s in states}
    assert len(states) == 2 and len(delivery) == 1 and len(trainers) == 2 and not delivery & trainers


def test_disabled_tracker_receives_nothing(fsdp_every_rank):
    fsdp_every_rank.assert_trained()
    assert not list(fsdp_every_rank.dump.rglob("*.wandb")) and not list(fsdp_every_rank.dump.rglob("wandb"))


@pytest.fixture(scope="module")
def fsdp_metrics_rank(titan_run, mlflow_server):
    """torchrun, 2 processes with FSDP through `primus train`'s entry: only the metrics rank tracks; the perf set
    goes to MLflow with memory and utilisation over both ranks."""
    return titan_run("fsdp-metrics-rank", "--parallelism.data-parallel-shard-degree", "2",
                     "--metrics.enable-tensorboard", "--metrics.enable-mlflow",
                     "--metrics.mlflow-upload-performance-metrics", "--metrics.mlflow-performance-metrics-across-ranks",
                     "--metrics.mlflow-experiment-name", "titan-fsdp-rank0", nproc=2,
                     env={"MLFLOW_TRACKING_URI": mlflow_server.uri, **host_reads_env({})})


SYSTEM_KEYS = sorted(k for k in PERF_KEYS if k.startswith(("mem/", "sys/")))
ACROSS_RANKS_KEYS = frozenset(f"{k}/{stat}" for k in SYSTEM_KEYS for stat in ("min", "mean", "max"))


def test_only_the_metrics_rank_tracks_by_default(fsdp_metrics_rank, fsdp_every_rank, mlflow_client):
    fsdp_metrics_rank.assert_trained()
    run = only_run(mlflow_client, "titan-fsdp-rank0")
    assert_mlflow_has_every_step(mlflow_client, run, TRACKED_ON_CPU | PERF_KEYS | ACROSS_RANKS_KEYS)
    # both ranks took part: rank 0's own reading is one end of the two, the mean their midpoint
    history = {k: dict(mlflow_history(mlflow_client, run.info.run_id, k)) for k in (*SYSTEM_KEYS, *ACROSS_RANKS_KEYS)}
    for key in SYSTEM_KEYS:
        for step in STEP_LIST:
            low, mean, high = (history[f"{key}/{stat}"][step] for stat in ("min", "mean", "max"))
            assert history[key][step] in (low, high) and mean == pytest.approx((low + high) / 2, rel=1e-12), key
    assert any(history["mem/host_rss_gib/min"][s] < history["mem/host_rss_gib/max"][s] for s in STEP_LIST)
    [logdir] = tb_dirs(fsdp_metrics_rank.dump)
    scalars = assert_tb_has_every_step(logdir, TRACKED_ON_CPU | PERF_KEYS | ACROSS_RANKS_KEYS)
    every_rank = read_tb_scalars(tb_dirs(fsdp_every_rank.dump)[0])
    assert scalars["loss_metrics/global_avg_loss"] == every_rank["loss_metrics/global_avg_loss"]


@pytest.mark.parametrize("name", ["fsdp_metrics_rank", "fsdp_every_rank"])
def test_primus_reads_no_tensor_to_the_host(name, request):
    """No device synchronisation of ours, counted on CPU in both ranks' processes: Primus's code reads no tensor
    upstream computed (the MetricsProcessor hands the hub host floats it has already read), on logged steps or
    any other; only the host tensors of its own gather over ranks (metrics rank run: every rank gathers)."""
    run = request.getfixturevalue(name)
    run.assert_trained()
    trainers = [r for r in host_reads(run.dump.parent) if r["rank"] is not None]
    assert len(trainers) == 2, trainers
    for record in trainers:
        assert record["reads"] == [], record["reads"]
        assert {e["site"].rpartition(":")[0] for e in record["own_host_tensors"]} <= {"tracking/measure/across_ranks.py"}
    assert all(r["own_host_tensors"] for r in trainers) == (name == "fsdp_metrics_rank")


@pytest.mark.parametrize("name", ["fsdp_metrics_rank", "fsdp_every_rank"])
def test_two_healthy_ranks_raise_no_alert_and_leave_no_stacks(name, request):
    """Every rank registered for stacks at start-up (the metrics rank's run, the other rank by itself) and removed
    its empty file at its end; a healthy run says no alert."""
    finished = request.getfixturevalue(name)
    finished.assert_trained()
    assert not list(finished.dump.rglob("stacks")), list(finished.dump.rglob("stacks/*"))
    assert "[primus] ALERT" not in finished.output
