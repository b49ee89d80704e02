"""Patches on upstream torchtitan, one module per hook point: ``config_manager_patches`` (experiment YAML
and Primus's metrics options onto upstream's config, checked before anything is built),
``metrics_processor_patches`` (the hub behind upstream's metric loggers) and the CPU platform (``cpu_patches``
declares ``cpu_device``, ``cpu_fsdp`` and ``cpu_profiler``). ``versions`` declares the supported releases and
the two API generations within them; where upstream differs, a hook point's module declares one patch per
generation."""
