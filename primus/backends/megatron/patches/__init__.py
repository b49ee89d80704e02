"""Patches on upstream Megatron (megatron-core), one module per hook point; ``versions`` holds the upstream
range they support. ``cpu_patches`` declares the CPU platform; its parts are named after what they patch
(``cpu_torch_shims``, ``cpu_device_placement``, ``cpu_jit``, ``cpu_rng``, ``cpu_initialize``)."""
