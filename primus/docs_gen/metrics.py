"""docs/metrics.md: Primus's metric-name schema, which metric each `primus report` panel plots per
backend, and how MLflow spells the names it refuses."""

from __future__ import annotations

from primus.config.schemas import FRAMEWORKS
from primus.docs_gen.markdown import code, table
from primus.docs_gen.run_tags import run_tags_section
from primus.report.panels import MFU, PANELS
from primus.tracking.health.detectors import (
    STRAGGLER_MIN_LEAD_S,
    STRAGGLER_RATIO,
    STRAGGLER_STEPS,
    THROUGHPUT_METRICS,
    loss_metrics,
)
from primus.tracking.journal.records import COUNT_METRIC, TAG_PREFIX, AlertKind
from primus.tracking.measure.names import READABLE, SCHEMA, MlflowKeys, is_valid_mlflow_key, mlflow_key
from primus.tracking.measure.perf import PEAK_TFLOPS
from primus.tracking.measure.progress import AT_EVERY_LOG_STEP, ETA_WINDOW, FROM_THE_SECOND_LOG_STEP
from primus.tracking.measure.stragglers import SLOW_RATIO
from primus.upstreams.backends import backend_named


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(code(n + "*" if n.endswith("/") else n) for n in names) or "—"


PEAK_DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")


def _collision_example() -> str:
    keys = MlflowKeys()
    keys("throughput(tps)")
    return keys("throughput_tps")


