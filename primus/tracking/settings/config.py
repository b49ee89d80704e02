"""What a tracked run is configured with, and the checks that run before any training starts.

The backends build a ``TrackingConfig`` from their own arguments; ``resolve()`` fills what is left
unset from the environment (``WANDB_*``, ``MLFLOW_*``) and refuses bad values with an error that
names the key, the value and the fix; a variable set but empty is unset here where the tracker client reads
it so, and what the client itself would refuse (an empty WANDB_MODE) is refused too (``environment``, the only
check that imports a tracker's code).
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from primus.plugins import PluginError
from primus.redaction import redact_text
from primus.tracking.settings import otlp_env
from primus.tracking.settings.environment import mlflow_environment_problems, wandb_environment_problems
from primus.tracking.sinks.plugins import requested_sinks, sink_classes

WANDB_MODES = ("online", "offline", "disabled", "shared")
WANDB_INIT_TIMEOUT_S = 30.0  # wandb's default of 90 s stalls the writer rank's start-up on a bad network
MLFLOW_DB_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")  # "+driver" suffixes allowed, as in SQLAlchemy
DELIVERY_MODES = ("process", "thread")
JOURNAL_RETENTIONS = ("keep", "delivered")
GOODPUT_WINDOWS = (60, 300, 900)  # seconds of the recent goodput figures (goodput/recent.py) by default
DELIVERY_ENV = "PRIMUS_TRACKING_DELIVERY"
COMET_DIR = "comet"  # comet_ml's offline archives, in the run directory
DEFAULT_EXPERIMENT = "primus"  # the MLflow experiment when neither the run nor MLFLOW_EXPERIMENT_NAME names one
PUSHGATEWAY_ENV = "PRIMUS_PROMETHEUS_PUSHGATEWAY"  # the Prometheus Pushgateway the delivery process pushes to
PUSH_INTERVAL_ENV = "PRIMUS_PROMETHEUS_PUSH_INTERVAL"  # seconds between two pushes at most
PROMETHEUS_PORT_ENV = "PRIMUS_PROMETHEUS_PORT"  # the delivery process serves /metrics on this port
_WANDB_BRANCH = re.compile(r"[^?/\s]+\?_step=\d+(\.\d+)?")  # wandb's "<run id>?_step=<step>"


@dataclass(frozen=True)
class HealthSettings:
    """The detectors' settings; in the run's ``TrackingConfig``, so the delivery process gets them."""

    stall_after_s: float | None = None  # None: automatic (see the module docstring)
    stall_factor: float = 10.0
    stall_min_s: float = 300.0
    startup_s: float = 1800.0  # before the first log step: loading, compiling, the first batches
    busy_s: float = 3600.0  # a checkpoint save or an evaluation in progress
    spike_k: float = 6.0  # 0: no loss_spike alerts
    spike_window: int = 100
    drop_fraction: float = 0.5  # 0: no throughput_drop alerts
    drop_steps: int = 5
    no_progress_restarts: int = 3  # a no_progress stop after this many attempts in a row without progress; 0: never

    def __post_init__(self):
        for name in ("stall_factor", "stall_min_s", "startup_s", "busy_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"health.{name}={getattr(self, name)!r}: must be > 0")
        if self.stall_after_s is not None and not self.stall_after_s > 0:
            raise ValueError(f"health.stall_after_s={self.stall_after_s!r}: must be > 0, or None for automatic")
        if not (
            self.spike_k >= 0
            and self.spike_window >= 4
            and 0 <= self.drop_fraction < 1
            and self.drop_steps >= 1
            and self.no_progress_restarts >= 0
        ):
            raise ValueError(f"health settings out of range: {self}")


class TrackingConfigError(ValueError):
    """A tracking setting is wrong; the message names the key, the value and the fix."""


@dataclass(frozen=True)
class TensorBoardConfig:
    log_dir: Path
    queue_size: int = 1000  # SummaryWriter(max_queue=...): events held in memory before a write


@dataclass(frozen=True)
class WandbConfig:
    # None: filled from WANDB_PROJECT, WANDB_ENTITY (or WANDB_TEAM), WANDB_RUN_NAME, WANDB_DIR, WANDB_MODE
    project: str | None = None
    entity: str | None = None
    name: str | None = None
    save_dir: Path | None = None
    mode: str | None = None
    init_timeout_s: float | None = None  # None: WANDB_INIT_TIMEOUT (W&B's own variable), else 30 s
    # what wandb.init is given as it is (TorchTitan's WANDB_RUN_* variables); None: wandb's own default
    run_id: str | None = None  # the W&B run's id; None: one chosen once, kept in the run directory, set here
    notes: str | None = None
    tags: tuple[str, ...] | None = None
    job_type: str | None = None
    resume_from: str | None = None  # "<run id>?_step=<step>": rewind that run (its id becomes this run's)
    fork_from: str | None = None  # "<run id>?_step=<step>": a new run branching from that one


@dataclass(frozen=True)
class MlflowConfig:
    # None tracking_uri: MLFLOW_TRACKING_URI, else a local sqlite store next to the run directory
    tracking_uri: str | None = None
    registry_uri: str | None = None
    experiment_name: str | None = None
    run_name: str | None = None
    request_timeout_s: float = 5.0  # per HTTP attempt; MLflow's own retries are turned off, we retry
    upload_logs: bool = False  # files under <run_dir>/logs, after training
    upload_traces: bool = False  # files under <run_dir>/traces, after training
    upload_trace_report: bool = False  # a report on <run_dir>/traces, written to <run_dir>/reports, after training
    # the checkpoint's files too, beside its manifest, as each is saved: slow and costly for large checkpoints
    upload_checkpoints: bool = False


@dataclass(frozen=True)
class CometConfig:
    project: str | None = None  # None: COMET_PROJECT_NAME, as comet_ml reads it
    workspace: str | None = None  # None: COMET_WORKSPACE, else the API key's default workspace
    name: str | None = None  # the experiment's name; None: the run's name
    tags: tuple[str, ...] = ()
    # None: COMET_MODE ("offline": no network, an archive for `comet upload`), else online (COMET_API_KEY)
    offline: bool | None = None
    offline_dir: Path | None = None  # None: COMET_OFFLINE_DIRECTORY, else <run_dir>/comet


@dataclass(frozen=True)
class OneLoggerConfig:
    """The spec's One-Logger options (Megatron's names in the comments) and the run's shape, which NVIDIA's
    nv-one-logger summarises iterations and checkpoints with; the other backends fill it from their own keys."""

    project: str = "megatron-lm"  # one_logger_project
    run_name: str | None = None  # one_logger_run_name; None: the run's name
    async_export: bool = False  # one_logger_async: recorded in the configuration (the file exporter writes as it goes)
    app_tag_run_name: str | None = None  # None: the One-Logger run name
    app_tag_run_version: str = "0.0.0"
    world_size: int = 1
    global_batch_size: int = 1
    micro_batch_size: int | None = None
    seq_length: int | None = None
    train_iterations: int | None = None  # the target, when the trainer has one
    log_every_n_iterations: int = 1  # one summary per log step of the trainer's
    async_save: bool = False  # checkpoints saved asynchronously (checkpoint_save_async spans)
    step_offset: int = 0  # iterations done at a logged step = the step + this (MaxText counts its steps from 0: 1)


@dataclass(frozen=True)
class OtlpConfig:
    """OpenTelemetry (OTLP/HTTP protobuf): on when its standard variables name a collector (``otlp_env``)."""

    metrics_endpoint: str | None = None  # None: from OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT
    logs_endpoint: str | None = None  # None: from OTEL_EXPORTER_OTLP_[LOGS_]ENDPOINT
    timeout_s: float = 10.0  # per request; a collector that is down is retried by the sink's worker
    compression: str | None = None  # "gzip" or "none"; None: from OTEL_EXPORTER_OTLP_[METRICS_]COMPRESSION
    # points older than this are not sent (collectors refuse old samples; said once): a collector down for longer,
    # or a `primus tracking sync` run later, gets only the newer ones
    max_age_s: float = 7 * 86400.0


@dataclass(frozen=True)
class PrometheusConfig:
    pushgateway: str | None = None  # http(s)://HOST:PORT; None: PRIMUS_PROMETHEUS_PUSHGATEWAY, else no pushes
    push_interval_s: float | None = None  # None: PRIMUS_PROMETHEUS_PUSH_INTERVAL, else 1 s
    timeout_s: float = 5.0  # per push; a gateway that does not answer is retried with back-off
    port: int | None = None  # /metrics served by the delivery process; None: PRIMUS_PROMETHEUS_PORT, else none


@dataclass(frozen=True)
class TrackingConfig:
    run_dir: Path
    experiment_name: str | None = None  # None: MLFLOW_EXPERIMENT_NAME, as MLflow's own client reads it, else "primus"
    run_name: str | None = None  # None: the run directory's name
    tensorboard: TensorBoardConfig | None = None
    wandb: WandbConfig | None = None
    mlflow: MlflowConfig | None = None
    comet: CometConfig | None = None
    one_logger: OneLoggerConfig | None = None  # NVIDIA's nv-one-logger, from the journal like the trackers
    otlp: OtlpConfig | None = None  # None: on when OTEL_EXPORTER_OTLP_[METRICS_]ENDPOINT is set (resolve)
    prometheus: PrometheusConfig | None = None  # None: a Pushgateway only from PRIMUS_PROMETHEUS_PUSHGATEWAY
    params: Mapping[str, Any] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)
    exit_deadline_s: float = 30.0
    journal_segment_bytes: int = 64 << 20  # a new journal segment past this size; the closed one is gzipped
    # "keep": the journal stays whole; "delivered": a closed segment is deleted once every sink has delivered it
    journal_retention: str = "keep"
    journal_max_bytes: int | None = None  # deprecated: the journal has no cap (nothing is dropped); ignored
    pending_records: int = 100_000  # records queued in memory between hub ticks before new ones are dropped
    # "process": the sinks (TensorBoard, W&B, MLflow, Comet, plugins) are fed by a delivery process, off the
    # training process's GIL; "thread": by threads of the training process. None: PRIMUS_TRACKING_DELIVERY, else "process"
    delivery: str | None = None
    # with delivery "process": the runs of one node that name the same directory here (their job's) share one
    # delivery process, instead of one each (TorchTitan's save_for_all_ranks: every rank has its own run)
    delivery_group: Path | None = None
    # trackers other distributions add (entry-point group primus.sinks), by name. None: PRIMUS_SINKS
    plugin_sinks: tuple[str, ...] | None = None
    health: HealthSettings = field(default_factory=HealthSettings)  # the run-health detectors (health/detectors.py)
    goodput_windows: tuple[int, ...] = GOODPUT_WINDOWS  # seconds: goodput/productive_fraction_<W>s at log steps
    # set by resolve(): a backend resolves its plan's config before training, and start_run must not do it again
    # (checking the WANDB_* variables may start W&B's settings check in a subprocess; warnings would be said twice)
    is_resolved: bool = field(default=False, compare=False, repr=False)

    def resolve(self, env: Mapping[str, str] | None = None) -> TrackingConfig:
        """A copy with every None that has a default filled in (itself when already resolved); raises
        TrackingConfigError."""
        if self.is_resolved:
            return self
        env = os.environ if env is None else env
        _require(str(self.run_dir).strip() != "", "run_dir", self.run_dir, "give the run its own directory")
        run_dir = Path(self.run_dir).expanduser().absolute()
        _positive("exit_deadline_s", self.exit_deadline_s, "e.g. 30")
        _positive_int("journal_segment_bytes", self.journal_segment_bytes, "e.g. 67108864 (64 MiB)")
        _require(
            self.journal_retention in JOURNAL_RETENTIONS,
            "journal_retention",
            self.journal_retention,
            f"use one of {', '.join(JOURNAL_RETENTIONS)}",
        )
        if self.journal_max_bytes is not None:
            logging.getLogger("primus.tracking").warning(
                "primus tracking: journal_max_bytes=%r is ignored: the journal no longer has a cap (it drops nothing, "
                "the disk is its only limit); remove the setting, and use journal_retention to bound its size",
                self.journal_max_bytes,
            )
        _positive_int("pending_records", self.pending_records, "e.g. 100000")
        for seconds in self.goodput_windows:
            _positive_int("goodput_windows", seconds, "seconds, e.g. (60, 300, 900)")
        run_name = self.run_name or run_dir.name
        experiment_name = self.experiment_name or env.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
        delivery = self.delivery or env.get(DELIVERY_ENV) or "process"
        _require(
            delivery in DELIVERY_MODES,
            "delivery" if self.delivery else DELIVERY_ENV,
            delivery,
            f"use one of {', '.join(DELIVERY_MODES)}",
        )
        plugin_sinks = requested_sinks(env) if self.plugin_sinks is None else tuple(self.plugin_sinks)
        try:
            sink_classes(plugin_sinks)  # installed, importable, a Sink: said now, not on a sink worker
        except PluginError as e:
            raise TrackingConfigError(str(e)) from e
        return replace(
            self,
            run_dir=run_dir,
            run_name=run_name,
            experiment_name=experiment_name,
            delivery=delivery,
            delivery_group=self.delivery_group and Path(self.delivery_group).expanduser().absolute(),
            plugin_sinks=plugin_sinks,
            tensorboard=self.tensorboard and _resolve_tensorboard(self.tensorboard),
            wandb=self.wandb and _resolve_wandb(self.wandb, run_dir, run_name, env),
            mlflow=self.mlflow and _resolve_mlflow(self.mlflow, run_dir, experiment_name, run_name, env),
            comet=self.comet and _resolve_comet(self.comet, run_dir, run_name, env),
            one_logger=self.one_logger and _resolve_one_logger(self.one_logger, run_name),
            otlp=_resolve_otlp(self.otlp, env),
            prometheus=_resolve_prometheus(self.prometheus or PrometheusConfig(), env),
            is_resolved=True,
        )


def _resolve_tensorboard(cfg: TensorBoardConfig) -> TensorBoardConfig:
    _require(
        cfg.log_dir is not None and str(cfg.log_dir).strip() != "",
        "tensorboard.log_dir",
        cfg.log_dir,
        "set tensorboard_dir to a directory",
    )
    _positive_int("tensorboard.queue_size", cfg.queue_size, "e.g. 1000")
    return replace(cfg, log_dir=Path(cfg.log_dir).expanduser().absolute())


def _resolve_comet(cfg: CometConfig, run_dir: Path, run_name: str, env: Mapping[str, str]) -> CometConfig:
    offline = cfg.offline if cfg.offline is not None else env.get("COMET_MODE", "").lower() == "offline"
    offline_dir = cfg.offline_dir or env.get("COMET_OFFLINE_DIRECTORY") or run_dir / COMET_DIR
    return replace(
        cfg, name=cfg.name or run_name, offline=offline, offline_dir=Path(offline_dir).expanduser().absolute()
    )


def _resolve_one_logger(cfg: OneLoggerConfig, run_name: str) -> OneLoggerConfig:
    _positive_int("one_logger.log_every_n_iterations", cfg.log_every_n_iterations, "e.g. the trainer's log interval")
    name = cfg.run_name or run_name
    return replace(cfg, run_name=name, app_tag_run_name=cfg.app_tag_run_name or name)


def _resolve_otlp(cfg: OtlpConfig | None, env: Mapping[str, str]) -> OtlpConfig | None:
    """Off unless given or named by the variables; the logs' endpoint may stay None (no alerts as log records)."""
    metrics = otlp_env.endpoint(env, otlp_env.METRICS)
    if cfg is None and metrics is None:
        return None
    cfg = cfg or OtlpConfig()
    logs = otlp_env.endpoint(env, otlp_env.LOGS)
    urls: dict[str, str | None] = {}
    for signal, given, found in (
        (otlp_env.METRICS, cfg.metrics_endpoint, metrics),
        (otlp_env.LOGS, cfg.logs_endpoint, logs),
    ):
        url, key = (given, f"otlp.{signal}_endpoint") if given else found or (None, "")
        if url is not None:
            parts = urlsplit(url)
            _require(
                parts.scheme in ("http", "https") and bool(parts.hostname),
                key,
                url,
                "give the collector's OTLP/HTTP address, e.g. http://127.0.0.1:4318 (OTLP over gRPC is not supported)",
            )
        urls[signal] = url
    _require(urls[otlp_env.METRICS] is not None, "otlp.metrics_endpoint", None, f"set {otlp_env.ENDPOINT}")
    _positive("otlp.timeout_s", cfg.timeout_s, "e.g. 10")
    _positive("otlp.max_age_s", cfg.max_age_s, "e.g. 604800 (7 days)")
    compression, key = (cfg.compression, "otlp.compression") if cfg.compression else otlp_env.compression(env)
    _require(compression in otlp_env.COMPRESSIONS, key, compression, "use gzip or none")
    return replace(
        cfg, metrics_endpoint=urls[otlp_env.METRICS], logs_endpoint=urls[otlp_env.LOGS], compression=compression
    )


