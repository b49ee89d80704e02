"""TorchTitan as Primus sees it: entry point ``torchtitan`` of the group ``primus.backends``."""

from primus.upstreams.backends import ACROSS_RANKS, ENABLE_SWITCHES, LOG_FILES, STRAGGLERS, TRACES, Backend
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
    entry_module="primus.backends.torchtitan",
    schema_builder="primus.config.schemas.torchtitan:schema",
    upstream_table_finder="primus.config.schemas.torchtitan:table",
    option_groups=frozenset({ENABLE_SWITCHES, ACROSS_RANKS, STRAGGLERS, LOG_FILES, TRACES}),
    option_section="metrics.",  # beside upstream's own metrics fields
    upstream_key_kind="torchtitan config field",
)
