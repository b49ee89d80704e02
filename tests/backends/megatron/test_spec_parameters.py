"""Every Megatron parameter of the spec (§1–§6) and its observable effect on real upstream runs.

The runs are the toggle combinations of megatron_tracking_runs.py (shared with test_tracking_toggles.py);
a parameter's effect is shown against a run without it. Where each parameter is checked:

| parameter (spec §)                              | run(s)            | effect asserted                                   |
|-------------------------------------------------|-------------------|---------------------------------------------------|
| disable_tensorboard / _wandb / _mlflow (§1)     | every combination | test_tracking_toggles.py                          |
| log_interval (§2)                               | tb_wandb vs all   | console iteration lines 1,3 of 4 vs every one     |
| log_throughput (§2)                             | all vs tb_wandb   | tokens/s and TFLOP/s lines, perf/* tags           |
| log_progress (§2)                               | resume            | test_tracking_resume.py: progress.txt, ETA line   |
| log_params_norm, log_num_zeros_in_grad (§2)     | tb vs wandb       | params-norm, num-zeros tags and console fields    |
| log_avg_skip_iterations, _reset_interval (§2)   | all, wandb, mlflow| perf/*_avg from iteration 3 / per interval / over window |
| log_throughput, log_avg_* with trackers off (§2)| none              | console tokens/s, (avg ...) and ETA lines         |
| timing_log_level, timing_log_option (§2)        | tb, mlflow vs all | per-iteration timer lines, (min, max) vs max      |
| logging_level (§2)                              | tb vs none        | upstream's DEBUG records on the console           |
| tensorboard_dir (§3)                            | tb, none          | derived under the run dir; given but disabled: none |
|                                                 | mlflow, all       | recorded as given, beside the folders Primus chose |
| tensorboard_log_interval (§3)                   | tb_wandb          | steps 2 and 4 of 4                                |
| tensorboard_queue_size (§3)                     | tb                | the TensorBoard writer's queue (run meta.json)    |
| log_*_to_tensorboard switches (§3)              | tb, wandb vs all  | their tags present / learning-rate, loss-scale gone |
| wandb_project, _exp_name, _entity, _save_dir (§4)| all              | the W&B run record and where its file is          |
| mlflow_run_name, mlflow_experiment_name (§5)    | all               | the MLflow run's name and experiment              |
| mlflow_upload_performance_metrics (§5)          | all, mlflow, tb   | mem/*, sys/* in every tracker; implies perf/*; ignored with MLflow off |
| mlflow_upload_logs, _traces, _tracelens (§5)    | mlflow            | this run's files as MLflow artifacts              |
| enable_one_logger and its options (§6)          | all vs tb         | One-Logger's records name the project, run, tags  |
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from megatron_tracking_runs import (
    MEMORY,
    PERF,
    PERF_AVG,
    PERF_STEPS,
    RUNS,
    SAMPLES_VS_STEPS,
    SYSTEM,
    TIMERS_LEVEL_1,
    finished,
    mlflow_runs,
    result,
    start,
    tb_event_files,
    tb_steps,
    tb_values,
    wandb_steps,
    wandb_values,
)
from support.journal_files import run_dirs_under
from support.readers import mlflow_history, wandb_files, wandb_records

from primus.tracking.measure.names import mlflow_key

pytestmark = pytest.mark.slow

USED = ("all", "tb", "wandb", "mlflow", "tb_wandb", "none")
_CONSUMED = re.compile(r"iteration\s+(\d+)/\s*\d+ \| consumed samples:\s+(\d+)")
_UPSTREAM_ITERATION = re.compile(r"iteration\s+(\d+)/\s*\d+ \| consumed samples")
MISSING_ONE_LOGGER = "One-Logger is on (enable_one_logger) but nv-one-logger is not installed"


@pytest.fixture(scope="module")
def run_of(megatron_run, mlflow_server):
    start(megatron_run, mlflow_server.uri, *USED)

    def get(name):
        run = result(megatron_run, mlflow_server.uri, name)
        assert run.returncode == 0, run.explain()
        return run

    return get


def root(run):
    return run.log_path.parent


def only_mlflow_run(client, name):
    """The MLflow run of catalogue run ``name``, once its training has ended (a test may ask before it asked for
    the training itself: the runs start in the background)."""
    assert finished(name).returncode == 0
    [run] = mlflow_runs(client, RUNS[name].experiment)
    return run


# -- §2 console and step logging -------------------------------------------------------------
def test_log_interval_sets_the_console_cadence(run_of):
    # upstream prints the first iteration too; then every log_interval-th
    assert [int(i) for i in _UPSTREAM_ITERATION.findall(run_of("tb_wandb").output)] == [1, 3]
    assert [int(i) for i in _UPSTREAM_ITERATION.findall(run_of("all").output)] == [1, 2, 3]


def test_log_throughput_prints_and_logs_throughput(run_of):
    with_it, without = run_of("all").output, run_of("tb_wandb").output
    assert "throughput per GPU (TFLOP/s/GPU)" in with_it and "[primus] iteration 3/3 | tokens/s/GPU" in with_it
    assert "TFLOP/s/GPU" not in without and "tokens/s" not in without
    assert set(PERF) <= set(wandb_steps(root(run_of("all"))))  # without it: test_tracking_resume.py's MLflow run


def test_params_norm_and_zeros_in_grad(run_of):
    tb = tb_steps(root(run_of("tb")))
    assert tb["params-norm"] == tb["num-zeros"] == [1, 2, 3]
    assert "params norm:" in run_of("tb").output and "num zeros:" in run_of("tb").output
    without = run_of("wandb")
    assert not {"params-norm", "num-zeros"} & set(wandb_steps(root(without)))
    assert "params norm:" not in without.output and "num zeros:" not in without.output


def test_running_averages_skip_and_reset(run_of, mlflow_client):
    # default skip 2: the log entries at iterations 1 (clock start) and 2 are warm-up; the average starts at 3
    all_root = root(run_of("all"))
    for avg in PERF_AVG:
        assert wandb_steps(all_root)[avg] == [3]
        assert wandb_values(all_root, avg) == pytest.approx({3: wandb_values(all_root, avg.removesuffix("_avg"))[3]})
    # skip 0, reset every interval: each average is that interval's own figure
    wandb_root = root(run_of("wandb"))
    for avg in PERF_AVG:
        assert wandb_values(wandb_root, avg) == pytest.approx(wandb_values(wandb_root, avg.removesuffix("_avg")))
    # skip 0, reset 10: the average at step 3 covers the intervals ending at steps 2 and 3 (once that run has ended)
    run_id = only_mlflow_run(mlflow_client, "mlflow").info.run_id
    times = dict(mlflow_history(mlflow_client, run_id, "perf/iteration_time_ms"))
    averages = dict(mlflow_history(mlflow_client, run_id, "perf/iteration_time_ms_avg"))
    assert averages[2] == pytest.approx(times[2])
    assert averages[3] == pytest.approx((times[2] + times[3]) / 2)
    assert averages[3] != pytest.approx(times[3])


_CONSOLE_PERF = re.compile(r"\[primus\] iteration (\d+)/3 \| tokens/s/GPU ([\d.]+)(?: \(avg ([\d.]+)\))? \| "
                           r"TFLOP/s/GPU [\d.]+(?: \(avg [\d.]+\))? \| ETA \d+:\d\d:\d\d")


def test_console_figures_with_every_tracker_off(run_of):
    # no tracker at all: tokens/s, their averages and the ETA on the console, from the second log step
    # (the first starts the clock); skip 1 puts the first average at iteration 2, reset 1 makes each
    # average its own interval's figure
    none = run_of("none")
    lines = _CONSOLE_PERF.findall(none.output)
    assert [int(i) for i, *_ in lines] == [2, 3], none.output
    for _, rate, avg in lines:
        assert avg == rate


def test_samples_vs_steps_reaches_every_tracker(run_of, mlflow_client):
    # upstream sends it to its own W&B writer only (which the hub replaces): consumed samples per step
    all_run = run_of("all")
    consumed = {int(i): float(n) for i, n in _CONSUMED.findall(all_run.output)}
    assert sorted(consumed) == [1, 2, 3], all_run.explain()
    assert wandb_values(root(all_run), SAMPLES_VS_STEPS) == consumed
    assert tb_values(root(all_run), SAMPLES_VS_STEPS) == consumed
    run_id = only_mlflow_run(mlflow_client, "all").info.run_id
    assert dict(mlflow_history(mlflow_client, run_id, mlflow_key(SAMPLES_VS_STEPS))) == consumed


def test_timing_log_level_and_option(run_of):
    # level 1 adds the per-iteration timers to the console; the option picks how ranks are summarised
    assert re.search(r"timers:\(min, max\) time across ranks \(ms\):\n\s+forward-backward", run_of("tb").output)
    assert re.search(r"timers:max time across ranks \(ms\):\n\s+forward-backward", run_of("mlflow").output)
    assert not re.search(r"time across ranks \(ms\):\n\s+forward-backward", run_of("all").output)


def test_logging_level(run_of):
    assert "DEBUG:megatron" in run_of("tb").output  # --logging-level 10
    assert "DEBUG:" not in run_of("none").output


# -- §3 TensorBoard ----------------------------------------------------------------------------
TB_SWITCHES = {
    "log_timers_to_tensorboard": (*TIMERS_LEVEL_1, "iteration-time", "throughput"),
    "log_memory_to_tensorboard": MEMORY,
    "log_world_size_to_tensorboard": ("world-size",),
    "log_validation_ppl_to_tensorboard": ("lm loss validation ppl",),
    "log_batch_size_to_tensorboard": ("batch-size",),
}


@pytest.mark.parametrize("switch", TB_SWITCHES)
def test_tensorboard_switch_adds_its_tags(run_of, switch):
    on, off = tb_steps(root(run_of("tb"))), tb_steps(root(run_of("all")))
    tags = set(TB_SWITCHES[switch])
    assert tags <= set(on) and not tags & set(off)


def test_learning_rate_and_loss_scale_switches_remove_their_tags(run_of):
    assert {"learning-rate", "loss-scale"} <= set(wandb_steps(root(run_of("all"))))
    assert not {"learning-rate", "loss-scale"} & set(wandb_steps(root(run_of("wandb"))))


def test_tensorboard_log_interval(run_of):
    assert tb_steps(root(run_of("tb_wandb")))["lm loss"] == [2, 4]  # of 4 iterations
    assert tb_steps(root(run_of("all")))["lm loss"] == [1, 2, 3]


def test_tensorboard_dir_derived_or_ignored(run_of):
    tb = run_of("tb")
    [events] = tb_event_files(root(tb))
    assert events.parent.name == "tensorboard" and events.parent.parent.parent.name == "megatron"
    assert f"tensorboard_dir not set: TensorBoard events go to {events.parent.relative_to(root(tb))}" in tb.output
    none = run_of("none")
    assert not (root(none) / "tb").exists()
    assert "disable_tensorboard is true: no event files are written to tb" in none.output


def test_tensorboard_dir_is_recorded_as_given_beside_the_folders_primus_chose(run_of, mlflow_client):
    # trace upload points upstream's args.tensorboard_dir at <run>/traces/profiler (its profiler writes beside
    # it); the trackers record the user's setting, and the folders under their own names
    mlflow_run = run_of("mlflow")
    [run_dir] = run_dirs_under(root(mlflow_run))
    params = only_mlflow_run(mlflow_client, "mlflow").data.params
    assert (params["tensorboard_dir"], params["primus_traces_dir"]) == ("tb-mine", str((run_dir / "traces").absolute()))
    assert "primus_tensorboard_events_dir" not in params  # TensorBoard is off
    # TensorBoard on, its folder derived: W&B's config and MLflow's params say so, and that none was given
    all_run = run_of("all")
    [events] = {p.parent for p in tb_event_files(root(all_run))}
    config = wandb_config(root(all_run))
    assert (config["tensorboard_dir"], config["primus_tensorboard_events_dir"]) == (None, str(events))
    assert "primus_traces_dir" not in config
    all_params = only_mlflow_run(mlflow_client, "all").data.params
    assert all_params["primus_tensorboard_events_dir"] == str(events)


def wandb_config(root_: Path) -> dict:
    """The W&B run's config, as its offline run file holds it (every config record, in order)."""
    [run_file] = wandb_files(root_)
    out = {}
    for record in wandb_records(run_file):
        kind = record.WhichOneof("record_type")
        items = record.run.config.update if kind == "run" else record.config.update if kind == "config" else ()
        out.update({item.key: json.loads(item.value_json) for item in items})
    return out