def _resolve_prometheus(cfg: PrometheusConfig, env: Mapping[str, str]) -> PrometheusConfig | None:
    """None when neither a Pushgateway nor a port is named (the options, else their variables)."""
    url = cfg.pushgateway or env.get(PUSHGATEWAY_ENV, "").strip() or None
    given: Any = cfg.port if cfg.port is not None else (env.get(PROMETHEUS_PORT_ENV, "").strip() or None)
    if url is None and given is None:
        return None
    if url is not None:
        _require(
            urlsplit(url).scheme in ("http", "https") and _is_http_url(url),
            "prometheus.pushgateway" if cfg.pushgateway else PUSHGATEWAY_ENV,
            url,
            "give the Pushgateway as http://HOST:PORT, e.g. http://pushgateway.example:9091",
        )
    port = int(given) if str(given).isdigit() else None
    if given is not None:
        key = "prometheus.port" if cfg.port is not None else PROMETHEUS_PORT_ENV
        _require(port is not None and 0 < port < 65536, key, given, "give a free TCP port, e.g. 9464")
    interval = _seconds(cfg.push_interval_s, "prometheus.push_interval_s", env, PUSH_INTERVAL_ENV, 1.0, "e.g. 1")
    _positive("prometheus.timeout_s", cfg.timeout_s, "e.g. 5")
    return replace(cfg, pushgateway=url and url.rstrip("/"), push_interval_s=interval, port=port)


