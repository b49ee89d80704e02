"""Patch on maxtext.configs.pyconfig: the experiment's MaxText parameters ahead of the command line's, Primus's keys
taken off it, and the tracking planned and checked as soon as upstream has built the config, before any model
exists. Required: without it ``enable_mlflow=true`` is an unknown key to upstream."""

from __future__ import annotations

from primus.patches import REGISTRY
from primus.patches.arguments import Arguments
from primus.upstreams.maxtext import MAXTEXT


@REGISTRY.patch(
    "maxtext.config.primus_options",
    target="maxtext.configs.pyconfig",
    upstream=MAXTEXT,
    backend="maxtext",
    required=True,
    description="pyconfig.initialize: Primus's keys (enable_mlflow, mlflow_*) taken off the argv and "
    "kwargs before upstream parses them; the tracking plan checked on the built config",
)
def _install_pyconfig(module, handle):
    from primus.backends.maxtext.primus_options import split_options
    from primus.backends.maxtext.session import TRACKING
    from primus.backends.maxtext.upstream_argv import with_experiment
    from primus.config.environment import module_from_env
    from primus.config.run_directory import given_run_dir

    arguments = Arguments(module.initialize, "argv")

    def initialize(wrapped, instance, args, kwargs):
        argv = arguments("argv", args, kwargs)
        experiment = module_from_env("maxtext")
        if experiment is not None:
            argv = with_experiment(
                argv or [""],
                experiment.params,
                given_run_dir(),
                experiment.upstream_preset_defaults,
                module.MAXTEXT_CONFIGS_DIR,
            )
        upstream_argv, kwargs, options = split_options(argv or [], kwargs)
        args, kwargs = arguments.replace("argv", upstream_argv if argv is not None else None, args, kwargs)
        config = wrapped(*args, **kwargs)
        TRACKING.prepare(config, options)
        return config

    handle.wrap(module, "initialize", initialize)
