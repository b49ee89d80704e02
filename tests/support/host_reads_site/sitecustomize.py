"""Counts the host reads of device arrays made by Primus's own code, in every Python process that has this folder on
PYTHONPATH and ``PRIMUS_TEST_HOST_READS`` set to a folder (a test's instrument, never the product's): each process
writes ``<folder>/<pid>.json`` at exit, listing every read — torch's ``.item()``, ``.tolist()``, ``.cpu()``,
``.numpy()``, ``.to("cpu")``, ``float(t)``, ``int(t)``, ``bool(t)``; JAX's ``float(a)``, ``np.asarray(a)``,
``.item()``, ``.tolist()``, ``jax.device_get``, ``block_until_ready`` — whose nearest caller outside torch/JAX/NumPy
is a file of the ``primus`` package, with its thread (a read inside an upstream callable that Primus's
pass-through wrapper called is upstream's). Tensors Primus itself made on the host are not upstream's values: their
reads are listed apart. It lists as well every call of torch.distributed's collectives (and of ``new_group``, which
is one) whose nearest caller outside torch is Primus's. Then it chains the next ``sitecustomize`` on the path (a
user's), as any user's would be."""

from __future__ import annotations

import atexit
import importlib.machinery
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
TORCH_READS = ("item", "tolist", "cpu", "numpy", "__float__", "__int__", "__bool__", "__index__", "to")
TORCH_FACTORIES = ("tensor", "as_tensor", "empty", "empty_like", "zeros", "zeros_like", "ones", "full")
COLLECTIVES = ("all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
               "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "gather", "gather_object",
               "monitored_barrier", "new_group", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
               "scatter_object_list", "send", "recv", "isend", "irecv")
JAX_READS = ("item", "tolist", "__array__", "__float__", "__int__", "__bool__", "__index__", "block_until_ready")


def _chain_next_sitecustomize() -> None:
    """The next one after this folder on the path (one before it, primus-run's bootstrap, chained this one), found
    and registered as ``sitecustomize`` the way the bootstrap and the benchmarks' accounting chain theirs."""
    here = [Path(p or os.curdir).resolve() for p in sys.path].index(HERE)
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path[here + 1 :])
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


def _folder(module) -> str:
    # as imported, not resolved: frames name their files by the path they were imported from, which goes through
    # a link where the package or the environment is one (a worktree's .venv-maxtext, the MaxText tests' primus)
    return str(Path(module.__file__).parent) + os.sep


class Reads:
    """The reads seen in this process, attributed to their nearest caller outside the array libraries."""

    def __init__(self):
        import primus
        from primus.patches.handle import _UpstreamCall

        self.ours = _folder(primus)
        # a C callable of upstream's called through Primus's pass-through: the read is upstream's
        self.upstream_call = _UpstreamCall.__call__.__code__
        # what a tensor factory passes through on its way from its caller (the CPU platform's device placement)
        self.pass_through = (self.ours + "patches" + os.sep,
                             *(str(p) + os.sep for p in Path(self.ours).glob("backends/*/cpu")))
        self.libraries: tuple[str, ...] = ()
        self.made_here: set[int] = set()  # ids of live tensors Primus made (a tensor's == is elementwise)
        self.reads: list[dict] = []
        self.own: list[dict] = []
        self.collectives: list[dict] = []
        self.lock = threading.Lock()
        self.inside = threading.local()
        atexit.register(self.dump)

    def caller(self, through: tuple[str, ...] = ()) -> tuple[str, int, str]:
        """The nearest frame outside the array libraries, this file and ``through``: (file, line, function)."""
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_code.co_filename
            if frame.f_code is self.upstream_call and not through:
                return "<upstream>", 0, "?"
            if not name.startswith((*self.libraries, *through)) and name != __file__:
                return name, frame.f_lineno, frame.f_code.co_qualname
            frame = frame.f_back
        return "?", 0, "?"

    def note(self, how: str, array, file: str, line: int, function: str, own: bool = False) -> None:
        entry = {"site": f"{file[len(self.ours):]}:{line}", "function": function, "read": how,
                 "device": str(getattr(array, "device", "?")), "thread": threading.current_thread().name}
        with self.lock:
            (self.own if own else self.reads).append(entry)

    def reading(self, how: str, original, counts=lambda args, kwargs: True):
        def read(array, *args, **kwargs):
            if getattr(self.inside, "read", False):  # a read within a read (np.asarray -> _value): one read
                return original(array, *args, **kwargs)
            file, line, function = self.caller()
            if file.startswith(self.ours) and counts(args, kwargs):
                mine = id(array) in self.made_here and str(getattr(array, "device", "")) == "cpu"
                self.note(how, array, file, line, function, own=mine)
            self.inside.read = True
            try:
                return original(array, *args, **kwargs)
            finally:
                self.inside.read = False

        return read

    def making(self, original):
        def make(*args, **kwargs):
            made = original(*args, **kwargs)
            if self.caller(self.pass_through)[0].startswith(self.ours):
                self.made_here.add(id(made))
                weakref.finalize(made, self.made_here.discard, id(made))
            return made

        return make

    def dump(self) -> None:
        Path(OUT).mkdir(parents=True, exist_ok=True)
        data = {"argv": sys.argv, "rank": os.environ.get("RANK"), "reads": self.reads, "own_host_tensors": self.own,
                "collectives": self.collectives}
        (Path(OUT) / f"{os.getpid()}.json").write_text(json.dumps(data, indent=1))


