"""Megatron-Bridge 0.6.2 trains the tiny GPT (tiny_pretrain.py, a user's own script calling ``pretrain()``) on CPU
under ``primus-run``, with Bridge's own logger settings turning TensorBoard, W&B (offline) and MLflow (the
session's server) on. One training (``tracked``, conftest.py and bridge_runs.py; test_bridge_checkpoints.py reads its
checkpoints) serves every test here: each tracker must hold every step Bridge logs once, with the console's values,
and Bridge's own writers must have written nothing."""

from __future__ import annotations

import math

import pytest
from bridge_runs import COMET_PROJECT, EXPERIMENT, ITERATIONS, RUN_NAME, SAVE_INTERVAL, STEPS
from support.journal_files import journal_lines
from support.readers import (
    comet_archive,
    comet_metrics,
    comet_others,
    mlflow_history,
    read_tb_scalars,
    read_wandb_history,
    wandb_files,
    wandb_run_ids,
)
from support.recent_goodput import assert_recent_goodput_in_mlflow

from primus.tracking.goodput.accounting import EVERY_LOG_STEP, GOODPUT_EVENT
from primus.tracking.goodput.accounting import NAMES as GOODPUT
from primus.tracking.journal.records import BUSY_EVENT
from primus.tracking.measure.progress import (
    AT_EVERY_LOG_STEP,
    CONSUMED_SAMPLES,
    CONSUMED_TOKENS,
    FROM_THE_SECOND_LOG_STEP,
)

pytestmark = pytest.mark.slow

# What Bridge writes at every step of this run (log_interval 1, throughput, memory and level-1 timers on); the
# timers reach the hub through megatron-core's Timers.write, as Megatron's do
TRAIN_TAGS = frozenset({
    "lm loss", "learning-rate", "grad-norm", "loss-scale", "batch-size", "iteration-time", "throughput/tflops",
    "throughput/tflops/device", "memory/mem-allocated-gigabytes", "memory/mem-reserved-gigabytes",
    "memory/mem-max-allocated-gigabytes", "memory/mem-max-reserved-gigabytes", "forward-backward-time",
    "optimizer-time",
})
# Bridge's own start-up patches, and megatron-core's CPU patches serving Bridge as they are
CPU_PATCHES = frozenset({
    "megatron_bridge.cpu.allow_no_cuda", "megatron_bridge.cpu.one_device_during_init",
    "megatron_bridge.cpu.prebuilt_dataset_helpers", "megatron.cpu.cuda_runtime_shims", "megatron.cpu.device_placement",
    "megatron.cpu.cuda_tensor_type_names", "megatron.cpu.eager_jit_fuser", "megatron.cpu.rng_tracker_on_cpu_generator",
    "megatron.cpu.host_memory_stats",
})
# Primus's throughput figures, which Bridge's log_throughput_to_tensorboard turns on (step_perf.py)
PERF_THROUGHPUT = ("perf/tokens_per_sec", "perf/tokens_per_sec_per_gpu", "perf/tflops_per_gpu", "perf/iteration_time_ms")


def test_every_scalar_bridge_writes_reaches_tensorboard_once_per_step(tracked):
    [events] = (tracked.workdir / "tb").glob("events.out.tfevents.*")  # events.out.tfevents.<time>.<host>.<pid>.<n>
    pids = tracked.run_state()["run"]
    assert int(events.name.split(".")[-2]) == pids["delivery_pid"] != pids["pid"]  # ours; Bridge's wrote none
    scalars = read_tb_scalars(tracked.workdir / "tb")
    for tag in TRAIN_TAGS:
        assert [step for step, _ in scalars.get(tag, [])] == STEPS, tag
    console = tracked.console_losses()
    assert [value for _, value in scalars["lm loss"]] == pytest.approx([console[s] for s in STEPS], rel=1e-6)
    # the periodic validation, then Bridge's final validation and test evaluations, all under Bridge's one tag
    assert [value for _, value in scalars["lm loss validation"]] == pytest.approx(
        tracked.console_validation_losses(), rel=1e-6)


