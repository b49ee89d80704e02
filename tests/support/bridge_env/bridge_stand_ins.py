"""Import stand-ins that let megatron-bridge 0.6.2 be imported where Transformer Engine and nvidia-resiliency-ext
are not installed: CI's CPU environment (.venv-bridge, whose .pth calls ``install()`` at start-up).

Two Bridge modules import them unconditionally though neither needs them to train without them:
``megatron.bridge.peft.lora_layers`` (``import transformer_engine.pytorch as te``, used in annotations) and
``megatron.bridge.training.pretrain`` (``from nvidia_resiliency_ext.inprocess import CallWrapper``, a type hint
unless in-process restart is on). TE has no CPU wheel; the only nvidia-resiliency-ext on PyPI (0.4.1) breaks
``import megatron.core``. Each module gets its stand-ins only while its own body runs, after its other imports
are done, so every other module's ``import transformer_engine`` still fails and megatron-core's HAVE_TE checks
say False.

Test environment, not a Primus patch: where Bridge is supported (a GPU host) both packages are installed and
must not be shadowed, and a patch installs after its target is imported, too late for an import at its top.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from pathlib import Path

STAND_INS = {
    "megatron.bridge.peft.lora_layers": ("transformer_engine", "transformer_engine.pytorch"),
    "megatron.bridge.training.pretrain": ("nvidia_resiliency_ext", "nvidia_resiliency_ext.inprocess"),
}


class _Absent:
    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__module__}.{type(self).__name__} is a stand-in: the package is not installed")


def stand_in(name: str) -> types.ModuleType:
    """A module whose capitalised attributes are classes that refuse to be built, and the rest sub-modules."""
    module = types.ModuleType(name)
    module.__path__ = []

    def getattr_(attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        value = type(attr, (_Absent,), {"__module__": name}) if attr[:1].isupper() else stand_in(f"{name}.{attr}")
        setattr(module, attr, value)
        return value

    module.__getattr__ = getattr_  # type: ignore[method-assign]
    return module


def other_imports(path: str, absent_root: str) -> list[str]:
    """The absolute modules a source file imports at its top level, but the absent package's; for ``from m import
    n``, ``m.n`` too (a submodule, or else not a module: ``import_present`` passes over it)."""
    names = []
    for node in ast.parse(Path(path).read_text()).body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return [n for n in names if n.split(".")[0] != absent_root]


def import_present(name: str) -> None:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:  # ``m.n`` where n is a name in m, not a module: nothing to import
            raise


class StandInFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in STAND_INS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or spec.origin is None:
            return spec
        absent = STAND_INS[fullname]
        execute, origin = spec.loader.exec_module, spec.origin

        def exec_module(module):
            for name in other_imports(origin, absent[0].split(".")[0]):
                import_present(name)
            sys.modules.update({name: stand_in(name) for name in absent})
            try:
                execute(module)
            finally:
                for name in absent:
                    sys.modules.pop(name, None)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    if not any(isinstance(f, StandInFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, StandInFinder())
