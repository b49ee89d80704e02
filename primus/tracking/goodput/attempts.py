"""Crash loops: whether a run directory's attempts still make progress, so a relaunch that can only die where the
last ones died is stopped (``no_progress``) instead of burning the allocation.

Each attempt's start judges the one before it from the journal's tail: its last log step, its newest checkpoint and
whether it ended normally. ``run.json``'s ``attempts`` section keeps the best step and checkpoint so far and how
many attempts in a row passed neither, so the count survives every relaunch (a Slurm requeue, torchrun's restarts,
a user's). Such an attempt journals no step (the hub leaves out steps tracked before): it died at or before the best
step. A stop clears the count: the next launch (the cause fixed) gets its attempts again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from primus.tracking.journal.files import NO_PROGRESS_FILE
from primus.tracking.journal.reader import tail_records
from primus.tracking.journal.records import END_EVENT, EVENT, METRICS, START_EVENT, CheckpointSaved, RunStatus, event_of
from primus.tracking.journal.run_state import RunState

ATTEMPTS_SECTION = "attempts"  # run.json's
NO_PROGRESS_EXIT = 93  # a run stopped by no_progress exits with it: "don't requeue" (NVIDIA's resiliency extension's)
TAIL_BYTES = 1 << 20  # the previous attempt's records looked at: its last step and checkpoint are near its end


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended, as its journal tells it."""

    last_step: int | None  # its last log step; None: it died before its first
    checkpoint: int | None  # the iteration of the newest checkpoint it saved
    finished: bool  # it ended normally


@dataclass(frozen=True)
class Stop:
    """A crash loop found: the step the attempts died at or before (0: before any log step), and the alert's text."""

    step: int
    text: str
    exit_code: ClassVar[int] = NO_PROGRESS_EXIT


@dataclass(frozen=True)
class History:
    attempts: int = 0  # begun in this run directory
    best_step: int | None = None
    best_checkpoint: int | None = None
    without_progress: int = 0  # attempts in a row that ended without a step beyond best_step or a newer checkpoint
    stopped: int | None = None  # the attempt no_progress stopped

    @classmethod
    def of(cls, section: dict[str, Any]) -> History:
        return cls(**{k: v for k, v in section.items() if k in cls.__dataclass_fields__})

    def begin(self, previous: Outcome | None, limit: int) -> tuple[History, Stop | None]:
        """This attempt's history, given how the one before it ended (None: there was none), and why it must stop
        when that one made ``limit`` attempts in a row without progress (``limit`` 0: never)."""
        if previous is None:  # nothing journaled to judge it by (a new run directory, a deleted journal)
            return replace(self, attempts=self.attempts + 1), None
        if self.stopped == self.attempts:  # a stopped attempt did not try to progress
            return replace(self, attempts=self.attempts + 1, without_progress=0), None
        progressed = (
            previous.finished
            or _beyond(previous.last_step, self.best_step)
            or _beyond(previous.checkpoint, self.best_checkpoint)
        )
        now = replace(
            self,
            attempts=self.attempts + 1,
            best_step=_highest(previous.last_step, self.best_step),
            best_checkpoint=_highest(previous.checkpoint, self.best_checkpoint),
            without_progress=0 if progressed else self.without_progress + 1,
        )
        if not limit or now.without_progress < limit:
            return now, None
        return replace(now, without_progress=0, stopped=now.attempts), Stop(now.best_step or 0, _text(now))


def begin_attempt(run_dir: Path, state: RunState, limit: int) -> Stop | None:
    """Record this attempt's start in ``run.json`` (and NO_PROGRESS_FILE while it is a stopped one); why it must not
    train, if so."""
    history, stop = History.of(state.section(ATTEMPTS_SECTION)).begin(previous_outcome(run_dir), limit)
    state.update(ATTEMPTS_SECTION, **asdict(history))
    marker = run_dir / NO_PROGRESS_FILE
    if stop is None:
        marker.unlink(missing_ok=True)
    else:
        marker.write_text(stop.text + "\n")
    return stop


def was_stopped(run_dir: Path) -> bool:
    """The run directory's latest attempt was stopped by ``no_progress``."""
    return (run_dir / NO_PROGRESS_FILE).exists()


def previous_outcome(run_dir: Path) -> Outcome | None:
    """How the journal's last attempt ended: its records after its ``start`` (all of the tail when its start is
    further back); None for a run directory with no journal yet."""
    records = tail_records(run_dir, TAIL_BYTES)
    if not records:
        return None
    starts = [i for i, r in enumerate(records) if r.kind == EVENT and r.data.get("event") == START_EVENT]
    last = records[starts[-1] :] if starts else records
    steps = [r.step for r in last if r.kind == METRICS]
    checkpoints = [s.iteration for r in last if isinstance(s := event_of(r), CheckpointSaved)]
    ends = [r.data.get("status") for r in last if r.kind == EVENT and r.data.get("event") == END_EVENT]
    return Outcome(
        last_step=max(steps) if steps else None,
        checkpoint=max(checkpoints) if checkpoints else None,
        finished=bool(ends) and ends[-1] == RunStatus.FINISHED,
    )


def _text(history: History) -> str:
    best, checkpoint = history.best_step, history.best_checkpoint
    step = "a log step" if best is None else f"a step beyond {best}"
    newer = "a checkpoint" if checkpoint is None else f"a checkpoint newer than iteration {checkpoint}"
    died = "before its first log step" if best is None else f"at or before step {best}"
    n = history.without_progress
    which, each = ("the last attempt", "it") if n == 1 else (f"{n} attempts in a row", "each")
    return (
        f"{which} ended without {step} or {newer}: {each} died {died}; stopped (exit {NO_PROGRESS_EXIT}, not "
        "requeued): fix the cause and launch again"
    )


def _beyond(value: int | None, best: int | None) -> bool:
    return value is not None and (best is None or value > best)


def _highest(value: int | None, best: int | None) -> int | None:
    return best if value is None else value if best is None else max(value, best)
