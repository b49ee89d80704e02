"""The line Primus prints after upstream's own at a log step when ``log_throughput`` or ``log_progress`` is on:
tokens/s and TFLOP/s per GPU (with their running averages), MFU and the time left (``progress/eta_s``, as the
trackers get it)."""

from __future__ import annotations

from collections.abc import Mapping

from primus.tracking.measure.progress import ETA


def render_console_line(iteration: int, train_iters: int | None, perf: Mapping[str, float]) -> str:
    parts = [f"iteration {iteration}/{train_iters}"]
    if "perf/tokens_per_sec_per_gpu" in perf:
        avg = perf.get("perf/tokens_per_sec_per_gpu_avg")
        parts.append(
            f"tokens/s/GPU {perf['perf/tokens_per_sec_per_gpu']:.1f}" + (f" (avg {avg:.1f})" if avg is not None else "")
        )
    if "perf/tflops_per_gpu" in perf:
        avg = perf.get("perf/tflops_per_gpu_avg")
        parts.append(
            f"TFLOP/s/GPU {perf['perf/tflops_per_gpu']:.3f}" + (f" (avg {avg:.3f})" if avg is not None else "")
        )
    if "perf/mfu" in perf:
        parts.append(f"MFU {perf['perf/mfu']:.1%}")
    if ETA in perf:
        parts.append(f"ETA {_hms(perf[ETA])}")
    return "[primus] " + " | ".join(parts)


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"
