"""Primus's host reads of tensors during a real training (``host_reads_site/sitecustomize.py`` counts them)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "host_reads_site"  # its sitecustomize counts, put first on PYTHONPATH
ENV = "PRIMUS_TEST_HOST_READS"
OUT = "host_reads"  # under the folder the training starts in


def host_reads_env(env: Mapping[str, str]) -> dict[str, str]:
    """What a training's environment needs for its processes to count (``env``'s PYTHONPATH kept after it)."""
    path = os.pathsep.join(p for p in (str(FOLDER), env.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, ENV: OUT}


def host_reads(run_folder: Path) -> list[dict]:
    """Every process's record: argv, rank, ``reads`` (Primus's reads of tensors it did not make) and
    ``own_host_tensors`` (its reads of the host tensors it made), ``collectives`` (its calls of torch.distributed's
    collectives); one per process that exited normally."""
    return [json.loads(p.read_text()) for p in sorted((run_folder / OUT).glob("*.json"))]
