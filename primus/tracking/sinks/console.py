"""Console sink: one line per logged step, rendered from the same dict the trackers get, prefixed
with the rank when the job has more than one process."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from primus.redaction import redact_text
from primus.tracking.config import ConsoleConfig
from primus.tracking.enums import SinkName
from primus.tracking.journal import METRICS, Record
from primus.tracking.sink import Sink


class ConsoleSink(Sink):
    name = SinkName.CONSOLE

    def __init__(self, cfg: ConsoleConfig):
        self.cfg = cfg
        multi = int(os.environ.get("WORLD_SIZE", "1") or 1) > 1
        self.prefix = f"[primus rank {cfg.rank}]" if multi else "[primus]"

    def open(self) -> str:
        return "console"

    def write(self, records: Sequence[Record]) -> None:
        lines = [self.render(r) for r in records if r.kind == METRICS and r.step % self.cfg.interval == 0]
        if lines:
            stream = self.cfg.stream or sys.stdout
            stream.write("".join(lines))
            stream.flush()

    def render(self, record: Record) -> str:
        fields = " | ".join(f"{name} {value:.6g}" for name, value in record.data.items())
        return redact_text(f"{self.prefix} step {record.step} | {fields}") + "\n"
