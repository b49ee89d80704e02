"""The accelerators a run sees (``primus/tracking/tags/accelerator.py``): nothing on a host without one, never
an error; with one, its model, count and the toolkit torch was built with."""

import sys
import types

import pytest
import torch

from primus.tracking.tags.accelerator import accelerator_tags


def test_a_cpu_host_gets_no_accelerator_tag():
    assert "torch" in sys.modules and not torch.cuda.is_available()
    assert accelerator_tags() == {}


def fake_torch(available: bool, cuda: str | None, hip: str | None, fails: bool = False):
    def name(index):
        if fails:
            raise RuntimeError("driver gone")
        return "AMD Instinct MI300X" if hip else "NVIDIA H100 80GB HBM3"

    cuda_api = types.SimpleNamespace(is_available=lambda: available, get_device_name=name, current_device=lambda: 0,
                                     device_count=lambda: 8)
    return types.SimpleNamespace(cuda=cuda_api, version=types.SimpleNamespace(cuda=cuda, hip=hip))


@pytest.mark.parametrize(("torch_module", "expected"), [
    (fake_torch(True, "12.8", None), {"primus.accelerator.model": "NVIDIA H100 80GB HBM3",
                                      "primus.accelerator.count": "8", "primus.accelerator.cuda": "12.8"}),
    (fake_torch(True, None, "6.4.1"), {"primus.accelerator.model": "AMD Instinct MI300X",
                                       "primus.accelerator.count": "8", "primus.accelerator.rocm": "6.4.1"}),
    (fake_torch(False, "12.8", None), {}),  # a CUDA build on a host without a GPU
    (fake_torch(True, "12.8", None, fails=True), {}),
])
def test_torchs_devices_and_toolkit(monkeypatch, torch_module, expected):
    monkeypatch.setitem(sys.modules, "torch", torch_module)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no driver to ask here: the driver tag is left out
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    assert accelerator_tags() == expected


@pytest.mark.parametrize("torch_loaded", [False, True])  # a JAX process may import torch too (a data loader)
def test_jaxs_devices_when_torch_has_none(monkeypatch, torch_loaded):
    gpu = types.SimpleNamespace(platform="gpu", device_kind="NVIDIA H200")
    if torch_loaded:
        monkeypatch.setitem(sys.modules, "torch", fake_torch(False, "12.8", None))
    else:
        monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace(local_devices=lambda: [gpu, gpu]))
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", None)
    assert accelerator_tags() == {"primus.accelerator.model": "NVIDIA H200", "primus.accelerator.count": "2"}