def render_metrics() -> str:
    schema = table(["Name", "Meaning"], [[code(name), meaning] for name, meaning in SCHEMA.items()])
    panels = table(
        ["Panel", "Primus name", *(backend_named(f).title for f in FRAMEWORKS)],
        [[p.title, _names(p.primus_names), *(_names(p.native(f)) for f in FRAMEWORKS)] for p in (*PANELS, MFU)],
    )
    every = dict.fromkeys([*SCHEMA, *(n for p in PANELS for f in FRAMEWORKS for n in p.native(f))])
    refused = [[code(n), code(mlflow_key(n))] for n in every if not n.endswith("/") and not is_valid_mlflow_key(n)]
    return (
        "\n\n".join(
            [
                "# Metric names",
                "Two kinds of names reach the trackers. Upstream's own names pass through unchanged (Megatron's "
                "`lm loss`, `learning-rate`, `grad-norm`; TorchTitan's `loss_metrics/global_avg_loss`, `throughput(tps)`; "
                "MaxText's `learning/loss`), so existing dashboards keep working. Primus's own metrics are named "
                "`<group>/<what>[_<unit>]`:",
                schema,
                "Where they go, on every backend: `mlflow_upload_performance_metrics` (with MLflow on) turns the "
                "`perf/*`, `mem/*` and `sys/*` set on, and every enabled tracker gets it, like every other metric "
                "(TensorBoard, W&B, MLflow, Comet, plugin trackers); the option decides what is measured, not where it goes.",
                "## Progress",
                f"The progress figures ({_names(AT_EVERY_LOG_STEP)} at every log step, {_names(FROM_THE_SECOND_LOG_STEP)} "
                "from a process's second log step, which ends its first measured interval) are always on, on every "
                "backend, to every tracker: they cost a few additions per log step (on the hub's thread for Megatron, "
                "TorchTitan and MaxText, from what the training thread read at the step; on the training thread for "
                "Megatron-Bridge, in its `end_step`) and no option turns them off; "
                "`mlflow_upload_performance_metrics` decides the rest of the `perf/*` set only. Tokens are samples times "
                "the sequence length. Consumed counts continue after a resume: Megatron's are upstream's "
                "`consumed_train_samples` (restored from the checkpoint, exact under batch-size ramp-up too) and its ETA "
                "counts to `train_iters`; TorchTitan's are upstream's `step` (restored from the checkpoint) times the "
                "global batch (`training.global_batch_size`, or `local_batch_size` times the data-parallel degree when "
                "it is -1), tokens by `training.seq_len`, ETA to `training.steps`; MaxText's are its step + 1 (steps "
                "count from 0, restored from the checkpoint) times `global_batch_size_to_train_on`, tokens by "
                "`max_target_length`, ETA to `steps` (under `enable_rampup_batch_size` the full batch from step 0, an "
                "upper bound); Megatron-Bridge's are its `train_state.consumed_train_samples` (restored from the checkpoint), "
                "tokens by the model's `seq_length`, ETA to `train.train_iters`. `progress/elapsed_s` is the process's "
                "own (a resumed job "
                f"counts from its restart). The ETA uses the step time over the last {ETA_WINDOW} log intervals, so a checkpoint "
                "save or an evaluation moves it for a few log steps only; Megatron's `[primus]` console line prints the "
                "same ETA. In W&B, `progress/consumed_tokens` is defined as an x-axis (`define_metric`, its summary the "
                "maximum): the `progress/*` charts are drawn against it and any other chart can switch its x-axis to it; "
                "every other metric keeps W&B's step, the iteration.",
                "The `mem/*` and `sys/*` names are the logging rank's own readings: the device's allocator counters "
                "(`mem/allocated_gib`, `mem/reserved_gib`, `mem/peak_allocated_gib`) read at the log step, the host's "
                "memory (`mem/host_*`) and every `sys/*` figure the latest of a sample a background thread takes "
                "every second (read on the training thread, they cost it ~150 µs per logged step). With "
                "`mlflow_performance_metrics_across_ranks` (Megatron, TorchTitan `metrics.`; with "
                "`mlflow_upload_performance_metrics`) each of "
                "them also goes out as `<name>/min`, `<name>/mean` and `<name>/max` over every rank's reading at the "
                "previous log step (through the job's store, as the straggler figures below; none at the first log "
                "step). Tokens/s and TFLOP/s per GPU are not gathered: they "
                "are computed from the job's global batch over the log interval, so they are the job's figures already.",
                "## Stragglers",
                "With more than one rank (Megatron, TorchTitan, Megatron-Bridge; `primus_stragglers: false` turns it "
                "off: Megatron `--primus-stragglers false`, TorchTitan `metrics.primus_stragglers`) every rank measures its busy time since the last log step: the wall time "
                "minus the time its training thread spent blocked waiting in a collective (`torch.distributed`'s "
                "`Work.wait`, which gloo's blocking calls, FSDP's all-gathers and reduce-scatters and Megatron's "
                "gradient buckets wait through; on a GPU, CUDA events around each wait and at each log step, read at "
                "the log step). A rank slowed by anything (a slow data loader, a throttled device, a noisy "
                "neighbour, a sleep) arrives late at the next collective while the others wait there, so its busy "
                "time is the largest. At every log step each rank's figures (with the across-rank memory and "
                "utilisation when those are on too, and its host's name) go through the job's own key-value store "
                "(torch.distributed's rendezvous TCPStore), from a thread of Primus's, never a collective: the "
                "training thread only queues them. The logging rank's thread gathers a log step's figures while "
                "training goes on, waiting at most 5 s, and logs the `straggler/*` names above at the next log step "
                "(one log step later: from the third log step on, the first only starting the clock), with "
                "`straggler/missing_ranks`, the ranks whose figures did not come within the 5 s (named in a warning; "
                "not waited for again until they answer). When the "
                f"slowest rank is at least {SLOW_RATIO:g}x the median, that rank prints "
                "`[primus] slowest rank 17 (node-3): 1.34x the median` as soon as it is gathered (each rank's "
                "figures carry its host's name). With two "
                "ranks the median is their mean, so the ratio stays under 2. A rank that stays the slowest (at "
                f"{STRAGGLER_RATIO:g}x the median and {STRAGGLER_MIN_LEAD_S:g} s ahead of it, on most of the last "
                f"{STRAGGLER_STEPS} log steps) is a `straggler` alert naming it and its host (journaled once as a "
                "`rank_hosts` event), and `straggler_resolved` "
                "when it is over (Health alerts). Where upstream times each rank's batch loading (TorchTitan's data "
                "loading; Megatron's `batch-generator` timer at `--timing-log-level 2`) each rank's data wait travels "
                "with its busy time, and `straggler/slowest_data_wait_s` is the slowest rank's: over half its busy "
                "time, the data loader is the cause, and the alert says so. Not counted as waiting: "
                "`wait_tensor` of torch's functional collectives (DTensor's redistributions: TorchTitan's tensor "
                "parallelism and gradient-norm clipping), which wait in C++; Megatron's tensor-parallel all-reduces "
                "and the point-to-point waits between pipeline stages are waits. The training thread's cost per log "
                "step is queueing one row: ~5-30 µs of CPU per rank from 2 to 256 ranks "
                "(`benchmarks/rank_gather.py`), where the all_gather it replaced took 0.6 ms of wall at 2 ranks "
                "and 20 ms at 8 on a 2-core host. Counting waits adds a few "
                "µs to each collective wait of the training thread while it is on. MaxText (JAX) is not covered: "
                "its CPU runs are one process, and it has no `torch.distributed` waits to count.",
                "## Peak FLOP/s behind `perf/mfu`",
                "Dense (no sparsity) peak TFLOP/s of one device, from the vendors' datasheets, matched against the device "
                "name torch or JAX reports (first row whose key the name contains). The run's `peak_tflops` option "
                "(Megatron `--peak-tflops`, TorchTitan `metrics.peak_tflops`, MaxText `peak_tflops=`) overrides it; a device "
                "or dtype with neither has no MFU. An MI250X module is two devices to torch: its row is per device.",
                table(
                    ["Device name contains", *PEAK_DTYPES],
                    [
                        [code(key), *(f"{peaks[d]:g}" if d in peaks else "—" for d in PEAK_DTYPES)]
                        for key, peaks in PEAK_TFLOPS
                    ],
                ),
                "## Averages and the console",
                "The `_avg` figures are ratios of sums (total work over total time) over a window of log entries. "
                "Megatron: the first log step of each process only starts the clock; the first `log_avg_skip_iterations` "
                "log entries (that one counted) are left out, so with `log_interval` 1 averages start at iteration N+1, "
                "and the window starts over once it holds `log_avg_reset_interval` log entries (entries, not "
                "iterations). With `log_throughput` or `log_progress`, the last rank prints these figures and the ETA on "
                "one `[primus]` console line per log step, whether or not any tracker is on. TorchTitan and MaxText "
                "print their own console figures (TorchTitan: tps, tflops, mfu; MaxText: TFLOP/s/device, "
                "Tokens/s/device) and take no `log_avg_*` options.",
                "Megatron's `samples vs steps` (consumed samples at each TensorBoard step), which upstream sends only "
                "to its own W&B writer, reaches every tracker with the step's other scalars.",
                "## Health alerts",
                'The run\'s health detectors (README, "When a run gets stuck") read the loss from the first of '
                f"{_names(loss_metrics())} a step holds and the throughput from {_names(THROUGHPUT_METRICS)}. An alert "
                f"reaches MLflow as the tag `{TAG_PREFIX}<kind>` (`iteration N: text`, the latest of each kind) and the "
                f"metric `{COUNT_METRIC}` (how many alerts the run has had, at the alert's iteration); W&B as "
                "`run.alert` and the same tag in the run summary; TensorBoard as the text "
                f"`{TAG_PREFIX}<kind>`. Kinds: {', '.join(code(k.value) for k in AlertKind)}.",
                run_tags_section(),
                "## What `primus report` plots",
                "Each panel plots, per run, the first of these names the run's journal holds: Primus's name first, then "
                "the run's backend's (from the `primus.backend` tag in `meta.json`; every backend's when it is missing). "
                "A name ending in `*` is a prefix (TorchTitan names its learning rate after the optimizer: `lr/AdamW`). "
                "Upstream's byte counts are shown in GiB. MFU is not plotted: it is a column of `primus report --format "
                "csv|json` (one row per run: steps, final loss, median tokens/s, TFLOP/s and MFU after warm-up, peak "
                "memory, wall time), as a fraction (TorchTitan's percentage divided by 100).",
                panels,
                "## MLflow spelling",
                "TensorBoard and W&B receive every name as it is. MLflow (and Databricks) accept only letters, digits, "
                "`_ - . /` and space in a key, at most 250 characters, no `..` or leading `/`: other names are rewritten "
                "readably, character by character:",
                table(
                    ["In the name", "In the MLflow key"],
                    [[code(bad), code(good)] for bad, good in READABLE] + [["any other character", code("_")]],
                ),
                "then runs of `_` become one, `_` and spaces are trimmed at each `/`, and empty, `.` and `..` parts are "
                "dropped. A name keeps its key for the whole run (the map is kept in the run directory's `run.json`, so "
                "a resumed job and `primus tracking sync` use it too). Only when two names of one run would get the "
                "same key (`throughput(tps)` and `throughput_tps`) does the later one get 8 hex digits of its SHA-1 "
                f"appended ({code(_collision_example())}). The names above that MLflow refuses:",
                table(["Name", "MLflow key"], refused),
            ]
        )
        + "\n"
    )
