"""The tracking contract every backend fills in: what a run will track, decided from the backend's own
settings on every rank before training starts, so a bad setting stops every rank early with one message
listing every problem (key, value, fix), and what the decision has to say is said once.

A backend's plan maps upstream's settings onto ``Destinations`` (where the run lives, which trackers upstream's
own switches turn on) and hands them, with Primus's options (the catalogue's, ``primus/config/schemas/
tracking.py``), to ``plan_run``: the one place the options are checked and turned into a ``TrackingPlan``."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from primus.config.schemas.tracking import goodput_windows, params_for, problems
from primus.errors import SettingsError
from primus.tracking.journal.files import TRACES_DIR, rank_log_file
from primus.tracking.journal.records import BACKEND_TAG, RANK_TAG
from primus.tracking.settings.config import (
    PROMETHEUS_PORT_ENV,
    PUSHGATEWAY_ENV,
    HealthSettings,
    MlflowConfig,
    PrometheusConfig,
    TensorBoardConfig,
    TrackingConfig,
    TrackingConfigError,
    WandbConfig,
)
from primus.tracking.settings.credentials import has_wandb_credentials
from primus.tracking.settings.one_logger_presence import LEGACY, PUBLIC, legacy_line, missing_line, one_logger_present
from primus.tracking.tags.run_labels import RunLabels, run_labels
from primus.upstreams.backends import backend_named

if TYPE_CHECKING:
    from primus.tracking.checkpoints.checkpoint_journal import CheckpointJournal
    from primus.tracking.run import Run
    from primus.tracking.settings.config import CometConfig, OneLoggerConfig  # a backend builds them

PERF = "mlflow_upload_performance_metrics"
ACROSS_RANKS = "mlflow_performance_metrics_across_ranks"
STRAGGLERS = "primus_stragglers"
STRAGGLERS_DEFAULT = True  # unset: on with more than one rank (no collective: measure/rank_channel.py)


class TrackingPlanError(SettingsError):
    """Settings that cannot work; raised before training starts, listing every problem."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("invalid Primus settings:\n" + "\n".join(f"  - {p}" for p in self.problems))


class Notices:
    """What deciding the plan has to say: errors are raised together, infos and warnings said once."""

    def __init__(self) -> None:
        self.infos: list[str] = []
        self.warnings: list[str] = []
        self.errors: list[str] = []

    def info(self, text: str) -> None:
        self.infos.append(text)

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def error(self, text: str) -> None:
        self.errors.append(text)

    def raise_if_errors(self) -> None:
        if self.errors:
            raise TrackingPlanError(self.errors)

    def emit(self, log: logging.Logger) -> None:
        for text in self.infos:
            log.info("%s", text)
        for text in self.warnings:
            log.warning("%s", text)

    def resolved(self, config: TrackingConfig, environ: Mapping[str, str] | None = None) -> TrackingConfig:
        """``config`` with the tracking core's own checks done (Databricks host and token, W&B mode...), its
        refusal one more problem; raises TrackingPlanError listing every problem."""
        if not self.errors:
            try:
                config = config.resolve(environ)
            except TrackingConfigError as e:
                self.error(str(e))
        self.raise_if_errors()
        return config

    def check_wandb_credentials(self, toggle: str, environ: Mapping[str, str] = os.environ) -> None:
        """Missing credentials are a warning, not an error: offline mode and `wandb login` (netrc) are valid,
        and the journal keeps every metric either way."""
        if not has_wandb_credentials(environ):
            self.warn(
                f"W&B is enabled ({toggle}) but no credentials were found (WANDB_API_KEY unset, no `wandb "
                "login` entry in ~/.netrc, WANDB_MODE is not offline): set WANDB_API_KEY or WANDB_MODE=offline. "
                "Metrics are kept in the run's journal either way (`wandb sync` later)."
            )


