"""Megatron-Bridge as Primus sees it: entry point ``megatron_bridge`` of the group ``primus.backends``. It runs on
an environment of its own (Bridge's pins must not move torch's), and the options its own LoggerConfig has keep
Bridge's spelling, so a Bridge user sets them where Bridge's docs say."""

from primus.upstreams.backends import LEARNING_RATE, LOSS, ONE_LOGGER_OPTIONS, STRAGGLERS, TFLOPS, Backend, Environment
from primus.upstreams.megatron_bridge import MEGATRON_BRIDGE

PATCHES = "primus.backends.megatron_bridge.patches"

BACKEND = Backend(
    name="megatron_bridge",
    title="Megatron-Bridge",
    position=4,
    upstream=MEGATRON_BRIDGE,
    patch_modules=tuple(f"{PATCHES}.{m}_patches" for m in ("cpu", "logger", "plan", "checkpoint")),
    # Bridge's training_log is megatron-core's: the same names
    metric_names={LOSS: ("lm loss",), LEARNING_RATE: ("learning-rate",), TFLOPS: ("throughput/tflops/device",)},
    launch_rules_class="primus.backends.megatron_bridge.launch_rules:BridgeLaunchRules",
    session_class="primus.backends.megatron_bridge.session:BridgeTracking",
    entry_module="primus.backends.megatron_bridge",
    schema_builder="primus.backends.megatron_bridge.schema:schema",
    upstream_table_finder="primus.backends.megatron_bridge.schema:table",
    option_groups=frozenset({ONE_LOGGER_OPTIONS, STRAGGLERS}),
    option_keys={
        "mlflow_run_name": "logger.mlflow_run_name",
        "mlflow_experiment_name": "logger.mlflow_experiment",
        "mlflow_tags": "logger.mlflow_tags",
        "mlflow_description": "logger.mlflow_description",
    },
    option_keys_note="`logger.tensorboard_dir`, `logger.wandb_project` and `logger.mlflow_experiment` turn "
    "TensorBoard, W&B and MLflow on; `logger.tensorboard_queue_size`, `logger.wandb_entity`, `logger.wandb_exp_name`, "
    "`logger.wandb_save_dir` and `logger.mlflow_tracking_uri` keep their meaning; the run directory is "
    "`<checkpoint.save>/primus` when the job checkpoints (under `primus train`, the launcher's).",
    upstream_key_kind="ConfigContainer field",
    preset_note="Every other key is a field of the ConfigContainer the recipe returns, applied to it as "
    "run_recipe.py's `KEY=VALUE` overrides; a field the recipe's config lacks is refused before training.",
    # A Bridge checkout on PYTHONPATH makes it importable from the torch environment too: transformers, which that
    # environment lacks, tells them apart
    environment=Environment(
        ("megatron.bridge", "transformers"), "PRIMUS_BRIDGE_PYTHON", ".venv-bridge", "scripts/setup-bridge-venv.sh"
    ),
)
