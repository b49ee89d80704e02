"""Each rank reads its own GPU: the local rank's visible device, mapped to the physical device the vendor's
library numbers. Fakes of pynvml and amdsmi (this machine has no GPU) that report each physical device's own
utilisation, so a read from the wrong device shows."""

from __future__ import annotations

import sys
import types

import pytest

from primus.tracking.measure.devices import amdsmi_handle, nvml_handle, visible_list
from primus.tracking.measure.perf import Utilisation

NVIDIA = {0: "GPU-aaaa0000", 1: "GPU-bbbb1111", 2: "GPU-cccc2222", 3: "GPU-dddd3333"}  # NVML index -> UUID


def fake_pynvml(physical=NVIDIA) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    m.nvmlInit = lambda: None
    m.nvmlDeviceGetCount = lambda: len(physical)

    def by_index(i):
        if i not in physical:
            raise RuntimeError(f"NVML_ERROR_INVALID_ARGUMENT {i}")
        return ("nvml", i)

    def by_uuid(uuid):
        matches = [i for i, u in physical.items() if u.startswith(uuid)]
        if len(matches) != 1:
            raise RuntimeError(f"NVML_ERROR_NOT_FOUND {uuid}")
        return ("nvml", matches[0])

    m.nvmlDeviceGetHandleByIndex = by_index
    m.nvmlDeviceGetHandleByUUID = by_uuid
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=10 + h[1])  # device i reads 10 + i
    return m


def fake_amdsmi(serials=("0x00aa", "0x00bb", "0x00cc", "0x00dd")) -> types.ModuleType:
    m = types.ModuleType("amdsmi")
    m.amdsmi_init = lambda: None
    m.amdsmi_get_processor_handles = lambda: [("amd", i) for i in range(len(serials))]
    m.amdsmi_get_gpu_asic_info = lambda h: {"asic_serial": serials[h[1]]}
    m.amdsmi_get_gpu_activity = lambda h: {"gfx_activity": 50 + h[1]}  # device i reads 50 + i
    return m


@pytest.fixture
def nvidia(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # import fails, as on an NVIDIA node


@pytest.fixture
def amd(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", fake_amdsmi())


def gpu_util(environ, ordinal=None):
    return Utilisation(ordinal, environ=environ).read().get("sys/gpu_util_pct")


@pytest.mark.parametrize(("environ", "physical"), [
    ({"LOCAL_RANK": "2"}, 2),  # every device visible: the local rank's own
    ({}, 0),
    ({"LOCAL_RANK": "1", "CUDA_VISIBLE_DEVICES": "3,1"}, 1),  # visible ordinal 1 is physical 1
    ({"LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "3,1"}, 3),
    ({"LOCAL_RANK": "1", "CUDA_VISIBLE_DEVICES": "GPU-cccc2222,GPU-aaaa0000"}, 0),  # UUIDs
    ({"LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "GPU-dddd"}, 3),  # a unique UUID prefix
    ({"LOCAL_RANK": "5", "CUDA_VISIBLE_DEVICES": "2"}, 2),  # one device per process: whatever the local rank
])
def test_nvml_reads_the_physical_device_of_the_local_ranks_visible_device(nvidia, environ, physical):
    assert gpu_util(environ) == 10 + physical


@pytest.mark.parametrize("visible", ["", "-1", "GPU-ffff"])
def test_no_visible_device_or_an_unknown_one_gives_no_reading_never_another_device(nvidia, visible):
    assert gpu_util({"LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": visible}) is None


def test_an_explicit_ordinal_jax_local_device_wins_over_the_local_rank(nvidia):
    assert gpu_util({"LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "1,2,3"}, ordinal=2) == 13


def test_visible_list_ends_at_the_first_entry_that_is_not_a_device():
    assert visible_list("0,2,-1,3") == ["0", "2"]
    assert visible_list(None) is None and visible_list("") == []


@pytest.mark.parametrize(("environ", "physical"), [
    ({"LOCAL_RANK": "3"}, 3),
    ({"LOCAL_RANK": "1", "HIP_VISIBLE_DEVICES": "2,0"}, 0),
    ({"LOCAL_RANK": "1", "CUDA_VISIBLE_DEVICES": "2,0"}, 0),  # HIP honours CUDA_VISIBLE_DEVICES too
    ({"LOCAL_RANK": "0", "HIP_VISIBLE_DEVICES": "1", "CUDA_VISIBLE_DEVICES": "3"}, 1),  # HIP's wins
    # ROCr selects first, HIP numbers what ROCr left: HIP 1 of ROCr [3, 2] is physical 2
    ({"LOCAL_RANK": "0", "ROCR_VISIBLE_DEVICES": "3,2", "HIP_VISIBLE_DEVICES": "1"}, 2),
    ({"LOCAL_RANK": "1", "ROCR_VISIBLE_DEVICES": "3,2"}, 2),
    ({"LOCAL_RANK": "1", "ROCR_VISIBLE_DEVICES": "GPU-00dd,GPU-aa"}, 0),  # ROCr's GPU-<unique id>
])
def test_amdsmi_reads_the_physical_device_of_the_local_ranks_visible_device(amd, environ, physical):
    assert gpu_util(environ) == 50 + physical


def test_an_unknown_rocr_entry_keeps_its_place(amd):
    environ = {"LOCAL_RANK": "0", "ROCR_VISIBLE_DEVICES": "GPU-0123,1"}
    assert gpu_util(environ) is None
    assert gpu_util({**environ, "LOCAL_RANK": "1"}) == 51


def test_no_library_no_handle(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    assert nvml_handle(0, {}) is None and amdsmi_handle(0, {}) is None
    assert "sys/gpu_util_pct" not in Utilisation(environ={}).read()


def test_torchs_current_device_once_the_trainer_has_set_it(nvidia, monkeypatch):
    """A launcher without LOCAL_RANK (srun): the device the trainer picked, found at the first read."""
    import torch

    utilisation = Utilisation(environ={"CUDA_VISIBLE_DEVICES": "3,2,1"})  # built before the trainer picks
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert utilisation.read()["sys/gpu_util_pct"] == 12  # visible 1 of [3, 2, 1] is physical 2
