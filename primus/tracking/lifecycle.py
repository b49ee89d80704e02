"""Exit handling for a run: the final status is FINISHED on a normal exit or ``sys.exit(0)``,
FAILED on an uncaught exception or a non-zero exit code, KILLED on SIGTERM/SIGINT; the sinks are
flushed (within the run's exit deadline) in every case.

Forked children (DataLoader workers) inherit the handlers but must never end the parent's run: every
hook checks that it runs in the process that installed it, and otherwise behaves as if absent. A child gets
the signal handlers back that were there before ours, and SIGTERM/SIGINT are blocked across ``os.fork``: CPython
forgets a signal that reaches the child before its after-fork code ran (torchrun stopping a job as it starts a
DataLoader worker), so it waits in the kernel and reaches the child once its handlers are the program's own.

Python does not tell an at-exit callback the exit code, so ``sys.exit`` is wrapped to remember it
(a bare ``raise SystemExit(n)`` is not seen and counts as FINISHED). The at-exit callback is
registered with ``threading``'s shutdown hooks, which run before ``atexit`` callbacks: the W&B
client tears its service down in an ``atexit`` callback, and our sinks must finish before that.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from primus.redaction import redact_text
from primus.tracking.journal.records import RunStatus

log = logging.getLogger("primus.tracking")

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_INSTALLED: list[ExitHandlers] = []  # installed in this process, oldest first
# the forking thread's own signal mask while SIGNALS are blocked: one per thread, as two threads may fork at once
_FORKING = threading.local()


class ExitHandlers:
    def __init__(self, finish: Callable[[str], None]):
        self._finish = finish
        self._active = False
        self._exit_code: Any = None
        self._killed = False
        self.why = ""  # why the run did not finish (redacted): the failed or killed alert's text
        self._original_exit: Callable[..., Any] = sys.exit
        self._previous_excepthook: Callable[..., Any] = sys.excepthook
        self._previous_signals: dict[int, Any] = {}
        self._pid = os.getpid()

    def _ours(self) -> bool:
        """Active, and in the process that installed us (not a forked child)."""
        return self._active and os.getpid() == self._pid

    def install(self) -> None:
        if self._active:
            return
        self._active = True
        self._pid = os.getpid()
        self._original_exit = sys.exit
        sys.exit = self._exit
        self._previous_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        register = getattr(threading, "_register_atexit", None)
        try:
            (register or atexit.register)(self._at_exit)
        except RuntimeError:  # interpreter already shutting down
            atexit.register(self._at_exit)
        if threading.current_thread() is not threading.main_thread():
            log.warning(
                "primus tracking: exit handlers installed from a non-main thread: SIGTERM/SIGINT will "
                "not mark the run KILLED"
            )
            return
        for sig in SIGNALS:
            previous = signal.getsignal(sig)
            if previous is signal.SIG_IGN:
                continue  # the process chose to ignore it; so do we
            self._previous_signals[sig] = previous
            signal.signal(sig, self._on_signal)
        _INSTALLED.append(self)

    def uninstall(self) -> None:
        if not self._active:
            return
        self._active = False
        if sys.exit == self._exit:
            sys.exit = self._original_exit
        if sys.excepthook == self._excepthook:
            sys.excepthook = self._previous_excepthook
        if threading.current_thread() is threading.main_thread():
            self._restore_signals()
        self._previous_signals.clear()
        if self in _INSTALLED:
            _INSTALLED.remove(self)

    def _restore_signals(self) -> None:
        for sig, previous in self._previous_signals.items():
            if signal.getsignal(sig) == self._on_signal:
                signal.signal(sig, previous if previous is not None else signal.SIG_DFL)

    # -- hooks ---------------------------------------------------------------------------
    def _exit(self, code: Any = None) -> Any:  # sys.exit's type: it returns only if the original does
        self._exit_code = code
        self.why = f"sys.exit({redact_text(repr(code))})"
        self._original_exit(code)

    def _excepthook(self, etype: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        self._previous_excepthook(etype, value, tb)  # the traceback first: finishing may take the deadline
        if self._ours():
            self.why = redact_text(traceback.format_exception_only(etype, value)[-1].strip())
            self._finish(RunStatus.KILLED if issubclass(etype, KeyboardInterrupt) else RunStatus.FAILED)

    def _at_exit(self) -> None:
        if not self._ours():
            return
        if self._killed:
            self._finish(RunStatus.KILLED)
        else:
            self._finish(RunStatus.FINISHED if self._exit_code in (None, 0) else RunStatus.FAILED)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous_signals.get(signum)
        self.why = f"stopped by {signal.Signals(signum).name}"
        if os.getpid() != self._pid:  # a forked child (a DataLoader worker being stopped): not our run
            self._pass_on(signum, frame, previous)
            return
        if callable(previous) and previous is not signal.default_int_handler:
            # the program has its own handler (Megatron's graceful exit): let it run, remember why we stop
            self._killed = True
            previous(signum, frame)
            return
        self.uninstall()
        self._finish_shielded(RunStatus.KILLED)
        self._pass_on(signum, frame, previous)

    def _finish_shielded(self, status: str) -> None:
        """Finish on a helper thread while this (main) thread waits. Python runs signal handlers on the main
        thread only, so another handler raising meanwhile cannot cut the finish short: a DataLoader's SIGCHLD
        handler raises when its workers die of the same SIGTERM (torchrun stops a whole job at once)."""
        done = threading.Event()  # not Thread.join: an interrupted join can report a running thread as ended

        def finish() -> None:
            try:
                self._finish(status)
            finally:
                done.set()

        threading.Thread(target=finish, name="primus-tracking-finish", daemon=True).start()
        interrupted = None
        while not done.is_set():
            try:
                done.wait()
            except Exception as e:  # the process dies of the signal next: finishing the run comes first
                interrupted = e
        if interrupted is not None:
            log.info(
                "primus tracking: %s raised while the run was finishing; ignored, the process is being stopped",
                type(interrupted).__name__,
            )

    @staticmethod
    def _pass_on(signum: int, frame: FrameType | None, previous: Any) -> None:
        """Do what the signal did before us."""
        if callable(previous):
            previous(signum, frame)  # default_int_handler: KeyboardInterrupt, as without us
            return
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # die of the signal, as without us


# -- os.fork ------------------------------------------------------------------------------
def _block_signals_before_fork() -> None:
    if _INSTALLED:
        _FORKING.mask = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


def _unblock_signals() -> None:
    mask = getattr(_FORKING, "mask", None)
    if mask is not None:
        _FORKING.mask = None
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a signal sent meanwhile is delivered now


def _give_the_child_its_own_handlers() -> None:
    """In a forked child: the program's handlers back (newest run's first, as an uninstall would), then the
    signals it was sent while forking."""
    for handlers in reversed(_INSTALLED):
        handlers._restore_signals()
    _INSTALLED.clear()
    _unblock_signals()


os.register_at_fork(
    before=_block_signals_before_fork, after_in_parent=_unblock_signals, after_in_child=_give_the_child_its_own_handlers
)
