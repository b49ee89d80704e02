"""What the benchmarks' CPU accounting counts, wrapped from outside (wrapt, by module and name) in every Python of
a measured run that imports Primus; Primus's own code holds no accounting.

Ours (the CPU they take from the thread that calls them): the run's log calls; Megatron's writer proxy, the
object upstream's One-Logger callbacks call (every method its class defines; its store and its context are C
callables, no code of ours to count) and TorchTitan's logger, which upstream calls in its loop; every ``.tracking.`` patch's
wrapper, as ``<id>:<name>``, its call of upstream's function theirs. Theirs (upstream's code that ours calls): Megatron's timers gather (its
own ``Timers.write`` gathers the same way), MaxText's console line. The delivery process notes its start-up (CPU
and peak RSS as the last sink of its first run has opened or given up) and dumps as it leaves with ``os._exit``.
"""

from __future__ import annotations

import functools
import os
import sys
import threading

import cpu_accounting
import wrapt

OURS = {  # module -> its functions counted as ours, each under its qualified name
    "primus.tracking.run": ("Run.log", "Run.log_text"),
    "primus.backends.megatron_core.tracking_summary_writer": tuple(
        f"TrackingSummaryWriter.{name}" for name in ("add_scalar", "add_text", "flush", "close", "end_step", "before_training")
    ),
    "primus.backends.torchtitan.tracking_logger": ("TrackingLogger.log", "TrackingLogger.close"),
}
OURS_CLASSES = {  # module -> classes whose every method is counted as ours
    "primus.backends.megatron.upstream_one_logger": ("UpstreamOneLogger",),
}
THEIRS = {  # module -> upstream's functions our code calls
    "megatron.core.timers": ("Timers._get_global_min_max_time",),
    "maxtext.utils.max_logging": ("log",),
}
TRACKING_PATCH = ".tracking."  # in a patch's id: its wrappers are tracking's, counted as ours


def install() -> None:
    """Count from the moment Primus is imported (a Python that never imports it counts and writes nothing)."""
    wrapt.register_post_import_hook(_start, "primus")


def _start(_primus) -> None:
    cpu_accounting.start(os.environ[cpu_accounting.ENV])
    for module, names in OURS.items():
        wrapt.register_post_import_hook(functools.partial(_wrap_ours, names), module)
    for module, classes in OURS_CLASSES.items():
        wrapt.register_post_import_hook(functools.partial(_wrap_classes, classes), module)
    for module, names in THEIRS.items():
        wrapt.register_post_import_hook(functools.partial(_wrap_theirs, names), module)
    wrapt.register_post_import_hook(_count_tracking_patches, "primus.patches.handle")
    wrapt.register_post_import_hook(_watch_delivery_startup, "primus.tracking.delivery.worker")
    wrapt.wrap_function_wrapper(os, "_exit", _dump_before_exit)


def _wrap_ours(names, module) -> None:
    for name in names:
        wrapt.wrap_object(module, name, cpu_accounting.ours, (name,))


def _wrap_classes(classes, module) -> None:
    for cls in classes:
        methods = [n for n, v in vars(getattr(module, cls)).items() if callable(v) and not n.startswith("__")]
        _wrap_ours([f"{cls}.{n}" for n in methods], module)


def _wrap_theirs(names, module) -> None:
    for name in names:
        wrapt.wrap_function_wrapper(module, name, cpu_accounting.theirs)


def _count_tracking_patches(handle_module) -> None:
    wrapt.wrap_function_wrapper(handle_module, "PatchHandle.wrap", _count_if_tracking)


def _count_if_tracking(wrap, handle, args, kwargs):
    """``PatchHandle.wrap(owner, name, wrapper)``: a tracking patch's guarded wrapper counted as ours, as
    ``<id>:<name>``. The guard is made inside ``wrap`` and its cost is ours too, so for this one call the handle's
    ``_guard`` is one whose result counts."""
    if TRACKING_PATCH not in handle.patch.id:
        return wrap(*args, **kwargs)
    entry = f"{handle.patch.id}:{_wrapped_name(*args, **kwargs)}"
    guard = handle._guard
    handle._guard = lambda patch_wrapper: cpu_accounting.wrapper(guard(patch_wrapper), entry)
    try:
        return wrap(*args, **kwargs)
    finally:
        del handle._guard


def _wrapped_name(owner, name, wrapper) -> str:
    return name


@functools.cache
def _in_delivery_process() -> bool:
    """Started as ``python -m`` the delivery process's module, or the node's shared one (whose modules, imported
    by every delivery process, name them)."""
    from primus.tracking.delivery.node import SERVER_MODULE
    from primus.tracking.delivery.process import CHILD_MODULE

    spec = getattr(sys.modules["__main__"], "__spec__", None)
    return spec is not None and spec.name in (CHILD_MODULE, SERVER_MODULE)


class _Startup:
    """The delivery process's start-up: its CPU and peak RSS as the last sink of its first run has opened (or
    given up: ``SinkWorker._open`` returned). That run's workers are those made on the thread that made the first
    (one run's delivery per thread), all made before any starts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.opening: set = set()  # the first run's workers whose sink has not opened yet
        self.noted = False

    def worker_made(self, init, worker, args, kwargs) -> None:
        init(*args, **kwargs)
        if self.thread is None and not _in_delivery_process():
            return
        with self.lock:
            if self.thread is None:
                self.thread = threading.current_thread()
            if threading.current_thread() is self.thread:
                self.opening.add(worker)

    def sink_opened(self, open_sink, worker, args, kwargs):
        try:
            return open_sink(*args, **kwargs)
        finally:
            with self.lock:
                self.opening.discard(worker)
                last = self.thread is not None and not self.opening and not self.noted
                self.noted |= last
            if last:
                cpu_accounting.note(
                    startup_cpu_s=cpu_accounting.process_cpu_s(), startup_rss_mib=cpu_accounting.peak_rss_mib()
                )


def _watch_delivery_startup(worker_module) -> None:
    startup = _Startup()
    wrapt.wrap_function_wrapper(worker_module, "SinkWorker.__init__", startup.worker_made)
    wrapt.wrap_function_wrapper(worker_module, "SinkWorker._open", startup.sink_opened)


def _dump_before_exit(exit_now, instance, args, kwargs):
    """The delivery process leaves with ``os._exit`` (a tracker client's thread must not hold it), so no atexit."""
    if _in_delivery_process():
        cpu_accounting.dump()
    return exit_now(*args, **kwargs)
