"""Patches on upstream Megatron (megatron-core), one module per hook point; every module here registers
patches (a test checks it) and is an entry point of the group ``primus.patches`` (``setup.cfg``).
``cpu_patches`` registers the CPU platform, whose parts live in ``../cpu/``; the supported upstream range is
``primus/upstreams/megatron.py``."""
