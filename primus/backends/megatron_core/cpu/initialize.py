"""Megatron's start-up on a CPU host: ``initialize_megatron`` insists on CUDA, skips the model-parallel
groups and the RNG tracker when it counts no device, and runs ``make`` for the dataset helpers."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType

from primus.backends.megatron_core.cpu.platform import cpu_patch
from primus.patches import PatchHandle


def _allow_no_cuda(wrapped, instance, args, kwargs):
    return wrapped(*args, **{**kwargs, "allow_no_cuda": True})


def install_allow_no_cuda(training: ModuleType, handle: PatchHandle) -> None:
    # Wrapped where pretrain() looks it up: training.py binds the name when it is imported.
    handle.wrap(training, "initialize_megatron", _allow_no_cuda)


@contextlib.contextmanager
def _one_visible_device() -> Iterator[None]:
    import torch

    cuda = torch.cuda
    saved = cuda.device_count, cuda.set_device
    cuda.device_count, cuda.set_device = (lambda: 1), (lambda device: None)
    try:
        yield
    finally:
        cuda.device_count, cuda.set_device = saved


def _with_one_visible_device(wrapped, instance, args, kwargs):
    with _one_visible_device():
        return wrapped(*args, **kwargs)


def install_one_device_during_init(initialize: ModuleType, handle: PatchHandle) -> None:
    # Only inside these two calls: device_count() stays 0 everywhere else.
    handle.wrap(initialize, "_initialize_distributed", _with_one_visible_device)
    handle.wrap(initialize, "_set_random_seed", _with_one_visible_device)


def _import_prebuilt_helpers(wrapped, instance, args, kwargs) -> None:
    try:
        from megatron.core.datasets import helpers_cpp  # noqa: F401  (the wheel ships it prebuilt)
    except ImportError:  # a source checkout: upstream compiles them (make, pybind11)
        wrapped(*args, **kwargs)


def install_prebuilt_dataset_helpers(utils: ModuleType, handle: PatchHandle) -> None:
    handle.wrap(utils, "compile_helpers", _import_prebuilt_helpers)


PATCHES = (
    cpu_patch(
        "megatron.cpu.allow_no_cuda",
        "megatron.training.training",
        "pretrain() calls initialize_megatron(allow_no_cuda=True), past the 'Megatron requires CUDA' "
        "assert (initialize.py:66)",
        install_allow_no_cuda,
    ),
    cpu_patch(
        "megatron.cpu.one_device_during_init",
        "megatron.training.initialize",
        "_initialize_distributed and _set_random_seed count one device, so the model-parallel groups and "
        "the RNG tracker are set up (initialize.py:358,447)",
        install_one_device_during_init,
    ),
    cpu_patch(
        "megatron.cpu.prebuilt_dataset_helpers",
        "megatron.core.datasets.utils",
        "compile_helpers imports the prebuilt helpers_cpp instead of running make, which the wheel "
        "cannot (no Makefile; initialize.py:178 -> datasets/utils.py:25); a source checkout compiles",
        install_prebuilt_dataset_helpers,
    ),
)
