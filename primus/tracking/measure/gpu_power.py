"""The device's power, energy, temperature and SM clock, read from NVML (NVIDIA) or amdsmi (AMD) on the sampling
thread (``perf.Utilisation``), never on the training thread: NVML's calls take tens of microseconds each.

Each figure is read on its own, so a device that does not support one (energy before Volta, power on a VM guest)
still gives the others. ``gpu/energy_j`` is what the device used since this process's first reading: the
device's own energy counter where it has one (NVML's total energy in mJ, amdsmi's accumulator times its
resolution in µJ), else its power integrated over the sampling times (trapezoids). Where neither library
answers (a CPU host) the figures are absent, said once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("primus.tracking")

POWER, ENERGY, TEMPERATURE, SM_CLOCK = "gpu/power_w", "gpu/energy_j", "gpu/temperature_c", "gpu/sm_clock_mhz"
_AMD_POWER_FIELDS = ("current_socket_power", "average_socket_power", "socket_power")  # W; MI300+ has "current"
_said_absent: list[bool] = []  # once per process, however many samplers it has (the perf set's, across ranks')


def _each(calls: dict[str, Callable[[], float]], errors: tuple[type[BaseException], ...]) -> dict[str, float]:
    out = {}
    for name, call in calls.items():
        try:
            out[name] = float(call())
        except errors:  # not supported on this device, no permission, the GPU lost: that figure is absent
            pass
    return out


def nvml_reading(pynvml: Any, handle: Any) -> dict[str, float]:
    """Power (NVML: mW), the energy counter (mJ since the driver loaded), temperature (°C), SM clock (MHz)."""
    return _each(
        {
            POWER: lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1e3,
            ENERGY: lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1e3,
            TEMPERATURE: lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
            SM_CLOCK: lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
        },
        (pynvml.NVMLError,),
    )


def amdsmi_reading(amdsmi: Any, handle: Any) -> dict[str, float]:
    """Socket power (W), the energy accumulator in J, the hotspot temperature (°C), the GFX clock (MHz)."""

    def power() -> float:
        info = amdsmi.amdsmi_get_power_info(handle)
        for field in _AMD_POWER_FIELDS:  # an unsupported member is the string "N/A"
            value = info.get(field)
            if isinstance(value, (int, float)) and value not in (0xFFFF, 0xFFFFFFFF):
                return value
        raise LookupError("no power field")

    def energy() -> float:
        counter = amdsmi.amdsmi_get_energy_count(handle)
        return counter["energy_accumulator"] * counter["counter_resolution"] / 1e6  # counts × µJ/count

    return _each(
        {
            POWER: power,
            ENERGY: energy,
            TEMPERATURE: lambda: amdsmi.amdsmi_get_temp_metric(
                handle, amdsmi.AmdSmiTemperatureType.HOTSPOT, amdsmi.AmdSmiTemperatureMetric.CURRENT
            ),
            SM_CLOCK: lambda: amdsmi.amdsmi_get_clock_info(handle, amdsmi.AmdSmiClkType.GFX)["clk"],
        },
        (amdsmi.AmdSmiException, LookupError, TypeError, ValueError),
    )


class GpuPower:
    """One device's figures at each sample, its energy counted from the first sample."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._counter_start: float | None = None  # the device counter at the first sample
        self._integrated = 0.0  # J, where the device has no counter
        self._last_power: tuple[float, float] | None = None  # (time, W)

    def sample(self, nvml: Any, amd: Any) -> dict[str, float]:
        """This device's figures now (``nvml``/``amd``: its handle in that library, or None)."""
        if nvml is None and amd is None:
            if not _said_absent:
                _said_absent.append(True)
                log.info("primus tracking: neither NVML nor amdsmi answers for this device: no gpu/* power figures")
            return {}
        try:
            if nvml is not None:
                import pynvml

                reading = nvml_reading(pynvml, nvml)
            else:
                import amdsmi

                reading = amdsmi_reading(amdsmi, amd)
        except Exception:  # noqa: BLE001 - a library that misbehaves must not break logging: no figures this time
            return {}
        return self._with_energy(reading)

    def _with_energy(self, reading: dict[str, float]) -> dict[str, float]:
        if ENERGY in reading:
            if self._counter_start is None:
                self._counter_start = reading[ENERGY]
            reading[ENERGY] -= self._counter_start
        elif POWER in reading:
            now = self._clock()
            if self._last_power is not None:
                then, watts = self._last_power
                self._integrated += (now - then) * (watts + reading[POWER]) / 2
            self._last_power = (now, reading[POWER])
            reading[ENERGY] = self._integrated
        return reading


def joules_per_token(energy_j: float, since_j: float, tokens: float, world_size: int) -> float | None:
    """The energy of this rank's device over an interval over its share of the job's tokens in it: the job's
    joules per token when every device draws alike. None without tokens."""
    share = tokens / world_size if world_size > 0 else 0.0
    return (energy_j - since_j) / share if share > 0 else None
