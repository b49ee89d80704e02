"""Patches on megatron.training.global_vars: the tracking writers and One-Logger."""

from __future__ import annotations

from primus.log import get_logger
from primus.patches import REGISTRY
from primus.patches.arguments import Arguments
from primus.tracking.settings.one_logger_presence import LEGACY, NONE, missing_line, one_logger_present
from primus.upstreams.megatron import MEGATRON

log = get_logger("primus.megatron")


@REGISTRY.patch(
    "megatron.tracking.writers",
    target="megatron.training.global_vars",
    upstream=MEGATRON,
    backend="megatron",
    description="global_vars._set_tensorboard_writer/_set_wandb_writer -> one hub behind all trackers",
)
def _install_writers(module, handle):
    from primus.backends.megatron.session import TRACKING

    arguments = Arguments(module._set_tensorboard_writer, "args")

    def set_tensorboard_writer(wrapped, instance, args, kwargs):
        TRACKING.start(arguments("args", args, kwargs), module)

    def set_wandb_writer(wrapped, instance, args, kwargs):
        return None  # W&B is a sink of the hub set up above; upstream's wandb.init must not run

    def destroy_global_vars(wrapped, instance, args, kwargs):
        TRACKING.finish()
        return wrapped(*args, **kwargs)

    handle.wrap(module, "_set_tensorboard_writer", set_tensorboard_writer)
    handle.wrap(module, "_set_wandb_writer", set_wandb_writer)
    handle.wrap(module, "destroy_global_vars", destroy_global_vars)


@REGISTRY.patch(
    "megatron.one_logger.availability",
    target="megatron.training.global_vars",
    upstream=MEGATRON,
    backend="megatron",
    description="global_vars._set_one_logger: upstream's own path only with the legacy one_logger package; "
    "otherwise Primus's One-Logger records from the journal, or one line names the extra to install",
)
def _install_one_logger(module, handle):
    from primus.backends.megatron.session import TRACKING

    arguments = Arguments(module._set_one_logger, "args")

    def set_one_logger(wrapped, instance, args, kwargs):
        megatron_args = arguments("args", args, kwargs)
        present = one_logger_present() if megatron_args.enable_one_logger else NONE
        if present == LEGACY:
            return wrapped(*args, **kwargs)
        if megatron_args.enable_one_logger and megatron_args.rank == megatron_args.world_size - 1 and present == NONE:
            log.info(missing_line("enable_one_logger", "pass --no-one-logger"))
        module._GLOBAL_ONE_LOGGER = TRACKING.upstream_one_logger() if present != NONE else None
        return None

    handle.wrap(module, "_set_one_logger", set_one_logger)
