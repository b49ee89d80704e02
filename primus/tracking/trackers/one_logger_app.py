"""One attempt of a run as one nv-one-logger application (NVIDIA's public One-Logger), fed after the fact.

nv-one-logger is made for live callbacks: the times it takes itself (span starts, its summaries) read the clock,
and it refuses a given time more than 10 hours old. So before each callback the library's clock (the ``time``
that ``nv_one_logger.core.time`` sees, and nothing else) is set to the journal record's time: every record it
writes carries the time the journal holds, whenever it is replayed. Its two providers are process-wide
singletons configured once; an attempt after another in one process (a sync of a relaunched run) gets fresh
ones. Measured in docs/research/one-logger-2.3.1.md (2.3.1; tests/tracking/trackers/test_one_logger.py guards
the private names used here)."""

from __future__ import annotations

import logging
import os
import time as real_time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from primus.tracking.settings.config import OneLoggerConfig

log = logging.getLogger("primus.tracking")
OTLP_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
E2E_EVENT = "primus_e2e_metrics"  # upstream's end-to-end figures (Megatron's one_logger_utils), on the application


class ReplayClock:
    """The ``time`` module as ``nv_one_logger.core.time`` sees it: ``time()`` and ``perf_counter()`` are the
    replayed record's time, so durations are differences of journal times."""

    def __init__(self, t: float):
        self.t = t

    def time(self) -> float:
        return self.t

    def perf_counter(self) -> float:
        return self.t

    def __getattr__(self, name: str) -> Any:
        return getattr(real_time, name)


