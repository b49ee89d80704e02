"""Run by every Python of a measured benchmark run (``_measure.run_measured`` puts this folder on PYTHONPATH and
sets PRIMUS_CPU_ACCOUNTING): the CPU accounting (``cpu_accounted``) counts once Primus is imported. Then the next
``sitecustomize`` on sys.path after this folder runs (gpu_check's probe), as if this one were not there; Primus's
bootstrap, first on PYTHONPATH under ``primus-run``, chains to this one the same way."""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.realpath(__file__))


def _count_cpu() -> None:
    try:
        import cpu_accounted
    except ImportError:  # not a Python of the trainer's environment (no wrapt): nothing of Primus to count
        return
    cpu_accounted.install()


def _chain() -> None:
    here = [os.path.realpath(p or os.curdir) for p in sys.path].index(_HERE)
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path[here + 1 :])
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


if os.environ.get("PRIMUS_CPU_ACCOUNTING"):  # cpu_accounting.ENV; not imported, so that off costs nothing
    _count_cpu()
_chain()
