"""Megatron-Bridge on a host without an accelerator. Bridge runs on megatron-core, whose CPU patches
(``primus/backends/megatron_core/cpu``: torch.cuda stand-ins, device placement, eager jit fuser, the RNG tracker on the
CPU generator) install when Bridge imports it. Bridge's start-up (``megatron.bridge.training.initialize`` and
``setup``) is its own copy of Megatron's, with the same names: Megatron's start-up patches are installed on it."""

from __future__ import annotations

from types import ModuleType

from primus.backends.megatron_core.cpu import initialize
from primus.patches import PatchHandle
from primus.patches.platform import cpu_patches
from primus.upstreams.megatron_bridge import MEGATRON_BRIDGE


def install_local_layer_spec(gpt_provider: ModuleType, handle: PatchHandle) -> None:
    """A recipe's default layer spec is Transformer Engine's, which has no CPU build; a callable a YAML or
    run_recipe.py's KEY=VALUE overrides cannot replace (Bridge restores callables after the overrides)."""
    handle.replace(gpt_provider, "transformer_engine_layer_spec", gpt_provider.local_layer_spec)


bridge_cpu_patch = cpu_patches(MEGATRON_BRIDGE, "megatron_bridge")


PATCHES = (
    bridge_cpu_patch(
        "megatron_bridge.cpu.allow_no_cuda",
        "megatron.bridge.training.setup",
        "setup() calls initialize_megatron(allow_no_cuda=True), past the 'Megatron requires CUDA' assert "
        "(initialize.py:91)",
        initialize.install_allow_no_cuda,
    ),
    bridge_cpu_patch(
        "megatron_bridge.cpu.one_device_during_init",
        "megatron.bridge.training.initialize",
        "_initialize_distributed and _set_random_seed count one device, so the model-parallel groups and the RNG "
        "tracker are set up",
        initialize.install_one_device_during_init,
    ),
    bridge_cpu_patch(
        "megatron_bridge.cpu.prebuilt_dataset_helpers",
        "megatron.bridge.training.initialize",
        "compile_helpers imports megatron-core's prebuilt helpers_cpp instead of running make, which the wheel "
        "cannot (initialize.py:147 exits)",
        initialize.install_prebuilt_dataset_helpers,
    ),
    bridge_cpu_patch(
        "megatron_bridge.cpu.local_layer_spec",
        "megatron.bridge.models.gpt_provider",
        "default_layer_spec builds megatron-core's local layer spec in place of Transformer Engine's, which has no "
        "CPU build (gpt_provider.py:125)",
        install_local_layer_spec,
    ),
)
