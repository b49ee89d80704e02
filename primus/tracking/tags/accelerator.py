"""The accelerators the run's process sees, as tags every tracker gets (``system.py``): model, count, driver
version, and the CUDA or ROCm version torch was built with. Read from the framework already loaded (torch, or
JAX for MaxText; neither is imported here), the driver from NVML or amdsmi when importable. A host without an
accelerator gets none of these tags, and a library that fails leaves its tag out: never an error."""

from __future__ import annotations

import sys
from typing import Any


def accelerator_tags() -> dict[str, str]:
    torch = sys.modules.get("torch")
    found = _torch_devices(torch) if torch is not None else None
    toolkit = getattr(torch, "version", None) if found else None  # torch's build, where torch drives the devices
    found = found or _jax_devices(sys.modules.get("jax"))
    if not found:
        return {}
    tags = {"primus.accelerator.model": found[0], "primus.accelerator.count": str(found[1])}
    for tag, attribute in (("cuda", "cuda"), ("rocm", "hip")):
        if built := getattr(toolkit, attribute, None):
            tags[f"primus.accelerator.{tag}"] = str(built)
    driver = _nvidia_driver() or _amd_driver()
    if driver:
        tags["primus.accelerator.driver"] = driver
    return tags


def _torch_devices(torch: Any) -> tuple[str, int] | None:
    try:
        if not torch.cuda.is_available():
            return None
        return torch.cuda.get_device_name(torch.cuda.current_device()), torch.cuda.device_count()
    except Exception:
        return None


def _jax_devices(jax: Any) -> tuple[str, int] | None:
    try:
        devices = [d for d in jax.local_devices() if d.platform != "cpu"] if jax is not None else []
    except Exception:
        return None
    return (str(devices[0].device_kind), len(devices)) if devices else None


def _nvidia_driver() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return str(pynvml.nvmlSystemGetDriverVersion())
    except Exception:  # no NVML library or no NVIDIA driver
        return None


def _amd_driver() -> str | None:
    try:
        import amdsmi

        amdsmi.amdsmi_init()
        handle = amdsmi.amdsmi_get_processor_handles()[0]
        return str(amdsmi.amdsmi_get_gpu_driver_info(handle)["driver_version"])
    except Exception:  # no ROCm SMI library or no AMD device
        return None