def test_tensorboard_queue_size(run_of):
    [meta] = root(run_of("tb")).rglob("meta.json")
    assert json.loads(meta.read_text())["tensorboard"]["queue_size"] == 7


# -- §4 W&B, §5 MLflow -------------------------------------------------------------------------
def test_wandb_names_and_save_dir(run_of):
    all_root = root(run_of("all"))
    [run_file] = wandb_files(all_root)
    assert run_file.is_relative_to(all_root / "my-wandb")
    [record] = [r.run for r in wandb_records(run_file) if r.WhichOneof("record_type") == "run"]
    assert (record.project, record.display_name, record.entity) == ("h6-project", "h6-all-wandb", "h6-team")


def test_mlflow_run_and_experiment_names(run_of, mlflow_client):
    run_of("all")
    assert only_mlflow_run(mlflow_client, "all").info.run_name == "h6-all-run"


def test_mlflow_performance_metrics_go_to_every_tracker(run_of, mlflow_client):
    """One rule on every backend: the set is computed when MLflow uploads it, and every tracker gets it."""
    all_root = root(run_of("all"))
    assert set(SYSTEM) <= set(only_mlflow_run(mlflow_client, "all").data.metrics)
    for steps in (tb_steps(all_root), wandb_steps(all_root)):
        assert {tag: steps[tag] for tag in steps if tag.startswith(("mem/", "sys/"))} == {t: PERF_STEPS for t in SYSTEM}
    # without --log-throughput: the perf upload turns the throughput calculation on
    assert set(PERF) <= set(only_mlflow_run(mlflow_client, "mlflow").data.metrics)
    # MLflow off: ignored, and said so
    tb = run_of("tb")
    assert ("mlflow_upload_performance_metrics, mlflow_upload_logs ignored: MLflow is off (disable_mlflow: true)" in tb.output)


