"""Upstream MaxText 0.2.5 trains the tiny CPU experiment (synthetic data, an eval after steps 0 and 3) with
Primus's hub behind ``MetricLogger``. Three runs start together:

* ``primus train`` with every tracker on (TensorBoard, W&B offline, the real MLflow server, a real Pushgateway) and
  the perf set;
* the user's upstream command under ``primus-run --config``, MLflow only (TensorBoard off on its command line);
* upstream alone, unpatched, with its own TensorBoard writer;
* a run whose loss diverges (learning rate 1e30): upstream aborts on the NaN loss, the MLflow run is FAILED.

What each tracker received is read back and must hold every metric upstream computes at every step (eval
summaries at the steps they follow); disabled trackers must hold nothing; losses must be upstream's own."""

from __future__ import annotations

import math
import socket
import sys

import pytest
from maxtext_runs import (
    EVAL_AT,
    EVAL_KEYS,
    SCHEDULE,
    STEPS,
    TINY_CPU,
    TRAIN_KEYS,
    TRAIN_STEPS,
    UPSTREAM_TRAIN,
    WANDB_PROJECT,
    assert_every_step,
    assert_every_tracker_holds_every_step,
    every_tracker_args,
    judged_steps,
    only_run,
    tiny_cpu_args,
)
from support.host_reads import host_reads, host_reads_env
from support.journal_files import journal_lines, run_dirs_under
from support.readers import mlflow_history, read_tb_scalars, read_wandb_history, wandb_files, wandb_records
from support.recent_goodput import assert_recent_goodput_in_mlflow

from primus.config import load_experiment
from primus.tracking.measure.progress import CONSUMED_SAMPLES, CONSUMED_TOKENS, ETA

pytestmark = pytest.mark.slow

# upstream copies HF_TOKEN into its config (hf_access_token), which every tracker receives as run params
HF_TOKEN = "hf_PrimusTestSecret0123456789abcdefXYZ"

USER_LABELS = ("mlflow_tags=team=jax,stage=e2e", "wandb_tags=[cpu, maxtext]", "wandb_notes=tiny maxtext")


@pytest.fixture(scope="module")
def runs(start, maxtext_python, primus_run_command, mlflow_server, pushgateway, tmp_path_factory):
    mlflow = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    workspace = tmp_path_factory.mktemp("workspace")
    waits = {
        "all": start("all-sinks", [
            sys.executable, "-m", "primus.cli.main", "train", "--config", str(TINY_CPU), *SCHEDULE,
            *every_tracker_args("maxtext-all-sinks"), *USER_LABELS, f"primus_prometheus_pushgateway={pushgateway.url}"],
            env={**mlflow, "PRIMUS_WORKSPACE": str(workspace), "HF_TOKEN": HF_TOKEN, **host_reads_env({}),
                 "PRIMUS_CONTAINER_IMAGE": "registry.local/maxtext:tiny"}),
        "mlflow_only": start("mlflow-only", [
            *primus_run_command, "--config", str(TINY_CPU), maxtext_python, *UPSTREAM_TRAIN, *SCHEDULE,
            "enable_tensorboard=false", "mlflow_experiment_name=maxtext-mlflow-only", "run_name=mlflow-only",
            "base_output_directory=out"], env={**mlflow, **host_reads_env({})}),
        "diverges": start("diverges", [
            *primus_run_command, "--config", str(TINY_CPU), maxtext_python, *UPSTREAM_TRAIN, f"steps={STEPS}",
            "learning_rate=1e30", "enable_tensorboard=false", "mlflow_experiment_name=maxtext-diverges",
            "run_name=diverges", "base_output_directory=out"], env=mlflow),
        "upstream": start("upstream-alone", [
            maxtext_python, *UPSTREAM_TRAIN, *tiny_cpu_args(primus_keys=False), *SCHEDULE,
            "run_name=upstream", "base_output_directory=out"]),
    }
    return {name: wait() for name, wait in waits.items()}


