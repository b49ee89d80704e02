"""Loaded by gpu_check.py's trainers (this folder on PYTHONPATH after Primus's bootstrap, which chains to it):
turns on torch's synchronisation warnings when CUDA initialises, and counts those raised from a line of Primus's
code (the innermost Python frame of the warning: the call that made the device wait). At exit it writes the
counts to $PRIMUS_SYNC_PROBE_OUT/sync-<pid>.json."""

import atexit
import json
import os
import warnings
from collections import Counter

SYNC = "synchroniz"  # torch: "called a synchronizing CUDA operation"
PRIMUS_DIR = os.environ.get("PRIMUS_SYNC_PROBE_PACKAGE", "")  # .../primus/, our package's folder
counts: Counter = Counter()
_show = warnings.showwarning


def _count(message, category, filename, lineno, file=None, line=None):
    if SYNC not in str(message):
        return _show(message, category, filename, lineno, file, line)
    counts["total"] += 1
    if PRIMUS_DIR and os.path.realpath(filename).startswith(PRIMUS_DIR):
        counts[f"{os.path.relpath(filename, os.path.dirname(PRIMUS_DIR))}:{lineno}"] += 1
    return None


def _on_cuda_init():
    import torch

    torch.cuda.set_sync_debug_mode("warn")


def _write():
    out = os.environ.get("PRIMUS_SYNC_PROBE_OUT")
    if out:
        with open(os.path.join(out, f"sync-{os.getpid()}.json"), "w") as f:
            json.dump(dict(counts), f)


def _install(torch):
    torch.cuda._lazy_call(_on_cuda_init)


warnings.filterwarnings("always", message=f".*{SYNC}.*")
warnings.showwarning = _count
atexit.register(_write)
try:
    import wrapt

    wrapt.register_post_import_hook(_install, "torch")
except ImportError:  # not a Python of the trainer's environment
    pass