def test_mlflow_uploads_this_runs_traces(run_of, mlflow_client):
    run_of("mlflow")
    run = only_mlflow_run(mlflow_client, "mlflow")
    artifacts = [a.path for a in mlflow_client.list_artifacts(run.info.run_id, "traces")]
    assert artifacts, f"no traces uploaded; the profiler wrote {sorted(root(run_of('mlflow')).rglob('*.json.gz'))}"


def test_mlflow_uploads_upstreams_memory_snapshot_with_the_traces(run_of, mlflow_client, tmp_path):
    """--record-memory-history: upstream's last rank dumps the allocator's snapshot at each log step, to
    --memory-snapshot-path, which the trace upload points into the run's traces/memory/ (on a CPU host, torch's
    snapshot of no device)."""
    [run_dir] = run_dirs_under(root(run_of("mlflow")))
    written = run_dir / "traces" / "memory" / "snapshot.pickle"
    assert written.is_file() and not (root(run_of("mlflow")) / "snapshot.pickle").exists()
    run = only_mlflow_run(mlflow_client, "mlflow")
    assert run.data.params["memory_snapshot_path"] == "snapshot.pickle"  # as the user gave it (upstream's default)
    assert [a.path for a in mlflow_client.list_artifacts(run.info.run_id, "traces/memory")] == [
        "traces/memory/snapshot.pickle"]
    uploaded = Path(mlflow_client.download_artifacts(run.info.run_id, "traces/memory/snapshot.pickle", str(tmp_path)))
    assert uploaded.read_bytes() == written.read_bytes()


