"""Patches on torchtitan.config.manager: the experiment YAML and Primus's metrics options onto
upstream's config, and the tracking decided (and checked) as soon as the config is parsed.

Required: without them a `--metrics.enable-mlflow` flag is an unknown argument, and a bad setting would
surface only after the model was built."""

from __future__ import annotations

import os

from primus.backends.torchtitan.patches.versions import TORCHTITAN
from primus.patches import REGISTRY


@REGISTRY.patch("torchtitan.config.experiment", target="torchtitan.config.manager", upstream=TORCHTITAN, backend="torchtitan", required=True,
                description="ConfigManager._load_config: metrics config with Primus's options, experiment YAML "
                            "sections as defaults (the command line still wins); parse_args: tracking plan checked")
def _install_config(module, handle):
    from primus.backends.torchtitan.experiment import MODEL_SECTION, experiment_params
    from primus.backends.torchtitan.metrics_options import with_primus_options
    from primus.backends.torchtitan.tracking_session import prepare_tracking
    from primus.backends.torchtitan.upstream_config import apply_sections

    def load_config(wrapped, instance, args, kwargs):
        config, rest = wrapped(*args, **kwargs)
        config.metrics = with_primus_options(config.metrics)
        params = experiment_params() or {}  # `primus train` adds dump_folder (primus.launch.job)
        apply_sections(config, {k: v for k, v in params.items() if k != MODEL_SECTION})
        return config, rest

    def parse_args(wrapped, instance, args, kwargs):
        config = wrapped(*args, **kwargs)
        prepare_tracking(config, rank=int(os.environ.get("RANK", "0")))
        return config

    handle.wrap(module.ConfigManager, "_load_config", load_config)
    handle.wrap(module.ConfigManager, "parse_args", parse_args)
