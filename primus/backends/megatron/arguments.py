"""The Primus arguments, added to upstream's parser through ``extra_args_provider``: every option the catalogue
(``primus/config/schemas/tracking.py``) gives Megatron, as ``--the-name``.

The toggles take an optional value: ``--disable-wandb`` means true, ``--disable-wandb false`` enables it.
Left out on the command line, TensorBoard and W&B follow upstream's own rule (on when
``--tensorboard-dir`` / ``--wandb-project`` is given) so an upstream command line keeps its meaning;
the YAML presets set all three explicitly, to the spec's default ``true``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from primus.config.schemas.tracking import PYTHON_TYPES, params_for

_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f"}


def parse_bool(text: str) -> bool:
    lowered = str(text).strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def flag(name: str) -> str:
    """An argument's spelling on Megatron's command line: ``log_interval`` -> ``--log-interval``."""
    return "--" + name.replace("_", "-")


def add_primus_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """One ``--flag`` per Primus option the catalogue gives Megatron. Values are typed here and checked (bounds,
    with every other problem at once) by the plan, so a command line and an experiment YAML fail alike."""
    group = parser.add_argument_group(title="primus tracking")
    for param in params_for("megatron"):
        if param.type == "bool":
            group.add_argument(
                flag(param.name),
                type=parse_bool,
                nargs="?",
                const=True,
                default=param.default,
                metavar="BOOL",
                help=param.help,
            )
        else:
            group.add_argument(
                flag(param.name),
                type=PYTHON_TYPES[param.type],
                default=param.default,
                choices=param.choices,
                help=param.help,
            )
    return parser


def compose_extra_args_provider(user_provider):
    """Upstream takes one ``extra_args_provider``: ours first, then the user's own, then the
    experiment's values (PRIMUS_CONFIG) as defaults that the command line still overrides."""

    def provider(parser):
        parser = add_primus_arguments(parser)
        if user_provider is not None:
            parser = user_provider(parser)
        parser.set_defaults(**experiment_defaults())
        return parser

    return provider


def experiment_defaults(environ=os.environ) -> dict[str, Any]:
    """An experiment YAML as upstream's argument defaults: with PRIMUS_CONFIG (set by `primus train` and
    `primus-run --config`), the resolved parameters of its Megatron module, for ``parser.set_defaults``
    (no translation to command-line flags; flags given on the command line still win)."""
    from primus.config.environment import module_params_from_env  # only when parsing: keeps this module light

    return module_params_from_env("megatron", environ) or {}
