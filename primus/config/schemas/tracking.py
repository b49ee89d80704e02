"""Primus's own tracking options, each declared once: name, type, default, bounds, help, and its group
(``primus.upstreams.backends``: a backend has every option of no group and those of the groups it declares).
Every spelling is built from here: each backend's experiment schema, Megatron's argparse group
(``backends/megatron/arguments.py``), TorchTitan's ``metrics`` fields (``backends/torchtitan/metrics_options.py``)
and MaxText's keys (``backends/maxtext/primus_options.py``). Each backend's plan checks the values it was given,
whichever way they came (YAML, upstream's command line, a config file), with ``problems`` below."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from primus.config.schema import Param
from primus.config.schemas.user_tags import as_list, as_mapping, text_problem
from primus.redaction import redact_value
from primus.upstreams.backends import (
    ACROSS_RANKS,
    DISABLE_SWITCHES,
    ENABLE_SWITCHES,
    LOG_FILES,
    LOG_FLAGS,
    ONE_LOGGER_OPTIONS,
    RUN_DIR_ARGUMENT,
    STRAGGLERS,
    TRACES,
    backend_named,
)

JOURNAL_RETENTIONS = (
    "keep",
    "delivered",
)  # primus.tracking.settings.config's (config must not import tracking; a test checks)
GOODPUT_WINDOWS = (60, 300, 900)  # seconds: primus.tracking.settings.config's too
MAX_GOODPUT_WINDOWS, LONGEST_GOODPUT_WINDOW = 8, 7 * 24 * 3600
# for a backend that builds fields or flags; "any" (a tag mapping or list) is text there, read by the plan
PYTHON_TYPES = {"bool": bool, "int": int, "float": float, "str": str, "any": str}


@dataclasses.dataclass(frozen=True)
class Option:
    param: Param
    group: str | None  # None: every backend has it


def _option(name: str, type: Any, default: Any = None, *, help: str, group: str | None = None, **kw: Any) -> Option:
    return Option(Param(name, type, default=default, primus=True, help=help, **kw), group)


OPTIONS = (
    # the tracker toggles in each upstream's own spelling: Megatron's disable_*, TorchTitan's and MaxText's enable_*
    _option(
        "disable_tensorboard",
        "bool",
        nullable=True,
        group=DISABLE_SWITCHES,
        help="Turn TensorBoard off (true) or on (false). Unset: on when tensorboard_dir is given (upstream's rule).",
    ),
    _option(
        "disable_wandb",
        "bool",
        nullable=True,
        group=DISABLE_SWITCHES,
        help="Turn Weights & Biases off (true) or on (false). Unset: on when wandb_project is given (upstream's rule).",
    ),
    _option("disable_mlflow", "bool", True, group=DISABLE_SWITCHES, help="Turn MLflow off (true) or on (false)."),
    _option(
        "enable_mlflow",
        "bool",
        False,
        group=ENABLE_SWITCHES,
        help="Log metrics to MLflow (MLFLOW_TRACKING_URI; unset: a local sqlite store under the output folder).",
    ),
    _option(
        "mlflow_run_name",
        "str",
        nullable=True,
        help="MLflow run name (unset: the run's own name, from its run directory or upstream's run name).",
    ),
    _option(
        "mlflow_experiment_name",
        "str",
        nullable=True,
        help="MLflow experiment name; unset: MLFLOW_EXPERIMENT_NAME, else 'primus'.",
    ),
    _option(
        "mlflow_upload_performance_metrics",
        "bool",
        False,
        help="Log the perf/memory/utilisation metric set (perf/, mem/, sys/) every log step, to every tracker "
        "(turns the throughput calculation on).",
    ),
    _option(
        "mlflow_performance_metrics_across_ranks",
        "bool",
        False,
        group=ACROSS_RANKS,
        help="With mlflow_upload_performance_metrics: memory and utilisation as min/mean/max over ranks "
        "(the previous log step's, through the job's store; off: the logging rank's own).",
    ),
    # the user's own labels for the run (config.schemas.user_tags); unset: their environment variables
    _option(
        "mlflow_tags",
        "any",
        nullable=True,
        help="Tags for the MLflow run, a mapping (YAML) or key=value,key=value; unset: PRIMUS_MLFLOW_TAGS. Every "
        "tracker gets them (W&B in its config's primus_tags, TensorBoard in its run-tags text). Keys under "
        "primus. are Primus's own and refused.",
    ),
    _option(
        "mlflow_description",
        "str",
        nullable=True,
        help="The MLflow run's description (its mlflow.note.content tag); unset: PRIMUS_MLFLOW_DESCRIPTION.",
    ),
    _option(
        "wandb_tags",
        "any",
        nullable=True,
        help="Tags of the W&B run, a list (YAML) or text,text; unset: WANDB_TAGS (TorchTitan: WANDB_RUN_TAGS, "
        "as upstream reads it).",
    ),
    _option(
        "wandb_notes",
        "str",
        nullable=True,
        help="Notes of the W&B run; unset: WANDB_NOTES (TorchTitan: WANDB_RUN_NOTES, as upstream reads it).",
    ),
    _option(
        "primus_stragglers",
        "bool",
        nullable=True,
        group=STRAGGLERS,
        help="With more than one rank: each rank's busy time (not waiting for the others) since the last log step, "
        "gathered through the job's store (no collective); straggler/* metrics one log step later and a console "
        "line naming the slowest rank and its host at 1.1x the median or more (docs/metrics.md, Stragglers). "
        "Unset: on with more than one rank; false turns it off.",
    ),
    _option(
        "peak_tflops",
        "float",
        nullable=True,
        gt=0,
        le=1e6,
        help="Dense peak TFLOP/s of one device for the training dtype, for MFU (e.g. 989.4 for an H100 SXM in "
        "bf16); unset: the built-in table's, and no MFU for a device it does not know.",
    ),
    _option(
        "mlflow_upload_logs",
        "bool",
        False,
        group=LOG_FILES,
        help="Upload this run's log files to MLflow: every rank's console, a stalled run's stacks, and TorchTitan's "
        "structured logs (written under the run directory instead of the dump folder while this is on).",
    ),
    _option(
        "mlflow_upload_traces",
        "bool",
        False,
        group=TRACES,
        help="Upload this run's profiler trace files to MLflow, and Megatron's memory snapshot "
        "(--record-memory-history; written under the run's traces/memory/ while this is on).",
    ),
    _option(
        "mlflow_upload_tracelens_report",
        "bool",
        False,
        group=TRACES,
        help="Write a report analysing this run's profiler traces and upload it to MLflow.",
    ),
    _option(
        "mlflow_upload_checkpoints",
        "bool",
        False,
        help="Upload each checkpoint's files to MLflow beside its manifest (every checkpoint gets a manifest "
        "naming its path either way); slow and costly for large checkpoints: every byte goes through the "
        "tracking server or artifact store.",
    ),
    # the logging options megatron-core 0.19.2 dropped, still honoured so older configs keep working
    _option("log_learning_rate_to_tensorboard", "bool", True, group=LOG_FLAGS, help="Log the learning rate."),
    _option("log_batch_size_to_tensorboard", "bool", False, group=LOG_FLAGS, help="Log the batch size."),
    _option(
        "log_avg_skip_iterations",
        "int",
        2,
        ge=0,
        group=LOG_FLAGS,
        help="Log entries left out of the running averages (`perf/*_avg`, the console's `(avg …)`): the first N "
        "of each process, the first log step counted (it only starts the clock), so with log_interval 1 "
        "averages start at iteration N+1. Applies with every tracker off too.",
    ),
    _option(
        "log_avg_reset_interval",
        "int",
        10,
        ge=1,
        group=LOG_FLAGS,
        help="Log entries (not iterations: they differ when log_interval > 1) after which the running averages "
        "start over.",
    ),
    _option(
        "primus_run_dir",
        "str",
        nullable=True,
        group=RUN_DIR_ARGUMENT,
        help="This run's directory (journal, run ids, derived tracker folders); unset: <save>/primus when save "
        "is given, else a new folder under $PRIMUS_OUTPUT_ROOT (default output/megatron).",
    ),
    _option(
        "primus_exit_deadline",
        "float",
        30.0,
        gt=0,
        le=86400,
        help="Seconds to wait at exit for the trackers to deliver; what they could not deliver stays in the run's "
        "journal for `primus tracking sync`.",
    ),
    # run health (primus/tracking/health/detectors.py): alerts to the console, every tracker and PRIMUS_ALERT_WEBHOOK
    _option(
        "primus_stall_after",
        "float",
        nullable=True,
        gt=0,
        le=1e6,
        help="Seconds without a new log step before a `stalled` alert (with every rank's stacks saved under the "
        "run's stacks/); unset: automatic, from the run's own intervals between log steps, with a start-up "
        "allowance until the first step and more during an evaluation or a checkpoint save (docs/metrics.md, "
        "Health alerts).",
    ),
    _option(
        "primus_loss_spike_mads",
        "float",
        6.0,
        ge=0,
        le=1e6,
        help="A `loss_spike` alert when a logged loss is this many median absolute deviations above the median of "
        "the recent losses (docs/metrics.md, Health alerts); 0 turns it off.",
    ),
    _option(
        "primus_throughput_drop_fraction",
        "float",
        0.5,
        ge=0,
        le=0.99,
        help="A `throughput_drop` alert when tokens/s stays below this fraction of the run's median for several "
        "log steps in a row (docs/metrics.md, Health alerts); 0 turns it off.",
    ),
    # NVIDIA's One-Logger (nv-one-logger), fed from the journal (primus/tracking/trackers/one_logger.py)
    _option(
        "enable_one_logger",
        "bool",
        True,
        group=ONE_LOGGER_OPTIONS,
        help="Record the run's One-Logger telemetry (NVIDIA's nv-one-logger: the `one-logger` extra) into "
        "<run_dir>/one_logger/, beside the trackers.",
    ),
    _option(
        "one_logger_project",
        "str",
        nullable=True,
        group=ONE_LOGGER_OPTIONS,
        help="One-Logger's project; unset: the backend's name.",
    ),
    _option(
        "one_logger_run_name",
        "str",
        nullable=True,
        group=ONE_LOGGER_OPTIONS,
        help="One-Logger's run name (its session tag); unset: the run's name.",
    ),
    _option(
        "one_logger_async",
        "bool",
        False,
        group=ONE_LOGGER_OPTIONS,
        help="Recorded in One-Logger's configuration (export is off the training process either way).",
    ),
    _option(
        "app_tag_run_name",
        "str",
        nullable=True,
        group=ONE_LOGGER_OPTIONS,
        help="One-Logger's application tag name; unset: the One-Logger run name.",
    ),
    _option(
        "app_tag_run_version",
        "str",
        "0.0.0",
        group=ONE_LOGGER_OPTIONS,
        help="One-Logger's application tag version.",
    ),
    # the cluster's own monitoring (primus/tracking/trackers/prometheus.py; README, "Your cluster's monitoring")
    _option(
        "primus_prometheus_pushgateway",
        "str",
        nullable=True,
        help="A Prometheus Pushgateway (http://HOST:PORT) the delivery process pushes the run's latest figures to "
        "at log steps, its status at the end; unset: PRIMUS_PROMETHEUS_PUSHGATEWAY, else none. Alerting rules and "
        "a Grafana dashboard for them: `primus monitoring rules`, `primus monitoring dashboard`.",
    ),
    _option(
        "primus_prometheus_push_interval",
        "float",
        nullable=True,
        gt=0,
        le=86400,
        help="Seconds between two pushes to the Pushgateway at most (log steps in between: their latest figures "
        "go in the next push); unset: PRIMUS_PROMETHEUS_PUSH_INTERVAL, else 1.",
    ),
    _option(
        "primus_prometheus_port",
        "int",
        nullable=True,
        ge=1,
        le=65535,
        help="A port on which each node's delivery process serves /metrics (the latest figures of the runs it "
        "delivers) for a Prometheus that scrapes, e.g. 9464; unset: PRIMUS_PROMETHEUS_PORT, else none.",
    ),
    _option(
        "primus_goodput_windows",
        "any",
        ",".join(map(str, GOODPUT_WINDOWS)),
        help="The windows, in whole seconds, of the recent goodput figures goodput/productive_fraction_<W>s logged "
        "at every log step: a list (YAML) or 60,300,900 (docs/metrics.md, Goodput).",
    ),
    _option(
        "primus_no_progress_restarts",
        "int",
        3,
        ge=0,
        le=1000,
        help="A `no_progress` alert, and the run stopped with exit code 93 (a Slurm requeue then stops), when this "
        "many attempts of its run directory in a row ended without a new checkpoint or a step beyond the last "
        "attempt's (docs/metrics.md, Health alerts); 0 turns it off.",
    ),
    _option(
        "primus_journal_retention",
        "str",
        "keep",
        choices=JOURNAL_RETENTIONS,
        help="keep: the run's journal stays whole (report and sync can replay all of it); delivered: a closed "
        "journal segment is deleted once every tracker of the run has it.",
    ),
)


def params_for(backend: str, *, in_section: bool = True) -> list[Param]:
    """The options ``backend`` has, named as its experiment YAML writes them (TorchTitan's inside ``metrics.``),
    or by their bare names."""
    has = backend_named(backend)
    prefix = has.option_section if in_section else ""
    return [dataclasses.replace(o.param, name=prefix + o.param.name) for o in OPTIONS if has.has(o.group)]


def upstream_keys(backend: str) -> dict[str, str]:
    """Option name -> the key of ``backend``'s own config that stands for it (Bridge's ``logger.mlflow_tags``)."""
    return dict(backend_named(backend).option_keys)


def problems(
    params: Iterable[Param], value_of: Callable[[str], Any], flag: Callable[[str], str] | None = None
) -> list[str]:
    """One line per value outside its type, choices or bounds: the key, the value, what it must be, what it is
    for. ``value_of(name)`` reads a value however the backend holds it; ``flag(name)``, where the backend has a
    command line of flags (Megatron), is how the user writes it there."""
    found = []
    for param in params:
        value = value_of(param.name)
        wrong = value_problem(param.name.rsplit(".", 1)[-1], value)
        if wrong is not None:
            given = f" ({flag(param.name)})" if flag else ""
            found.append(f"{param.name}={redact_value(param.name, value)!r}{given} is invalid: {wrong}")
        elif param.coerce(value)[1] is not None:
            shown = redact_value(param.name, value)
            expects = f"{flag(param.name)} expects" if flag else "expected"
            purpose = f" ({param.help})" if param.help else ""
            found.append(f"{param.name}={shown!r} is invalid: {expects} {param.expected()}{purpose}")
    return found


def value_problem(name: str, value: Any) -> str | None:
    """What is wrong with the value of the option called ``name`` beyond its type (a tag mapping or list's
    contents, a credential in a note), or None."""
    if name in ("mlflow_description", "wandb_notes"):
        return text_problem(name, value)
    read = {"mlflow_tags": as_mapping, "wandb_tags": as_list, "primus_goodput_windows": goodput_windows}.get(name)
    if read is None:
        return None
    try:
        read(value)
    except ValueError as e:
        return str(e)
    return None


def goodput_windows(value: Any) -> tuple[int, ...]:
    """``primus_goodput_windows`` as whole seconds, in order; raises ValueError saying what to write."""
    items = value.split(",") if isinstance(value, str) else value
    fix = f"give 1 to {MAX_GOODPUT_WINDOWS} whole seconds from 1 to {LONGEST_GOODPUT_WINDOW}, e.g. 60,300,900"
    if not isinstance(items, (list, tuple)) or not 0 < len(items) <= MAX_GOODPUT_WINDOWS:
        raise ValueError(fix)
    seconds = [_whole(item) for item in items]
    if not all(s is not None and 0 < s <= LONGEST_GOODPUT_WINDOW for s in seconds):
        raise ValueError(fix)
    return tuple(sorted({s for s in seconds if s is not None}))


def _whole(item: Any) -> int | None:
    if isinstance(item, int) and not isinstance(item, bool):
        return item
    return int(item) if isinstance(item, str) and item.strip().isdigit() else None
