"""Patches on upstream MaxText, one module per hook point, each an entry point of the group ``primus.patches``
(``setup.cfg``): ``pyconfig_patches`` (Primus's keys taken off
MaxText's command line, the tracking decided and checked when the config is built, before training) and
``metric_logger_patches`` (the hub behind ``MetricLogger.write_metrics``, upstream's single fan-out)."""
