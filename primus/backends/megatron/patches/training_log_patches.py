"""Patches that feed the hub from upstream's logging: after each training_log / evaluation
(megatron.training.training), and the timer scalars training_log writes (megatron.core.timers); before
the training loop (after setup_model_and_optimizer), the one-off set-up that would otherwise land in the first
logged step."""

from __future__ import annotations

import functools
import inspect

from primus.patches import REGISTRY
from primus.patches.arguments import Arguments
from primus.upstreams.megatron import MEGATRON


@REGISTRY.patch(
    "megatron.tracking.training_log",
    target="megatron.training.training",
    upstream=MEGATRON,
    backend="megatron",
    description="training.training_log / evaluate_and_print_results: perf figures and one log call "
    "per step, from the writer rank; after setup_model_and_optimizer: the utilisation "
    "device looked up before the first step",
)
def _install_training_log(module, handle):
    """Binds what a logged step needs from upstream (its FLOPs formula, the micro-batch count, where training_log
    takes the iteration) and hands upstream's calls straight to ``TRACKING``, whose methods are the wrappers."""
    from primus.backends.megatron.session import TRACKING
    from primus.backends.megatron_core.tracking_summary_writer import StepFunctions

    training_log_arguments = Arguments(module.training_log, "iteration")
    Arguments(module.num_floating_point_operations, "args", "batch_size")  # called so by the writer
    TRACKING.step_functions = StepFunctions(module.num_floating_point_operations, module.get_num_microbatches)
    TRACKING.iteration_of = functools.partial(training_log_arguments, "iteration")
    TRACKING.iteration_position = _position(module.training_log, "iteration")

    handle.wrap(module, "setup_model_and_optimizer", TRACKING.setup_model_and_optimizer)
    handle.wrap(module, "training_log", TRACKING.training_log)
    handle.wrap(module, "evaluate_and_print_results", TRACKING.evaluate_and_print_results)


def _position(function, name: str) -> int:
    """Where ``function`` takes ``name`` by position (a keyword-only one: past any call's positional arguments)."""
    parameters = list(inspect.signature(function).parameters.values())
    at = [p.name for p in parameters].index(name)
    return (
        at
        if parameters[at].kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        else len(parameters)
    )


@REGISTRY.patch(
    "megatron.tracking.timers",
    target="megatron.core.timers",
    upstream=MEGATRON,
    backend="megatron",
    description="Timers.write: --log-timers-to-tensorboard scalars reach the hub writer (upstream writes "
    "only to a SummaryWriter instance or the wandb module, and drops anything else)",
)
def _install_timers_write(module, handle):
    from primus.backends.megatron_core.tracking_summary_writer import TrackingSummaryWriter

    arguments = Arguments(
        module.Timers.write, "names", "writer", "iteration", "normalizer", "reset", "barrier", method=True
    )

    def write(wrapped, instance, args, kwargs):
        writer, normalizer = arguments("writer", args, kwargs), arguments("normalizer", args, kwargs)
        if not isinstance(writer, TrackingSummaryWriter) or normalizer <= 0.0:
            return wrapped(*args, **kwargs)
        # upstream's own gather across ranks (every rank takes part), then each timer's maximum to the hub
        times = instance._get_global_min_max_time(
            arguments("names", args, kwargs),
            arguments("reset", args, kwargs),
            arguments("barrier", args, kwargs),
            normalizer,
        )
        iteration = arguments("iteration", args, kwargs)
        for name, (_, max_time) in times.items():
            writer.add_scalar(name + "-time", max_time, iteration)
        return None

    handle.wrap(module, "Timers.write", write)


REJECTED = ("RERUN_DISABLED", "INITIAL_RUN")  # RerunValidationStatus names: upstream has just rejected a result


@REGISTRY.patch(
    "megatron.tracking.rejected_result",
    target="megatron.core.rerun_state_machine",
    upstream=MEGATRON,
    backend="megatron",
    description="RerunStateMachine._log_validation_error_to_file: a result upstream rejects (a NaN or Inf loss, "
    "a spiky loss) becomes an alert at once, before upstream stops the job (whose own end may fail for "
    "another reason)",
)
def _install_rejected_result(module, handle):
    from primus.backends.megatron.session import TRACKING

    arguments = Arguments(module.RerunStateMachine._log_validation_error_to_file, "status", "message", method=True)

    def log_validation_error(wrapped, instance, args, kwargs):
        if getattr(arguments("status", args, kwargs), "name", None) in REJECTED:
            # upstream's own count: its message says "iteration {current_iteration + 1}"
            TRACKING.rejected(instance.current_iteration + 1, str(arguments("message", args, kwargs)))
        return wrapped(*args, **kwargs)

    handle.wrap(module, "RerunStateMachine._log_validation_error_to_file", log_validation_error)
