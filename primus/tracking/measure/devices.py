"""Which physical GPU this process drives, as the vendor's management library (NVML, amdsmi) numbers it.

Every rank reads its own device: torch's current device once the trainer has set it (Megatron and TorchTitan
do before training, whatever the launcher), else the local rank's visible device (``LOCAL_RANK``, as torchrun
sets it), or JAX's local device. The management libraries number the
physical devices, while a process sees only those its ``*_VISIBLE_DEVICES`` list, renumbered from 0:

* NVIDIA: ``CUDA_VISIBLE_DEVICES`` holds indices or UUIDs (``GPU-…``); the visible ordinal is a position in
  it. Indices are CUDA's enumeration, which is NVML's (PCI bus order) on a node of one GPU model or with
  ``CUDA_DEVICE_ORDER=PCI_BUS_ID``.
* AMD: ``ROCR_VISIBLE_DEVICES`` (indices or ``GPU-<unique id>``) selects among the physical devices first,
  then ``HIP_VISIBLE_DEVICES`` (or ``CUDA_VISIBLE_DEVICES``, which HIP also honours) among those.

A list entry that cannot be resolved gives no device (no utilisation metric), never another rank's device.
Reading any of this costs no device synchronisation: it is host-side driver state."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any


def local_ordinal(environ: Mapping[str, str] = os.environ) -> int:
    """This process's visible device: torch's current one when CUDA/HIP is initialised (a host-side read), else
    LOCAL_RANK's."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.cuda.current_device()
    try:
        return max(int(environ.get("LOCAL_RANK", "0")), 0)
    except ValueError:
        return 0


def visible_list(value: str | None) -> list[str] | None:
    """A *_VISIBLE_DEVICES value as its entries; None when unset (every device visible). As the runtimes
    read it, the list ends at the first entry that is not a device (``-1`` hides every device)."""
    if value is None:
        return None
    out = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry or entry.startswith("-"):
            break
        out.append(entry)
    return out


def _pick(entries: list[str] | None, ordinal: int, count: int) -> str | None:
    """The entry for a visible ordinal: a position in ``entries``, or the ordinal itself when every one of
    ``count`` devices is visible. One device per process (a launcher that sets the list per rank) is ordinal 0
    whatever the local rank: the ordinal wraps, as Megatron's ``rank % device_count``."""
    if entries is None:
        return str(ordinal % count) if count else None
    return entries[ordinal % len(entries)] if entries else None


def nvml_handle(ordinal: int, environ: Mapping[str, str] = os.environ) -> Any:
    """NVML's handle of the visible device ``ordinal`` of this process, or None (no NVML, no such device)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        entry = _pick(visible_list(environ.get("CUDA_VISIBLE_DEVICES")), ordinal, pynvml.nvmlDeviceGetCount())
        if entry is None:
            return None
        if entry.isdigit():
            return pynvml.nvmlDeviceGetHandleByIndex(int(entry))
        return pynvml.nvmlDeviceGetHandleByUUID(entry)  # GPU-…/MIG-… (NVML accepts a unique prefix too)
    except Exception:  # no NVML library, no NVIDIA device, or a list entry NVML does not know
        return None


def amdsmi_handle(ordinal: int, environ: Mapping[str, str] = os.environ) -> Any:
    """amdsmi's handle of the visible device ``ordinal`` of this process, or None."""
    try:
        import amdsmi

        amdsmi.amdsmi_init()
        handles = list(amdsmi.amdsmi_get_processor_handles())
        rocr = visible_list(environ.get("ROCR_VISIBLE_DEVICES"))
        if rocr is not None:  # the ROCr-level selection: what HIP then numbers from 0
            handles = [_amd_device(e, handles, amdsmi) for e in rocr]  # None keeps an unknown entry's place
        hip = visible_list(environ.get("HIP_VISIBLE_DEVICES", environ.get("CUDA_VISIBLE_DEVICES")))
        entry = _pick(hip, ordinal, len(handles))
        if entry is None or not entry.isdigit() or int(entry) >= len(handles):
            return None  # HIP_VISIBLE_DEVICES takes indices only
        return handles[int(entry)]
    except Exception:  # no ROCm SMI library or no AMD device
        return None


def _amd_device(entry: str, handles: list[Any], amdsmi: Any) -> Any:
    if entry.isdigit():
        return handles[int(entry)] if int(entry) < len(handles) else None
    if entry.upper().startswith("GPU-"):  # ROCr's GPU-<unique id in hex>: amdsmi's asic_serial
        wanted = entry[4:].lower().lstrip("0")
        for handle in handles:
            serial = str(amdsmi.amdsmi_get_gpu_asic_info(handle).get("asic_serial", "")).lower()
            if serial.removeprefix("0x").lstrip("0") == wanted:
                return handle
    return None
