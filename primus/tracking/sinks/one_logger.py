"""One-Logger sink (NVIDIA's ``one_logger`` package, as upstream Megatron uses it): each step's
metrics go to ``OneLogger.log_metrics``. The package is not on PyPI; when it is not importable the
sink is off with one message saying so."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from primus.tracking.config import OneLoggerConfig
from primus.tracking.enums import SinkName
from primus.tracking.journal import METRICS, Record
from primus.tracking.sink import Sink, SinkUnavailable


class OneLoggerSink(Sink):
    name = SinkName.ONE_LOGGER

    def __init__(self, cfg: OneLoggerConfig, run_name: str):
        self.cfg = cfg
        self.run_name = cfg.run_name or run_name
        self._logger: Any = None

    def open(self) -> str:
        try:
            from one_logger import OneLogger
        except ImportError as e:
            raise SinkUnavailable(
                "enable_one_logger is on but the one_logger package is not importable "
                f"({e}); install NVIDIA's one_logger or set enable_one_logger: false"
            ) from e
        self._logger = OneLogger(
            config={"project": self.cfg.project, "name": self.run_name, "async": self.cfg.async_mode}
        )
        return f"{self.cfg.project}/{self.run_name}"

    def write(self, records: Sequence[Record]) -> None:
        for r in records:
            if r.kind == METRICS:
                self._logger.log_metrics({**r.data, "step": r.step})
