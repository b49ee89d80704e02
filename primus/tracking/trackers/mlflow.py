"""MLflow sink. For an http(s) tracking server it talks to MLflow's REST API with a small client (``mlflow_rest.py``:
no ``import mlflow``); Databricks, local stores and settings only the full client serves use ``MlflowClient``
(``mlflow_full.py``). Metrics go out with ``log_batch`` of at most 1000, with the timestamp the training thread took,
so a resend is absorbed by MLflow instead of duplicating. Names MLflow refuses get readable keys, kept in
``run.json``; a checkpoint goes up as a manifest; at the end the run's own files go up (``mlflow_artifacts.py``).
docs/tracking-internals.md#the-mlflow-sink says more.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from primus.log import outside_except
from primus.redaction import redact_text
from primus.tracking.journal import records as journal
from primus.tracking.journal.files import (
    CHECKPOINTS_DIR,
    LOGS_DIR,
    REPORTS_DIR,
    STACKS_DIR,
    STRUCTURED_LOGS_DIR,
    TRACES_DIR,
)
from primus.tracking.journal.records import COUNT_METRIC, RESUMED_FROM_TAG, Record, RunStatus, SinkName
from primus.tracking.measure.names import MlflowKeys, mlflow_keys
from primus.tracking.settings.config import MlflowConfig, resolved
from primus.tracking.sinks.sink import Sink
from primus.tracking.tags.params import MLFLOW_MAX_PARAM_VALUE, MLFLOW_MAX_TAG_VALUE, clip
from primus.tracking.trackers.context import SinkContext
from primus.tracking.trackers.mlflow_artifacts import upload_checkpoint, upload_run_files, uploader
from primus.tracking.trackers.mlflow_full import FullMlflowClient
from primus.tracking.trackers.mlflow_rest import MetricPoint, MlflowRestClient, needs_full_client

log = logging.getLogger("primus.tracking")

MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_TAGS_PER_BATCH = 100
RECORDS_PER_WRITE = 200  # a resend after an outage goes out in bounded requests


class MlflowSink(Sink):
    name = SinkName.MLFLOW
    # A log_batch costs 2-50 ms of client (and, on a local sqlite store, database) CPU whatever its size;
    # every 0.1 s hub tick would take that from the training thread's GIL 10 times a second.
    min_interval_s = 1.0

    def __init__(self, context: SinkContext):
        self.context = context
        self.cfg = resolved(context.config.mlflow, "mlflow")
        self.run_dir = context.run_dir
        self.tracking_uri = resolved(self.cfg.tracking_uri, "mlflow.tracking_uri")
        saved = context.saved()
        self.run_id = ""  # open() sets it
        self._client: MlflowRestClient | FullMlflowClient | None = None
        self._metric_keys = MlflowKeys(saved.get("metric_keys"))
        self._tag_keys = MlflowKeys(saved.get("tag_keys") or mlflow_keys(context.tags))
        self._alerts = int(saved.get("alerts", 0))  # alerts the run has had: the health/alerts metric

    @property
    def client(self) -> MlflowRestClient | FullMlflowClient:
        if self._client is None:  # on first use: the full client imports mlflow
            self._client = connect(self.cfg, self.tracking_uri)
        return self._client

    def open(self) -> str:
        self.run_id = self._resume() or self._create()
        return self.run_id

    def _resume(self) -> str | None:
        saved = self.context.saved()
        if not saved.get("run_id") or saved.get("tracking_uri") != redact_text(self.tracking_uri):
            return None
        try:
            run = self.client.get_run(saved["run_id"])
        except Exception as e:  # MlflowRestError or MlflowException: both carry MLflow's error_code
            if getattr(e, "error_code", None) != "RESOURCE_DOES_NOT_EXIST":
                raise
            log.warning(
                "primus tracking: MLflow run %s saved in %s no longer exists; starting a new run",
                saved["run_id"],
                self.context.saved_in,
            )
            return None
        if run.status != RunStatus.RUNNING:
            self.client.set_status(run.run_id, RunStatus.RUNNING)
        self._log_params(run.run_id, run.params)
        # this start's tags over the last one's: a restart's count, its hosts and command
        self._set_tags(
            run.run_id, {self._tag_keys(k): clip(v, MLFLOW_MAX_TAG_VALUE) for k, v in self.context.tags.items()}
        )
        return run.run_id

    def _create(self) -> str:
        name = resolved(self.cfg.experiment_name, "mlflow.experiment_name")
        experiment_id = self.client.get_experiment_id(name)
        if experiment_id is None:
            try:
                experiment_id = self.client.create_experiment(name, artifact_location=self._local_artifacts())
            except Exception as e:  # another process created it first (and it is still there)
                if (
                    getattr(e, "error_code", None) != "RESOURCE_ALREADY_EXISTS"
                    or (experiment_id := self.client.get_experiment_id(name)) is None
                ):
                    raise
        self._metric_keys, self._tag_keys = MlflowKeys(), MlflowKeys(mlflow_keys(self.context.tags))  # a new run
        self._alerts = 0
        tags = {self._tag_keys(k): clip(v, MLFLOW_MAX_TAG_VALUE) for k, v in self.context.tags.items()}
        run_id = self.client.create_run(experiment_id, self.cfg.run_name, tags)
        self.context.save(
            run_id=run_id,
            experiment_id=experiment_id,
            tracking_uri=redact_text(self.tracking_uri),
            metric_keys={},
            tag_keys=self._tag_keys.assigned(),
        )
        log.info("primus tracking: MLflow run %s in experiment %r at %s", run_id, name, redact_text(self.tracking_uri))
        self._log_params(run_id, {})
        return run_id

    def _local_artifacts(self) -> str | None:
        """A local store would put artifacts in ./mlruns of whatever the working directory is."""
        if self.tracking_uri.startswith(("sqlite:", "file:", "/")):
            return (self.run_dir.parent / "mlartifacts").as_uri()
        return None

    def _log_params(self, run_id: str, existing: dict[str, str]) -> None:
        """Params are immutable in MLflow: log the missing ones, warn about changed ones (a resumed
        job with a different config), never fail the run over them."""
        keys = mlflow_keys(self.context.params)
        wanted = {keys[k]: clip(v, MLFLOW_MAX_PARAM_VALUE) for k, v in self.context.params.items()}
        changed = sorted(k for k, v in wanted.items() if k in existing and existing[k] != v)
        if changed:
            log.warning(
                "primus tracking: resumed MLflow run %s keeps its first values for changed params %s",
                run_id,
                ", ".join(changed[:20]),
            )
        new = [(k, v) for k, v in wanted.items() if k not in existing]
        for i in range(0, len(new), MAX_PARAMS_TAGS_PER_BATCH):
            self.client.log_batch(run_id, params=new[i : i + MAX_PARAMS_TAGS_PER_BATCH])

    def _set_tags(self, run_id: str, tags: dict[str, str]) -> None:
        tag_list = list(tags.items())
        for i in range(0, len(tag_list), MAX_PARAMS_TAGS_PER_BATCH):
            self.client.log_batch(run_id, tags=tag_list[i : i + MAX_PARAMS_TAGS_PER_BATCH])

    def chunks(self, records: Sequence[Record]) -> Iterable[Sequence[Record]]:
        for i in range(0, len(records), RECORDS_PER_WRITE):
            yield records[i : i + RECORDS_PER_WRITE]

    def write(self, records: Sequence[Record]) -> None:
        """One pass over the records: metric points (the alert count's after the steps'), tags (a text's, the
        checkpoint resumed from, an alert's: each its latest), the checkpoints saved; then the same requests."""
        known = len(self._metric_keys), len(self._tag_keys)
        metrics: list[MetricPoint] = []
        counts: list[MetricPoint] = []  # health/alerts: how many alerts so far
        texts: dict[str, str] = {}  # MLflow has no text-per-step: the latest text of a tag is a run tag
        resumed: dict[str, str] = {}
        alert_tags: dict[str, str] = {}  # a tag per kind, its latest
        saves: list[tuple[journal.CheckpointSaved, int]] = []
        alerts = self._alerts
        for r in records:
            match journal.event_of(r):
                case journal.Metrics(values):
                    metrics.extend(MetricPoint(self._metric_keys(k), v, r.ts_ms, r.step) for k, v in values.items())
                case journal.Text(tag, text):
                    texts[self._tag_keys(f"text/{tag}")] = clip(text, MLFLOW_MAX_TAG_VALUE)
                case journal.CheckpointLoaded(path=path):
                    resumed[self._tag_keys(RESUMED_FROM_TAG)] = path
                case journal.Alert() as alert:
                    alert_tags[self._tag_keys(alert.tag)] = clip(alert.tag_value, MLFLOW_MAX_TAG_VALUE)
                    alerts += 1
                    counts.append(MetricPoint(self._metric_keys(COUNT_METRIC), alerts, r.ts_ms, alert.iteration))
                case journal.CheckpointSaved() as save:
                    saves.append((save, r.ts_ms))
        metrics += counts
        if known != (len(self._metric_keys), len(self._tag_keys)):
            # before the send: a key MLflow has seen is the name's key for good
            self.context.save(metric_keys=self._metric_keys.assigned(), tag_keys=self._tag_keys.assigned())
        self._set_tags(self.run_id, {**texts, **resumed, **alert_tags})
        for i in range(0, len(metrics), MAX_METRICS_PER_BATCH):
            self.client.log_batch(self.run_id, metrics=metrics[i : i + MAX_METRICS_PER_BATCH])
        if alerts != self._alerts:  # after the send: a retry counts them again from the same number
            self._alerts = alerts
            self.context.save(alerts=alerts)
        for save, ts_ms in saves:
            self._log_checkpoint(save, ts_ms)

    def _log_checkpoint(self, save: journal.CheckpointSaved, ts_ms: int) -> None:
        manifest = self.run_dir / CHECKPOINTS_DIR / f"{save.alias}.json"
        manifest.parent.mkdir(exist_ok=True)
        manifest.write_text(json.dumps(save.manifest(ts_ms), indent=1) + "\n")
        upload = uploader(self.client, self.run_id)
        upload(manifest, CHECKPOINTS_DIR)
        if self.cfg.upload_checkpoints and not upload_checkpoint(
            upload, Path(save.path), f"{CHECKPOINTS_DIR}/{save.alias}"
        ):
            log.warning("primus tracking: checkpoint %s is not on this machine, its files not uploaded", save.path)

    def close(self, status: str, complete: bool) -> None:
        if not complete:
            return  # the run stays RUNNING until `primus tracking sync` delivers the rest
        uploaded = self.context.saved().get("artifacts_uploaded")
        subdirs = [
            d
            for d, on in (
                (LOGS_DIR, self.cfg.upload_logs),
                (STACKS_DIR, self.cfg.upload_logs),  # a hung run's stacks, beside its console
                (STRUCTURED_LOGS_DIR, self.cfg.upload_logs),  # TorchTitan's
                (TRACES_DIR, self.cfg.upload_traces),
                (REPORTS_DIR, self.cfg.upload_trace_report),
            )
            if on
        ]
        if not uploaded and subdirs:
            if self.cfg.upload_trace_report:
                self._write_trace_report()
            upload_run_files(self.client, self.run_id, self.run_dir, subdirs)
            self.context.save(artifacts_uploaded=True)
        self.client.set_terminated(self.run_id, status)
        self.context.save(terminated=status)
        self.client.close()

    def _write_trace_report(self) -> None:
        """Best effort: a report that cannot be built must not keep the run from ending."""
        from primus.profiling.trace_report import write_trace_report

        error = outside_except(lambda: write_trace_report(self.run_dir / TRACES_DIR, self.run_dir / REPORTS_DIR))
        if error is not None:
            log.warning(
                "primus tracking: no trace report for MLflow run %s: %s", self.run_id, redact_text(str(error))[:300]
            )


def connect(cfg: MlflowConfig, tracking_uri: str) -> MlflowRestClient | FullMlflowClient:
    """The client for ``tracking_uri``: the light REST client for an http(s) server, else ``MlflowClient``."""
    if needs_full_client(tracking_uri):
        return FullMlflowClient(tracking_uri, cfg.registry_uri, cfg.request_timeout_s)
    return MlflowRestClient(tracking_uri, cfg.request_timeout_s)
