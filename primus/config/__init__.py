"""Experiment configuration (layer 1): YAML presets, ``extends:``, ``${VAR}`` interpolation, command-line overrides
and a typed schema per backend.

``load_experiment(path, overrides=(), *, environ=None)`` gives an experiment: ``name``, ``workspace`` (absolute;
run directories go under ``workspace/name``), ``source`` (its file), ``raw`` (the resolved, typed config, NOT
redacted: never print or upload it), ``redacted()`` (secrets hidden, for printing and uploading) and ``modules``.
A module (``modules["pre_trainer"]``) has its ``framework``; its ``params``, every resolved parameter, typed, flat
for Megatron and MaxText and in nested sections for TorchTitan (``metrics: {...}``); its ``primus_keys``, Primus's
own parameters (dotted inside sections), which a backend must not hand to upstream's argparse as they are; its
``schema``, whose ``params[name]`` is a ``Param`` (type, upstream default, choices, command-line spelling).

A bad config raises ``ConfigError``, whose ``problems`` lists every problem found (key, value, fix), one per line in
``str(error)``. Parameters a config does not mention are absent from ``params``: upstream applies its own defaults."""

from primus.config.errors import ConfigError
from primus.config.experiment import Experiment, ModuleConfig, load_experiment

__all__ = ["ConfigError", "Experiment", "ModuleConfig", "load_experiment"]