def test_the_mlflow_run_is_finished_and_holds_the_consoles_losses(tracked, mlflow_client):
    experiment = mlflow_client.get_experiment_by_name(EXPERIMENT)
    [run] = mlflow_client.search_runs([experiment.experiment_id])  # one: Bridge's own MLflow writer started none
    assert (run.info.status, run.info.run_name) == ("FINISHED", RUN_NAME)
    assert run.data.tags["primus.backend"] == "megatron_bridge"
    # Bridge's own logger.mlflow_tags, checked and recorded as every backend's mlflow_tags; its layout, one process
    expected = {"team": "bridge", "stage": "e2e", "primus.world_size": "1", "primus.parallel.tp": "1",
                "primus.parallel.pp": "1", "primus.parallel.dp": "1", "primus.parallel.cp": "1"}
    assert {k: run.data.tags.get(k) for k in expected} == expected
    assert run.data.params["train.train_iters"] == str(ITERATIONS)  # Bridge's config, flattened
    history = mlflow_history(mlflow_client, run.info.run_id, "lm loss")
    console = tracked.console_losses()
    assert [step for step, _ in history] == STEPS
    assert [value for _, value in history] == pytest.approx([console[s] for s in STEPS], rel=1e-6)
    applied = {patch.split("@")[0] for patch in run.data.tags["primus.patches"].split(",")}
    assert CPU_PATCHES <= applied
    for tag in TRAIN_TAGS:
        assert [step for step, _ in mlflow_history(mlflow_client, run.info.run_id, tag)] == STEPS, tag


def test_comet_gets_every_step_once_from_the_hub_alone_offline(tracked):
    archives = tracked.run_dir() / "comet"  # the run directory's: COMET_MODE=offline, no network
    experiment, messages = comet_archive(archives)  # one archive: Bridge's own comet_ml.Experiment made none
    assert experiment["offline_id"] == tracked.run_state()["comet"]["key"]
    assert (experiment["project_name"], sorted(experiment["tags"])) == (COMET_PROJECT, ["bridge", "e2e"])
    losses = comet_metrics(messages)["lm loss"]
    console = tracked.console_losses()
    assert [step for step, _ in losses] == STEPS
    assert [value for _, value in losses] == pytest.approx([console[s] for s in STEPS], rel=1e-6)
    others = comet_others(messages)
    assert (others["Name"], others["primus/status"]) == (RUN_NAME, "FINISHED")


def test_wandb_gets_every_step_once_from_the_hub_alone(tracked):
    assert len(wandb_files(tracked.workdir / "wandb")) == 1  # Bridge's own wandb.init would make a second run
    assert wandb_run_ids(tracked.workdir / "wandb") == {tracked.run_state()["wandb"]["id"]}  # the hub's run
    history = read_wandb_history(tracked.workdir / "wandb")
    steps = [row["_step"] for row in history if "lm loss" in row]
    assert steps == STEPS
    console = tracked.console_losses()
    assert all(math.isclose(row["lm loss"], console[row["_step"]], rel_tol=1e-6) for row in history if "lm loss" in row)


def test_progress_reaches_every_tracker_with_exact_consumed_tokens(tracked, mlflow_client):
    """Bridge's consumed samples (global batch 2 a step) times its sequence length (128), at every log step; the
    rates from the second."""
    samples = {step: 2 * step for step in STEPS}
    tokens = {step: n * 128 for step, n in samples.items()}
    scalars = {tag: dict(points) for tag, points in read_tb_scalars(tracked.workdir / "tb").items()}
    assert (scalars[CONSUMED_SAMPLES], scalars[CONSUMED_TOKENS]) == (samples, tokens)
    assert all(sorted(scalars[tag]) == STEPS for tag in AT_EVERY_LOG_STEP)
    assert all(sorted(scalars[tag]) == STEPS[1:] for tag in FROM_THE_SECOND_LOG_STEP)
    history = read_wandb_history(tracked.workdir / "wandb")
    assert {row["_step"]: row[CONSUMED_TOKENS] for row in history if CONSUMED_TOKENS in row} == tokens
    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name(EXPERIMENT).experiment_id])
    assert dict(mlflow_history(mlflow_client, run.info.run_id, CONSUMED_TOKENS)) == tokens


