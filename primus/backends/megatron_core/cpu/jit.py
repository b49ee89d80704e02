"""Megatron's fused kernels on a CPU host run eagerly instead of through ``torch.compile``.

``megatron.core.jit`` sets ``jit_fuser = torch.compile`` at import; every fusion module then decorates
its functions with it, and on CPU each first call costs an inductor C++ build (a 3-iteration run takes
16 s instead of 9 s). Swapping in upstream's own ``noop_decorator`` right after ``jit`` is imported,
before any fusion module is, is what upstream's ``disable_jit_fuser()`` does, but undoable.
"""

from __future__ import annotations

from types import ModuleType

from primus.backends.megatron_core.cpu.platform import cpu_patch
from primus.patches import PatchHandle


def install_eager_jit_fuser(jit: ModuleType, handle: PatchHandle) -> None:
    handle.replace(jit, "jit_fuser", jit.noop_decorator)


PATCHES = (
    cpu_patch(
        "megatron.cpu.eager_jit_fuser",
        "megatron.core.jit",
        "jit_fuser is upstream's noop_decorator, so fusions (fusions/*.py, torch_norm.py) skip the "
        "inductor C++ build torch.compile does on CPU (core/jit.py:23)",
        install_eager_jit_fuser,
    ),
)