_READS: list[Reads] = []


def _reads() -> Reads:
    if not _READS:
        _READS.append(Reads())
    return _READS[0]


def _instrument_torch(torch) -> None:
    reads = _reads()
    reads.libraries += (_folder(torch),)

    def to_host(args, kwargs) -> bool:  # .to(...) reads only when it goes to the host
        devices = (*args, kwargs.get("device"))
        return any(str(d).startswith("cpu") for d in devices if isinstance(d, (str, torch.device)))

    for name in TORCH_READS:
        counts = to_host if name == "to" else (lambda args, kwargs: True)
        setattr(torch.Tensor, name, reads.reading(name, getattr(torch.Tensor, name), counts))
    for name in TORCH_FACTORIES:
        setattr(torch, name, reads.making(getattr(torch, name)))


def _instrument_collectives(c10d) -> None:
    """Both names of each collective: the module's and ``torch.distributed``'s (bound by its ``import *``)."""
    import torch.distributed as dist

    reads = _reads()

    def counting(name, original):
        def collective(*args, **kwargs):
            file, line, function = reads.caller()
            if file.startswith(reads.ours):
                entry = {"site": f"{file[len(reads.ours):]}:{line}", "function": function, "collective": name,
                         "thread": threading.current_thread().name}
                with reads.lock:
                    reads.collectives.append(entry)
            return original(*args, **kwargs)

        return collective

    for name in COLLECTIVES:
        original = getattr(c10d, name, None)
        if original is not None:
            wrapped = counting(name, original)
            setattr(c10d, name, wrapped)
            if getattr(dist, name, None) is original:
                setattr(dist, name, wrapped)


def _instrument_jax(jax) -> None:
    import numpy
    from jax._src.array import ArrayImpl

    reads = _reads()
    reads.libraries += (_folder(jax), _folder(numpy), str(Path(_folder(jax)).parent / "jaxlib") + os.sep)
    for name in JAX_READS:
        setattr(ArrayImpl, name, reads.reading(name, getattr(ArrayImpl, name)))
    value = ArrayImpl._value  # a property: what jax.device_get and printing read
    ArrayImpl._value = property(reads.reading("_value", value.fget))


if OUT:
    import wrapt

    wrapt.register_post_import_hook(_instrument_torch, "torch")
    wrapt.register_post_import_hook(_instrument_jax, "jax")
    wrapt.register_post_import_hook(_instrument_collectives, "torch.distributed.distributed_c10d")
_chain_next_sitecustomize()
