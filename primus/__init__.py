"""Primus: experiment tracking and telemetry for unmodified upstream trainers.

Importing this package is cheap on purpose (no torch, wandb or mlflow): the CLI, the bootstrap
``sitecustomize`` and the config tools all import it.
"""

__version__ = "0.1.0"
DISTRIBUTION = "primus-tracking"  # its PyPI name (`primus` on PyPI is another project)
