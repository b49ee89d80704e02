"""The Megatron CPU patches in this process, on a fresh registry: what they change once megatron.core is
imported, that they stay off on another platform, and that deactivate() restores every original."""

from __future__ import annotations

import importlib
import logging
import sys

import pytest

from primus.backends.megatron_core.cpu.device_placement import is_cuda_device
from primus.backends.megatron_core.cpu.torch_shims import host_memory_stats
from primus.backends.megatron.patches.cpu_patches import CPU_PATCHES
from primus.patches import PatchContext, PatchRegistry
from primus.patches.registry import DISABLE_ENV, SELECT_ENV

# Imported by `import megatron.core`; the megatron.training targets stay pending here.
CORE_TARGETS = ("megatron.core", "megatron.core.jit", "megatron.core.tensor_parallel.random",
                "megatron.core.datasets.utils")


@pytest.fixture
def cpu_registry(monkeypatch):
    """``activate(platform) -> registry`` with every CPU patch registered on a fresh registry."""
    monkeypatch.delenv(SELECT_ENV, raising=False)
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    registry = PatchRegistry()
    for patch in CPU_PATCHES:
        registry.register(patch)

    def activate(platform: str) -> PatchRegistry:
        registry.activate(PatchContext(platform=lambda: platform))
        for target in CORE_TARGETS:
            importlib.import_module(target)
        return registry

    yield activate
    registry.deactivate()


def _originals():
    import megatron.core.jit as jit
    import megatron.core.tensor_parallel.random as tp_random
    import torch

    return {
        "torch.cuda.current_device": torch.cuda.current_device,
        "torch.cuda.Stream": torch.cuda.Stream,
        "torch.cuda.random.get_rng_state": torch.cuda.random.get_rng_state,
        "torch.cuda.memory_stats": torch.cuda.memory_stats,
        "torch.cuda.get_device_properties": torch.cuda.get_device_properties,
        "torch.zeros": torch.zeros,
        "torch.Tensor.new_zeros": torch.Tensor.new_zeros,
        "torch.Tensor.cuda": torch.Tensor.cuda,
        "torch.Tensor.type": torch.Tensor.type,
        "jit.jit_fuser": jit.jit_fuser,
        "random._get_cuda_rng_state": tp_random._get_cuda_rng_state,
        "random log filters": list(logging.getLogger(tp_random.__name__).filters),
    }


def test_on_cpu_megatron_sees_a_usable_cuda_and_deactivate_restores_torch(cpu_registry):
    import megatron.core.jit as jit
    import torch

    originals = _originals()
    registry = cpu_registry("cpu")

    status = {r.id: r.status for r in registry.records()}
    core_ids = {p.id for p in CPU_PATCHES if p.target in CORE_TARGETS}
    assert {status[i] for i in core_ids} == {"applied"}, status
    assert torch.cuda.current_device() == 0
    assert torch.zeros(2, device="cuda").device.type == "cpu"
    assert torch.ones(1).new_zeros(2, device=0).device.type == "cpu"
    assert torch.ones(1).cuda().device.type == "cpu"
    assert torch.ones(1).type() == "torch.cuda.FloatTensor"
    assert torch.cuda.get_device_properties().major == 0
    assert jit.jit_fuser is jit.noop_decorator
    assert torch.cuda.memory_stats()["allocated_bytes.all.current"] > 0

    registry.deactivate()

    assert _originals() == originals
    assert "cuda" not in vars(torch.Tensor) and "type" not in vars(torch.Tensor)
    assert {r.status for r in registry.records()} == {"undone"}
    with pytest.raises(RuntimeError):
        torch.zeros(1, device="cuda")  # upstream behaviour is back: no CUDA device here


def test_on_another_platform_nothing_changes(cpu_registry):
    originals = _originals()
    registry = cpu_registry("cuda")

    skipped = {r.id: r.reason for r in registry.records() if r.status == "skipped"}
    imported = {p.id for p in CPU_PATCHES if p.target in sys.modules}  # megatron.training too, after other tests
    assert set(skipped) == imported >= {p.id for p in CPU_PATCHES if p.target in CORE_TARGETS}
    assert set(skipped.values()) == {"condition false"}
    assert {r.status for r in registry.records() if r.id not in imported} <= {"pending"}
    assert _originals() == originals


def test_host_memory_stats_are_this_process_resident_memory():
    import psutil

    stats = host_memory_stats()
    rss = psutil.Process().memory_info().rss
    assert 0.5 * rss < stats["allocated_bytes.all.current"] < 2 * rss
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"] * 0.9
    assert stats["allocation.all.current"] == 0  # no host equivalent; upstream indexes it


@pytest.mark.parametrize("device, expected", [
    ("cuda", True), ("cuda:1", True), (0, True), ("cpu", False), (None, False), (False, False)])
def test_cuda_devices_are_recognised_in_every_spelling(device, expected):
    import torch

    assert is_cuda_device(device) is expected
    if isinstance(device, str):
        assert is_cuda_device(torch.device(device)) is expected
