"""Exit-handler logic in-process (the end-to-end statuses are in test_lifecycle.py)."""

import os
import signal
import sys

from primus.tracking.lifecycle import ExitHandlers


def test_a_program_signal_handler_still_runs_and_the_run_ends_killed_at_exit():
    seen, finished = [], []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))  # e.g. Megatron's graceful exit
    handlers = ExitHandlers(finished.append)
    try:
        handlers.install()
        os.kill(os.getpid(), signal.SIGTERM)
        assert seen == [signal.SIGTERM] and finished == []  # the program decides when to stop
        handlers._at_exit()
        assert finished == ["KILLED"]
    finally:
        handlers.uninstall()
        signal.signal(signal.SIGTERM, previous)


def test_uninstall_restores_what_was_there():
    before = (sys.exit, sys.excepthook, signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT))
    finished = []
    handlers = ExitHandlers(finished.append)
    handlers.install()
    assert sys.exit != before[0] and signal.getsignal(signal.SIGTERM) != before[2]
    handlers.uninstall()
    assert (sys.exit, sys.excepthook, signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    handlers._at_exit()
    assert finished == []  # inert once uninstalled (run.finish() uninstalls)
