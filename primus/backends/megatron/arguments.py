"""The Primus arguments, added to upstream's parser through ``extra_args_provider``.

Spec §1, §3–§5: the tracker toggles, the MLflow options, and the logging options that
megatron-core 0.19.2 dropped (``log_learning_rate_to_tensorboard``, ``log_batch_size_to_tensorboard``,
``log_avg_skip_iterations``, ``log_avg_reset_interval``), which we keep honouring so older configs work.

The toggles take an optional value: ``--disable-wandb`` means true, ``--disable-wandb false`` enables it.
Left out on the command line, TensorBoard and W&B follow upstream's own rule (on when
``--tensorboard-dir`` / ``--wandb-project`` is given) so an upstream command line keeps its meaning;
the YAML presets set all three explicitly, to the spec's default ``true``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from primus.tracking.config import JOURNAL_RETENTIONS

_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f"}


def parse_bool(text: str) -> bool:
    lowered = str(text).strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _toggle(group, flag: str, default: bool | None, help: str) -> None:
    group.add_argument(flag, type=parse_bool, nargs="?", const=True, default=default, metavar="BOOL", help=help)


def add_primus_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    group = parser.add_argument_group(title="primus tracking")
    _toggle(
        group,
        "--disable-tensorboard",
        None,
        "Turn TensorBoard off (true) or on (false). Default: on when --tensorboard-dir is given.",
    )
    _toggle(
        group,
        "--disable-wandb",
        None,
        "Turn Weights & Biases off (true) or on (false). Default: on when --wandb-project is given.",
    )
    _toggle(group, "--disable-mlflow", True, "Turn MLflow off (true, default) or on (false).")
    group.add_argument("--mlflow-run-name", default=None, help="MLflow run name (default: the experiment's run name).")
    group.add_argument(
        "--mlflow-experiment-name",
        default=None,
        help="MLflow experiment name; unset: MLFLOW_EXPERIMENT_NAME, else 'primus'.",
    )
    _toggle(group, "--mlflow-upload-traces", False, "Upload this run's profiler trace files to MLflow.")
    _toggle(group, "--mlflow-upload-logs", False, "Upload this run's log files to MLflow.")
    _toggle(
        group,
        "--mlflow-upload-performance-metrics",
        False,
        "Log the perf/memory/utilisation metric set to MLflow each log step (implies throughput).",
    )
    _toggle(
        group,
        "--mlflow-performance-metrics-across-ranks",
        False,
        "With --mlflow-upload-performance-metrics: memory and utilisation as min/mean/max over ranks "
        "(one small gather of host values per log step).",
    )
    group.add_argument(
        "--peak-tflops",
        type=float,
        default=None,
        help="Dense peak TFLOP/s of one device for the training dtype, for MFU (default: the "
        "built-in table's; no MFU for a device it does not know).",
    )
    _toggle(
        group,
        "--mlflow-upload-tracelens-report",
        False,
        "Generate a trace-analysis report from this run's traces and upload it to MLflow.",
    )
    _toggle(group, "--log-learning-rate-to-tensorboard", True, "Log the learning rate (dropped upstream; honoured).")
    _toggle(group, "--log-batch-size-to-tensorboard", False, "Log the batch size (dropped upstream; honoured).")
    group.add_argument(
        "--log-avg-skip-iterations",
        type=int,
        default=2,
        help="Log entries left out of running averages: the first N (the first log step "
        "counted), so with --log-interval 1 they start at iteration N+1.",
    )
    group.add_argument(
        "--log-avg-reset-interval",
        type=int,
        default=10,
        help="Log entries (not iterations) after which running averages restart.",
    )
    group.add_argument(
        "--primus-run-dir",
        default=None,
        help="This run's directory (journal, run ids, derived tracker dirs); default "
        "<save>/primus when --save is given, else a new folder under $PRIMUS_OUTPUT_ROOT "
        "(default output/megatron).",
    )
    group.add_argument(
        "--primus-exit-deadline",
        type=float,
        default=30.0,
        help="Seconds the process waits at exit for trackers to deliver.",
    )
    group.add_argument(
        "--primus-journal-retention",
        default="keep",
        choices=JOURNAL_RETENTIONS,
        help="keep: the run's journal stays whole; delivered: a closed journal segment is deleted once "
        "every tracker has it.",
    )
    return parser


def compose_extra_args_provider(user_provider):
    """Upstream takes one ``extra_args_provider``: ours first, then the user's own, then the
    experiment's values (PRIMUS_CONFIG) as defaults that the command line still overrides."""

    def provider(parser):
        parser = add_primus_arguments(parser)
        if user_provider is not None:
            parser = user_provider(parser)
        parser.set_defaults(**experiment_defaults())
        return parser

    return provider


def experiment_defaults(environ=os.environ) -> dict[str, Any]:
    """An experiment YAML as upstream's argument defaults: with PRIMUS_CONFIG (set by `primus train` and
    `primus-run --config`), the resolved parameters of its Megatron module, for ``parser.set_defaults``
    (no translation to command-line flags; flags given on the command line still win)."""
    from primus.config.environment import module_params_from_env  # only when parsing: keeps this module light

    return module_params_from_env("megatron", environ) or {}
