"""``primus tracking sync RUN_DIR``: deliver what a finished (or crashed) run left in its journal.

It replays the journal into MLflow, W&B, Comet and the run's plugin sinks from each sink's saved cursor, with
the same sink code as a live run (MLflow dedups the resend by timestamp; W&B skips steps it already has; Comet's
cursor moves only once an experiment ended, so what it has is never sent again, and the rest goes to the same
experiment), uploads the run's artifacts if asked and not done, and sets the final status the run asked for. A run whose
process died without finishing is marked KILLED. W&B runs logged offline are uploaded by W&B's own
``wandb sync <dir>``, Comet's archives by ``comet upload``; this command prints those commands.

It takes the run's delivery lock first, waiting (within its timeout) for a delivery process still sending
the journal, such as the one a SIGKILLed trainer leaves behind, so the two never feed the same tracker runs.
Each sink's cursor is read after that, so nothing that process delivered is sent again.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from primus.plugins import PluginError
from primus.redaction import MASK
from primus.tracking.delivery.worker import SinkWorker
from primus.tracking.journal.files import JOURNAL_DIR
from primus.tracking.journal.reader import has_journal, journal_end
from primus.tracking.journal.records import RunStatus, SinkName
from primus.tracking.journal.run_state import CursorStore, RunDirLock, RunState, delivery_lock
from primus.tracking.settings.config import TrackingConfig
from primus.tracking.tags.meta import RunMeta
from primus.tracking.trackers.one_logger import ONE_LOGGER_DIR
from primus.tracking.trackers.registry import build_sinks

LOCK_POLL_S = 0.2


class SyncError(RuntimeError):
    pass


@dataclass
class SyncReport:
    status: str
    delivered: dict[str, bool] = field(default_factory=dict)  # sink -> everything delivered
    errors: dict[str, str] = field(default_factory=dict)
    wandb_offline_dir: str | None = None
    comet_archives: list[str] = field(default_factory=list)  # the run's offline Comet archives, in upload order

    @property
    def ok(self) -> bool:
        return all(self.delivered.values())


@dataclass(frozen=True)
class SyncProgress:
    sink: str
    records: int  # sent so far by this sync
    bytes_sent: int  # of the journal, since the sink's saved cursor
    bytes_total: int  # what this sync has to send to the sink


def sync_run(
    run_dir: Path,
    timeout_s: float = 300.0,
    tracking_uri: str | None = None,
    progress: Callable[[SyncProgress], None] | None = None,
    progress_every_s: float = 2.0,
) -> SyncReport:
    """``progress`` is called every ``progress_every_s`` while a sink still has records to send, and once at its
    end."""
    run_dir = Path(run_dir).expanduser().absolute()
    if not has_journal(run_dir):
        raise SyncError(f"{run_dir} has no journal ({JOURNAL_DIR}/): give the run directory of a tracked run")
    deadline = time.monotonic() + timeout_s
    lock = RunDirLock(run_dir).acquire()
    delivering = delivery_lock(run_dir)
    try:
        _wait_for_delivery_lock(delivering, run_dir, deadline)
        state = RunState(run_dir)
        meta = RunMeta.load(run_dir)
        status = state.section("run").get("status", RunStatus.RUNNING)
        if status == RunStatus.RUNNING:  # nobody holds the lock, so the process ended without finishing
            status = RunStatus.KILLED
        report = SyncReport(status=status)
        names: list[str] = [SinkName.MLFLOW] if meta.mlflow else []
        cursors, end = CursorStore(run_dir), journal_end(run_dir)
        wandb_id = state.section(SinkName.WANDB).get("id")
        if meta.wandb and wandb_id and cursors.load(SinkName.WANDB, wandb_id) < end:
            names.append(SinkName.WANDB)
        # no key yet: the run's Comet never started (no API key, killed first); sync creates its experiment
        if meta.comet and cursors.load(SinkName.COMET, state.section(SinkName.COMET).get("key")) < end:
            names.append(SinkName.COMET)
        if meta.one_logger and cursors.load(SinkName.ONE_LOGGER, str(run_dir / ONE_LOGGER_DIR)) < end:
            names.append(SinkName.ONE_LOGGER)
        if meta.otlp and cursors.load(SinkName.OTLP, meta.otlp_config().metrics_endpoint) < end:
            names.append(SinkName.OTLP)
        cfg = TrackingConfig(  # the settings the run started with, as meta.json kept them
            run_dir=run_dir,
            experiment_name=meta.experiment_name,
            run_name=meta.run_name,
            mlflow=meta.mlflow_config(_mlflow_uri(meta, tracking_uri)) if meta.mlflow else None,
            wandb=replace(meta.wandb_config(), run_id=wandb_id) if SinkName.WANDB in names else None,
            comet=meta.comet_config() if SinkName.COMET in names else None,
            one_logger=meta.one_logger_config() if SinkName.ONE_LOGGER in names else None,
            otlp=meta.otlp_config() if SinkName.OTLP in names else None,
        )
        try:
            sinks = build_sinks([*names, *meta.plugin_sinks], cfg, meta, state)
        except PluginError as e:
            raise SyncError(f"the run had plugin sinks {meta.plugin_sinks}: {e}") from None
        workers = [SinkWorker(s, run_dir, CursorStore(run_dir)) for s in sinks]
        for w in workers:
            w.start()
            w.notify(journal_end(run_dir))
            w.close(status, deadline)
        for w in workers:
            done = _join(w, deadline, progress, progress_every_s) and not w.disabled and w.pending_bytes == 0
            report.delivered[w.sink.name] = done
            if w.last_error:
                report.errors[w.sink.name] = w.last_error
        if meta.wandb:  # read after delivery: a W&B run opened by this sync may have gone offline too
            wandb_state = state.section("wandb")
            if wandb_state.get("mode") == "offline":
                report.wandb_offline_dir = wandb_state.get("sync_dir")
        comet_state = state.section(SinkName.COMET)
        if meta.comet and comet_state.get("offline") and comet_state.get("exists"):
            report.comet_archives = _comet_archives(meta.comet_config().offline_dir or run_dir, comet_state["key"])
        return report
    finally:
        os.close(delivering)
        lock.release()


def _comet_archives(folder: Path, key: str) -> list[str]:
    """The archive that creates the experiment, then those that continue it, oldest first (each later one is
    uploaded into the experiment the ones before made)."""
    continued = sorted(folder.glob(f"{key}-*.zip"), key=lambda p: p.stat().st_mtime)
    return [str(p) for p in [folder / f"{key}.zip", *continued] if p.exists()]


def _join(worker: SinkWorker, deadline: float, progress: Callable[[SyncProgress], None] | None, every_s: float) -> bool:
    """``worker.join(deadline)``, reporting its progress on the way."""
    if progress is None:
        return worker.join(deadline)
    while not worker.join(min(deadline, time.monotonic() + every_s)) and time.monotonic() < deadline:
        _report(worker, progress)
    _report(worker, progress)
    return worker.join(deadline)


def _report(worker: SinkWorker, progress: Callable[[SyncProgress], None]) -> None:
    sent = max(0, worker.cursor - worker.start_cursor)
    progress(SyncProgress(worker.sink.name, worker.records_sent, sent, sent + worker.pending_bytes))


def _wait_for_delivery_lock(lock_fd: int, run_dir: Path, deadline: float) -> None:
    told = False
    while True:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise SyncError(
                    f"a delivery process is still sending {run_dir}'s journal (its trainer ended "
                    f"moments ago; it stops within the run's exit deadline): run this again once it "
                    f"has, or give a longer --timeout"
                ) from None
            if not told:
                told = True
                print(f"waiting for the delivery process still sending {run_dir}'s journal to finish", file=sys.stderr)
            time.sleep(LOCK_POLL_S)


def _mlflow_uri(meta: RunMeta, override: str | None) -> str:
    saved = (meta.mlflow or {}).get("tracking_uri")
    uri = override or (saved if saved and MASK not in saved else None) or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise SyncError(
            f"the run's MLflow tracking URI held a credential and was saved as {saved!r}: pass "
            f"--tracking-uri or set MLFLOW_TRACKING_URI"
        )
    return uri
