"""What a tracked ``MetricLogger`` writes through in place of upstream's TensorBoard and W&B writers, and the
read-only view of MaxText's config that logger is built with (its own writers off; training keeps the real one).

Each ``write_metrics`` dict (train steps one step late, eval summaries at the train step they follow) becomes one
``run.log`` under upstream's names, ``scalars`` flattened to ``name/sub`` as upstream's W&B writer does; values are
handed over as they are (numpy or JAX scalars) and turned into floats on the hub's thread. ``running_eval``
snapshots stay on the console, as upstream keeps them out of TensorBoard: their steps would run backwards."""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from primus.backends.maxtext.step_progress import StepProgress
from primus.tracking import SinkName
from primus.tracking.measure.device_counters import DeviceCounters
from primus.tracking.measure.perf import GIB, StepPerf

TENSORBOARD_ONLY = (SinkName.TENSORBOARD,)
TRACKED_TYPES = ("train", "eval")
FLUSH_TIMEOUT_S = 60.0
UPSTREAM_WRITERS_OFF = {"enable_tensorboard": False, "enable_wandb": False}


class UpstreamWritersOff:
    def __init__(self, config: Any):
        object.__setattr__(self, "_config", config)

    def __getattr__(self, name: str) -> Any:
        """Upstream's value, kept here after its first read: the config is read-only, and upstream's logger reads
        a dozen of its keys at every step (a kept one is found without a Python call)."""
        value = UPSTREAM_WRITERS_OFF[name] if name in UPSTREAM_WRITERS_OFF else getattr(self._config, name)
        object.__setattr__(self, name, value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        raise ValueError("Configuration is read-only and cannot be modified after initialization.")  # as upstream's


def flat_scalars(scalar: Mapping[str, Any] | None, groups: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Upstream's ``scalar`` dict and its ``scalars`` groups (``(name, {sub: value})``) as one ``{name/sub:
    value}``, as upstream's W&B writer names them."""
    out = dict(scalar or {})
    for name, group in groups:
        out.update({f"{name}/{sub}": value for sub, value in group.items()})
    return out


class StepScalarsPerf:
    """The perf/memory/utilisation set (``mlflow_upload_performance_metrics``) for one train step, from
    structured values only: upstream's step time and its per-device token and FLOP counts for a step, mapped onto
    the perf set (``StepPerf``). Device memory is the JAX allocator's counters (a host-side read; absent on CPU)."""

    def __init__(
        self,
        *,
        per_device_tokens: float,
        per_device_tflops: float,
        devices: list[Any],
        dtype: str,
        local_device: Any = None,
        peak_tflops: float | None = None,
    ):
        self._tokens = float(per_device_tokens) * len(devices)
        self._flops = float(per_device_tflops) * 1e12 * len(devices)
        self._devices = len(devices)
        self._device = devices[0] if local_device is None else local_device  # this process's own
        self._perf = StepPerf(
            dtype=dtype,
            device_name=getattr(self._device, "device_kind", None),
            peak_tflops=peak_tflops,
            # JAX's local_hardware_id: the device's ordinal among those this process sees (CUDA/HIP visible list)
            visible_ordinal=getattr(self._device, "local_hardware_id", None),
            device_memory=self._device_memory,
        )
        self._perf.begin()  # the device is known: looked up and sampled now, once, not in the first step
        self.device = DeviceCounters(self._perf.device_now)  # its memory, read at the step (on the training thread)

    def measure(self, scalars: Mapping[str, Any], device: Mapping[str, float]) -> dict[str, float]:
        """The step's perf set from its scalars and its ``device`` memory (``device.now()``), with the host's latest
        sample: on the hub's thread."""
        seconds = float(scalars.get("perf/step_time_seconds", 0.0))
        out = self._perf.interval(
            tokens=self._tokens, seconds=seconds, steps=1, world_size=self._devices, flops=self._flops
        )
        out.update(device)
        out.update(self._perf.host_latest())
        return out

    def _device_memory(self) -> dict[str, float]:
        stats = self._device.memory_stats() or {}
        names = (
            ("bytes_in_use", "mem/allocated_gib"),
            ("bytes_reserved", "mem/reserved_gib"),
            ("peak_bytes_in_use", "mem/peak_allocated_gib"),
        )
        return {name: stats[key] / GIB for key, name in names if key in stats}


class TrackingMetricWriter:
    def __init__(
        self,
        run,
        *,
        log_period: int,
        perf_metrics: bool = False,
        peak_tflops: float | None = None,
        announce: Callable[[int], None] | None = None,
        progress: StepProgress | None = None,
    ):
        self.run = run
        self.progress = progress  # the progress figures of each train step
        self.tensorboard = run.config.tensorboard is not None
        self.perf_metrics = perf_metrics
        self.peak_tflops = peak_tflops
        self.perf: StepScalarsPerf | None = None  # set once upstream has computed its per-step token/FLOP counts
        self._log_period = log_period  # upstream flushes TensorBoard every log_period train steps
        self._announce = announce  # upstream's "To see full metrics" line, when TensorBoard is on
        self._flusher: threading.Thread | None = None
        # a flush asked for: a put in C on the hub's thread (threading.Event.set takes a Condition in Python)
        self._flush_asked: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._finished = False

    def write(self, metrics: Mapping[str, Any], step: int, metric_type: str = "train") -> None:
        """Upstream's ``MetricLogger.write_metrics`` arguments, as upstream was called (the patch checks at install
        that the two take the same ones)."""
        if not metrics or metric_type not in TRACKED_TYPES:
            return
        step = int(step)
        scalar, groups = metrics.get("scalar"), metrics.get("scalars")
        if metric_type == "train":
            # upstream's dicts as they are now, copied in C (a Python call here costs more than the copies), the
            # clock and the device's memory read at the step; the rest on the hub's thread
            held = (dict(scalar or ()), [(name, dict(group)) for name, group in groups.items()] if groups else ())
            device = self.perf.device.now() if self.perf is not None else None
            at_step = functools.partial(self._train_record, step, held, time.perf_counter(), device)
            self.run.log_later(at_step, step)
        else:
            self.run.log(step, flat_scalars(scalar, groups.items() if groups else ()))

    def _train_record(
        self, step: int, held: tuple[dict[str, Any], Any], now: float, device: Mapping[str, float] | None
    ):
        """On the hub's thread: the step's record, flattened as upstream's W&B writer names it, with its figures;
        and, every log_period steps, the TensorBoard flush and upstream's line about it."""
        values = flat_scalars(*held)
        if self.progress is not None:
            values |= self.progress.figures(step, now)
        if self.perf is not None and device is not None:
            values |= self.perf.measure(values, device)
        if self.tensorboard and step % self._log_period == 0:
            self._flush_in_background()  # done once the hub has journaled this record: the flush waits for it
            if self._announce is not None:
                self._announce(step)
        return ((step, values, None),)

    def write_texts(self, texts: Mapping[str, Any], *, tensorboard_only: bool) -> None:
        only = TENSORBOARD_ONLY if tensorboard_only else None
        for tag, text in texts.items():
            self.run.log_text(tag, str(text), 0, only=only)

    def _flush_in_background(self) -> None:
        """Upstream flushes its TensorBoard writer every log_period steps; here the TensorBoard sink is, on one
        helper thread started at the first flush and woken for each later one (a flush waits for the hub's thread,
        which asks for it; a thread started per flush cost more than the rest of the step's tracking), so a slow
        disk never holds up the training loop or the hub. A flush asked for while one runs is done once after it.
        Only that sink: a flush cuts a sink's pacing short, and MLflow would get a request every log_period
        steps."""
        if self._flusher is None:
            self._flusher = threading.Thread(target=self._flush_when_asked, daemon=True, name="primus-maxtext-flush")
            self._flusher.start()
        self._flush_asked.put(None)

    def _flush_when_asked(self) -> None:
        while True:
            self._flush_asked.get()
            while not self._flush_asked.empty():  # asked again meanwhile: one flush serves them all
                self._flush_asked.get_nowait()
            if self._finished:
                return
            self.run.flush(FLUSH_TIMEOUT_S, TENSORBOARD_ONLY)

    def finish(self, status: str) -> None:
        self._finished = True
        self._flush_asked.put(None)  # the helper thread, if any, ends
        self.run.finish(status)
