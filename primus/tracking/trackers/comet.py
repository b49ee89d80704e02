"""Comet sink: one ``log_metrics`` per step, the run's params and tags once, its end status as an "other" value.

Online, comet_ml reads its API key from COMET_API_KEY (never from us: nothing here sees or logs it). Offline
(``CometConfig.offline``, or COMET_MODE=offline) nothing touches the network: comet_ml writes a zip archive of
the experiment into ``offline_dir`` when it ends, which ``comet upload <zip>`` sends later.

The experiment key is chosen once and kept in the run directory, with whether the experiment exists yet: online from
its first start, offline once its first archive is written. A restart, or ``primus tracking sync``, then continues it
as comet_ml's docs say (``ExistingExperiment``; offline ``ExistingOfflineExperiment``, whose archive
``<key>-<suffix>.zip`` is uploaded after ``<key>.zip``); ``Experiment`` with the key of an existing experiment is
refused by Comet. Name, tags, params and others are logged when the experiment is created, not again."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from primus.tracking.journal.records import Metrics, Record, SinkName, Text, event_of
from primus.tracking.settings.config import resolved
from primus.tracking.sinks.sink import Durability, Sink, SinkUnavailable
from primus.tracking.trackers.context import SinkContext

STATUS_KEY = "primus/status"
# comet_ml's automatic logging patches the process (stdout, argv, git, host figures): the delivery process is not
# the training, and what Comet gets is the journal's records only
_QUIET = dict(
    log_code=False,
    log_graph=False,
    auto_param_logging=False,
    auto_metric_logging=False,
    parse_args=False,
    auto_output_logging=None,
    log_env_details=False,
    log_git_metadata=False,
    log_git_patch=False,
    log_env_gpu=False,
    log_env_host=False,
    log_env_cpu=False,
    log_env_network=False,
    log_env_disk=False,
    display_summary_level=0,
)


class CometSink(Sink):
    """comet_ml sends (offline: archives) on a thread of its own, and only ``end()`` makes a record safe."""

    name = SinkName.COMET
    durability = Durability.ON_CLOSE

    def __init__(self, context: SinkContext):
        self._experiment: Any = None
        self.cfg = resolved(context.config.comet, "comet")
        self.context = context

    def open(self) -> str:
        try:
            import comet_ml
        except ImportError as e:
            raise SinkUnavailable(f"comet_ml is not importable ({e}): pip install comet_ml, or turn Comet off") from e
        saved = self.context.saved()
        key = saved.get("key") or uuid.uuid4().hex
        exists = bool(saved.get("exists"))  # an earlier process of this run created the experiment
        experiment = self._offline(comet_ml, key, exists) if self.cfg.offline else self._online(comet_ml, key, exists)
        if not exists:
            experiment.set_name(self.cfg.name)
            if self.cfg.tags:
                experiment.add_tags(list(self.cfg.tags))
            experiment.log_parameters(dict(self.context.params))
            experiment.log_others(dict(self.context.tags))
        self._experiment = experiment
        # online, Comet made the experiment as it started; offline, only its archive will (close)
        self.context.save(key=key, offline=bool(self.cfg.offline), exists=exists or not self.cfg.offline)
        return key

    def _online(self, comet_ml: Any, key: str, exists: bool) -> Any:
        _require_api_key()
        start = comet_ml.ExistingExperiment if exists else comet_ml.Experiment
        return start(**self._common(key))

    def _offline(self, comet_ml: Any, key: str, exists: bool) -> Any:
        offline_dir = resolved(self.cfg.offline_dir, "comet.offline_dir")
        offline_dir.mkdir(parents=True, exist_ok=True)
        if exists:
            common = self._common(key)
            # ExistingOfflineExperiment does not take it (comet_ml 3.58): a continued archive has the host's network
            # rates beside the journal's records
            del common["log_env_network"]
            return comet_ml.ExistingOfflineExperiment(offline_directory=str(offline_dir), **common)
        return comet_ml.OfflineExperiment(offline_directory=str(offline_dir), **self._common(key))

    def _common(self, key: str) -> dict[str, Any]:
        return dict(project_name=self.cfg.project, workspace=self.cfg.workspace, experiment_key=key, **_QUIET)

    def write(self, records: Sequence[Record]) -> None:
        for r in records:
            match event_of(r):
                case Metrics(values):
                    self._experiment.log_metrics(dict(values), step=r.step)
                case Text(tag, text):
                    self._experiment.log_text(text, step=r.step, metadata={"tag": tag})

    def close(self, status: str, complete: bool) -> None:
        self._experiment.log_other(STATUS_KEY, status)
        self._experiment.end()
        self.context.save(exists=True)


NO_API_KEY_FIX = (
    "export COMET_API_KEY (or put it in ~/.comet.config), or set COMET_MODE=offline to write an archive into the run "
    "directory for `comet upload`"
)


def api_key_found() -> bool:
    """Whether comet_ml finds an API key, looked up as it does (COMET_API_KEY, its config files); the key is never
    kept or returned."""
    from comet_ml.config import get_api_key, get_config

    return get_api_key(None, get_config()) is not None


def _require_api_key() -> None:
    """A missing key said once, where retrying cannot help (comet_ml's own ValueError would be retried on and on)."""
    if not api_key_found():
        raise SinkUnavailable(f"Comet online needs an API key: {NO_API_KEY_FIX}")
