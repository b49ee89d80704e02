"""Experiment configuration (layer 1): YAML presets, ``extends:``, ``${VAR}`` interpolation,
command-line overrides and a typed schema per backend.

API::

    from primus.config import load_experiment, ConfigError

    exp = load_experiment("configs/megatron/tiny_cpu.yaml", overrides=["train_iters=5"])
    exp.name          # exp_name (str)
    exp.workspace     # Path, absolute; run directories go under workspace/exp_name
    exp.source        # Path of the experiment file
    exp.raw           # dict: the resolved, typed config, NOT redacted (never print or upload it)
    exp.redacted()    # dict: raw with secrets hidden, for printing and uploading
    mod = exp.modules["pre_trainer"]
    mod.framework     # "megatron" | "torchtitan" | "maxtext"
    mod.params        # every resolved parameter, typed (int/float/bool/str/list/None); flat for
                      # Megatron and MaxText, TorchTitan sections as nested dicts (metrics: {...})
    mod.primus_keys   # frozenset of Primus's own parameters (dotted inside sections): a backend
                      # must not hand these to upstream's argparse as they are
    mod.schema        # the backend's Schema: mod.schema.params[name] is a Param with type,
                      # upstream default, choices and command-line spelling (option/true_flag/false_flag)

``load_experiment(path, overrides=(), *, environ=None)`` raises ``ConfigError`` whose ``problems``
lists every problem found (key, value, fix), one per line in ``str(error)``. Parameters a config
does not mention are absent from ``params``: upstream applies its own defaults to them.
"""

from primus.config.errors import ConfigError
from primus.config.experiment import Experiment, ModuleConfig, load_experiment

__all__ = ["ConfigError", "Experiment", "ModuleConfig", "load_experiment"]
