"""A training with one rank made slower by a user's own ``sitecustomize`` (``slow_rank_site/``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "slow_rank_site"


def slow_rank_env(target: str, rank: int, seconds: float, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` plus what makes ``rank`` sleep ``seconds`` before each call of ``target`` (``module:Attr.path``):
    the user's site folder on PYTHONPATH (after whatever ``env`` has there; primus-run puts its bootstrap first)."""
    env = dict(env or {})
    path = os.pathsep.join(p for p in (env.get("PYTHONPATH", ""), str(FOLDER)) if p)
    return env | {"PYTHONPATH": path, "PRIMUS_TEST_SLOW_TARGET": target, "PRIMUS_TEST_SLOW_RANK": str(rank),
                  "PRIMUS_TEST_SLOW_S": str(seconds)}
