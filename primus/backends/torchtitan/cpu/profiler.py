"""The profiler on a host without an accelerator, torchtitan 0.2.2: ``tools/profiling.py:67-76`` asks for
``activities=[ProfilerActivity.CPU, gpu_device_profiled]``, where the second is None unless CUDA or XPU is
available, and torch refuses None ("Expected ProfilerActivity or dict, got <class 'NoneType'>"), so
``profiling.enable_profiling`` stops the job at its first step. Here the profiler gets the activities that
exist. (0.3 builds its activity list from the devices present.)"""

from __future__ import annotations

from types import ModuleType

from primus.backends.torchtitan.cpu.platform import cpu_patch
from primus.backends.torchtitan.module_overlay import Overlay
from primus.patches import PatchHandle
from primus.upstreams.torchtitan import TOML_JOB_CONFIG


def _present_activities_only(profile):
    def profile_present(*args, activities=None, **kwargs):
        if activities is not None:
            activities = [a for a in activities if a is not None]
        return profile(*args, activities=activities, **kwargs)

    return profile_present


def install_host_profiler(profiling: ModuleType, handle: PatchHandle) -> None:
    torch = profiling.torch
    profiler = Overlay(torch.profiler, profile=_present_activities_only(torch.profiler.profile))
    handle.replace(profiling, "torch", Overlay(torch, profiler=profiler))


PATCHES = (
    cpu_patch(
        "torchtitan.cpu.profiler_activities_v0_2",
        "torchtitan.tools.profiling",
        "tools.profiling's torch.profiler.profile: only the activities present (0.2.2 passes None for a "
        "missing GPU, profiling.py:67-76)",
        install_host_profiler,
        versions=TOML_JOB_CONFIG,
    ),
)
