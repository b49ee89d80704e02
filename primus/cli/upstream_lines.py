"""The upstream trainers found here, one line each, as `primus patches`, `primus doctor` and
`primus --version` print them: the version read from the code Python would import, whether that is an
installed wheel or a source tree (with its path), the supported range, and how many patches apply."""

from __future__ import annotations

from dataclasses import dataclass

from primus.patches import REGISTRY
from primus.patches.catalog import upstreams
from primus.upstreams.release import UPSTREAM_CHECK_ENV, locate


@dataclass(frozen=True)
class UpstreamRow:
    backend: str
    distribution: str
    version: str | None
    origin: str | None  # "wheel" | "source tree" | None (not importable)
    path: str | None
    supported: str
    problem: str | None
    untested: bool  # outside the supported range, allowed by PRIMUS_UPSTREAM_CHECK=warn when problem is None
    patches_applying: int | None  # None: not counted (`primus --version`: a patch's condition may import torch)
    patches_declared: int


def upstream_rows(count_patches: bool = True) -> list[UpstreamRow]:
    rows = []
    for upstream in upstreams():
        found = locate(upstream)
        try:
            problem = found.problem()
        except ValueError as e:  # PRIMUS_UPSTREAM_CHECK is not a mode: nothing can be judged
            problem = str(e)
        mine = [p for p in REGISTRY.patches() if p.upstream == upstream]
        applying = (
            None if not count_patches else (sum(REGISTRY.eligibility(p).ok for p in mine) if problem is None else 0)
        )
        rows.append(
            UpstreamRow(
                upstream.name,
                upstream.distribution,
                found.version,
                found.origin,
                found.path,
                upstream.supported,
                problem,
                found.untested,
                applying,
                len(mine),
            )
        )
    return rows


def format_row(row: UpstreamRow) -> str:
    if row.path is None:
        return f"{row.backend:<10} not installed (supported: {row.distribution}{row.supported})"
    status = (
        f"; REFUSED: {row.problem}"
        if row.problem is not None
        else f"; {row.patches_applying} of {row.patches_declared} patches apply here"
        if row.patches_applying is not None
        else ""
    )
    if row.problem is None and row.untested:
        status = f"; untested, allowed ({UPSTREAM_CHECK_ENV}=warn){status}"
    return (
        f"{row.backend:<10} {row.distribution} {row.version or '?'} ({row.origin} {row.path}); "
        f"supported {row.supported}{status}"
    )
