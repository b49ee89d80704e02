"""The upstream range the TorchTitan patches were written and tested for (0.3.0: Configurable configs,
``MetricsProcessor._build_metric_logger`` with keyword arguments, ``--module/--config``)."""

TORCHTITAN = "torchtitan"
SUPPORTED = ">=0.3.0,<0.4"
