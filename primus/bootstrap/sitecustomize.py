"""Bootstrap run by every Python started under ``primus-run`` (this directory is first on
PYTHONPATH, so the interpreter imports this file as ``sitecustomize`` at start-up; torchrun workers
and other children inherit it through the environment).

With PRIMUS_ACTIVATE=1 it activates Primus's patches (post-import hooks only: nothing upstream is
imported here). Without it, nothing of primus is imported. Either way it then runs the user's own
``sitecustomize`` (the next one on sys.path), as if this file were not there.
"""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.realpath(__file__))


def _activate_primus() -> None:
    try:
        from primus.activation import activate
    except ImportError as e:
        # Another interpreter (a tool run by the job) inherited our PYTHONPATH: let it run unpatched.
        sys.stderr.write(
            f"primus: patches not active in {sys.executable}: cannot import primus ({e}); "
            f"install primus into this interpreter's environment\n"
        )
        return
    try:
        activate()
    except Exception as e:
        sys.stderr.write(f"primus: cannot activate patches: {e}\n")
        sys.stderr.flush()
        # SystemExit from sitecustomize is a fatal interpreter error with a traceback, not an exit.
        os._exit(2)


def _run_next_sitecustomize() -> None:
    path = [p for p in sys.path if os.path.realpath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module  # `import sitecustomize` in user code finds the user's own
    spec.loader.exec_module(module)


if os.environ.get("PRIMUS_ACTIVATE") == "1":  # primus.activation.ACTIVATE_ENV; not imported, to stay free
    _activate_primus()
_run_next_sitecustomize()
