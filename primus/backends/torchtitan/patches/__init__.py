"""Patches on upstream torchtitan, one module per hook point; every module here registers patches (a test
checks it) and is an entry point of the group ``primus.patches`` (``setup.cfg``): ``config_manager_patches`` (experiment YAML and Primus's metrics options onto upstream's config,
checked before anything is built), ``metrics_processor_patches`` (the hub behind upstream's metric loggers)
and ``cpu_patches`` (the CPU platform, whose parts live in ``../cpu/``). ``primus/upstreams/torchtitan.py``
declares the supported releases and the two API generations within them; where upstream differs, a hook
point's module declares one patch per generation."""
