"""Megatron schema: every upstream megatron-core argument (from the generated table, see
``megatron_table``) plus Primus's own parameters, which upstream's parser does not know."""

from __future__ import annotations

from typing import Any

from primus.backends.megatron.upstream_table import installed_table_path
from primus.config import yaml12
from primus.config.schema import Param, Schema
from primus.config.schemas.tracking import params_for

PRIMUS_PARAMS = params_for("megatron")


# What the tracker toggles mean, beside their declaration: the backend's plan (on Megatron's arguments) and the
# launcher's credential check (on the experiment's params, before anything starts) must decide alike.
def wandb_enabled(args) -> bool:
    if args.disable_wandb is None:  # upstream's own rule when the toggle is not given
        return bool(args.wandb_project)
    return not args.disable_wandb


def mlflow_enabled(args) -> bool:
    return not args.disable_mlflow


# Bounds of upstream arguments whose meaning makes the range obvious. Upstream checks few of them, late
# (a bare assert in validate_args at best): log_interval=0 fails on `iteration % 0` at the first step,
# tensorboard_queue_size=0 makes the writer's queue unbounded (queue.Queue(0)), seed=0 is refused only once the
# process group is up.
# Arguments whose 0 or -1 means "off" (eval_interval, save_interval, exit_interval) are left alone.
_AT_LEAST_1 = (
    # intervals
    "log_interval",
    "tensorboard_log_interval",
    "log_memory_interval",
    # sizes
    "tensorboard_queue_size",
    "micro_batch_size",
    "global_batch_size",
    "seq_length",
    "max_position_embeddings",
    "num_layers",
    "hidden_size",
    "ffn_hidden_size",
    "num_attention_heads",
    "num_query_groups",
    "kv_channels",
    "vocab_size",
    "make_vocab_size_divisible_by",
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "context_parallel_size",
    "expert_model_parallel_size",
    "expert_tensor_parallel_size",
    # a timeout in whole minutes (> 0), and upstream's "positive integer" seed
    "distributed_timeout_minutes",
    "seed",
)
_AT_LEAST_0 = (
    "local_rank",
    "logging_level",
    "eval_iters",
    "lr_warmup_iters",
    "num_workers",
    "lr",
    "min_lr",
    "weight_decay",
    "clip_grad",
)
_PROBABILITIES = ("hidden_dropout", "attention_dropout")
UPSTREAM_BOUNDS: dict[str, dict[str, Any]] = {  # Param's ge/gt/le
    **dict.fromkeys(_AT_LEAST_1, {"ge": 1}),
    **dict.fromkeys(_AT_LEAST_0, {"ge": 0}),
    **dict.fromkeys(_PROBABILITIES, {"ge": 0, "le": 1}),
}


# Bounded upstream arguments the plan checks again on whatever path they came (upstream's own command line too),
# because Primus reads them on every log step
CHECKED_UPSTREAM = [Param("tensorboard_log_interval", "int", **UPSTREAM_BOUNDS["tensorboard_log_interval"])]


# Upstream arguments whose effect Primus extends: said here, not only the spec's purpose
UPSTREAM_HELP = {
    "log_throughput": "Log tokens/s and TFLOP/s throughput. Primus adds a console line every log step from the "
    "second on (tokens/s/GPU, TFLOP/s/GPU, their running averages, MFU where the peak is known, "
    "the ETA), on the last rank, with or without a tracker.",
    "log_progress": "Log progress/ETA. Primus adds its console line (ETA and throughput) as for log_throughput.",
    "tensorboard_dir": "Output directory for event files (**required** when enabled; else `<run dir>/tensorboard`). "
    "Trackers record it as given; the folders Primus chose go in the run's params as "
    "`primus_tensorboard_events_dir` (TensorBoard on) and `primus_traces_dir` (trace upload on, "
    "which points upstream's profiler there).",
}


def upstream_params() -> list[Param]:
    table = yaml12.load_file(installed_table_path())["args"]
    return [
        Param(
            name,
            entry["type"],
            default=entry["default"],
            nullable=entry["default"] is None,
            is_list="nargs" in entry,
            choices=tuple(entry["choices"]) if "choices" in entry else None,
            option=entry.get("option"),
            true_flag=entry.get("true_flag"),
            false_flag=entry.get("false_flag"),
            help=UPSTREAM_HELP.get(name, ""),
            **UPSTREAM_BOUNDS.get(name, {}),
        )
        for name, entry in table.items()
    ]


def schema() -> Schema:
    return Schema("megatron parameter", [*upstream_params(), *PRIMUS_PARAMS])
