"""W&B sink: one ``run.log`` per step, on this worker. ``wandb.init`` is bounded by
``init_timeout_s``; if an online start fails the run is logged offline instead (one warning says
where, and ``wandb sync <dir>`` uploads it later). A start that fails because W&B's own local service did not come
up is tried again (its steps wait in the journal). The run id is chosen once and kept in the run
directory (or given: ``WandbConfig.run_id``), so a restarted job resumes the same W&B run
(``resume="allow"``); ``resume_from`` / ``fork_from`` apply to the run's first start.

A checkpoint save (``journal/records.CheckpointSaved``) becomes a reference artifact as Megatron's ``wandb_utils`` logs one: type
``model``, metadata ``{"iteration": N}``, a ``file://`` reference without checksums, the record's small files, its
alias, and ``<entity>/<project>`` written to its pointer file. A resume sets ``primus.resumed_from`` in the run's
config and calls ``use_artifact`` (which W&B refuses offline: then one line says so, as upstream's does).

``define_metric`` makes ``progress/consumed_tokens`` an x-axis (``measure/progress.py``): the ``progress/*`` charts use it,
the rest keep W&B's step."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from primus.log import outside_except
from primus.redaction import redact_text
from primus.tracking.journal import records as journal
from primus.tracking.journal.records import (
    RESUMED_FROM_TAG,
    WANDB_ARTIFACT_TYPE,
    AlertKind,
    Record,
    RunStatus,
    SinkName,
)
from primus.tracking.measure.progress import CONSUMED_TOKENS, PROGRESS_GROUP
from primus.tracking.settings.config import resolved
from primus.tracking.sinks.sink import Durability, Sink, SinkUnavailable
from primus.tracking.trackers.context import SinkContext

log = logging.getLogger("primus.tracking")

EXIT_CODES: dict[str, int] = {RunStatus.FINISHED: 0, RunStatus.FAILED: 1, RunStatus.KILLED: 143}
# wandb.init also reads these from the environment, and refuses two of them together: the sink decides
# the start point (a restart resumes, never forks or rewinds again), so wandb.init does not see them
START_POINT_VARIABLES = ("WANDB_RESUME", "WANDB_RESUME_FROM", "WANDB_FORK_FROM")
_INIT_LOCK = threading.Lock()
# wandb-core, the local process every W&B run (offline too) talks through, did not start or answer: W&B waits 30 s
# for it, which a node busy starting a job can exceed. W&B exports no names for these (wandb.sdk.lib.service's,
# 0.29 to 0.31)
SERVICE_START_ERRORS = frozenset({"ServicePollForTokenError", "WandbServiceConnectionError"})


class WandbSink(Sink):
    name = SinkName.WANDB
    # run.log hands a record to the wandb-core service process, which a job's SIGTERM stops with the rest of the
    # process group before it wrote anything: only finish() makes records safe. A resend after a kill goes to the
    # same W&B run, which keeps the steps it already has and ignores the repeats.
    durability = Durability.ON_CLOSE

    def __init__(self, context: SinkContext):
        self.context = context
        self.cfg = resolved(context.config.wandb, "wandb")
        self.run_id = resolved(self.cfg.run_id, "wandb.run_id")  # the run's own: chosen at its start, kept
        self._run: Any = None

    def open(self) -> str:
        try:
            import wandb
        except ImportError as e:
            raise SinkUnavailable(f"wandb is not importable ({e}): pip install wandb, or turn W&B off") from e
        resolved(self.cfg.save_dir, "wandb.save_dir").mkdir(parents=True, exist_ok=True)
        mode = resolved(self.cfg.mode, "wandb.mode")
        error = outside_except(lambda: setattr(self, "_run", self._init(wandb, mode)))
        if error is not None:
            _raise_if_service_did_not_start(wandb, error)
            if self.cfg.mode != "online":
                raise SinkUnavailable(f"wandb.init(mode={self.cfg.mode!r}) failed: {error}") from error
            self._run = self._offline_instead(wandb, error)
        self._run.config.update({**self.context.params, "primus_tags": self.context.tags}, allow_val_change=True)
        # consumed tokens as an x-axis (its summary the run's total): the progress group is plotted against it,
        # every other metric keeps W&B's step (the iteration), and any chart can switch to it
        self._run.define_metric(CONSUMED_TOKENS, summary="max")
        self._run.define_metric(PROGRESS_GROUP, step_metric=CONSUMED_TOKENS)
        self.context.save(id=self.run_id, mode=self._run.settings.mode, sync_dir=str(self._run.settings.sync_dir))
        return self.run_id

    def _init(self, wandb: Any, mode: str) -> Any:
        cfg = self.cfg
        # one at a time: a node's shared delivery process opens several runs' W&B on their own threads, and the
        # variables hidden here are the whole process's
        with _INIT_LOCK, _hidden(START_POINT_VARIABLES):
            return wandb.init(
                project=cfg.project,
                entity=cfg.entity,
                name=cfg.name,
                dir=str(cfg.save_dir),
                id=self.run_id,
                mode=mode,
                notes=cfg.notes,
                tags=cfg.tags,
                job_type=cfg.job_type,
                **self._start_point(),
                reinit="create_new",  # never finish a run the user's own code started
                settings=wandb.Settings(init_timeout=cfg.init_timeout_s, console="off"),
            )

    def _start_point(self) -> dict[str, str]:
        """resume_from / fork_from on this run's first start only (W&B takes neither with ``resume``); a
        restarted job resumes the run that start made, under the id kept in the run directory."""
        first_start = "mode" not in self.context.saved()
        if first_start and self.cfg.resume_from:
            return {"resume_from": self.cfg.resume_from}
        if first_start and self.cfg.fork_from:
            return {"fork_from": self.cfg.fork_from}
        return {"resume": "allow"}

    def _offline_instead(self, wandb: Any, error: Exception) -> Any:
        if wandb.run is not None:
            raise SinkUnavailable(
                f"wandb.init failed online ({error}), and another W&B run is active in this "
                f"process, so it cannot restart W&B offline; `primus tracking sync` replays the "
                f"journal into W&B later"
            ) from error
        wandb.teardown()  # wandb-core keeps the failed online run's id "in use" until its service restarts
        try:
            run = self._init(wandb, "offline")
        except Exception as e:
            _raise_if_service_did_not_start(wandb, e)
            raise SinkUnavailable(f"wandb.init failed online ({error}) and offline ({e})") from e
        log.warning(
            "primus tracking: W&B did not start online within init_timeout_s=%s (%s). This run is logged "
            "offline in %s and every step is also in the journal; upload it later with `wandb sync %s`.",
            self.cfg.init_timeout_s,
            redact_text(str(error))[:300],
            run.settings.sync_dir,
            run.settings.sync_dir,
        )
        return run

    def write(self, records: Sequence[Record]) -> None:
        step, row = None, dict[str, Any]()
        for r in records:
            match journal.event_of(r):
                case journal.Metrics(values):
                    if step is not None and r.step != step:
                        self._run.log(row, step=step)
                        row = {}
                    step = r.step
                    row.update(values)
                case journal.Text(tag, text):
                    self._run.summary[f"text/{tag}"] = text
                case journal.CheckpointSaved() as save:
                    self._log_checkpoint(save)
                case journal.CheckpointLoaded() as load:
                    self._use_checkpoint(load)
                case journal.Alert() as alert:
                    # in the summary whatever the mode: offline, run.alert is kept in the run's file for `wandb sync`
                    self._run.summary[alert.tag] = alert.tag_value
                    level = "INFO" if alert.kind == AlertKind.RESUMED else "ERROR"
                    title = f"primus: {alert.kind}"
                    self._run.alert(title=title, text=alert.tag_value, level=level, wait_duration=0.001)
        if row:
            self._run.log(row, step=step)

    def _log_checkpoint(self, save: journal.CheckpointSaved) -> None:
        import wandb

        if save.uri.startswith("file://") and not Path(save.path).exists():
            # removed since (a checkpoint rotation, a later `primus tracking sync`): W&B refuses a reference to it,
            # and a record that can never be delivered must not hold back the ones after it
            log.warning("primus tracking: checkpoint %s is gone, not logged as a W&B artifact", save.path)
            return
        artifact = wandb.Artifact(save.artifact, type=WANDB_ARTIFACT_TYPE, metadata={"iteration": save.iteration})
        artifact.add_reference(save.uri, checksum=False)
        with tempfile.TemporaryDirectory() as files:  # add_file copies each into W&B's staging folder
            for name, text in save.files.items():
                (Path(files) / name).write_text(text)
                artifact.add_file(str(Path(files) / name))
            self._run.log_artifact(artifact, aliases=[save.alias])
        if save.wandb_pointer:
            pointer = Path(save.wandb_pointer)
            error = outside_except(lambda: pointer.write_text(f"{self._run.entity}/{self._run.project}"))
            if error is not None:
                log.warning("primus tracking: could not write %s (%s)", pointer, error)

    def _use_checkpoint(self, load: journal.CheckpointLoaded) -> None:
        self._run.config.update({RESUMED_FROM_TAG: load.path}, allow_val_change=True)
        if load.wandb_artifact:
            error = outside_except(lambda: self._run.use_artifact(load.wandb_artifact))
            if error is not None:
                log.info("primus tracking: W&B did not find the checkpoint %s (%s)", load.path, error)

    def close(self, status: str, complete: bool) -> None:
        self._run.finish(exit_code=EXIT_CODES.get(status, 1))


def _raise_if_service_did_not_start(wandb: Any, error: Exception) -> None:
    """``error`` again when W&B's service did not answer: not the run's settings, so the worker tries again (the
    journal keeps every step meanwhile), and the next try starts a service afresh."""
    if type(error).__name__ in SERVICE_START_ERRORS:
        wandb.teardown()  # forget the service that did not answer
        raise error


@contextlib.contextmanager
def _hidden(names: Sequence[str]):
    """Leave ``names`` out of os.environ for the duration (wandb reads its settings from it at init)."""
    saved = {name: os.environ.pop(name) for name in names if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)
