"""Device placement on a CPU host: Megatron asks for ``device="cuda"`` /
``device=torch.cuda.current_device()``, moves modules with ``.cuda()`` and checks tensor type names
such as ``'torch.cuda.FloatTensor'``; here all of that means the CPU.

Process-wide attribute patches, not a ``TorchFunctionMode``: a mode is thread-local and is off inside
custom ``autograd.Function.backward`` (research/megatron-cpu/REPORT.md §3c).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from primus.backends.megatron_core.cpu.platform import cpu_patch
from primus.patches import PatchHandle

# torch factories and Tensor.new_* that Megatron calls with a CUDA device (40 upstream call sites,
# e.g. training.py:1131, clip_grads.py:108, param_and_grad_buffer.py:1177, timers.py:302).
TORCH_FACTORIES = (
    "tensor",
    "as_tensor",
    "zeros",
    "ones",
    "empty",
    "full",
    "rand",
    "randn",
    "randint",
    "arange",
    "empty_strided",
    "linspace",
    "eye",
    "randperm",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
)
TENSOR_FACTORIES = ("new_tensor", "new_zeros", "new_ones", "new_empty", "new_full")


def is_cuda_device(device: Any) -> bool:
    """True for ``"cuda"``, ``"cuda:1"``, ``torch.device("cuda")`` and a bare index (torch reads an int
    device as ``cuda:<index>``)."""
    if isinstance(device, str):
        return device.startswith("cuda")
    if isinstance(device, int):
        return not isinstance(device, bool)
    return getattr(device, "type", None) == "cuda"


# These two wrap torch builtins, which have no signature to bind Arguments to: ``device`` is keyword-only in
# every factory, ``Tensor.type``'s dtype comes first.
def _device_to_cpu(wrapped, instance, args, kwargs):
    if is_cuda_device(kwargs.get("device")):
        kwargs = {**kwargs, "device": "cpu"}
    return wrapped(*args, **kwargs)


def _stay_on_cpu(self, *args: Any, **kwargs: Any):
    return self


def install_device_placement(megatron_core: ModuleType, handle: PatchHandle) -> None:
    import torch

    for name in TORCH_FACTORIES:
        handle.wrap(torch, name, _device_to_cpu)
    for name in TENSOR_FACTORIES:
        handle.wrap(torch.Tensor, name, _device_to_cpu)
    # get_model's model_module.cuda(...) (training.py:1818) and language_module.py:307 under PP.
    handle.replace(torch.Tensor, "cuda", _stay_on_cpu)


def _cuda_type_names(wrapped, instance, args, kwargs):
    """``t.type()`` names a CPU tensor as its CUDA twin; ``t.type("torch.cuda.X")`` converts to ``torch.X``."""
    if not args and not kwargs:
        name = wrapped()
        if name.startswith("torch.") and not name.startswith("torch.cuda."):
            return "torch.cuda." + name.removeprefix("torch.")
        return name
    if args and isinstance(args[0], str) and args[0].startswith("torch.cuda."):
        args = ("torch." + args[0].removeprefix("torch.cuda."), *args[1:])
    return wrapped(*args, **kwargs)


def install_cuda_tensor_type_names(megatron_core: ModuleType, handle: PatchHandle) -> None:
    import torch

    handle.wrap(torch.Tensor, "type", _cuda_type_names)


PATCHES = (
    cpu_patch(
        "megatron.cpu.device_placement",
        "megatron.core",
        "device='cuda' and device=<index> become cpu in torch factories and Tensor.new_*; Tensor.cuda() "
        "keeps the tensor (training.py:1131,1818, clip_grads.py:108, param_and_grad_buffer.py:1177)",
        install_device_placement,
    ),
    cpu_patch(
        "megatron.cpu.cuda_tensor_type_names",
        "megatron.core",
        "Tensor.type() names CPU tensors 'torch.cuda.<X>Tensor' for the checks in clip_grads.py:174, "
        "distrib_optimizer.py:401, optimizer.py:1009",
        install_cuda_tensor_type_names,
    ),
)
