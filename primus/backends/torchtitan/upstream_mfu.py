"""Upstream's ``mfu(%)`` reaches the trackers only when upstream knew the device's peak: torchtitan's
``get_peak_flops`` falls back to an A100's for a device it does not know (every CPU, newer GPUs). As for Primus's
own ``perf/mfu``, an unknown peak means no MFU, not a guessed one; ``tflops`` (peak-free) stays."""

from __future__ import annotations

from primus.tracking.measure.perf import peak_tflops

UPSTREAM_MFU = "mfu(%)"
A100_PEAK_FLOPS = 312e12  # get_peak_flops's figure for an A100, and its fallback for unknown devices


def upstream_peak_is_real(device_name: str, peak_flops: float) -> bool:
    """Not the A100 fallback, unless the device is an A100 or its bf16 datasheet peak (upstream's MFU is against
    bf16) is the same."""
    if peak_flops != A100_PEAK_FLOPS or "A100" in device_name:
        return True
    return peak_tflops(device_name, "bf16") == A100_PEAK_FLOPS / 1e12


def unknown_peak_notice(device_name: str) -> str:
    return (
        f"upstream's {UPSTREAM_MFU} is not tracked: the peak FLOP/s of {device_name!r} is unknown (upstream "
        f"assumes an A100's {A100_PEAK_FLOPS / 1e12:g} TFLOP/s). Its console line still prints it; tflops, the "
        f"achieved rate, is tracked."
    )
