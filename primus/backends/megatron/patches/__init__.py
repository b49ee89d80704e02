"""Patches on upstream Megatron (megatron-core). ``cpu_patches`` declares the CPU platform; its parts are
named after what they patch (``cpu_torch_shims``, ``cpu_device_placement``, ``cpu_jit``, ``cpu_rng``,
``cpu_initialize``)."""
