"""``python -m primus.backends.torchtitan [torchtitan args]``: upstream's ``python -m torchtitan.train`` (run as
``__main__``, so each release calls its own ``main``) with Primus's patches active. What upstream reads only from
its command line comes from the experiment when the command line has none (``upstream_argv``); without torchrun,
the rendezvous variables of a one-process world are set."""

from __future__ import annotations

import os
import runpy
import socket
import sys
from collections.abc import Mapping, MutableMapping, Sequence

from primus.backends.torchtitan.experiment import MODEL_SECTION, experiment_params

# (experiment section, key, upstream's flag): read by upstream from sys.argv before its config is built
_COMMAND_LINE_ONLY = (
    (MODEL_SECTION, "module", "--module"),
    (MODEL_SECTION, "config", "--config"),
    ("job", "config_file", "--job.config_file"),
)
_SINGLE_PROCESS = dict(MASTER_ADDR="127.0.0.1", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")


def _given(argv: Sequence[str], flag: str) -> bool:
    spellings = {flag, flag.replace("_", "-")}  # upstream accepts --job.config-file too
    return any(a in spellings or a.split("=", 1)[0] in spellings for a in argv)


def upstream_argv(argv: Sequence[str], params: Mapping | None) -> list[str]:
    """``argv`` plus the command-line-only flags the experiment sets and the command line does not."""
    argv = list(argv)
    for section, key, flag in _COMMAND_LINE_ONLY:
        values = (params or {}).get(section)
        value = values.get(key) if isinstance(values, Mapping) else None
        if value and not _given(argv, flag):
            argv += [flag, str(value)]
    return argv


def single_process_env(environ: MutableMapping[str, str] = os.environ) -> None:
    for key, value in _SINGLE_PROCESS.items():
        environ.setdefault(key, value)
    if "MASTER_PORT" not in environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            environ["MASTER_PORT"] = str(s.getsockname()[1])


def main() -> None:
    from primus.errors import SettingsError

    try:
        params = experiment_params()
        sys.argv[1:] = upstream_argv(sys.argv[1:], params)
        single_process_env()
        runpy.run_module("torchtitan.train", run_name="__main__", alter_sys=True)
    except SettingsError as e:  # the experiment, or the tracking plan in upstream's parse_args: the message is the fix
        sys.exit(f"primus: {e}")
