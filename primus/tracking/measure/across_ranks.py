"""Memory, utilisation and the device's power figures of every rank, as min / mean / max over ranks (a scaling study needs the slowest
rank, not the one that logs), and each rank's busy time for the straggler figures (stragglers.py): one gather
carries both when both are on.

One ``all_gather`` of a few host floats per log step, through gloo: the job's default group when it is
gloo (CPU), else one gloo group made at the first gather (every rank gathers at the same log steps). The
values are host-side reads (allocator counters, NVML/amdsmi, psutil), so no device work is queued and no
device synchronisation is added. Cost per log step (benchmarks/rank_gather.py, gloo over loopback on a loaded
2-core box, rank 0's training thread, median wall / CPU): 2 ranks ~0.6 ms / 0.2 ms, 4 ranks ~6 ms / 0.4 ms, 8 ranks
~20 ms / 0.5 ms (the smallest all_reduce there: 0.3, 1.3 and 6 ms of wall); between hosts add one network round trip per log step.

Tokens/s and TFLOP/s per GPU are not gathered: they are computed from the job's global batch over the log
interval's wall time, so they are the job's figures already."""

from __future__ import annotations

import math
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from primus.tracking.journal.records import RANK_HOSTS
from primus.tracking.measure.names import SCHEMA
from primus.tracking.measure.perf import Utilisation, device_memory_metrics
from primus.tracking.measure.stragglers import BusyClock, slowest_line, summary

HOST_BYTES = 64  # of a host's name, gathered once
# the names gathered, in the order every rank packs them (absent on a rank: NaN, left out of that figure)
GATHERED: tuple[str, ...] = tuple(n for n in SCHEMA if n.startswith(("mem/", "sys/", "gpu/")))


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
    """Called on every rank at the same log steps; every rank gets every rank's row (only the logging one uses it)."""

    def __init__(self) -> None:
        self._group = None  # the default group, or a gloo group of the same ranks made at the first gather
        self._grouped = False

    def gather(self, row: Sequence[float]) -> list[list[float]]:
        """Every rank's ``row`` of host floats (index: rank), in one all_gather."""
        import torch
        import torch.distributed as dist

        if not self._grouped:
            self._group, self._grouped = _host_group(dist), True
        local = torch.tensor(list(row), dtype=torch.float64)
        rows = [torch.empty_like(local) for _ in range(dist.get_world_size(self._group))]
        dist.all_gather(rows, local, group=self._group)
        return [r.tolist() for r in rows]

    def hosts(self) -> list[str]:
        """Every rank's host name (index: rank), in one all_gather of a few bytes: once per run."""
        name = socket.gethostname().encode()[:HOST_BYTES]
        rows = self.gather(name.ljust(HOST_BYTES, b"\0"))
        return [bytes(int(b) for b in row if b).decode(errors="replace") for row in rows]


@dataclass(frozen=True)
class LogStepRanks:
    """What a log step's gather gives this rank."""

    system: dict[str, float] | None  # own memory/utilisation and min/mean/max over ranks (across-rank figures on)
    stragglers: dict[str, float]  # straggler/* (stragglers on, from the second log step)
    slowest: str | None  # the console line naming the slowest rank and its host, when it is slow enough
    hosts: tuple[str, ...] = ()  # every rank's host (index: rank), at the log step that gathered them (the first)

    def journal_hosts(self, run: Any) -> None:
        """On the logging rank: the hosts, once, as a ``rank_hosts`` event (the straggler alert names the host)."""
        if self.hosts:
            run.event(RANK_HOSTS, hosts=list(self.hosts))


class RankFigures:
    """Memory and utilisation (``figures``) and busy time (``stragglers``) of every rank, in one gather: each rank
    calls ``read`` at the same log steps, whether it logs or not."""

    def __init__(self, figures: bool = True, stragglers: bool = False) -> None:
        self._utilisation = Utilisation() if figures else None
        self._stragglers = stragglers
        self._clock: BusyClock | None = None  # made at the first log step, which only starts it
        self._gather = RankGather()
        self._hosts: list[str] | None = None

    def read(self, data_wait_s: float = math.nan) -> LogStepRanks:
        """This rank's own figures and the summaries over ranks. ``data_wait_s``: this rank's seconds waiting for
        batches since the last log step, where upstream times them (stragglers on: the slowest rank's is told)."""
        own = {**device_memory_metrics(), **self._utilisation.read()} if self._utilisation is not None else {}
        row = [float(own.get(n, math.nan)) for n in GATHERED] if self._utilisation is not None else []
        if self._stragglers:
            if self._clock is None:  # the process group is up by the first log step (not when this was made)
                self._clock = BusyClock(device=_device_collectives())
            row += [self._clock.take(), data_wait_s]
        rows = self._gather.gather(row)
        system = own | summarise(rows) if self._utilisation is not None else None
        if not self._stragglers:
            return LogStepRanks(system, {}, None)
        gathered = self._hosts is None
        if self._hosts is None:
            self._hosts = self._gather.hosts()  # every rank, at its first log step
        stragglers = summary([r[-2] for r in rows], [r[-1] for r in rows])
        hosts = tuple(self._hosts) if gathered else ()
        return LogStepRanks(system, stragglers, slowest_line(stragglers, self._hosts), hosts)

    def close(self) -> None:
        if self._clock is not None:
            self._clock.close()


def _device_collectives() -> bool:
    """Whether the job's collectives run on a device (NCCL/RCCL), where a wait holds the stream, not the host."""
    import torch.distributed as dist

    return "nccl" in str(dist.get_backend())


def _host_group(dist):
    """A group that gathers CPU tensors on the host: the default one (None) when its backend has gloo for CPU.
    Never the default group's object itself: held here, it would outlive upstream's destroy_process_group and
    keep its gloo connections open into interpreter shutdown."""
    if "gloo" in str(dist.get_backend()):
        return None
    return dist.new_group(backend="gloo")