def _resolve_wandb(cfg: WandbConfig, run_dir: Path, run_name: str, env: Mapping[str, str]) -> WandbConfig:
    mode = cfg.mode or env.get("WANDB_MODE") or "online"
    _require(mode in WANDB_MODES, "wandb.mode (or WANDB_MODE)", mode, f"use one of {', '.join(WANDB_MODES)}")
    init_timeout = _seconds(
        cfg.init_timeout_s, "wandb.init_timeout_s", env, "WANDB_INIT_TIMEOUT", WANDB_INIT_TIMEOUT_S, "e.g. 30"
    )
    save_dir = cfg.save_dir or env.get("WANDB_DIR") or run_dir
    _check_wandb_branch(cfg)
    _refuse(wandb_environment_problems(env))
    return replace(
        cfg,
        project=cfg.project or env.get("WANDB_PROJECT") or None,
        entity=cfg.entity or env.get("WANDB_ENTITY") or env.get("WANDB_TEAM") or None,
        name=cfg.name or env.get("WANDB_RUN_NAME") or run_name,
        save_dir=Path(save_dir).expanduser().absolute(),
        mode=mode,
        init_timeout_s=init_timeout,
    )


def _check_wandb_branch(cfg: WandbConfig) -> None:
    """resume_from / fork_from as wandb.init takes them, refused here rather than on the sink worker."""
    for key, value in (("resume_from", cfg.resume_from), ("fork_from", cfg.fork_from)):
        if value is not None:
            _require(
                bool(_WANDB_BRANCH.fullmatch(value)),
                f"wandb.{key}",
                value,
                "use '<run id>?_step=<step>', e.g. 'abc123?_step=100'",
            )
    _require(
        not (cfg.resume_from and cfg.fork_from),
        "wandb.resume_from and wandb.fork_from",
        (cfg.resume_from, cfg.fork_from),
        "set one of them: W&B takes one at a time",
    )
    if cfg.fork_from and cfg.run_id:
        _require(
            cfg.fork_from.split("?")[0] != cfg.run_id,
            "wandb.fork_from",
            cfg.fork_from,
            f"fork into a new run id, not the forked run's own ({cfg.run_id!r})",
        )
    if cfg.resume_from and cfg.run_id:
        _require(
            cfg.resume_from.split("?")[0] == cfg.run_id,
            "wandb.resume_from",
            cfg.resume_from,
            f"rewind the run of wandb.run_id ({cfg.run_id!r}), or leave the run id unset",
        )