class OneLoggerApp:
    """The application of one attempt, written to ``path`` (rewritten from the attempt's first record)."""

    def __init__(self, cfg: OneLoggerConfig, path: Path, start_ms: int, exporters: tuple[Any, ...] = ()):
        import nv_one_logger.core.time as library_time
        from nv_one_logger.training_telemetry.api import callbacks

        self._cb = callbacks
        self.cfg = cfg
        self._clock = ReplayClock(start_ms / 1000.0)
        setattr(library_time, "time", self._clock)  # noqa: B010 - the library module's own name for its clock
        path.parent.mkdir(parents=True, exist_ok=True)
        _configure(cfg, path, exporters)
        self.in_loop = self.validating = False
        self.saving: int | None = None  # the iteration of the save in progress
        self.iteration = 0  # iterations done (Megatron's "iteration N" is N done)
        self.last_ms = start_ms
        self.ended = False
        self._call(start_ms, callbacks.on_app_start, start_time_msec=start_ms)

    def _call(self, t_ms: int, fn: Any, *args: Any, **kwargs: Any) -> None:
        """One callback at the journal's time ``t_ms``; a refusal (out-of-order data) costs that call only."""
        self._clock.t = t_ms / 1000.0
        self.last_ms = max(self.last_ms, t_ms)
        try:
            fn(*args, **kwargs)
        except Exception as e:
            log.debug("one_logger: %s refused at %d ms: %s", getattr(fn, "__name__", fn), t_ms, e)

    # -- what the journal says happened ---------------------------------------------------------------
    def loaded(self, t_ms: int, seconds: float | None, iteration: int | None) -> None:
        if iteration is not None and not self.in_loop:
            self.iteration = iteration
        start = t_ms - int((seconds or 0) * 1000)
        self._call(start, self._cb.on_load_checkpoint_start, start_time_msec=start)
        self._call(t_ms, self._cb.on_load_checkpoint_end, finish_time_msec=t_ms)

    def step(self, t_ms: int, step: int) -> None:
        """Training reached ``step`` (iterations done): the iterations since the last step, spread evenly over the
        time between the two log records (the library summarises them as it does live ones)."""
        if not self.in_loop:
            self._start_loop(self.last_ms)
        todo = step - self.iteration
        if todo <= 0:
            return
        begin = self.last_ms
        width = max(t_ms - begin, 0) / todo
        for i in range(todo):
            start, finish = begin + i * width, begin + (i + 1) * width
            self._call(int(start), self._cb.on_training_single_iteration_start, start_time_msec=start)
            self._call(int(finish), self._cb.on_training_single_iteration_end, finish_time_msec=finish)
        self.iteration = step
        self.last_ms = t_ms

    def _start_loop(self, t_ms: int) -> None:
        cfg = self.cfg
        target = cfg.train_iterations
        self._call(
            t_ms,
            self._cb.on_train_start,
            train_iterations_start=self.iteration,
            train_samples_start=self.iteration * cfg.global_batch_size,
            train_iterations_target_or_fn=target,
            train_samples_target_or_fn=target and target * cfg.global_batch_size,
            start_time_msec=t_ms,
        )
        self.in_loop = True

    def loop_bounds(self, start_ms: float | None, finish_ms: float | None) -> None:
        """The training loop's start or end as the trainer timed it (Megatron's end-to-end figures)."""
        if start_ms is not None and not self.in_loop:
            self._start_loop(int(start_ms))
        if finish_ms is not None and self.in_loop:
            self._end_loop(int(finish_ms))

    def _end_loop(self, t_ms: int) -> None:
        if self.saving is not None:
            self._call(t_ms, self._cb.on_save_checkpoint_end, finish_time_msec=t_ms)
            self.saving = None
        self.validation(t_ms, False)
        self._call(t_ms, self._cb.on_train_end, finish_time_msec=t_ms)
        self.in_loop = False

    def validation(self, t_ms: int, on: bool) -> None:
        if on and self.in_loop and not self.validating:
            self._call(t_ms, self._cb.on_validation_start, start_time_msec=t_ms)
            self.validating = True
        elif not on and self.validating:
            self._call(t_ms, self._cb.on_validation_end, finish_time_msec=t_ms)
            self.validating = False

    def save_started(self, t_ms: int, iteration: int) -> None:
        if self.saving is None:
            self._call(t_ms, self._cb.on_save_checkpoint_start, global_step=iteration, start_time_msec=t_ms)
            self.saving = iteration

    def saved(self, t_ms: int, iteration: int, seconds: float | None) -> None:
        if self.saving is None:  # its start mark was in another process, or not journaled
            self.save_started(t_ms - int((seconds or 0) * 1000), iteration)
        self._call(t_ms, self._cb.on_save_checkpoint_success, global_step=iteration, time_msec=t_ms)
        self._call(t_ms, self._cb.on_save_checkpoint_end, finish_time_msec=t_ms)
        self.saving = None

    def e2e_metrics(self, t_ms: int, figures: Mapping[str, Any]) -> None:
        """Upstream's end-to-end figures, as an event on the application span at their time."""
        from nv_one_logger.api.one_logger_provider import OneLoggerProvider
        from nv_one_logger.core.attributes import Attributes
        from nv_one_logger.core.event import Event
        from nv_one_logger.core.span import StandardSpanName
        from nv_one_logger.core.time import TracingTimestamp

        def record() -> None:
            recorder: Any = OneLoggerProvider.instance().recorder
            app = recorder._get_active_span(StandardSpanName.APPLICATION)
            attributes = Attributes({k: v for k, v in figures.items() if isinstance(v, (bool, int, float, str))})
            recorder.event(app, Event.create(E2E_EVENT, attributes, TracingTimestamp.for_timestamp(t_ms / 1000.0)))

        self._call(t_ms, record)

    def end(self, t_ms: int | None = None) -> None:
        """The attempt's end (its end record, else its last record's time): open spans closed, exporters closed."""
        if self.ended:
            return
        t_ms = self.last_ms if t_ms is None else max(t_ms, self.last_ms)
        if self.in_loop:
            self._end_loop(t_ms)
        self._call(t_ms, self._cb.on_app_end, finish_time_msec=t_ms)
        self.ended = True


def _configure(cfg: OneLoggerConfig, path: Path, exporters: tuple[Any, ...]) -> None:
    """Fresh providers with the file exporter, an OTLP one when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, and
    ``exporters``. An exporter whose set-up raises is left out, said once: the file is always written."""
    from nv_one_logger.exporter.file_exporter import FileExporter

    try:
        extra = (*_otlp_exporters(), *exporters)
        _provide(cfg, path, [FileExporter(file_path=path), *extra])
    except Exception as e:  # an OTLP exporter not installed, a collector refusing at its start
        log.warning("one_logger: an exporter could not start (%s): only the file %s is written", e, path)
        _provide(cfg, path, [FileExporter(file_path=path)])