def test_mlflow_uploads_this_runs_logs(run_of, mlflow_client, tmp_path):
    console = run_of("mlflow").output
    run = only_mlflow_run(mlflow_client, "mlflow")
    assert [a.path for a in mlflow_client.list_artifacts(run.info.run_id, "logs")] == ["logs/rank_0.log"]
    text = Path(mlflow_client.download_artifacts(run.info.run_id, "logs/rank_0.log", str(tmp_path))).read_text()
    # the console from argument validation on: upstream's prints and logging records, Primus's own lines
    for line in ("[after model, optimizer, and learning rate scheduler are built] datetime:",
                 "INFO:megatron.core.optimizer_param_scheduler:> learning rate decay style: cosine",
                 "[primus] INFO disable_tensorboard is true: no event files are written to tb-mine",
                 "timers:max time across ranks (ms):"):
        assert line in text and line in console, line
    assert [int(i) for i in _UPSTREAM_ITERATION.findall(text)] == [1, 2, 3]


def test_mlflow_uploads_a_trace_report(run_of, mlflow_client, tmp_path):
    # our own report, not AMD's TraceLens (not on PyPI): see primus/profiling/trace_report.py
    run_of("mlflow")
    run = only_mlflow_run(mlflow_client, "mlflow")
    reports = sorted(a.path for a in mlflow_client.list_artifacts(run.info.run_id, "reports"))
    assert reports == ["reports/torch_profile__rank-0.trace_report.csv", "reports/torch_profile__rank-0.trace_report.md"]
    mlflow_client.download_artifacts(run.info.run_id, "reports", str(tmp_path))
    markdown = (tmp_path / "reports" / "torch_profile__rank-0.trace_report.md").read_text()
    assert "# Trace report: torch_profile/rank-0.json.gz" in markdown
    assert "| profiled steps | 1 (#1) |" in markdown and "`aten::mm`" in markdown  # profile steps 1 to 2: one step


# -- §6 One-Logger -----------------------------------------------------------------------------
def test_one_logger_records_with_the_options_given(run_of):
    [run_dir] = run_dirs_under(root(run_of("all")))
    [attempt] = (run_dir / "one_logger").glob("attempt-*.jsonl")
    records = [json.loads(line) for line in attempt.read_text().splitlines()]
    [init] = [r["event"]["attributes"] for r in records if r.get("event", {}).get("name") == "one_logger_initialization"]
    assert init["session_tag"] == "h6-one"
    assert {"one_logger_project:h6", "one_logger_run_name:h6-one", "one_logger_async:True", "app_tag_run_name:h6-app",
            "app_tag_run_version:1.2.3"} <= set(init["custom_metadata"])
    assert MISSING_ONE_LOGGER not in run_of("all").output  # nv-one-logger is installed (make setup)
    [tb_dir] = run_dirs_under(root(run_of("tb")))
    assert not (tb_dir / "one_logger").exists()  # --no-one-logger