def _resolve_mlflow(
    cfg: MlflowConfig, run_dir: Path, experiment: str, run_name: str, env: Mapping[str, str]
) -> MlflowConfig:
    uri = cfg.tracking_uri or env.get("MLFLOW_TRACKING_URI") or f"sqlite:///{run_dir.parent / 'mlflow.db'}"
    experiment_name = cfg.experiment_name or experiment
    _require(bool(experiment_name), "mlflow.experiment_name", experiment_name, "set mlflow_experiment_name")
    _positive("mlflow.request_timeout_s", cfg.request_timeout_s, "e.g. 5")
    _check_tracking_uri("mlflow.tracking_uri" if cfg.tracking_uri else "MLFLOW_TRACKING_URI", uri, env)
    if uri == "databricks" or uri.startswith("databricks://"):
        _check_databricks(uri, experiment_name, env)
    _refuse(mlflow_environment_problems(env))
    return replace(
        cfg,
        tracking_uri=uri,
        registry_uri=cfg.registry_uri or env.get("MLFLOW_REGISTRY_URI") or None,
        experiment_name=experiment_name,
        run_name=cfg.run_name or run_name,
    )


def _check_tracking_uri(key: str, uri: str, env: Mapping[str, str]) -> None:
    """A URI MLflow cannot use would otherwise fail only on the sink worker, retried for the whole run."""
    parts = urlsplit(uri)
    scheme = parts.scheme.split("+")[0]
    if uri == "databricks":
        return
    if scheme in ("http", "https"):
        _require(_is_http_url(uri), key, uri, "give the server as http://HOST:PORT, e.g. http://127.0.0.1:5000")
    elif scheme in ("", "file"):  # MLflow 3 refuses its file store unless MLFLOW_ALLOW_FILE_STORE is set
        _require(
            env.get("MLFLOW_ALLOW_FILE_STORE", "").lower() == "true",
            key,
            uri,
            "give an MLflow server (http://HOST:PORT), a database (sqlite:///PATH/mlflow.db) or databricks; "
            "a bare path is MLflow's retired file store (MLFLOW_ALLOW_FILE_STORE=true to use it anyway)",
        )
    else:
        _require(
            scheme in (*MLFLOW_DB_SCHEMES, "databricks"),
            key,
            uri,
            f"unknown scheme {parts.scheme!r}: use http(s)://HOST:PORT, sqlite:///PATH/mlflow.db, "
            f"{', '.join(MLFLOW_DB_SCHEMES[1:])} or databricks",
        )


