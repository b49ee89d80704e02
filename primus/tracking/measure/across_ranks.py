"""Memory, utilisation and the device's power figures of every rank, as min / mean / max over ranks (a scaling
study needs the slowest rank, not the one that logs), and each rank's busy time and data wait for the straggler
figures (stragglers.py): one row per rank and log step carries both when both are on, with the rank's host.

The rows go through the job's store on a thread of ours (rank_channel.py), never a collective: the training thread
reads host-side values (allocator counters, the utilisation sampler's latest, the clock) and queues them. The
writing rank gathers a log step's rows while training goes on, and its summaries join the next log step's record
(one log step later, gathered.py); the console line naming the slowest rank is printed as soon as they are in.

Tokens/s and TFLOP/s per GPU are not gathered: they are computed from the job's global batch over the log
interval's wall time, so they are the job's figures already."""

from __future__ import annotations

import functools
import logging
import math
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from primus.tracking.journal.records import RANK_HOSTS
from primus.tracking.measure.gathered import Gathered, GatheredSteps, Previous
from primus.tracking.measure.names import SCHEMA
from primus.tracking.measure.perf import Utilisation, device_memory_metrics
from primus.tracking.measure.rank_channel import BOUND_S, Arrivals, RankChannel, job_store_client, node_from_env
from primus.tracking.measure.stragglers import MISSING_RANKS, BusyClock, slowest_line, summary

log = logging.getLogger("primus.tracking")

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


@dataclass(frozen=True)
class LogStepRanks:
    """What a log step gives this rank. On the writing rank, from the second log step, the figures over ranks of the
    previous log step join them when first read (``Gathered``): to be read on the hub's thread, which may wait."""

    system: Mapping[str, float] | None  # own memory/utilisation, and min/mean/max over ranks (across-rank figures on)
    stragglers: Mapping[str, float]  # straggler/* (stragglers on, from the third log step)
    # the writing rank, stragglers on, until they are journaled: every rank's host (index: rank) when first known,
    # else (), read on the hub's thread after the previous log step's figures (may wait, bounded)
    hosts: Callable[[], tuple[str, ...]] | None = None

    def journal_hosts(self, run: Any) -> None:
        """On the writing rank, on the training thread (it only queues): the hosts, once known, as one ``rank_hosts``
        event (the straggler alert names the host), journaled from the hub's thread where the figures are read."""
        if self.hosts is not None:
            run.log_later(functools.partial(_journal_hosts, run, self.hosts))


class RankFigures:
    """Memory and utilisation (``figures``) and busy time (``stragglers``) of every rank: each rank calls ``read`` at
    the same log steps, whether it writes or not; its row goes out through the job's store (rank_channel.py), and
    the ``writes`` rank gets the summaries of a log step at the next one (the console line as soon as gathered)."""

    def __init__(self, figures: bool = True, stragglers: bool = False, writes: bool = False) -> None:
        self._utilisation = Utilisation() if figures else None
        self._stragglers = stragglers
        self._writes = writes
        self._clock: BusyClock | None = None  # made at the first log step, which only starts it
        self._channel: RankChannel | None = None  # made at the first log step: the process group is up by then
        self._steps = 0
        self._missing_said: tuple[int, ...] = ()  # the missing ranks last warned of
        self._gathered_steps = GatheredSteps(BOUND_S + 1.0)  # a step's rows are in within BOUND_S of its own
        self._hosts: tuple[str, ...] | None = None  # every rank's (index: rank; "?": missing), at the first gather
        self._hosts_journaled = False

    def read(self, data_wait_s: float = math.nan) -> LogStepRanks:
        """This rank's own figures and, on the writing rank, the previous log step's over ranks (read later).
        ``data_wait_s``: this rank's seconds waiting for batches since the last log step, where upstream times them
        (stragglers on: the slowest rank's is told)."""
        own = {**device_memory_metrics(), **self._utilisation.read()} if self._utilisation is not None else {}
        row = [float(own.get(n, math.nan)) for n in GATHERED] if self._utilisation is not None else []
        if self._channel is None:
            self._channel = self._open()
        if self._clock is not None:
            row += [self._clock.take(), data_wait_s]
        self._channel.publish(self._steps, row)
        self._steps += 1
        system: Mapping[str, float] | None = own if self._utilisation is not None else None
        if not self._writes or self._steps == 1:
            return LogStepRanks(system, {})
        previous = Previous(self._gathered_steps, self._steps - 2)
        if system is not None:
            system = Gathered(lambda: own | previous.figures()[0])
        if not self._stragglers:
            return LogStepRanks(system, {})
        hosts = None if self._hosts_journaled else functools.partial(self._hosts_once, previous)
        return LogStepRanks(system, Gathered(lambda: previous.figures()[1]), hosts)

    def _hosts_once(self, previous: Previous) -> tuple[str, ...]:
        """On the hub's thread: every rank's host the first time they are known, once the previous log step's
        figures are in; else ()."""
        previous.figures()
        hosts = self._hosts
        if hosts is None or self._hosts_journaled:
            return ()
        self._hosts_journaled = True
        return hosts

    def _open(self) -> RankChannel:
        import torch.distributed as dist

        if self._stragglers:
            self._clock = BusyClock(device=_device_collectives())
        rank, world_size = dist.get_rank(), dist.get_world_size()
        gathered = self._gathered if self._writes else None
        host, node = socket.gethostname(), node_from_env()
        return RankChannel(job_store_client(), rank, world_size, on_gathered=gathered, host=host, node=node)

    def _gathered(self, got: Arrivals) -> None:
        """On the writing rank's channel thread: the step's summaries, and the console line naming the slowest."""
        rows = [got.rows[r].values if r in got.rows else () for r in range(len(got.rows) + len(got.missing))]  # by rank
        figures = GATHERED if self._utilisation is not None else ()
        system = summarise([r for r in rows if r], figures) if self._utilisation is not None else None
        stragglers: dict[str, float] = {}
        if self._stragglers:
            busy, waited = len(figures), len(figures) + 1  # the row's busy time and data wait
            stragglers = summary(
                [r[busy] if r else math.nan for r in rows], [r[waited] if r else math.nan for r in rows]
            )
            if stragglers or got.missing:
                stragglers[MISSING_RANKS] = float(len(got.missing))
            hosts = tuple(got.rows[r].host if r in got.rows else "?" for r in range(len(rows)))
            if self._hosts is None:  # the first gathered step's (before its figures are put: the hub's thread reads)
                self._hosts = hosts
            line = slowest_line(stragglers, hosts)
            if line is not None:
                print(line, flush=True)
        if got.missing and got.missing != self._missing_said:
            shown = ", ".join(map(str, got.missing[:16])) + (" …" if len(got.missing) > 16 else "")
            log.warning(
                "primus tracking: rank(s) %s sent no figures for log step %d within %.0f s", shown, got.step, BOUND_S
            )
        self._missing_said = got.missing
        self._gathered_steps.put(got.step, (system or {}, stragglers))

    def close(self) -> None:
        if self._clock is not None:
            self._clock.close()
        if self._channel is not None:
            self._channel.close()


def _journal_hosts(run: Any, hosts: Callable[[], tuple[str, ...]]) -> tuple[()]:
    """A ``log_later`` function, on the hub's thread: no metrics records; the ``rank_hosts`` event once they are known."""
    if named := hosts():
        run.event(RANK_HOSTS, hosts=list(named))
    return ()


def _device_collectives() -> bool:
    """Whether the job's collectives run on a device (NCCL/RCCL), where a wait holds the stream, not the host."""
    import torch.distributed as dist

    return "nccl" in str(dist.get_backend())
