"""The tracking contract every backend fills in: what a run will track, decided from the backend's own
settings on every rank before training starts, so a bad setting stops every rank early with one message
listing every problem (key, value, fix), and what the decision has to say is said once."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from primus.tracking.config import TrackingConfig, TrackingConfigError
from primus.tracking.credentials import has_wandb_credentials


class TrackingPlanError(ValueError):
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
    all_ranks: bool = False  # every rank tracks, each into its own run; else only the rank the backend logs from
    log_file: Path | None = None  # this rank's console is copied there (every rank) and uploaded after training
    traces_dir: Path | None = None  # upstream's profiler writes there; uploaded/reported on after training
    perf_metrics: bool = False  # the perf/mem/sys metric set (mlflow_upload_performance_metrics with MLflow on)
    across_ranks: bool = False  # that set's memory/utilisation gathered over ranks (every rank takes part)
    peak_tflops: float | None = None  # one device's dense peak TFLOP/s for MFU; None: the built-in table's
    # params recorded over the backend's own (e.g. the folders Primus chose, under their own names)
    recorded_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def run_config(self, params: Mapping[str, Any], tags: Mapping[str, str]) -> TrackingConfig:
        """The config the run starts with: the plan's, with the run's params and tags."""
        assert self.config is not None, "no tracker is on: there is no run to start"
        return dataclasses.replace(self.config, params={**params, **self.recorded_params}, tags=dict(tags))
