"""Memory and utilisation of every rank, as min / mean / max over ranks (a scaling study needs the slowest
rank, not the one that logs).

One ``all_gather`` of a few host floats per log step, through gloo: the job's default group when it is
gloo (CPU), else one gloo group made at the first gather (every rank gathers at the same log steps). The
values are host-side reads (allocator counters, NVML/amdsmi, psutil), so no device work is queued and no
device synchronisation is added. Cost (benchmarks/rank_gather.py, 2 ranks, gloo over loopback on a loaded
2-core box): the all_gather ~1.6 ms median per log step (the smallest all_reduce there: ~0.6 ms), reading
the figures ~0.6 ms; between hosts add one network round trip per log step.

Tokens/s and TFLOP/s per GPU are not gathered: they are computed from the job's global batch over the log
interval's wall time, so they are the job's figures already."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from primus.tracking.names import SCHEMA
from primus.tracking.perf import Utilisation, device_memory_metrics

# the names gathered, in the order every rank packs them (absent on a rank: NaN, left out of that figure)
GATHERED: tuple[str, ...] = tuple(n for n in SCHEMA if n.startswith(("mem/", "sys/")))


def summarise(rows: Sequence[Sequence[float]], names: Sequence[str] = GATHERED) -> dict[str, float]:
    """``<name>/min``, ``<name>/mean``, ``<name>/max`` over the ranks' rows (one value per name, NaN: absent)."""
    out: dict[str, float] = {}
    for i, name in enumerate(names):
        values = [row[i] for row in rows if not math.isnan(row[i])]
        if values:
            out.update(
                {
                    f"{name}/min": min(values),
                    f"{name}/mean": math.fsum(values) / len(values),
                    f"{name}/max": max(values),
                }
            )
    return out


class RankGather:
    """Called on every rank at the same log steps; every rank gets the summary (only the logging one uses it)."""

    def __init__(self) -> None:
        self._group = None  # the default group, or a gloo group of the same ranks made at the first gather
        self._grouped = False

    def gather(self, values: Mapping[str, float]) -> dict[str, float]:
        import torch
        import torch.distributed as dist

        if not self._grouped:
            self._group, self._grouped = _host_group(dist), True
        local = torch.tensor([float(values.get(n, math.nan)) for n in GATHERED], dtype=torch.float64)
        rows = [torch.empty_like(local) for _ in range(dist.get_world_size(self._group))]
        dist.all_gather(rows, local, group=self._group)
        return summarise([row.tolist() for row in rows])


class RankFigures:
    """This rank's memory and utilisation and, gathered, every rank's: each rank calls ``read`` at the same log
    steps, whether it logs or not."""

    def __init__(self) -> None:
        self._utilisation = Utilisation()
        self._gather = RankGather()

    def read(self) -> dict[str, float]:
        """This rank's own figures and ``<name>/min|mean|max`` over ranks."""
        own = {**device_memory_metrics(), **self._utilisation.read()}  # the host's as last sampled
        return own | self._gather.gather(own)


def _host_group(dist):
    """A group that gathers CPU tensors on the host: the default one (None) when its backend has gloo for CPU.
    Never the default group's object itself: held here, it would outlive upstream's destroy_process_group and
    keep its gloo connections open into interpreter shutdown."""
    if "gloo" in str(dist.get_backend()):
        return None
    return dist.new_group(backend="gloo")
