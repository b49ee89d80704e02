"""``<run_dir>/meta.json``: what the trackers are told about a run (redacted params and tags, the
tracker settings), saved once at start so ``primus tracking sync`` can create or finish the
tracker runs later from the run directory alone."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from primus.redaction import redact_text
from primus.tracking.journal.files import META_FILE
from primus.tracking.journal.run_state import read_json, write_json_atomic
from primus.tracking.settings.config import (
    CometConfig,
    MlflowConfig,
    OneLoggerConfig,
    OtlpConfig,
    TensorBoardConfig,
    TrackingConfig,
    WandbConfig,
)
from primus.tracking.tags.params import flat_params, redacted_tags
from primus.tracking.tags.system import system_tags

log = logging.getLogger("primus.tracking")
TRACKER_SECTIONS = ("mlflow", "wandb", "tensorboard", "comet", "one_logger", "otlp")  # kept as resolved, redacted


@dataclass
class RunMeta:
    params: dict[str, Any] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    mlflow: dict[str, Any] | None = None
    wandb: dict[str, Any] | None = None
    tensorboard: dict[str, Any] | None = None
    comet: dict[str, Any] | None = None
    one_logger: dict[str, Any] | None = None
    otlp: dict[str, Any] | None = None  # the endpoints (redacted); never the headers
    run_name: str | None = None
    experiment_name: str | None = None
    plugin_sinks: list[str] = field(default_factory=list)  # by entry-point name (primus.tracking.sinks.plugins)

    @classmethod
    def build(cls, cfg: TrackingConfig) -> RunMeta:
        """Redacts params and tags and adds the system tags (a git call: run it off the training thread)."""
        return cls(
            params=flat_params(cfg.params),
            tags=_with_system_tags(redacted_tags(cfg.tags)),
            **{name: _settings(section) if (section := getattr(cfg, name)) else None for name in TRACKER_SECTIONS},
            run_name=cfg.run_name,
            experiment_name=cfg.experiment_name,
            plugin_sinks=list(cfg.plugin_sinks or ()),
        )

    def save(self, run_dir: Path) -> None:
        write_json_atomic(run_dir / META_FILE, dataclasses.asdict(self))

    @classmethod
    def load(cls, run_dir: Path) -> RunMeta:
        return cls(**read_json(run_dir / META_FILE))

    def mlflow_config(self, tracking_uri: str | None = None) -> MlflowConfig:
        """The saved MLflow settings; ``tracking_uri`` replaces a saved URI (needed when it held a password)."""
        saved = dict(self.mlflow or {})
        if tracking_uri:
            saved["tracking_uri"] = tracking_uri
        return MlflowConfig(**saved)

    def wandb_config(self) -> WandbConfig:
        saved = dict(self.wandb or {})
        if saved.get("save_dir"):
            saved["save_dir"] = Path(saved["save_dir"])
        return WandbConfig(**saved)

    def comet_config(self) -> CometConfig:
        """The saved Comet settings, as resolved at the run's start (its mode and archive folder included)."""
        saved = dict(self.comet or {})
        if saved.get("offline_dir"):
            saved["offline_dir"] = Path(saved["offline_dir"])
        return CometConfig(**{**saved, "tags": tuple(saved.get("tags") or ())})

    def one_logger_config(self) -> OneLoggerConfig:
        return OneLoggerConfig(**(self.one_logger or {}))

    def otlp_config(self) -> OtlpConfig:
        """The saved OTLP settings (the collector's endpoints, as resolved at the run's start)."""
        return OtlpConfig(**(self.otlp or {}))


def _with_system_tags(tags: dict[str, str]) -> dict[str, str]:
    """The run's tags and the system tags, which win: a user's tag of the same key is said and dropped."""
    system = system_tags()
    for key in sorted(set(tags) & set(system)):
        if tags[key] != system[key]:
            log.warning(
                "primus tracking: tag %s=%r is set by Primus (%r): yours is not used", key, tags[key], system[key]
            )
    return {**tags, **system}


def _settings(
    cfg: MlflowConfig | WandbConfig | TensorBoardConfig | CometConfig | OneLoggerConfig | OtlpConfig,
) -> dict[str, Any]:
    return {k: redact_text(str(v)) if isinstance(v, (str, Path)) else v for k, v in dataclasses.asdict(cfg).items()}
