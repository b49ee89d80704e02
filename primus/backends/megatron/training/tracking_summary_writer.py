"""The writer upstream Megatron gets in place of its TensorBoard SummaryWriter.

Every upstream ``writer.add_scalar`` (training_log, timers.write, evaluate, MoE/MTP helpers) lands
here and goes to the tracking run, so every enabled sink — TensorBoard, W&B, MLflow — receives every
scalar whether or not TensorBoard itself is on. Scalars of one step are merged into one ``run.log``
call (one W&B log and one MLflow batch per step, not one per metric), and so are its "vs samples" scalars.

"<name> vs samples" tags use consumed samples as their step; that x-axis exists only in TensorBoard
(as upstream, which never sends them to W&B: W&B steps must not go backwards)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from primus.log import get_logger
from primus.tracking import SinkName

log = get_logger("primus.megatron")

TENSORBOARD_ONLY = (SinkName.TENSORBOARD,)
_VS_SAMPLES = " vs samples"
_DROPPED, _VS_SAMPLES_TAG, _STEP_TAG = range(3)  # what a tag is, judged once per tag name


def as_metric(value: Any) -> Any:
    """Upstream passes Python numbers, 0-d or 1-element tensors. A tensor goes on as it is: the hub turns it into a
    float on its own thread, so the training thread never waits here for the device to finish the step."""
    if type(value) is float or hasattr(value, "item"):  # the common case first
        return value
    return float(value)


def never_raises(method: Callable) -> Callable:
    """Upstream calls the writer directly inside its training loop: a failure here is logged once
    and the call dropped, never raised into training."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as e:
            if not self._failed:
                self._failed = True
                log.warning(
                    "tracking writer failed in %s (%r); metrics of this call are dropped, training goes on",
                    method.__name__,
                    e,
                )
            return None

    return guarded


class TrackingSummaryWriter:
    def __init__(self, run, *, log_learning_rate: bool, log_batch_size: bool):
        self._run = run
        self._dropped_prefixes = tuple(
            prefix
            for prefix, keep in (("learning-rate", log_learning_rate), ("batch-size", log_batch_size))
            if not keep
        )
        self._step: int | None = None
        self._pending: dict[str, Any] = {}  # floats, or upstream's tensors (read on the hub's thread)
        self._samples: int | None = None  # the "vs samples" tags of one step, one log call as the others
        self._pending_vs_samples: dict[str, Any] = {}
        self._kinds: dict[str, int] = {}
        self._failed = False

    # -- the SummaryWriter surface upstream uses ------------------------------------------
    @never_raises
    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, *_, **__) -> None:
        kind = self._kinds.get(tag)
        if kind is None:
            kind = self._kinds[tag] = self._kind(tag)
        if kind == _DROPPED:
            return
        step = int(global_step or 0)
        value = as_metric(scalar_value)
        if kind == _VS_SAMPLES_TAG:
            if step != self._samples:
                self._emit_vs_samples()
                self._samples = step
            self._pending_vs_samples[tag] = value
            return
        if step != self._step:
            self.emit()
            self._step = step
        self._pending[tag] = value

    @never_raises
    def add_text(self, tag: str, text_string: str, global_step: int | None = None, *_, **__) -> None:
        # upstream writes one text per argument (hundreds); the params go to every tracker once instead
        self._run.log_text(tag, text_string, int(global_step or 0), only=TENSORBOARD_ONLY)

    @never_raises
    def flush(self) -> None:
        self.emit()

    @never_raises
    def close(self) -> None:
        self.emit()

    # -- ours ------------------------------------------------------------------------------
    @never_raises
    def emit(self, extra: Mapping[str, float] | None = None, step: int | None = None) -> None:
        """Send the scalars gathered for the current step (plus ``extra``) as one log call."""
        if extra:
            if step is not None and step != self._step:
                self.emit()
                self._step = step
            self._pending.update(extra)
        if self._pending and self._step is not None:
            self._run.log(self._step, self._pending)
        self._pending = {}
        self._emit_vs_samples()

    def _emit_vs_samples(self) -> None:
        if self._pending_vs_samples:
            self._run.log(self._samples, self._pending_vs_samples, only=TENSORBOARD_ONLY)
            self._pending_vs_samples = {}

    def _kind(self, tag: str) -> int:
        if tag.startswith(self._dropped_prefixes):
            return _DROPPED  # log_learning_rate_to_tensorboard / log_batch_size_to_tensorboard false
        return _VS_SAMPLES_TAG if tag.endswith(_VS_SAMPLES) else _STEP_TAG