def _otlp_exporters() -> tuple[Any, ...]:
    if not os.environ.get(OTLP_ENDPOINT_ENV):
        return ()
    from nv_one_logger.otel.exporter.otel_exporter import OTelExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return (OTelExporter(otel_span_exporter=OTLPSpanExporter()),)  # the endpoint from the OTEL_* variables


def _provide(cfg: OneLoggerConfig, path: Path, exporters: list[Any]) -> None:
    from nv_one_logger.api.one_logger_provider import OneLoggerProvider
    from nv_one_logger.core.internal.singleton import SingletonMeta
    from nv_one_logger.training_telemetry.api.training_telemetry_provider import TrainingTelemetryProvider

    for cls in (TrainingTelemetryProvider, OneLoggerProvider):
        SingletonMeta._instances.pop(cls, None)
    provider = TrainingTelemetryProvider.instance().with_base_config(library_config(cfg, path.parent))
    for exporter in exporters:
        provider.with_exporter(exporter)
    provider.configure_provider()


def app_tag(cfg: OneLoggerConfig) -> str:
    """Megatron's application tag (``one_logger_utils.track_app_tag``): comparable jobs share it."""
    return (
        f"{cfg.app_tag_run_name}_{cfg.app_tag_run_version}_{cfg.global_batch_size}_{cfg.world_size}_"
        f"{cfg.seq_length or 0}"
    )


def library_config(cfg: OneLoggerConfig, log_dir: Path) -> Any:
    """Our options as nv-one-logger's configuration: the project (which 2.3.1 exports nowhere, so it is in the
    custom metadata too), the run name as the session tag, the app tag as the perf tag."""
    from nv_one_logger.api.config import LoggerConfig, OneLoggerErrorHandlingStrategy
    from nv_one_logger.api.config import OneLoggerConfig as LibraryConfig
    from nv_one_logger.training_telemetry.api.checkpoint import CheckPointStrategy
    from nv_one_logger.training_telemetry.api.config import TrainingTelemetryConfig

    tag = app_tag(cfg)
    training = TrainingTelemetryConfig(
        perf_tag_or_fn=tag,
        global_batch_size_or_fn=cfg.global_batch_size,
        micro_batch_size_or_fn=cfg.micro_batch_size,
        seq_length_or_fn=cfg.seq_length,
        train_iterations_target_or_fn=cfg.train_iterations,
        train_samples_target_or_fn=cfg.train_iterations and cfg.train_iterations * cfg.global_batch_size,
        log_every_n_train_iterations=cfg.log_every_n_iterations,
        save_checkpoint_strategy=CheckPointStrategy.ASYNC if cfg.async_save else CheckPointStrategy.SYNC,
        custom_metadata={"app_tag_run_name": str(cfg.app_tag_run_name), "app_tag_run_version": cfg.app_tag_run_version},
    )
    return LibraryConfig(
        application_name=cfg.project,
        session_tag_or_fn=str(cfg.run_name),
        world_size_or_fn=cfg.world_size,
        custom_metadata={
            "one_logger_project": cfg.project,
            "one_logger_run_name": str(cfg.run_name),
            "one_logger_async": str(cfg.async_export),
            "app_tag_run_name": str(cfg.app_tag_run_name),
            "app_tag_run_version": cfg.app_tag_run_version,
            "app_tag": tag,
        },
        # a library error is raised to _call, which drops that one call (the default would switch One-Logger off)
        error_handling_strategy=OneLoggerErrorHandlingStrategy.PROPAGATE_EXCEPTIONS,
        logger_config=LoggerConfig(
            log_level="WARNING",
            log_file_path_for_info=str(log_dir / "onelogger.log"),
            log_file_path_for_err=str(log_dir / "onelogger.err"),
        ),
        telemetry_config=training,
    )
