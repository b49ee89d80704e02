"""``python -m primus.launch.first_host``: print the first host of the Slurm job's node list, the rendezvous
of a multi-node torchrun. Used inside a Pyxis container, where the image has primus but rarely scontrol.

Slurm compresses the list: ``gpu[007-009,012],cpu1`` starts with ``gpu007``; each bracket gives its first
number, zero padding kept (``rack[1-2]-n[01-04]`` starts with ``rack1-n01``)."""

from __future__ import annotations

import os
import re
import sys

NODELIST_ENV = "SLURM_JOB_NODELIST"
_FIRST_ITEM = re.compile(r"(?:[^,\[]|\[[^\]]*\])+")  # up to the first comma outside brackets
_RANGE = re.compile(r"\[([^\]\-,]*)[^\]]*\]")


def first_host(nodelist: str) -> str:
    match = _FIRST_ITEM.match(nodelist.strip())
    if match is None:
        raise ValueError(f"{NODELIST_ENV}={nodelist!r} names no host")
    return _RANGE.sub(lambda m: m.group(1), match.group(0))


def main() -> int:
    nodelist = os.environ.get(NODELIST_ENV, "")
    try:
        print(first_host(nodelist))
    except ValueError as e:
        print(f"primus.launch.first_host: {e}: run it in a Slurm job step", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
