"""Megatron (megatron-core's ``megatron.training``) as Primus sees it: entry point ``megatron`` of the group
``primus.backends``."""

from primus.upstreams.backends import (
    ACROSS_RANKS,
    DATA_WAIT_S,
    DISABLE_SWITCHES,
    ITERATION_S,
    LEARNING_RATE,
    LOG_FILES,
    LOG_FLAGS,
    LOSS,
    MEMORY,
    RUN_DIR_ARGUMENT,
    STRAGGLERS,
    TFLOPS,
    TRACES,
    Backend,
)
from primus.upstreams.megatron import MEGATRON

PATCHES = "primus.backends.megatron.patches"

BACKEND = Backend(
    name="megatron",
    title="Megatron",
    position=1,
    upstream=MEGATRON,
    # the secret-name check (secret_arguments) wraps validate_args outside the planning (arguments): it refuses a
    # secret before the plan is made
    patch_modules=tuple(
        f"{PATCHES}.{m}_patches"
        for m in ("cpu", "arguments", "global_vars", "training_log", "secret_arguments", "checkpoint")
    ),
    metric_names={
        LOSS: ("lm loss",),
        LEARNING_RATE: ("learning-rate",),
        TFLOPS: ("throughput",),
        MEMORY: ("mem-max-allocated-bytes", "mem-allocated-bytes"),
        ITERATION_S: ("iteration-time",),
        DATA_WAIT_S: ("batch-generator-time",),  # its timer (--timing-log-level 2), max over ranks
    },
    metric_scale={"mem-max-allocated-bytes": 2**-30, "mem-allocated-bytes": 2**-30},
    first_log_starts_clock=True,  # its training_log's first call in a process has no interval yet
    launch_rules_class="primus.backends.megatron.launch_rules:MegatronLaunchRules",
    session_class="primus.backends.megatron.session:MegatronTracking",
    entry_module="primus.backends.megatron",
    schema_builder="primus.backends.megatron.schema:schema",
    upstream_table_finder="primus.backends.megatron.upstream_table:installed_table_path",
    option_groups=frozenset(
        {DISABLE_SWITCHES, LOG_FLAGS, RUN_DIR_ARGUMENT, ACROSS_RANKS, STRAGGLERS, LOG_FILES, TRACES}
    ),
    upstream_key_kind="megatron-core argument",
)
