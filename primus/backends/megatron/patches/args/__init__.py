"""Patches on megatron.training.arguments: add the Primus arguments, validate them.

Both are required: a Primus argument that upstream's parser does not know would be a confusing
"unrecognized arguments" error, and invalid settings must stop the job before training starts."""

from __future__ import annotations

from primus.backends.megatron.patches.versions import MEGATRON
from primus.patches import REGISTRY


@REGISTRY.patch("megatron.args.primus_arguments", target="megatron.training.arguments", upstream=MEGATRON, backend="megatron", required=True,
                description="arguments.parse_args: the Primus arguments through upstream's extra_args_provider")
def _install_arguments(module, handle):
    from primus.backends.megatron.patches.args.primus_arguments import compose_extra_args_provider

    def parse_args(wrapped, instance, args, kwargs):
        user_provider = args[0] if args else kwargs.pop("extra_args_provider", None)
        return wrapped(compose_extra_args_provider(user_provider), *args[1:], **kwargs)

    handle.wrap(module, "parse_args", parse_args)


@REGISTRY.patch("megatron.args.validate", target="megatron.training.arguments", upstream=MEGATRON, backend="megatron", required=True,
                description="arguments.validate_args: check the Primus arguments and decide the trackers")
def _install_validation(module, handle):
    from primus.backends.megatron.training.global_vars import set_tracking_plan

    def validate_args(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        set_tracking_plan(args[0] if args else kwargs["args"])
        return result

    handle.wrap(module, "validate_args", validate_args)