def test_recent_goodput_and_slow_steps_read_back_from_mlflow(tracked, mlflow_client):
    """Each window's goodput at every log step; the step time's deviation where judged: from the first (Bridge's
    record gives its iteration time), but not an interval a checkpoint save took part of; the slow steps' running
    total."""
    [run] = mlflow_client.search_runs([mlflow_client.get_experiment_by_name(EXPERIMENT).experiment_id])
    judged = [step for step in STEPS if step == 1 or (step - 1) % SAVE_INTERVAL]
    assert_recent_goodput_in_mlflow(mlflow_client, run.info.run_id, STEPS, judged)


def test_bridge_gets_megatrons_perf_set_with_bridges_own_flops(tracked):
    """Bridge's log_throughput_to_tensorboard turns our throughput figures on, from the second log step. Bridge's
    ``throughput/tflops/device`` is its FLOPs over its interval timer: the same FLOPs over our interval give ours."""
    scalars = {tag: dict(points) for tag, points in read_tb_scalars(tracked.workdir / "tb").items()}
    assert all(sorted(scalars[tag]) == STEPS[1:] for tag in PERF_THROUGHPUT)
    tokens = 2 * 128  # one step of the global batch of 2
    for step in STEPS[1:]:
        seconds = tokens / scalars["perf/tokens_per_sec"][step]  # our interval: one step
        bridges = scalars["throughput/tflops/device"][step] * scalars["iteration-time"][step]
        assert scalars["perf/tflops_per_gpu"][step] * seconds == pytest.approx(bridges, rel=1e-4), step  # TFLOP
        assert scalars["perf/iteration_time_ms"][step] == pytest.approx(seconds * 1e3)
    assert "perf/mfu" not in scalars  # a CPU has no peak


def test_goodput_figures_join_every_log_step_and_count_bridges_saves_and_evaluations(tracked):
    """The run's goodput figures are the core's (the run directory's wall time): every log step carries them,
    cumulative; Bridge's saves (steps 2 and 4, timed from the save patch's start mark) are badput, and so are its
    evaluations, each journaled as an expected pause in steps (the stall alert allows for them)."""
    scalars = {tag: dict(points) for tag, points in read_tb_scalars(tracked.workdir / "tb").items()}
    assert all(sorted(scalars[name]) == STEPS for name in EVERY_LOG_STEP), {n: sorted(scalars.get(n, {})) for n in GOODPUT}
    productive, saves = scalars["goodput/productive_s"], scalars["badput/checkpoint_save_s"]
    assert all(productive[a] <= productive[b] and saves[a] <= saves[b] for a, b in zip(STEPS, STEPS[1:]))
    assert saves[STEPS[0]] == 0 and saves[STEPS[-1]] > 0
    assert all(0 < scalars["goodput/productive_fraction"][step] < 1 for step in STEPS[1:])
    events = [r["d"] for r in journal_lines(tracked.run_dir()) if r["k"] == "e"]
    pauses = [(e["what"], e["on"]) for e in events if e["event"] == BUSY_EVENT]
    validations = len(tracked.console_validation_losses())  # the periodic ones and the final validation and test
    assert validations >= 2 and pauses == [("evaluation", True), ("evaluation", False)] * validations, pauses
    [end] = [e for e in events if e["event"] == GOODPUT_EVENT]  # every evaluation came after the last log step
    assert end["badput/eval_s"] > 0 and end["badput/checkpoint_save_s"] >= saves[STEPS[-1]]
