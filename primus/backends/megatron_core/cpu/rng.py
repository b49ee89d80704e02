"""Megatron's CUDA RNG tracker on a CPU host.

``CudaRNGStatesTracker`` keeps per-tensor-parallel-rank generator states and swaps them in around
dropout. Without a device the CUDA setter is queued by ``torch.cuda._lazy_call`` and never runs, so
``fork()`` would silently do nothing; on CPU dropout draws from the CPU generator, so that is the
state to swap (without this the loss differs from the GPU semantics: 6.9197 -> 6.9057 at iteration 3).
"""

from __future__ import annotations

import logging
from types import ModuleType

from primus.backends.megatron_core.cpu.platform import cpu_patch
from primus.patches import PatchHandle
from primus.patches.arguments import Arguments


def _get_cpu_rng_state(wrapped, instance, args, kwargs):
    import torch

    return torch.get_rng_state()  # already a copy, which also covers clone=True


class DropForkWarning(logging.Filter):
    """``fork()`` warns when the CPU state changed inside it (random.py:333), which is now always."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "CPU RNG state changed within GPU RNG context" not in record.getMessage()


def install_rng_tracker_on_cpu_generator(random: ModuleType, handle: PatchHandle) -> None:
    handle.wrap(random, "_get_cuda_rng_state", _get_cpu_rng_state)
    arguments = Arguments(random._set_cuda_rng_state, "new_state")

    def set_cpu_rng_state(wrapped, instance, args, kwargs) -> None:
        import torch

        torch.set_rng_state(arguments("new_state", args, kwargs))

    handle.wrap(random, "_set_cuda_rng_state", set_cpu_rng_state)
    logger = logging.getLogger(random.__name__)
    warning_filter = DropForkWarning()
    logger.addFilter(warning_filter)
    handle.on_undo(lambda: logger.removeFilter(warning_filter))


PATCHES = (
    cpu_patch(
        "megatron.cpu.rng_tracker_on_cpu_generator",
        "megatron.core.tensor_parallel.random",
        "_get_cuda_rng_state/_set_cuda_rng_state use the CPU generator, so CudaRNGStatesTracker.add/fork "
        "really swap dropout state (random.py:308-345)",
        install_rng_tracker_on_cpu_generator,
    ),
)
