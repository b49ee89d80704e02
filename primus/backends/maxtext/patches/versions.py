"""The MaxText releases the patches were written and tested for (0.2.5: ``maxtext.configs.pyconfig``,
``MetricLogger(config, learning_rate_schedule, start_step)`` with its one-step deferred writes)."""

from primus.patches.upstream import Upstream

MAXTEXT = Upstream(name="MaxText", distribution="maxtext", package="maxtext", supported=">=0.2.5,<0.3",
                   version_files=("version.py",))
