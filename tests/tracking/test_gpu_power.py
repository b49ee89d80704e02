"""GPU power, energy, temperature and SM clock at the NVML and amdsmi boundary: their functions stood in (this
machine has no GPU; benchmarks/gpu_check.py reads them for real on a GPU host), the units converted, each figure
read on its own, energy from the device's counter or integrated power, and joules per token from it."""

from __future__ import annotations

import logging
import sys
import types

import pytest

from primus.tracking.measure import gpu_power
from primus.tracking.measure.gpu_power import (
    ENERGY,
    POWER,
    SM_CLOCK,
    TEMPERATURE,
    GpuPower,
    amdsmi_reading,
    joules_per_token,
    nvml_reading,
)
from primus.tracking.measure.perf import StepPerf, Utilisation


class NVMLError(Exception):
    pass


def stand_in_pynvml(unsupported=(), energy_mj=9_876_543_210) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    m.NVMLError, m.NVML_TEMPERATURE_GPU, m.NVML_CLOCK_SM = NVMLError, 0, 1
    m.nvmlInit = lambda: None
    m.nvmlDeviceGetCount = lambda: 1
    m.nvmlDeviceGetHandleByIndex = lambda i: ("nvml", i)
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=10)
    m.energy_mj = energy_mj  # the test moves the counter
    calls = {
        "nvmlDeviceGetPowerUsage": lambda h: 412_345,  # mW
        "nvmlDeviceGetTotalEnergyConsumption": lambda h: m.energy_mj,  # mJ since the driver loaded
        "nvmlDeviceGetTemperature": lambda h, sensor: 61 if sensor == 0 else -1,
        "nvmlDeviceGetClockInfo": lambda h, clock: 1980 if clock == 1 else -1,
    }
    for name, call in calls.items():
        if name in unsupported:

            def call(*args, _name=name):
                raise NVMLError(f"{_name}: Not Supported")

        setattr(m, name, call)
    return m


def stand_in_amdsmi(power_info=None) -> types.ModuleType:
    m = types.ModuleType("amdsmi")
    m.AmdSmiException = type("AmdSmiException", (Exception,), {})
    m.AmdSmiTemperatureType = types.SimpleNamespace(EDGE=0, HOTSPOT=1)
    m.AmdSmiTemperatureMetric = types.SimpleNamespace(CURRENT=0)
    m.AmdSmiClkType = types.SimpleNamespace(GFX=0, MEM=2)
    m.amdsmi_get_power_info = lambda h: power_info or {
        "socket_power": 600, "current_socket_power": 640, "average_socket_power": "N/A", "power_limit": 750}
    m.amdsmi_get_energy_count = lambda h: {"energy_accumulator": 655_360_000, "counter_resolution": 15.259,
                                           "timestamp": 1}
    m.amdsmi_get_temp_metric = lambda h, kind, metric: 58 if kind == 1 else 40
    m.amdsmi_get_clock_info = lambda h, kind: {"clk": 2100 if kind == 0 else 1300, "min_clk": 500}
    return m


def test_nvml_figures_in_primus_units():
    assert nvml_reading(stand_in_pynvml(), "h") == {POWER: 412.345, ENERGY: 9_876_543.21, TEMPERATURE: 61.0,
                                                   SM_CLOCK: 1980.0}


def test_a_figure_nvml_does_not_support_is_absent_and_the_others_stay():
    reading = nvml_reading(stand_in_pynvml({"nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetClockInfo"}), "h")
    assert reading == {POWER: 412.345, TEMPERATURE: 61.0}


def test_amdsmi_figures_in_primus_units():
    assert amdsmi_reading(stand_in_amdsmi(), "h") == pytest.approx(
        {POWER: 640.0, ENERGY: 655_360_000 * 15.259 / 1e6, TEMPERATURE: 58.0, SM_CLOCK: 2100.0})
    # MI200 and older: no current_socket_power ("N/A"), the average is the power
    older = amdsmi_reading(stand_in_amdsmi({"current_socket_power": "N/A", "average_socket_power": 300}), "h")
    assert older[POWER] == 300.0
    assert POWER not in amdsmi_reading(stand_in_amdsmi({"current_socket_power": "N/A", "socket_power": 0xFFFF}), "h")