def test_every_sink_gets_every_metric_at_every_step(runs, mlflow_client):
    assert_every_tracker_holds_every_step(runs["all"], mlflow_client, "maxtext-all-sinks")


def test_recent_goodput_and_slow_steps_read_back_from_mlflow(runs, mlflow_client):
    """Each window's goodput at every step, the step time's deviation where judged (not after an evaluation), the
    slow steps' running total."""
    run = only_run(mlflow_client, "maxtext-all-sinks")
    assert_recent_goodput_in_mlflow(mlflow_client, run.info.run_id, TRAIN_STEPS, judged_steps())


def test_trackers_get_upstreams_names_values_and_settings(runs, mlflow_client):
    ours, upstream = runs["all"], runs["upstream"]
    upstream.assert_trained()
    [theirs] = upstream.tb_dirs()
    theirs = read_tb_scalars(theirs)
    assert set(theirs) == TRAIN_KEYS | EVAL_KEYS  # the names are upstream's, and the hub drops none of them
    tb = read_tb_scalars(ours.tb_dirs()[0])
    mlflow_run = only_run(mlflow_client, "maxtext-all-sinks")
    assert mlflow_history(mlflow_client, mlflow_run.info.run_id, "learning/loss") == tb["learning/loss"]
    assert mlflow_run.data.params["steps"] == str(STEPS) and mlflow_run.data.params["log_period"] == "5"
    assert mlflow_run.data.tags["primus.backend"] == "maxtext"
    [run_file] = wandb_files(ours.wandb_dir)
    [wandb_run] = [r.run for r in wandb_records(run_file) if r.WhichOneof("record_type") == "run"]
    assert (wandb_run.project, wandb_run.display_name) == (WANDB_PROJECT, "maxtext-all-sinks")


def test_the_pushgateway_has_the_runs_latest_figures_and_status(runs, pushgateway):
    runs["all"].assert_trained()
    group = pushgateway.group(job="maxtext-all-sinks")
    assert (group["labels"]["backend"], group["labels"]["host"]) == ("maxtext", socket.gethostname())
    latest = {name: samples[0]["value"] for name, samples in group["metrics"].items() if len(samples) == 1}
    [(step, loss)] = read_tb_scalars(runs["all"].tb_dirs()[0])["learning/loss"][-1:]
    assert latest["primus_step"] == step == TRAIN_STEPS[-1]
    assert latest["primus_learning_loss"] == pytest.approx(loss, rel=1e-6)
    assert {"primus_perf_tokens_per_sec", "primus_goodput_productive_fraction"} <= latest.keys()
    assert [s["labels"]["status"] for s in group["metrics"]["primus_run_status"]] == ["FINISHED"]


def test_the_users_labels_and_where_the_run_ran_reach_mlflow_and_wandb(runs, mlflow_client):
    runs["all"].assert_trained()
    tags = only_run(mlflow_client, "maxtext-all-sinks").data.tags
    expected = {"team": "jax", "stage": "e2e", "primus.container.image": "registry.local/maxtext:tiny",
                "primus.container.image_from": "PRIMUS_CONTAINER_IMAGE", "primus.world_size": "1",
                "primus.parallel.tp": "1", "primus.parallel.pp": "1", "primus.parallel.dp": "1",
                "primus.parallel.cp": "1", "primus.parallel.ep": "1", "primus.hosts.count": "1"}
    assert {k: tags.get(k) for k in expected} == expected
    assert not [k for k in tags if k.startswith("primus.accelerator.")]  # JAX on a CPU
    [run_file] = wandb_files(runs["all"].wandb_dir)
    [wandb_run] = [r.run for r in wandb_records(run_file) if r.WhichOneof("record_type") == "run"]
    assert (list(wandb_run.tags), wandb_run.notes) == (["cpu", "maxtext"], "tiny maxtext")


