"""The upstream range the MaxText patches were written and tested for (0.2.5: ``maxtext.configs.pyconfig``,
``MetricLogger(config, learning_rate_schedule, start_step)`` with its one-step deferred writes)."""

MAXTEXT = "maxtext"
SUPPORTED = ">=0.2.5,<0.3"
