"""One-Logger sink: the journal as NVIDIA's public One-Logger (nv-one-logger) telemetry, in the delivery process.

Each attempt of the run (a ``start`` record to its end) is one nv-one-logger application, written by the library's
file exporter to ``<run_dir>/one_logger/attempt-<n>.jsonl`` (and to OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is
set): its checkpoint load, its training loop with the iterations between log steps (summarised every log step as
the library does), evaluations, checkpoint saves with their iteration, and upstream's end-to-end figures
(``one_logger/*`` metrics). Nothing runs on the training thread.

The library's summaries need an attempt's calls from its first, so a record is safe only once the attempt's
application is closed (``Durability.ON_CLOSE``): a relaunch or ``primus tracking sync`` after a killed delivery
replays the attempt from its ``start`` record and rewrites its file; nothing is written twice. A callback the
library refuses costs that call, an exporter that raises is the library's to switch off; neither reaches the
worker, which would resend."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from primus.redaction import redact_text
from primus.tracking.journal import records as journal
from primus.tracking.journal.records import Record, SinkName
from primus.tracking.settings.config import OneLoggerConfig
from primus.tracking.settings.one_logger_presence import EXTRA
from primus.tracking.sinks.sink import Durability, Sink, SinkUnavailable
from primus.tracking.trackers.context import SinkContext
from primus.tracking.trackers.one_logger_app import OneLoggerApp

log = logging.getLogger("primus.tracking")
ONE_LOGGER_DIR = "one_logger"
E2E_PREFIX = "one_logger/"  # upstream's end-to-end figures, as metrics every tracker gets
USER_TEXTS = ("project", "run_name", "app_tag_run_name", "app_tag_run_version")
# upstream's (Megatron's one_logger_utils) training loop's start and end, unix ms: the training_loop span's bounds
LOOP_START, LOOP_FINISH = "app_train_loop_start_time", "app_train_loop_finish_time"


class OneLoggerSink(Sink):
    name = SinkName.ONE_LOGGER
    durability = Durability.ON_CLOSE

    def __init__(self, context: SinkContext):
        self.context = context
        cfg = context.config.one_logger or OneLoggerConfig(run_name=context.run_name)
        # the user's names reach the files and exporters: a token pasted into one is masked, as in the run's params
        texts: dict[str, Any] = {f: redact_text(v) for f in USER_TEXTS if isinstance(v := getattr(cfg, f), str)}
        self.cfg = replace(cfg, **texts)
        self.folder = context.run_dir / ONE_LOGGER_DIR
        self._app: OneLoggerApp | None = None

    def open(self) -> str:
        try:
            import nv_one_logger.training_telemetry.api.callbacks  # noqa: F401
        except ImportError as e:
            raise SinkUnavailable(f"nv-one-logger is not importable ({e}): {EXTRA}, or turn One-Logger off") from e
        return str(self.folder)

    def write(self, records: Sequence[Record]) -> None:
        for r in records:
            if r.is_for(self.name):
                self._replay(r)

    def _replay(self, r: Record) -> None:
        event = journal.event_of(r)
        if isinstance(event, journal.NamedEvent) and event.name == journal.START_EVENT:
            self._end_attempt()
            began = int(r.data.get("process_start_ms") or r.ts_ms)  # the application: the process, not its tracking
            try:
                self._app = OneLoggerApp(self.cfg, self._attempt_file(r.ts_ms), min(began, r.ts_ms))
            except Exception as e:  # its file cannot be written: this attempt goes unrecorded, the others do not
                log.warning("one_logger: attempt of %d ms not recorded: %s", r.ts_ms, e)
                self._app = None
            return
        app = self._app
        if app is None or app.ended:  # records of an attempt begun before this sink's cursor: its file stands
            return
        # an event made before the run started says when it happened
        t_ms = r.ts_ms if isinstance(event, journal.Metrics) else int(r.data.get("at_ms") or r.ts_ms)
        match event:
            case journal.Metrics(values):
                figures = {k.removeprefix(E2E_PREFIX): v for k, v in values.items() if k.startswith(E2E_PREFIX)}
                if figures:
                    app.e2e_metrics(r.ts_ms, figures)
                    app.loop_bounds(figures.get(LOOP_START), figures.get(LOOP_FINISH))
                done = r.step + self.cfg.step_offset  # iterations done
                if done > 0 and len(figures) < len(values):
                    app.step(r.ts_ms, done)
            case journal.CheckpointLoaded(iteration=iteration, seconds=seconds):
                app.loaded(t_ms, seconds, None if iteration is None else iteration + self.cfg.step_offset)
            case journal.CheckpointSaved() as save:
                app.saved(t_ms, save.iteration, save.seconds)
            case journal.NamedEvent(journal.SAVE_START, fields):
                app.save_started(t_ms, int(fields.get("iteration", 0)))
            case journal.Busy("evaluation", on):
                app.validation(t_ms, on)
            case journal.NamedEvent(journal.END_EVENT):
                app.end(t_ms)

    def _attempt_file(self, start_ms: int) -> Path:
        """``attempt-<n>.jsonl``, n counting the run's attempts by their start record's time (kept for replays)."""
        starts = list(self.context.saved().get("attempt_starts", []))
        if start_ms not in starts:
            starts.append(start_ms)
            self.context.save(attempt_starts=starts)
        return self.folder / f"attempt-{starts.index(start_ms) + 1}.jsonl"

    def _end_attempt(self) -> None:
        if self._app is not None:
            self._app.end()

    def close(self, status: str, complete: bool) -> None:
        """The attempt ends at its last record when its end record never came (a killed run)."""
        self._end_attempt()
