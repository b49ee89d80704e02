"""TensorBoard sink: torch's ``SummaryWriter`` events (``tb_events.EventWriter``, without torch) with
``max_queue=queue_size``, created and fed on this worker; tensorboardX's writer where the ``tensorboard``
package is not installed, as in MaxText's JAX environment.
Names reach TensorBoard unchanged (Megatron's ``lm loss`` stays ``lm loss``), so existing dashboards work.
A checkpoint save is a text entry under ``checkpoints`` at its iteration, a resume one under ``primus.resumed_from``;
the run's tags (where it ran, its layout, the user's ``mlflow_tags``) one table under ``primus.tags``, at the run's
first start."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from primus.tracking.journal import records as journal
from primus.tracking.journal.records import RESUMED_FROM_TAG, Record, SinkName
from primus.tracking.settings.config import resolved
from primus.tracking.sinks.sink import Durability, Sink
from primus.tracking.trackers.context import SinkContext

CHECKPOINTS_TAG = "checkpoints"
TAGS_TAG = "primus.tags"


class TensorBoardSink(Sink):
    name = SinkName.TENSORBOARD
    # write() flushes the writer's queue to the file: what the events file holds is what the saved cursor says, so
    # a delivery process killed mid-run (the OOM killer) and started again resends nothing TensorBoard has
    durability = Durability.ON_WRITE

    def __init__(self, context: SinkContext):
        self.context = context
        self.cfg = resolved(context.config.tensorboard, "tensorboard")
        self._writer: Any = None
        self._add_step = self._add_each

    def open(self) -> str:
        try:
            from primus.tracking.trackers.tb_events import EventWriter

            self._writer = EventWriter(self.cfg.log_dir, self.cfg.queue_size)
            self._add_step = self._writer.add_step_scalars
        except ImportError:  # MaxText's JAX environment has tensorboardX, not tensorboard
            from tensorboardX import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(self.cfg.log_dir), max_queue=self.cfg.queue_size)
        if self.context.tags and not self.context.saved().get("tags_written"):
            self._writer.add_text(TAGS_TAG, tags_table(self.context.tags), 0, walltime=time.time())
            self._writer.flush()
            self.context.save(tags_written=True)
        return str(self.cfg.log_dir)

    def write(self, records: Sequence[Record]) -> None:
        for r in records:
            walltime = r.ts_ms / 1000.0
            match journal.event_of(r):
                case journal.Metrics(values):
                    self._add_step(values, r.step, walltime)
                case journal.Text(tag, text):
                    self._writer.add_text(tag, text, r.step, walltime=walltime)
                case journal.CheckpointSaved() as save:
                    self._writer.add_text(CHECKPOINTS_TAG, save.describe(), save.iteration, walltime=walltime)
                case journal.CheckpointLoaded() as load:
                    self._writer.add_text(RESUMED_FROM_TAG, load.path, load.iteration or 0, walltime=walltime)
                case journal.Alert() as alert:
                    self._writer.add_text(alert.tag, alert.tag_value, alert.iteration, walltime=walltime)
        self._writer.flush()

    def _add_each(self, values, step: int, walltime: float) -> None:
        for name, value in values.items():
            self._writer.add_scalar(name, value, step, walltime=walltime)

    def close(self, status: str, complete: bool) -> None:
        self._writer.close()


def tags_table(tags: Mapping[str, str]) -> str:
    """Markdown, as TensorBoard's text plugin renders it."""
    rows = [f"| {key} | {str(value).replace('|', '&#124;')} |" for key, value in sorted(tags.items())]
    return "\n".join(["| tag | value |", "|---|---|", *rows])
