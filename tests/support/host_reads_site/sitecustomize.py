"""Counts the host reads of tensors made by Primus's own code, in every Python process that has this folder on
PYTHONPATH and ``PRIMUS_TEST_HOST_READS`` set to a folder (a test's instrument, never the product's): each
process writes ``<folder>/<pid>.json`` at exit, listing every read of a tensor — ``.item()``, ``.tolist()``,
``.cpu()``, ``.numpy()``, ``float(t)``, ``int(t)``, ``bool(t)``, ``.to("cpu")`` — whose nearest caller outside
torch is a file of the ``primus`` package (a read inside an upstream callable that Primus's pass-through wrapper
called is upstream's). Tensors Primus itself made on the
host (the perf figures' gather over ranks packs host floats into a CPU tensor) are not upstream's values: their
reads are listed apart. Then it chains the next ``sitecustomize`` on the path (primus-run's bootstrap or a
user's), as any user's would be."""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import sys
import threading
import weakref
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = os.environ.get("PRIMUS_TEST_HOST_READS")
OUT = OUT and str(Path(OUT).absolute())  # a relative folder: the one the process started in
READS = ("item", "tolist", "cpu", "numpy", "__float__", "__int__", "__bool__", "__index__", "to")
FACTORIES = ("tensor", "as_tensor", "empty", "empty_like", "zeros", "zeros_like", "ones", "full")


def _chain_next_sitecustomize() -> None:
    """The next one after this folder on the path (one before it, primus-run's bootstrap, chained this one)."""
    entries = [Path(e).resolve() for e in sys.path if e]
    after = entries[entries.index(HERE) + 1 :] if HERE in entries else []
    for entry in after:
        candidate = entry / "sitecustomize.py"
        if candidate.is_file():
            spec = importlib.util.spec_from_file_location("_chained_sitecustomize", candidate)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


def _instrument(torch) -> None:
    import primus
    from primus.patches.handle import _UpstreamCall

    upstream_call = _UpstreamCall.__call__.__code__  # a C callable of upstream's called through it reads, not Primus

    ours_root = str(Path(primus.__file__).resolve().parent) + os.sep
    torch_root = str(Path(torch.__file__).resolve().parent) + os.sep
    # what a tensor factory passes through on its way from its caller (the CPU platform's device placement)
    pass_through = (ours_root + "patches" + os.sep, *(str(p) + os.sep for p in Path(ours_root).glob("backends/*/cpu")))
    made_here: set[int] = set()  # ids of live tensors Primus made (a tensor's == is elementwise: no WeakSet)
    reads: list[dict] = []
    own: list[dict] = []
    lock = threading.Lock()

    def caller(through: tuple[str, ...] = ()):
        """The nearest frame outside torch, this file and the folders ``through``: (file, line, function)."""
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if frame.f_code is upstream_call and not through:  # a C callable of upstream's read, called through it
                return "<upstream>", 0, "?"
            if not name.startswith((torch_root, *through)) and name != __file__:
                return name, frame.f_lineno, frame.f_code.co_qualname
            frame = frame.f_back
        return "?", 0, "?"

    def to_host(args, kwargs) -> bool:
        devices = (*args, kwargs.get("device"))
        return any(str(d).startswith("cpu") for d in devices if isinstance(d, (str, torch.device)))

    def read_wrapper(method_name, original):
        def read(self, *args, **kwargs):
            file, line, function = caller()
            if file.startswith(ours_root):
                if method_name != "to" or to_host(args, kwargs):
                    entry = {"site": f"{file[len(ours_root):]}:{line}", "function": function, "read": method_name,
                             "device": str(self.device), "thread": threading.current_thread().name}
                    with lock:
                        (own if id(self) in made_here and self.device.type == "cpu" else reads).append(entry)
            return original(self, *args, **kwargs)

        return read

    def factory_wrapper(original):
        def make(*args, **kwargs):
            tensor = original(*args, **kwargs)
            if caller(pass_through)[0].startswith(ours_root):
                made_here.add(id(tensor))
                weakref.finalize(tensor, made_here.discard, id(tensor))
            return tensor

        return make

    for name in READS:
        setattr(torch.Tensor, name, read_wrapper(name, getattr(torch.Tensor, name)))
    for name in FACTORIES:
        setattr(torch, name, factory_wrapper(getattr(torch, name)))

    def dump():
        Path(OUT).mkdir(parents=True, exist_ok=True)
        data = {"argv": sys.argv, "rank": os.environ.get("RANK"), "reads": reads, "own_host_tensors": own}
        (Path(OUT) / f"{os.getpid()}.json").write_text(json.dumps(data, indent=1))

    atexit.register(dump)


if OUT:
    import wrapt

    wrapt.register_post_import_hook(_instrument, "torch")
_chain_next_sitecustomize()
