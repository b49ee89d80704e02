"""The object upstream's ``get_one_logger()`` returns when Megatron's legacy ``one_logger`` package is absent and
Primus's One-Logger is on: upstream's ``one_logger_utils`` hands it its end-to-end figures (train iterations and
their time, throughput, checkpoint counts and times, app-start to train-loop times) as it would the legacy object,
and they go into the journal as ``one_logger/*`` metrics: every tracker gets them, and the One-Logger sink puts
them on the application span. Upstream calls it a dozen times in each logged step (its ``training_log``), so on
the training thread its store is a plain dict's own methods and its context one object a C call returns (no
frame of ours for either), and the figures of a step wait in ``held`` until
the step ends and go with its record (``step_ends``; made into numbers on the hub's thread, stamped with the
step's end, the rest of upstream's training_log later); elsewhere (a save, the loop's end) they are journaled at once, at the last
logged step. Figures from before the process's first log step wait for it: a resumed run's trackers take no step
below the last one tracked."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Mapping
from typing import Any

from primus.backends.megatron_core.tracking_summary_writer import Record
from primus.tracking.trackers.one_logger import E2E_PREFIX as PREFIX

Figures = Mapping[str, Any]
# upstream divides by the iterations trained, zero in a job resumed at its last iteration; reusable, made once
_SUPPRESS = contextlib.suppress(Exception)


def numbers(metrics: Figures | None) -> dict[str, float]:
    """Upstream's figures that are numbers, as ``one_logger/*`` floats."""
    return {PREFIX + k: float(v) for k, v in (metrics or {}).items() if isinstance(v, (int, float))}


class UpstreamOneLogger:
    """The legacy object's methods that upstream calls (megatron-core 0.19: ``get_context_manager``, ``store_*``,
    ``log_metrics``, ``log_app_tag``, ``finish``); it never raises into training. ``log(step, figures)`` journals figures at once
    for the trackers ``only``, whose records ``step_ends`` makes too."""

    def __init__(self, log: Callable[[int, Mapping[str, float]], None], only: tuple[str, ...]):
        self._log = log
        self._only = only
        self._last_step = 0  # the last step upstream's training_log logged: where its figures are journaled
        store: dict[str, Any] = {}
        self.store_set = store.__setitem__  # the dict's own methods: no Python frame per call
        self.store_get = store.get
        self.store_has_key = store.__contains__
        self._store = store
        self.get_context_manager = itertools.repeat(_SUPPRESS).__next__  # the one context, by a C call
        self._pending: dict[str, float] = {}  # before the first log step
        # set to [] by the training_log wrapper as upstream's training_log begins (no call of ours): the figures of
        # the step, as upstream gave them, wait there for ``step_ends``
        self.held: list[tuple[int, Figures]] | None = None

    def store_pop(self, key: str) -> Any:
        return self._store.pop(key, None)

    def log_metrics(self, metrics: Figures | None) -> None:
        step = self._last_step
        if step <= 0:
            self._pending.update(numbers(metrics))
        elif self.held is not None:
            self.held.append((step, dict(metrics or ())))  # a copy in C; made into numbers on the hub's thread
        else:
            self._log(step, numbers(metrics))

    def step_ends(self, iteration: int) -> Callable[[], list[Record]] | None:
        """Upstream's training_log of step ``iteration`` has returned: what waited for it (figures from before the
        first log step, at ``iteration``; the step's own, at the step before it, where upstream logged them) as a
        function that makes their records, for the hub's thread; None if nothing waited."""
        held, self.held = self.held or [], None
        pending, self._pending = self._pending, {}
        self._last_step = iteration
        if not (held or pending):
            return None

        only = self._only

        def records() -> list[Record]:
            made: list[Record] = [(iteration, pending, only)] if pending else []
            return made + [(step, numbers(figures), only) for step, figures in held]

        return records

    def release(self) -> None:
        """The step failed before it ended: journal its figures now."""
        held, self.held = self.held or [], None
        for step, figures in held:
            self._log(step, numbers(figures))

    def log_app_tag(self, tag: str) -> None:
        """The tag is in the run's One-Logger configuration already (``app_tag``)."""

    def finish(self) -> None:
        """The run's end closes the One-Logger application."""
