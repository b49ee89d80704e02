"""A tracked run: its directory, its hub and sink workers, and its end.

``start_run`` does only local work (directory, lock, ids, journal, threads) and returns; creating
the MLflow run, ``wandb.init`` and the TensorBoard writer happen on the sink workers.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from primus.tracking.delivery.process import DeliveryProcess, DeliverySpec, sink_stats
from primus.tracking.delivery.worker import SinkWorker, Worker
from primus.tracking.features import trainer_features
from primus.tracking.hub import ALREADY_TRACKED, MetricsHub
from primus.tracking.journal.files import LOGS_DIR, TRACES_DIR
from primus.tracking.journal.keeper import JournalKeeper
from primus.tracking.journal.reader import last_steps
from primus.tracking.journal.records import ALERT_EVENT, BUSY_EVENT, ENDED, Alert, AlertKind, RunStatus
from primus.tracking.journal.run_state import CursorStore, RunDirLock, RunState
from primus.tracking.journal.writer import JournalWriter
from primus.tracking.lifecycle import ExitHandlers
from primus.tracking.settings.config import TrackingConfig, TrackingConfigError, WandbConfig
from primus.tracking.tags.meta import RunMeta
from primus.tracking.trackers.registry import BUILT_IN, build_sinks, sink_names

log = logging.getLogger("primus.tracking")
CATCH_UP_S = 5.0  # at the end, how long the hub's thread and the health watch may take for the last records (ms)


def start_run(config: TrackingConfig) -> Run:
    """Validate the config (TrackingConfigError names the key and the fix), then start the run."""
    cfg = config.resolve()
    try:
        return Run(cfg)
    except OSError as e:  # read-only, not a directory, disk full: said before training, not as a traceback
        raise TrackingConfigError(
            f"run_dir={str(cfg.run_dir)!r} is not usable ({e.strerror or e}"
            f"{': ' + str(e.filename) if e.filename else ''}): give the run a writable "
            f"directory with free space"
        ) from e


class Run:
    def __init__(self, cfg: TrackingConfig):
        self.config = cfg
        self.run_dir: Path = cfg.run_dir
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._dir_lock = RunDirLock(self.run_dir).acquire()
        try:
            self._state = RunState(self.run_dir)
            self.resumed = bool(self._state.section("run"))
            self.wandb_run_id = self._wandb_id(cfg.wandb) if cfg.wandb else None
            meta = RunMeta.build(cfg)
            meta.save(self.run_dir)
            self._keeper = JournalKeeper(
                self.run_dir,
                cfg.journal_retention,
                sink_names(cfg),
                CursorStore(self.run_dir),
                cfg.journal_segment_bytes,
            )
            self._journal = JournalWriter(self.run_dir, cfg.journal_segment_bytes)
            self._delivery: DeliveryProcess | None = None
            self._workers = self._make_workers(meta)
            # its health watch runs where the sinks do: in the delivery process if there is one
            features = trainer_features(self, cfg, self._state, self._journal.size, watch=self._delivery is None)
            self._features = features
            self._hub = MetricsHub(
                self._journal,
                self._workers,
                cfg.pending_records,
                followers=[self._keeper, *features.followers],
                tracked_until=last_steps(self.run_dir) if self.resumed else None,
                complete=features.complete,
            )
            # Queue a function the hub's thread calls for one or more metrics records ``(step, metrics, only)``, as
            # if each had been given to ``log`` now: what a backend need not work out on the training thread goes
            # there. ``step``: the training step they are of, if one (the iteration a failed or killed alert names).
            # Never blocks, never raises; a function that raises loses its records, which the run's end counts.
            # The hub's own method: no frame of the run's between the training thread and the queue.
            self.log_later = self._hub.log_later
            self._state.update("run", status=RunStatus.RUNNING, pid=os.getpid())
        except BaseException:
            self._dir_lock.release()
            raise
        self._finish_lock = threading.Lock()
        self._finished = False
        self._owner_pid = os.getpid()
        self._exit_handlers = ExitHandlers(self.finish)
        if self._delivery is not None:  # what its health watch raises is journaled here for the trackers
            self._delivery.on_alert = lambda alert: self.alert(alert, notified=True)
            # journaled to be told (console, webhook) by the new delivery process's health watch, and tracked
            self._delivery.on_restart = lambda text: self.alert(
                Alert(AlertKind.DELIVERY_RESTARTED, self.last_step, text, time.time())
            )
        for follower in features.followers:
            follower.start()
        self.event("start", pid=os.getpid(), run_name=cfg.run_name, resumed=self.resumed, **features.start_fields)
        self._hub.start()
        self._keeper.start()
        if features.stop is not None:
            self._stop_crash_loop(features.stop.step, features.stop.text, features.stop.exit_code)

    def _stop_crash_loop(self, step: int, text: str, exit_code: int) -> NoReturn:
        """Attempts in a row died without progress: said (console, webhook, trackers), the run ended FAILED before
        training, and the process exits with the code that tells a requeue not to start it again."""
        self.alert(Alert(AlertKind.NO_PROGRESS, step, text, time.time()))
        self._exit_handlers.why = f"stopped by no_progress (exit {exit_code})"
        self.finish(RunStatus.FAILED)
        raise SystemExit(exit_code)

    def _wandb_id(self, cfg: WandbConfig) -> str:
        """The id the user gave (wandb.run_id), else the one kept in the run directory, else the run that
        wandb.resume_from rewinds, else a new one."""
        saved = self._state.section("wandb").get("id")
        chosen = cfg.run_id or saved or (cfg.resume_from and cfg.resume_from.split("?")[0]) or secrets.token_hex(4)
        if chosen != saved:
            self._state.update("wandb", id=chosen)
        return chosen

    def _make_workers(self, meta: RunMeta) -> list[Worker]:
        """The sinks in the delivery process, or on threads here with ``delivery="thread"``."""
        cfg = self.config
        if cfg.wandb:  # the id chosen above, for the W&B sink wherever it runs
            cfg = replace(cfg, wandb=replace(cfg.wandb, run_id=self.wandb_run_id))
        names = sink_names(cfg)
        if cfg.delivery == "process" and names:
            spec = DeliverySpec(
                replace(cfg, params={}, tags={}), tuple(names), log.getEffectiveLevel(), self._journal.size
            )
            self._delivery = DeliveryProcess(spec, self.run_dir)
            return list(self._delivery.workers)
        cursors = CursorStore(self.run_dir)
        return [SinkWorker(s, self.run_dir, cursors) for s in build_sinks(names, cfg, meta, self._state)]

    # -- training thread -----------------------------------------------------------------
    def log(self, step: int, metrics: Mapping[str, float], only: Sequence[str] | None = None) -> None:
        """Queue one step's metrics (plain floats; names per ``primus.tracking.measure.names``). Never blocks,
        never raises. ``only`` limits the record to some sinks by name (``SinkName``, or a plugin's)
        (e.g. Megatron's "vs samples" x-axis exists only in TensorBoard)."""
        if only is not None:  # a record for some trackers may count on another axis (Megatron's "vs samples")
            self._hub.log(step, metrics, only)
            return
        self._hub.last_step = step
        try:
            copied = dict(metrics)  # the caller may reuse its dict
        except Exception:  # not a mapping: the hub counts it
            self._hub.log(step, metrics, only)
            return
        self._hub.log_later(lambda: ((step, copied, None),))

    def log_text(self, tag: str, text: str, step: int = 0, only: Sequence[str] | None = None) -> None:
        """Text for TensorBoard ``add_text``, W&B summary and an MLflow tag; redacted (by tag name and
        by shape) before it is journaled. ``only`` as for ``log``."""
        self._hub.log_text(tag, text, step, only)

    def event(self, name: str, **fields: Any) -> None:
        """An event record (JSON fields) for every sink, e.g. a checkpoint (``checkpoints/``). Never blocks."""
        self._features.note(time.time(), {"event": name, **fields})
        self._hub.event(name, **fields)

    def alert(self, alert: Alert, notified: bool = False) -> None:
        """Journal an alert (``journal/records.Alert``) for every tracker; ``notified``: its console line and webhook were
        already sent (by the delivery process that raised it), else that process sends them when it reads it."""
        self._hub.event(ALERT_EVENT, **alert.event(notified))

    def busy(self, what: str, on: bool) -> None:
        """Journal that a long pause in steps is expected (``what``: "checkpoint save", "evaluation") or over:
        the stall alert allows it more time (``health.HealthSettings.busy_s``); goodput counts it as badput."""
        self.event(BUSY_EVENT, what=what, on=on)

    def flush(self, timeout_s: float, sinks: Collection[str] | None = None) -> bool:
        """Wait until every running sink (or those named) has delivered what was logged so far; False on
        timeout. A flush ends a sink's pacing wait (``min_interval_s``): flush only the sinks that need it."""
        return self._hub.flush(timeout_s, sinks)

    @property
    def last_step(self) -> int:
        """The latest step logged for every tracker: the iteration an alert at the run's end names."""
        return self._hub.last_step

    @property
    def mlflow_run_id(self) -> str | None:
        """Known once the MLflow worker created or resumed the run (at once when resuming)."""
        return self._state.section("mlflow").get("run_id")

    @property
    def logs_dir(self) -> Path:
        """Put this run's log files here; uploaded to MLflow when ``MlflowConfig.upload_logs``."""
        return self.run_dir / LOGS_DIR

    @property
    def traces_dir(self) -> Path:
        """Point the profiler here; uploaded to MLflow when ``MlflowConfig.upload_traces``."""
        return self.run_dir / TRACES_DIR

    def stats(self) -> dict[str, Any]:
        """Counters for logs and tests: records dropped by the hub, records the journal could not take, and
        per sink its failures, last error, undelivered journal bytes, whether it was switched off, and how many
        of the records not journaled it got directly and lost; how often the delivery process was started again."""
        return {
            "delivery_restarts": self._delivery.restarts.used if self._delivery is not None else 0,
            "dropped": dict(self._hub.dropped),
            "refused": self._hub.refused + self._hub.malformed,
            "not_journaled": dict(self._hub.not_journaled.records),
            "sinks": {w.name: {**sink_stats(w), "pending_bytes": w.pending_bytes} for w in self._workers},
        }

    # -- the end -------------------------------------------------------------------------
    def install_exit_handlers(self) -> None:
        """FINISHED on a normal exit or sys.exit(0), FAILED on an uncaught exception or a non-zero exit,
        KILLED on SIGTERM/SIGINT (after which the signal does what it did before)."""
        self._exit_handlers.install()

    def finish(self, status: str | None = None) -> None:
        """End the run with FINISHED (default), FAILED or KILLED. Idempotent. Waits at most
        ``exit_deadline_s`` for the sinks; what they could not deliver stays in the journal."""
        status = status or RunStatus.FINISHED
        if status not in ENDED:
            raise ValueError(f"finish(status={status!r}): use one of {', '.join(ENDED)}")
        if os.getpid() != self._owner_pid:
            return  # a forked child (a DataLoader worker) holds a copy of the run: only its owner ends it
        with self._finish_lock:
            if self._finished:
                return
            self._finished = True
        self._exit_handlers.uninstall()
        deadline = time.monotonic() + self.config.exit_deadline_s
        until = min(deadline, time.monotonic() + CATCH_UP_S)
        # one drain, journaled and no sink waited for: the health watch and the goodput breakdown need every record
        # logged so far made; skipped both when the hub's thread cannot within CATCH_UP_S (a hung disk)
        made = self._hub.flush(max(0.0, until - time.monotonic()), sinks=())
        if made and self._delivery is not None:  # its health watch reads the journal to its end
            self._delivery.request_watch().wait(max(0.0, until - time.monotonic()))
        for follower in self._features.followers:  # before the end record and the sinks' end (their uploads)
            follower.ending(made)
        try:
            self._state.update("run", status=status)
        except OSError as e:  # a full disk: the trackers are still told the status; sync reads RUNNING as KILLED
            log.warning("primus tracking: could not record status %s in %s (%s)", status, self.run_dir, e.strerror or e)
        if status != RunStatus.FINISHED:  # before the end record: told by the health watch, which reads it
            why = self._exit_handlers.why or f"the run ended {status}"
            self.alert(Alert(AlertKind(status.lower()), self.last_step, why, time.time()))
        late = self._hub.close(status, deadline)
        for follower in self._features.followers:
            follower.close(deadline)
        self._keeper.stop(deadline)
        self._report(late)
        self._journal.close()
        self._dir_lock.release()

    def _report(self, late: list[Worker]) -> None:
        if self._delivery is not None and self._delivery.restarts.used:
            log.warning(
                "primus tracking: the delivery process was started again %d times in this run (alerts "
                "delivery_restarted: how it ended each time)",
                self._delivery.restarts.used,
            )
        lost = {why: n for why, n in self._hub.dropped.items() if why != ALREADY_TRACKED}
        if lost:
            log.warning("primus tracking: records dropped in this run: %s", lost)
        if self._hub.not_journaled.total:
            self._report_not_journaled()
        for w in self._workers:
            if w.disabled or not (w in late or w.pending_bytes):
                continue
            if not getattr(BUILT_IN.get(w.name), "synced", True):
                log.warning(
                    "primus tracking: %s did not receive the run's last figures within exit_deadline_s=%s "
                    "(last error: %s)",
                    w.name,
                    self.config.exit_deadline_s,
                    w.last_error or "none",
                )
            else:
                log.warning(
                    "primus tracking: %s did not receive everything within exit_deadline_s=%s (%d journal "
                    "bytes pending; last error: %s). It is all in %s: deliver it with "
                    "`primus tracking sync %s`.",
                    w.name,
                    self.config.exit_deadline_s,
                    w.pending_bytes,
                    w.last_error or "none",
                    self._journal.dir,
                    self.run_dir,
                )

    def _report_not_journaled(self) -> None:
        """Exactly what the journal could not take, and which trackers got it instead."""
        missing = self._hub.not_journaled
        got = ", ".join(f"{w.name} {w.direct_delivered}" for w in self._workers)
        gone = ", ".join(
            f"{w.name} {w.direct_lost}" + (f" ({w.last_error})" if w.last_error else "")
            for w in self._workers
            if w.direct_lost
        )
        log.warning(
            "primus tracking: %s could not be written to the journal %s (%s), so `primus tracking sync` and "
            "`primus report` cannot replay them. Delivered directly to: %s. Lost for: %s.",
            missing.describe(),
            self._journal.dir,
            missing.error,
            got or "no tracker",
            gone or "none",
        )
