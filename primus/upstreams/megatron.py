"""The Megatron releases the patches were written and tested for: every megatron-core release that ships
``megatron.training`` (0.17 on; 0.16 and older wheels have none), and source checkouts of them, judged by
their own ``megatron/core/package_info.py``."""

from primus.upstreams.release import Upstream

MEGATRON = Upstream(
    name="Megatron",
    distribution="megatron-core",
    package="megatron.core",
    supported=">=0.17,<0.20",
    version_files=("package_info.py",),
    entry_points=(
        "python pretrain_gpt.py <megatron args> (this repository's drop-in)",
        "primus-run [torchrun ...] <your pretrain_gpt.py> <megatron args> (e.g. Megatron-LM's own)",
        "primus train --config <experiment.yaml>",
    ),
    differences=(
        (
            "0.17",
            "`pretrain(train_valid_test_dataset_provider, model_provider, model_type, forward_step_func, "
            "args_defaults=...)` parses the arguments itself; the tensor-parallel batch helper lives in "
            "`megatron.training.utils` and reads the iterator",
        ),
        (
            "0.18, 0.19",
            "the arguments are parsed first (`parse_and_validate_args`) and `pretrain` takes a "
            "`cfg_container` (0.18: before the providers, 0.19: first, `model_provider` a keyword)",
        ),
        (
            "0.17 - 0.19",
            "every hook Primus patches (`parse_args`, `validate_args`, `training_log`, "
            "`global_vars` writers, timers) has the same form; `training_log` gains two optional "
            "arguments in 0.18",
        ),
    ),
)
