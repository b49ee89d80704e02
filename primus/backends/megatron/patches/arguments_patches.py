"""Patches on megatron.training.arguments: add the Primus arguments, validate them.

Both are required: a Primus argument that upstream's parser does not know would be a confusing
"unrecognized arguments" error, and invalid settings must stop the job before training starts."""

from __future__ import annotations

from primus.patches import REGISTRY
from primus.patches.arguments import Arguments
from primus.upstreams.megatron import MEGATRON


@REGISTRY.patch(
    "megatron.args.primus_arguments",
    target="megatron.training.arguments",
    upstream=MEGATRON,
    backend="megatron",
    required=True,
    description="arguments.parse_args: the Primus arguments through upstream's extra_args_provider",
)
def _install_arguments(module, handle):
    from primus.backends.megatron.arguments import compose_extra_args_provider

    arguments = Arguments(module.parse_args, "extra_args_provider")

    def parse_args(wrapped, instance, args, kwargs):
        provider = compose_extra_args_provider(arguments("extra_args_provider", args, kwargs))
        args, kwargs = arguments.replace("extra_args_provider", provider, args, kwargs)
        return wrapped(*args, **kwargs)

    handle.wrap(module, "parse_args", parse_args)


@REGISTRY.patch(
    "megatron.args.validate",
    target="megatron.training.arguments",
    upstream=MEGATRON,
    backend="megatron",
    required=True,
    description="arguments.validate_args: check the Primus arguments and decide the trackers",
)
def _install_validation(module, handle):
    from primus.backends.megatron.session import TRACKING

    arguments = Arguments(module.validate_args, "args")

    def validate_args(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        TRACKING.plan_for(arguments("args", args, kwargs))
        return result

    handle.wrap(module, "validate_args", validate_args)
