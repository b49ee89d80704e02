"""``MlflowClient`` behind the calls of ``mlflow_rest.MlflowRestClient``, for what only the full client serves
(Databricks, local sqlite/file stores, request-auth plugins, a proxy; artifact stores other than the server's
own). ``mlflow`` is imported when one is made, never at import. An explicit run id everywhere (fluent calls are
thread-local and would create a stray run from a worker thread), MLflow's own HTTP retries off and a short
per-attempt timeout (its defaults block 246 s on a dead server): the sink's worker owns retries."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from primus.tracking.trackers.mlflow_rest import MetricPoint, RunView


class FullMlflowClient:
    def __init__(self, tracking_uri: str, registry_uri: str | None, timeout_s: float):
        # read by MLflow at request time; process-wide, so the user's own MLflow calls fail fast too
        os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
        os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(int(max(1, timeout_s)))
        # set_terminated prints the run's URL to stdout, with any user:password the tracking URI holds
        os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
        from mlflow import MlflowClient

        self._client = MlflowClient(tracking_uri, registry_uri)

    def get_experiment_id(self, name: str) -> str | None:
        experiment = self._client.get_experiment_by_name(name)
        return None if experiment is None else experiment.experiment_id

    def create_experiment(self, name: str, artifact_location: str | None = None) -> str:
        return self._client.create_experiment(name, artifact_location=artifact_location)

    def create_run(self, experiment_id: str, run_name: str | None, tags: Mapping[str, str]) -> str:
        return self._client.create_run(experiment_id, run_name=run_name, tags=dict(tags)).info.run_id

    def get_run(self, run_id: str) -> RunView:
        run = self._client.get_run(run_id)
        return RunView(run.info.run_id, run.info.status, dict(run.data.params), run.info.artifact_uri)

    def set_status(self, run_id: str, status: str) -> None:
        self._client.update_run(run_id, status=status)

    def set_terminated(self, run_id: str, status: str) -> None:
        self._client.set_terminated(run_id, status)

    def log_batch(
        self,
        run_id: str,
        metrics: Sequence[MetricPoint] = (),
        params: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        tags: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    ) -> None:
        from mlflow.entities import Metric, Param, RunTag

        params = params.items() if isinstance(params, Mapping) else params
        tags = tags.items() if isinstance(tags, Mapping) else tags
        self._client.log_batch(
            run_id,
            metrics=[Metric(*m) for m in metrics],
            params=[Param(k, v) for k, v in params],
            tags=[RunTag(k, v) for k, v in tags],
            synchronous=True,
        )

    def log_artifact(self, run_id: str, local_path: Path, artifact_path: str) -> None:
        self._client.log_artifact(run_id, str(local_path), artifact_path=artifact_path)

    def close(self) -> None:
        pass