@dataclass(frozen=True)
class TrackingPlan:
    config: TrackingConfig | None  # None: every tracker is off and upstream's behaviour is unchanged
    notices: Notices
    backend: str  # the run's BACKEND_TAG
    all_ranks: bool = False  # every rank tracks, each into its own run; else only the rank the backend logs from
    rank: int = 0  # this rank's (its run's tag RANK_TAG when every rank has its own run)
    log_file: Path | None = None  # this rank's console is copied there (every rank) and uploaded after training
    traces_dir: Path | None = None  # upstream's profiler writes there; uploaded/reported on after training
    perf_metrics: bool = False  # the perf/mem/sys metric set (mlflow_upload_performance_metrics with MLflow on)
    across_ranks: bool = False  # that set's memory/utilisation gathered over ranks (every rank takes part)
    stragglers: bool = False  # busy time gathered over ranks at log steps (every rank takes part, with > 1 rank)
    peak_tflops: float | None = None  # one device's dense peak TFLOP/s for MFU; None: the built-in table's
    # params recorded over the backend's own (e.g. the folders Primus chose, under their own names)
    recorded_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    user_tags: Mapping[str, str] = dataclasses.field(default_factory=dict)  # mlflow_tags and the description

    def run_config(self, params: Mapping[str, Any], tags: Mapping[str, str]) -> TrackingConfig:
        """The config the run starts with: the plan's, with the run's params and tags (the backend's, which are
        all under primus., and the user's)."""
        assert self.config is not None, "no tracker is on: there is no run to start"
        own = {BACKEND_TAG: self.backend, **({RANK_TAG: str(self.rank)} if self.all_ranks else {})}
        return dataclasses.replace(
            self.config, params={**params, **self.recorded_params}, tags={**self.user_tags, **tags, **own}
        )

    def start(self, params: Mapping[str, Any], tags: Mapping[str, str], checkpoints: CheckpointJournal) -> Run:
        """Start the run (``run_config``'s), with its exit handlers, and journal ``checkpoints`` into it (with what
        they held from before the start)."""
        from primus.tracking import start_run  # the hub and its sinks load only when a run starts

        run = start_run(self.run_config(params, tags))
        run.install_exit_handlers()
        checkpoints.attach(run)
        return run


@dataclass(frozen=True)
class Destinations:
    """What a backend's own settings say about the run: where it lives and which of upstream's trackers are on."""

    run_dir: Path
    run_name: str  # the run's own name; mlflow_run_name overrides it
    tensorboard: TensorBoardConfig | None
    wandb: WandbConfig | None
    rank: int = 0
    run_name_suffix: str = ""  # after either name: one run per rank says which rank it is
    delivery_group: Path | None = None  # TrackingConfig's
    comet: CometConfig | None = None
    # rides along with the trackers (it alone starts no run). Megatron's: from upstream's own options; a backend
    # with Primus's One-Logger options gives the run's shape here, and plan_run applies them
    one_logger: OneLoggerConfig | None = None