def test_perf_figures_agree_with_the_batches_the_run_consumed(runs):
    """Primus's throughput against counts taken outside it: tokens per device from the experiment's own batch
    shape (per_device_batch_size x max_target_length), time from upstream's step time, FLOP/s from upstream's
    per-device figure. One CPU device: per GPU is the whole job."""
    params = load_experiment(TINY_CPU).modules["pre_trainer"].params
    tokens_per_device = params["per_device_batch_size"] * params["max_target_length"]
    tb = {tag: dict(points) for tag, points in read_tb_scalars(runs["all"].tb_dirs()[0]).items()}
    assert sorted(tb["perf/tokens_per_sec_per_gpu"]) == TRAIN_STEPS
    for step in TRAIN_STEPS:
        seconds = tb["perf/step_time_seconds"][step]
        assert tb["perf/iteration_time_ms"][step] == pytest.approx(seconds * 1e3, rel=1e-5), step
        assert tb["perf/tokens_per_sec_per_gpu"][step] * seconds == pytest.approx(tokens_per_device, rel=1e-5), step
        assert tb["perf/tokens_per_sec"][step] == pytest.approx(tb["perf/tokens_per_sec_per_gpu"][step], rel=1e-5)
        assert tb["perf/tflops_per_gpu"][step] == pytest.approx(tb["perf/per_device_tflops_per_sec"][step], rel=1e-5)


def test_consumed_tokens_are_steps_times_the_global_batch_times_the_sequence_length(runs, mlflow_client):
    """Exact in every tracker: MaxText's step n is n + 1 steps; one CPU device, so the global batch is the
    experiment's per-device batch."""
    params = load_experiment(TINY_CPU).modules["pre_trainer"].params
    batch, length = params["per_device_batch_size"], params["max_target_length"]
    samples = {step: (step + 1) * batch for step in TRAIN_STEPS}
    tokens = {step: n * length for step, n in samples.items()}
    run = runs["all"]
    tb = {tag: dict(points) for tag, points in read_tb_scalars(run.tb_dirs()[0]).items()}
    assert (tb[CONSUMED_SAMPLES], tb[CONSUMED_TOKENS]) == (samples, tokens)
    assert {r["_step"]: r[CONSUMED_TOKENS] for r in read_wandb_history(run.wandb_dir) if CONSUMED_TOKENS in r} == tokens
    mlflow_run = only_run(mlflow_client, "maxtext-all-sinks")
    assert dict(mlflow_history(mlflow_client, mlflow_run.info.run_id, CONSUMED_TOKENS)) == tokens
    assert all(tb[ETA][step] >= 0 for step in TRAIN_STEPS[1:]) and tb[ETA][TRAIN_STEPS[-1]] == 0  # none left


def test_each_evaluation_is_an_expected_pause_charged_to_evaluation(runs, mlflow_client):
    """Journaled as it begins (no stall alert meanwhile); the second begins with step 2's metrics still buffered
    upstream, whose log, during it, does not end it. Its time is badput/eval_s, not a step's."""
    run = runs["all"]
    run.assert_trained()
    pauses = [(r["d"]["what"], r["d"]["on"], r["d"].get("after_step"))
              for r in journal_lines(run.run_dir()) if r["k"] == "e" and r["d"]["event"] == "busy"]
    assert pauses == [("evaluation", True, None), ("evaluation", True, EVAL_AT[1] - 1)]
    mlflow_run = only_run(mlflow_client, "maxtext-all-sinks")
    eval_s = dict(mlflow_history(mlflow_client, mlflow_run.info.run_id, "badput/eval_s"))
    assert sorted(eval_s) == TRAIN_STEPS
    assert eval_s[EVAL_AT[0]] > 0 and eval_s[EVAL_AT[0] + 1] == eval_s[EVAL_AT[0]]  # no pause between
    assert eval_s[EVAL_AT[1]] > eval_s[EVAL_AT[1] - 1]