def test_energy_counts_from_the_first_sample_by_the_devices_own_counter(monkeypatch):
    pynvml = stand_in_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", pynvml)
    power = GpuPower()
    assert power.sample("h", None)[ENERGY] == 0.0
    pynvml.energy_mj += 1_500_000  # 1.5 kJ later
    assert power.sample("h", None)[ENERGY] == 1500.0


def test_without_a_counter_energy_is_power_integrated_over_the_sampling_times(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", stand_in_pynvml({"nvmlDeviceGetTotalEnergyConsumption"}))
    now = [100.0]
    power = GpuPower(clock=lambda: now[0])
    assert power.sample("h", None)[ENERGY] == 0.0
    now[0] += 2.0
    assert power.sample("h", None)[ENERGY] == pytest.approx(2.0 * 412.345)


def test_no_library_no_figures_said_once_per_process(caplog, monkeypatch):
    monkeypatch.setattr(gpu_power, "_said_absent", [])
    with caplog.at_level(logging.INFO, "primus.tracking"):
        assert GpuPower().sample(None, None) == {} and GpuPower().sample(None, None) == {}
    assert [r.getMessage() for r in caplog.records if "gpu/" in r.getMessage()] == [
        "primus tracking: neither NVML nor amdsmi answers for this device: no gpu/* power figures"]


def test_a_library_that_raises_what_it_should_not_gives_no_figures_that_time(monkeypatch):
    broken = stand_in_pynvml()
    del broken.NVMLError  # e.g. an old pynvml
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    assert GpuPower().sample("h", None) == {}


def test_every_tracker_gets_them_from_the_sampled_utilisation(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", stand_in_pynvml())
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    reading = Utilisation(environ={"LOCAL_RANK": "0"}).read()
    assert {POWER, ENERGY, TEMPERATURE, SM_CLOCK} <= set(reading) and reading[POWER] == 412.345


def test_joules_per_token_from_the_second_interval_over_this_devices_share_of_tokens(monkeypatch):
    pynvml = stand_in_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", pynvml)
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    perf = StepPerf(dtype="bf16", visible_ordinal=0)
    perf.begin()
    assert "perf/joules_per_token" not in perf.interval(tokens=8000, seconds=1, steps=1, world_size=4, flops=None)
    pynvml.energy_mj += 3_000_000  # 3 kJ on this device over the interval
    perf._utilisation._refresh()  # the sampling thread's next sample, taken now
    out = perf.interval(tokens=8000, seconds=1, steps=1, world_size=4, flops=None)
    assert out["perf/joules_per_token"] == pytest.approx(3000 / 2000)  # 2000 tokens per device
    assert joules_per_token(10.0, 4.0, 0, 4) is None


def test_nothing_on_a_cpu_host(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    perf = StepPerf(dtype="bf16")
    perf.begin()
    perf.interval(tokens=8000, seconds=1, steps=1, world_size=1, flops=None)
    out = {**perf.interval(tokens=8000, seconds=1, steps=1, world_size=1, flops=None), **perf.system()}
    assert not any(name.startswith("gpu/") or name == "perf/joules_per_token" for name in out)


def test_with_the_system_figures_off_the_interval_starts_no_sampling(monkeypatch):
    """Throughput alone (no perf metric set: ``begin`` never called): no device read, no sampling thread."""
    monkeypatch.setitem(sys.modules, "pynvml", stand_in_pynvml())
    perf = StepPerf(dtype="bf16", visible_ordinal=0)
    for _ in range(2):
        assert "perf/joules_per_token" not in perf.interval(tokens=8000, seconds=1, steps=1, world_size=4, flops=None)
    assert perf._utilisation.sampled() == {}