def plan_run(
    backend: str,
    value_of: Callable[[str], Any],
    destinations: Callable[[Notices], Destinations | None],
    notices: Notices,
    *,
    mlflow: bool,
    mlflow_off_by: str,
    flag: Callable[[str], str] | None = None,
    environ: Mapping[str, str] | None = None,
    all_ranks: bool = False,
) -> TrackingPlan:
    """Check ``backend``'s Primus options (``value_of(name)``, by their names without the backend's section) with
    what ``notices`` already holds, and decide the run. ``mlflow``: whether MLflow is on, by the toggle the user
    writes as ``mlflow_off_by`` when it is off; ``destinations`` is asked once every option is valid, and answers
    None when no tracker is on; ``flag(key)``: how a key is written on the backend's command line, where it has
    flags (Megatron). Raises TrackingPlanError listing every problem; the config is resolved."""
    section = backend_named(backend).option_section
    params = params_for(backend)
    for problem in problems(params, lambda key: value_of(key.removeprefix(section)), flag):
        notices.error(problem)
    notices.raise_if_errors()
    options = {name: value_of(name) for name in (p.name.removeprefix(section) for p in params)}
    chosen = {name for name, value in options.items() if value is True and name.startswith("mlflow_")}
    if chosen and not mlflow:
        shown = ", ".join(section + name for name in options if name in chosen)
        notices.info(f"{shown} ignored: MLflow is off ({mlflow_off_by})")
        chosen = set()
    if ACROSS_RANKS in chosen and PERF not in chosen:
        notices.info(f"{section}{ACROSS_RANKS} ignored: {section}{PERF} is off")
        chosen.discard(ACROSS_RANKS)
    stragglers = STRAGGLERS_DEFAULT if options.get(STRAGGLERS) is None else bool(options[STRAGGLERS])
    labels = run_labels(options, os.environ if environ is None else environ, notices.error)
    where = destinations(notices)
    if where is None:
        notices.raise_if_errors()
        return TrackingPlan(None, notices, backend, stragglers=stragglers)
    config = notices.resolved(
        TrackingConfig(
            run_dir=where.run_dir,
            experiment_name=options["mlflow_experiment_name"],
            run_name=(options["mlflow_run_name"] or where.run_name) + where.run_name_suffix,
            tensorboard=where.tensorboard,
            wandb=where.wandb and _labelled(where.wandb, labels),
            mlflow=MlflowConfig(
                upload_logs="mlflow_upload_logs" in chosen,
                upload_traces="mlflow_upload_traces" in chosen,
                upload_trace_report="mlflow_upload_tracelens_report" in chosen,
                upload_checkpoints="mlflow_upload_checkpoints" in chosen,
            )
            if mlflow
            else None,
            exit_deadline_s=options.get("primus_exit_deadline", TrackingConfig.exit_deadline_s),
            health=HealthSettings(
                stall_after_s=options["primus_stall_after"],
                spike_k=options["primus_loss_spike_mads"],
                drop_fraction=options["primus_throughput_drop_fraction"],
                no_progress_restarts=options["primus_no_progress_restarts"],
            ),
            journal_retention=options["primus_journal_retention"],
            goodput_windows=goodput_windows(options["primus_goodput_windows"]),
            delivery_group=where.delivery_group,
            comet=where.comet,
            one_logger=_one_logger(backend, where.one_logger, options, notices, section),
            prometheus=PrometheusConfig(
                pushgateway=options["primus_prometheus_pushgateway"],
                push_interval_s=options["primus_prometheus_push_interval"],
                port=options["primus_prometheus_port"],
            ),
        ),
        environ,
    )
    tracing = bool({"mlflow_upload_traces", "mlflow_upload_tracelens_report"} & chosen)
    exported = config.otlp or config.prometheus
    tracked = config.tensorboard or config.wandb or config.mlflow or config.comet or exported or config.plugin_sinks
    return TrackingPlan(
        config if tracked else None,
        notices,
        backend,
        all_ranks=all_ranks,
        rank=where.rank,
        log_file=rank_log_file(where.run_dir, where.rank) if "mlflow_upload_logs" in chosen else None,
        traces_dir=where.run_dir / TRACES_DIR if tracing else None,
        perf_metrics=PERF in chosen,
        across_ranks=ACROSS_RANKS in chosen,
        stragglers=stragglers,
        peak_tflops=options["peak_tflops"],
        user_tags=labels.tags,
    )


def _one_logger(
    backend: str, shape: OneLoggerConfig | None, options: Mapping[str, Any], notices: Notices, section: str
) -> OneLoggerConfig | None:
    """The backend's One-Logger with Primus's options applied, when they are on and nv-one-logger is installed (the
    legacy package or none: said once)."""
    if "enable_one_logger" not in options or shape is None:
        return shape
    if not options["enable_one_logger"]:
        return None
    toggle = f"{section}enable_one_logger"
    present = one_logger_present()
    if present != PUBLIC:
        notices.info(legacy_line(toggle) if present == LEGACY else missing_line(toggle, f"set {toggle}: false"))
        return None
    return dataclasses.replace(
        shape,
        project=options["one_logger_project"] or backend,
        run_name=options["one_logger_run_name"],
        async_export=bool(options["one_logger_async"]),
        app_tag_run_name=options["app_tag_run_name"],
        app_tag_run_version=options["app_tag_run_version"],
    )


def exports_to_prometheus(value_of: Callable[[str], Any], environ: Mapping[str, str] | None = None) -> bool:
    """Whether the run names a Pushgateway or a /metrics port (``value_of(option)``, else their variables): a
    tracker that is on, for a backend's ``destinations``."""
    environ = os.environ if environ is None else environ
    return any(
        value_of(option) is not None or environ.get(variable, "").strip()
        for option, variable in (
            ("primus_prometheus_pushgateway", PUSHGATEWAY_ENV),
            ("primus_prometheus_port", PROMETHEUS_PORT_ENV),
        )
    )


def _labelled(wandb: WandbConfig, labels: RunLabels) -> WandbConfig:
    """The user's W&B tags and notes over what the backend's own settings gave (TorchTitan's variables)."""
    return dataclasses.replace(
        wandb,
        tags=wandb.tags if labels.wandb_tags is None else labels.wandb_tags,
        notes=labels.wandb_notes or wandb.notes,
    )
