"""The TorchTitan releases the patches were written and tested for (0.3.0: Configurable configs,
``MetricsProcessor._build_metric_logger`` with keyword arguments, ``--module/--config``)."""

from primus.patches.upstream import Upstream

TORCHTITAN = Upstream(name="TorchTitan", distribution="torchtitan", package="torchtitan",
                      supported=">=0.3.0,<0.4",
                      version_files=("__init__.py", "../assets/version.txt"))  # a source checkout: the repo's file
