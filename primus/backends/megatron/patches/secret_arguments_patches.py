"""Patches on Megatron's argument handling for arguments that hold a credential (``--wandb-exp-name
nightly-hf_...``, a data URL with ``user:password@``): upstream prints every argument at start-up, and the
tracker names become run names in MLflow and W&B, where no redaction can reach them afterwards.

* ``_print_args`` (``megatron.training.arguments``, and its twin in ``yaml_arguments`` for ``--yaml-cfg``):
  upstream prints a redacted copy of the arguments (by argument name and by value, with the one redactor);
  the arguments themselves are unchanged.
* ``validate_args``: a tracker name that holds a credential is refused before anything starts, naming the
  argument; the message shows the value redacted."""

from __future__ import annotations

from types import SimpleNamespace

from primus.patches import REGISTRY
from primus.patches.arguments import Arguments
from primus.upstreams.megatron import MEGATRON

# the arguments that name a run, its experiment or its project in MLflow and W&B
TRACKER_NAME_ARGUMENTS = (
    "mlflow_run_name",
    "mlflow_experiment_name",
    "wandb_exp_name",
    "wandb_project",
    "wandb_entity",
)


def redacted_arguments(args) -> SimpleNamespace:
    """A copy of an argparse namespace with every value that holds a credential masked."""
    from primus.redaction import redact_value

    return SimpleNamespace(**{name: redact_value(name, value) for name, value in vars(args).items()})


def secret_tracker_names(args) -> list[str]:
    """One problem per tracker-name argument that holds a credential (by shape, or an environment secret's value)."""
    from primus.redaction import redact_text

    problems = []
    for name in TRACKER_NAME_ARGUMENTS:
        value = getattr(args, name, None)
        if isinstance(value, str) and redact_text(value) != value:
            problems.append(
                f"{name}={redact_text(value)!r} holds what looks like a credential, and it would name "
                f"the run in MLflow and W&B: choose a name without it (--{name.replace('_', '-')}); "
                f"credentials belong in environment variables such as WANDB_API_KEY"
            )
    return problems


def _print_redacted(wrapped, instance, args, kwargs):
    def call(title, namespace):
        return wrapped(title, redacted_arguments(namespace))

    return call(*args, **kwargs)


@REGISTRY.patch(
    "megatron.args.print_redacted",
    target="megatron.training.arguments",
    upstream=MEGATRON,
    backend="megatron",
    description="arguments._print_args: the arguments printed at start-up with credentials masked",
)
def _install_print_args(module, handle):
    handle.wrap(module, "_print_args", _print_redacted)


@REGISTRY.patch(
    "megatron.yaml_args.print_redacted",
    target="megatron.training.yaml_arguments",
    upstream=MEGATRON,
    backend="megatron",
    description="yaml_arguments._print_args (--yaml-cfg): the arguments printed with credentials masked",
)
def _install_yaml_print_args(module, handle):
    handle.wrap(module, "_print_args", _print_redacted)


@REGISTRY.patch(
    "megatron.args.secret_names",
    target="megatron.training.arguments",
    upstream=MEGATRON,
    backend="megatron",
    required=True,
    description="arguments.validate_args: a tracker run, experiment or project name holding a "
    "credential is refused before training",
)
def _install_name_check(module, handle):
    from primus.tracking.plan import TrackingPlanError

    arguments = Arguments(module.validate_args, "args")

    def validate_args(wrapped, instance, args, kwargs):
        namespace = arguments("args", args, kwargs)
        problems = secret_tracker_names(namespace)
        if problems:
            raise TrackingPlanError(problems)
        return wrapped(*args, **kwargs)

    handle.wrap(module, "validate_args", validate_args)
