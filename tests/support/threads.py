"""Threads of a process that ends without being asked to stop them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def daemon_threads_at_exit(start: str, run_dir: Path) -> list[str]:
    """Run ``start`` (Python, with ``run`` the run directory) in a fresh interpreter that then simply ends, and
    return the names of its daemon threads at that point: the process must exit, held by none of them."""
    code = (
        "import sys, threading; from pathlib import Path\n"
        f"run = Path(sys.argv[1])\n{start}\n"
        "print('\\n'.join(t.name for t in threading.enumerate() if t.daemon))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(run_dir)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()
