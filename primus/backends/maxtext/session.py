"""One process's tracking for MaxText, the object its patches hold (``TRACKING``): the plan made when ``pyconfig.
initialize`` builds the config (kept with it for the ``MetricLogger`` built later in ``train_loop``), the run started
for it, and the checkpoint journal the checkpointing patches call (attached to that run)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from primus.backends.maxtext.parallel_tags import layout_tags_of
from primus.backends.maxtext.primus_options import PrimusOptions
from primus.backends.maxtext.step_progress import StepProgress
from primus.backends.maxtext.tracking_metric_writer import TrackingMetricWriter
from primus.backends.maxtext.tracking_plan import plan_tracking
from primus.config.run_directory import given_run_dir
from primus.log import get_logger
from primus.tracking import RunStatus
from primus.tracking.checkpoints.checkpoint_journal import CheckpointJournal
from primus.tracking.plan import TrackingPlan

log = get_logger("primus.maxtext")


class MaxTextTracking:
    def __init__(self) -> None:
        self.planned: tuple[Any, TrackingPlan] | None = None  # (the config it was planned for, the plan)
        self.checkpoints = CheckpointJournal()

    def prepare(self, config: Any, options: PrimusOptions) -> TrackingPlan:
        plan = plan_tracking(config, options, given_run_dir())
        plan.notices.emit(log)
        self.planned = (config, plan)
        return plan

    def plan_for(self, config: Any) -> TrackingPlan:
        """A config built another way gets MaxText's own keys and no Primus options."""
        if self.planned is not None and self.planned[0] is config:
            return self.planned[1]
        return plan_tracking(config, PrimusOptions(), given_run_dir())

    def start(self, plan: TrackingPlan, config: Any, announce: Callable[[int], None] | None) -> TrackingMetricWriter:
        settings = config.get_keys()
        jax = sys.modules.get("jax")  # MaxText's own, loaded by then: its devices are the world the layout divides
        tags = {
            "maxtext.model_name": str(settings.get("model_name", "")),
            **(layout_tags_of(settings, jax.device_count()) if jax is not None else {}),
        }
        run = plan.start(settings, tags, self.checkpoints)
        return TrackingMetricWriter(
            run,
            log_period=config.log_period,
            perf_metrics=plan.perf_metrics,
            peak_tflops=plan.peak_tflops,
            announce=announce,
            progress=StepProgress(config),
        )


def status_for(error: BaseException | None) -> str:
    """The final status of a run whose training ends with ``error`` in flight (None: it ended normally)."""
    if error is None or (isinstance(error, SystemExit) and error.code in (0, None)):
        return RunStatus.FINISHED
    if isinstance(error, KeyboardInterrupt):
        return RunStatus.KILLED
    return RunStatus.FAILED


TRACKING = MaxTextTracking()  # module-level: upstream's hooks, wrapped at import, have no other way to it
