"""A run's features, built in one place: the journal followers (``journal/followers.py``) that the training process
and its delivery process are given, so that neither ``run.py`` nor ``delivery/child.py`` names one. The health
watch follows the journal where the sinks run (the delivery process, else a thread of the training process);
the stacks of a hung run and goodput follow it in the training process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from primus.tracking.goodput.attempts import Stop, begin_attempt
from primus.tracking.goodput.feed import GoodputFeed, attempt_start_fields
from primus.tracking.health.stacks import StacksOnRequest
from primus.tracking.health.watch import HealthWatch, Posted
from primus.tracking.health.webhook import Webhook
from primus.tracking.journal.followers import Follower, RunJournal
from primus.tracking.journal.records import Alert, Logged
from primus.tracking.journal.run_state import RunState
from primus.tracking.settings.config import TrackingConfig, resolved


@dataclass(frozen=True)
class TrainerFeatures:
    followers: list[Follower]
    # on the hub's thread, a ``log_later`` function's records and when it was queued: its step's goodput figures
    complete: Callable[[Iterable[Logged], float], Iterable[Logged]]
    note: Callable[[float, Mapping[str, Any]], None]  # an event record's data as it is journaled, and its time
    start_fields: dict[str, int]  # for this attempt's start record
    stop: Stop | None  # attempts in a row died without progress: this one stops before training


def trainer_features(
    run: RunJournal, cfg: TrackingConfig, state: RunState, journal_end: int, watch: bool
) -> TrainerFeatures:
    """The training process's (before its start record: ``begin_attempt`` counts this attempt); ``watch``: the
    health watch too (no delivery process)."""
    stop = begin_attempt(cfg.run_dir, state, cfg.health.no_progress_restarts)
    goodput = GoodputFeed(run, cfg.run_dir, journal_end, cfg.goodput_windows)
    followers: list[Follower] = [StacksOnRequest(cfg.run_dir), goodput]
    if watch:
        followers.insert(0, health_watch(cfg, journal_end, lambda alert: run.alert(alert, notified=True)))
    return TrainerFeatures(followers, goodput.with_figures, goodput.note, attempt_start_fields(), stop)


def delivery_followers(
    cfg: TrackingConfig,
    journal_from: int,
    restarted: bool,
    raised: Callable[[Alert], object],
    told: Callable[[Alert], object],
    shared: dict[str, Any],
) -> list[Follower]:
    """The delivery process's, for one run: ``raised``, an alert it found, for the trainer to journal; ``told``, one
    the trainer journaled, told here; ``shared``: what the runs a process delivers share (the webhook's alerts:
    the ranks of a job on one node post each once)."""
    posted: Posted = shared.setdefault("posted", Posted())
    return [health_watch(cfg, journal_from, raised, posted=posted, restarted=restarted, told_journaled=told)]


def health_watch(cfg: TrackingConfig, start: int, raised: Callable[[Alert], object], **options: Any) -> HealthWatch:
    run_name, experiment = resolved(cfg.run_name, "run_name"), resolved(cfg.experiment_name, "experiment_name")
    return HealthWatch(
        cfg.run_dir, cfg.health, run_name, experiment, raised, start, Webhook.from_environment(), **options
    )
