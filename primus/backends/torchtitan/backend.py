"""TorchTitan as Primus sees it: entry point ``torchtitan`` of the group ``primus.backends``."""

from primus.upstreams.backends import (
    ACROSS_RANKS,
    DATA_WAIT_SHARE,
    ENABLE_SWITCHES,
    ITERATION_S,
    LEARNING_RATE,
    LOG_FILES,
    LOSS,
    MEMORY,
    MFU,
    ONE_LOGGER_OPTIONS,
    STRAGGLERS,
    TFLOPS,
    TOKENS_PER_SEC,
    TRACES,
    Backend,
)
from primus.upstreams.torchtitan import TORCHTITAN

PATCHES = "primus.backends.torchtitan.patches"

BACKEND = Backend(
    name="torchtitan",
    title="TorchTitan",
    position=2,
    upstream=TORCHTITAN,
    patch_modules=tuple(
        f"{PATCHES}.{m}_patches"
        for m in ("cpu", "config_manager", "metrics_processor", "checkpoint", "validation", "structured_logs")
    ),
    metric_names={
        LOSS: ("loss_metrics/global_avg_loss",),
        LEARNING_RATE: ("lr/",),
        TOKENS_PER_SEC: ("throughput(tps)",),
        TFLOPS: ("tflops",),
        MEMORY: ("memory/max_reserved(GiB)", "memory/max_active(GiB)"),
        MFU: ("mfu(%)",),
        ITERATION_S: ("time_metrics/end_to_end(s)",),  # its log interval over its log frequency
        DATA_WAIT_SHARE: ("time_metrics/data_loading(%)",),  # of its log interval
    },
    metric_scale={"mfu(%)": 0.01, "time_metrics/data_loading(%)": 0.01},
    launch_rules_class="primus.backends.torchtitan.launch_rules:TorchTitanLaunchRules",
    session_class="primus.backends.torchtitan.session:TorchTitanTracking",
    entry_module="primus.backends.torchtitan",
    schema_builder="primus.backends.torchtitan.schema:schema",
    upstream_table_finder="primus.backends.torchtitan.schema:table",
    option_groups=frozenset({ONE_LOGGER_OPTIONS, ENABLE_SWITCHES, ACROSS_RANKS, STRAGGLERS, LOG_FILES, TRACES}),
    option_section="metrics.",  # beside upstream's own metrics fields
    upstream_key_kind="torchtitan config field",
)
