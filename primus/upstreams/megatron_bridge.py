"""The Megatron-Bridge releases the patches were written and tested for: the 0.6 line (0.6.2 trained end to end on
CPU), which runs on the megatron-core 0.19 line; judged by its own ``megatron/bridge/package_info.py``."""

from primus.upstreams.release import Upstream

MEGATRON_BRIDGE = Upstream(
    name="Megatron-Bridge",
    distribution="megatron-bridge",
    package="megatron.bridge",
    supported=">=0.6,<0.7",
    version_files=("package_info.py",),
    entry_points=(
        "primus-run [torchrun ...] <your script calling megatron.bridge's pretrain()>",
        "primus-run torchrun ... scripts/training/run_recipe.py --recipe NAME [KEY=VALUE ...]",
        "primus train --config EXP.yaml (framework: megatron_bridge: a recipe plus ConfigContainer overrides)",
    ),
)