def test_the_token_upstream_put_in_its_config_reaches_no_tracker(runs, mlflow_client):
    run = runs["all"]
    run.assert_trained()
    mlflow_run = only_run(mlflow_client, "maxtext-all-sinks")
    assert mlflow_run.data.params["hf_access_token"] == "***"
    files = [p for root in (run.run_dir(), run.wandb_dir) for p in root.rglob("*") if p.is_file()]
    assert any(p.name.startswith("events.out.tfevents") for p in files) and any(p.suffix == ".wandb" for p in files)
    assert not [p for p in files if HF_TOKEN.encode() in p.read_bytes()]
    assert HF_TOKEN not in run.output


def test_losses_are_those_of_upstream_alone(runs, mlflow_client):
    for name in ("all", "mlflow_only", "upstream"):
        runs[name].assert_trained()
    [theirs] = runs["upstream"].tb_dirs()
    theirs = read_tb_scalars(theirs)
    ours = read_tb_scalars(runs["all"].tb_dirs()[0])
    for key in ("learning/loss", "learning/grad_norm", "learning/param_norm", "learning/current_learning_rate",
                "eval/avg_loss"):
        assert ours[key] == theirs[key], key
    assert all(math.isfinite(v) for _, v in ours["learning/loss"])
    mlflow_only = only_run(mlflow_client, "maxtext-mlflow-only")
    assert mlflow_history(mlflow_client, mlflow_only.info.run_id, "learning/loss") == theirs["learning/loss"]


def test_mlflow_alone_gets_everything_and_disabled_sinks_nothing(runs, mlflow_client):
    run = runs["mlflow_only"]
    run.assert_trained()
    mlflow_run = only_run(mlflow_client, "maxtext-mlflow-only")
    assert mlflow_run.info.status == "FINISHED"
    assert_every_step({k: [s for s, _ in mlflow_history(mlflow_client, mlflow_run.info.run_id, k)]
                       for k in mlflow_run.data.metrics}, TRAIN_KEYS)  # no perf set: not asked for
    assert run.tb_dirs() == [] and not list(run.wandb_dir.iterdir())  # TensorBoard and W&B off: nothing
    primus_dir = run.workdir / "out" / "mlflow-only" / "primus"  # MaxText's run folder holds Primus's run
    assert run_dirs_under(primus_dir) == [primus_dir]
    upstream = runs["upstream"]
    assert not run_dirs_under(upstream.workdir) and not list(upstream.wandb_dir.iterdir())


def test_a_run_upstream_aborts_is_failed_with_its_metrics_delivered(runs, mlflow_client):
    run = runs["diverges"]
    assert run.returncode == 1 and "Aborting training due to NaN loss." in run.output, run.explain()
    mlflow_run = only_run(mlflow_client, "maxtext-diverges")
    assert mlflow_run.info.status == "FAILED"
    losses = mlflow_history(mlflow_client, mlflow_run.info.run_id, "learning/loss")
    assert math.isfinite(losses[0][1]) and math.isnan(losses[-1][1])  # up to and including the NaN step


@pytest.mark.parametrize("name", ["all", "mlflow_only"])
def test_primus_reads_no_array_on_the_training_thread(runs, name):
    """No device synchronisation of ours, counted on CPU (``support/host_reads_site``): upstream hands its
    metrics as JAX arrays of a step the device has finished; Primus reads them only on the hub's thread (what
    upstream's own TensorBoard and W&B writers read, at the same logged steps), never on the training thread."""
    run = runs[name]
    assert run.returncode == 0, run.output[-3000:]
    [trainer] = [r for r in host_reads(run.workdir) if any("maxtext" in a or "train" in a for a in r["argv"])]
    assert trainer["reads"], "no read of upstream's metrics was seen: the count is not working"
    assert {(e["site"].rpartition(":")[0], e["function"], e["thread"]) for e in trainer["reads"]} == {
        ("tracking/hub.py", "MetricsHub._floats", "primus-tracking-hub")}, trainer["reads"]