def _is_http_url(url: str) -> bool:
    """A host, and a port that is a number when given."""
    parts = urlsplit(url)
    try:
        return bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:  # a port that is not a number
        return False


def _check_databricks(uri: str, experiment_name: str, env: Mapping[str, str]) -> None:
    profile_file = Path(env.get("DATABRICKS_CONFIG_FILE") or Path.home() / ".databrickscfg")
    if uri == "databricks" and not profile_file.is_file():
        missing = [
            k + (" (set but empty)" if k in env else "")
            for k in ("DATABRICKS_HOST", "DATABRICKS_TOKEN")
            if not env.get(k)
        ]
        _require(
            not missing,
            "MLFLOW_TRACKING_URI",
            uri,
            f"Databricks-hosted MLflow needs {' and '.join(missing)} in the environment "
            f"(export DATABRICKS_HOST=https://<workspace>.cloud.databricks.com and DATABRICKS_TOKEN=<token>), "
            f"or a profile in {profile_file}",
        )
    _require(
        experiment_name.startswith("/"),
        "mlflow.experiment_name",
        experiment_name,
        f"Databricks experiment names are workspace paths: use e.g. '/Users/<you>/{experiment_name}'",
    )


T = TypeVar("T")


def resolved(value: T | None, key: str) -> T:
    """``value`` as ``TrackingConfig.resolve`` filled it in: None here is a caller that skipped ``resolve``."""
    if value is None:
        raise TrackingConfigError(f"tracking {key} is unset: build sinks from TrackingConfig.resolve()'s copy")
    return value


def _refuse(problems: list[str]) -> None:
    if problems:
        raise TrackingConfigError("; ".join(problems))


def _require(ok: bool, key: str, value: Any, fix: str) -> None:
    if not ok:
        raise TrackingConfigError(f"{key}={redact_text(repr(value))} is not valid: {fix}")


def _seconds(
    given: float | None, key: str, env: Mapping[str, str], variable: str, default: float, example: str
) -> float:
    """``given`` (the option ``key``), else the number in ``env[variable]``, else ``default``; refused unless it is
    positive, naming the option or the variable it came from."""
    value: Any = given
    if given is None:
        key, text = variable, env.get(variable, "").strip()
        try:
            value = float(text) if text else default
        except ValueError:  # refused below, as written
            value = text
    _positive(key, value, example)
    return float(value)


def _positive(key: str, value: Any, example: str) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    _require(ok, key, value, f"give a positive number of seconds, {example}")


def _positive_int(key: str, value: Any, example: str) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    _require(ok, key, value, f"give a positive integer, {example}")
