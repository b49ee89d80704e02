"""Patches on torchtitan.config.manager: the experiment YAML and Primus's metrics options onto upstream's config,
and the tracking planned (and checked) as soon as the config is parsed. Required: without them
`--metrics.enable-mlflow` is an unknown argument, and a bad setting would surface only after the model was built.

0.2.2 builds its base config inline in ``parse_args`` and hands it to ``tyro.cli`` as the default, with no method
between: so ``_maybe_add_custom_config`` gets Primus's fields, and manager.py's ``tyro`` (an Overlay) sets the
experiment's sections on that default (YAML over TOML, the command line over both)."""

from __future__ import annotations

import os
from types import ModuleType

from primus.patches import REGISTRY, PatchHandle
from primus.upstreams.torchtitan import CONFIGURABLE, TOML_JOB_CONFIG, TORCHTITAN


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


@REGISTRY.patch(
    "torchtitan.config.experiment",
    target="torchtitan.config.manager",
    upstream=TORCHTITAN,
    versions=CONFIGURABLE,
    backend="torchtitan",
    required=True,
    description="ConfigManager._load_config: metrics config with Primus's options, experiment YAML "
    "sections as defaults (the command line still wins); parse_args: tracking plan checked",
)
def _install_config(module: ModuleType, handle: PatchHandle) -> None:
    from primus.backends.torchtitan.experiment import experiment_params
    from primus.backends.torchtitan.metrics_options import with_primus_options
    from primus.backends.torchtitan.session import TRACKING
    from primus.backends.torchtitan.upstream_config import apply_sections, config_function_sections

    def load_config(wrapped, instance, args, kwargs):
        config, rest = wrapped(*args, **kwargs)
        config.metrics = with_primus_options(config.metrics)
        # `primus train` adds dump_folder (primus.launch.job)
        apply_sections(config, config_function_sections(experiment_params() or {}))
        return config, rest

    def parse_args(wrapped, instance, args, kwargs):
        config = wrapped(*args, **kwargs)
        TRACKING.prepare(config, _rank(), dump_folder=config.dump_folder, profiler_section="profiler")
        return config

    handle.wrap(module.ConfigManager, "_load_config", load_config)
    handle.wrap(module.ConfigManager, "parse_args", parse_args)


def _cli_with_experiment(tyro_cli):
    """tyro's ``cli`` that first sets the experiment's sections on the base config it is given as ``default``."""

    def cli(*args, default, **kwargs):
        from primus.backends.torchtitan.experiment import experiment_params
        from primus.backends.torchtitan.upstream_config import apply_sections, job_config_sections

        apply_sections(default, job_config_sections(experiment_params() or {}))
        return tyro_cli(*args, default=default, **kwargs)

    return cli


@REGISTRY.patch(
    "torchtitan.config.experiment_v0_2",
    target="torchtitan.config.manager",
    upstream=TORCHTITAN,
    versions=TOML_JOB_CONFIG,
    backend="torchtitan",
    required=True,
    description="ConfigManager._maybe_add_custom_config: JobConfig with Primus's metrics options; "
    "manager.tyro.cli: experiment YAML sections over the TOML job file (the command line "
    "still wins); parse_args: tracking plan checked",
)
def _install_job_config(module: ModuleType, handle: PatchHandle) -> None:
    from primus.backends.torchtitan.metrics_options import primus_job_config_class
    from primus.backends.torchtitan.module_overlay import Overlay
    from primus.backends.torchtitan.session import TRACKING

    def config_class(wrapped, instance, args, kwargs):
        return primus_job_config_class(wrapped(*args, **kwargs))

    def parse_args(wrapped, instance, args, kwargs):
        config = wrapped(*args, **kwargs)
        TRACKING.prepare(config, _rank(), dump_folder=config.job.dump_folder, profiler_section="profiling")
        return config

    handle.wrap(module.ConfigManager, "_maybe_add_custom_config", config_class)
    handle.replace(module, "tyro", Overlay(module.tyro, cli=_cli_with_experiment(module.tyro.cli)))
    handle.wrap(module.ConfigManager, "parse_args", parse_args)
