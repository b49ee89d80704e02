"""The device torchtitan trains on: ``tools/utils.py:55`` (0.2.2: ``:37``) falls back to ``"cuda"`` when
torch sees no accelerator, and the trainer then dies in ``set_device`` (trainer.py:301; 0.2.2 train.py:90).
Here it is ``"cpu"``, with ``CpuDeviceModule`` as ``device_module``; everything else follows from that (gloo from
``default_device_backend_map``, CPU meshes, ``init_device="cpu"``)."""

from __future__ import annotations

import sys
from types import ModuleType

from primus.backends.torchtitan.cpu.platform import cpu_patch
from primus.patches import PatchHandle


def install_cpu_device(tools_utils: ModuleType, handle: PatchHandle) -> None:
    from primus.backends.torchtitan.cpu.device_module import CpuDeviceModule

    old_module, new_module = tools_utils.device_module, CpuDeviceModule()
    handle.replace(tools_utils, "device_type", "cpu")
    handle.replace(tools_utils, "device_module", new_module)
    # Modules that did `from torchtitan.tools.utils import device_type, device_module` before this ran
    # (metrics.py:21, distributed/utils.py:30, parallel_dims.py:19, profiler.py:21; in 0.2.2 parallel_dims is
    # imported while torchtitan itself is) keep the old values.
    for name, module in list(sys.modules.items()):
        if not name.startswith("torchtitan.") or module is None or module is tools_utils:
            continue
        if getattr(module, "device_module", None) is old_module:
            handle.replace(module, "device_module", new_module)
        if isinstance(getattr(module, "device_type", None), str) and module.device_type != "cpu":
            handle.replace(module, "device_type", "cpu")


PATCHES = (
    cpu_patch(
        "torchtitan.cpu.device",
        "torchtitan.tools.utils",
        "tools.utils.device_type/device_module: cpu and a host-memory device module instead of the "
        "'cuda' fallback (tools/utils.py:55, trainer.py:301, metrics.py:39-62)",
        install_cpu_device,
    ),
)
