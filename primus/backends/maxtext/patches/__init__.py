"""Patches on upstream MaxText, one module per hook point: ``pyconfig_patches`` (Primus's keys taken off
MaxText's command line, the tracking decided and checked when the config is built, before training) and
``metric_logger_patches`` (the hub behind ``MetricLogger.write_metrics``, upstream's single fan-out)."""
