"""MaxText as Primus sees it: entry point ``maxtext`` of the group ``primus.backends``. It runs on an environment
of its own (JAX's pins must not fight torch's)."""

from primus.upstreams.backends import (
    ENABLE_SWITCHES,
    LEARNING_RATE,
    LOSS,
    ONE_LOGGER_OPTIONS,
    TFLOPS,
    TOKENS_PER_SEC,
    Backend,
    Environment,
)
from primus.upstreams.maxtext import MAXTEXT

PATCHES = "primus.backends.maxtext.patches"

BACKEND = Backend(
    name="maxtext",
    title="MaxText",
    position=3,
    upstream=MAXTEXT,
    patch_modules=tuple(f"{PATCHES}.{m}_patches" for m in ("pyconfig", "metric_logger", "checkpointing")),
    metric_names={
        LOSS: ("learning/loss",),
        LEARNING_RATE: ("learning/current_learning_rate",),
        TOKENS_PER_SEC: ("perf/per_device_tokens_per_sec",),
        TFLOPS: ("perf/per_device_tflops_per_sec",),
    },
    launch_rules_class="primus.backends.maxtext.launch_rules:MaxTextLaunchRules",
    session_class="primus.backends.maxtext.session:MaxTextTracking",
    entry_module="primus.backends.maxtext",
    schema_builder="primus.backends.maxtext.schema:schema",
    upstream_table_finder="primus.backends.maxtext.schema:table",
    option_groups=frozenset({ONE_LOGGER_OPTIONS, ENABLE_SWITCHES}),
    upstream_key_kind="MaxText config key",
    preset_note="The preset's value of an upstream key gives way to your own MaxText config file (`my.yml` in "
    "`primus-run --config exp.yaml python -m maxtext.trainers.pre_train.train my.yml`, and the parents it "
    "names with `base_config:`, short of MaxText's `base.yml`) where that file sets the key; the experiment's "
    "`overrides` and the command line win over the file.",
    environment=Environment(
        ("maxtext", "jax"), "PRIMUS_MAXTEXT_PYTHON", ".venv-maxtext", "scripts/setup-maxtext-venv.sh"
    ),
)
