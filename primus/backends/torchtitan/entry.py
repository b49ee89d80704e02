"""``python -m primus.backends.torchtitan [torchtitan args]``: upstream's ``torchtitan.train.main()`` with
Primus's patches active. Without ``--module``/``--config`` on the command line they come from the
experiment's ``model:`` section (``model: {module: llama3, config: llama3_8b}``). Without torchrun, the
rendezvous variables of a one-process world are set."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping, MutableMapping, Sequence

from primus.backends.torchtitan.experiment import MODEL_SECTION, experiment_params

_SINGLE_PROCESS = (("MASTER_ADDR", "127.0.0.1"), ("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"),
                   ("LOCAL_WORLD_SIZE", "1"))


def upstream_argv(argv: Sequence[str], params: Mapping | None) -> list[str]:
    """``argv`` plus ``--module``/``--config`` from the experiment where the command line has none."""
    argv = list(argv)
    model = (params or {}).get(MODEL_SECTION) or {}
    for flag in ("module", "config"):
        given = any(a == f"--{flag}" or a.startswith(f"--{flag}=") for a in argv)
        if not given and model.get(flag):
            argv += [f"--{flag}", str(model[flag])]
    return argv


def single_process_env(environ: MutableMapping[str, str] = os.environ) -> None:
    for key, value in _SINGLE_PROCESS:
        environ.setdefault(key, value)
    if "MASTER_PORT" not in environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            environ["MASTER_PORT"] = str(s.getsockname()[1])


def main() -> None:
    sys.argv[1:] = upstream_argv(sys.argv[1:], experiment_params())
    single_process_env()
    import torchtitan.train

    torchtitan.train.main()
