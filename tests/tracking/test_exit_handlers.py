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


def test_two_threads_forking_at_once_each_get_their_own_signal_mask_back():
    """os.fork's hooks in the order two threads forking together may run them: A before, B before, A after, B
    after. Each thread's mask while forking is its own (a single saved mask left B with SIGTERM blocked)."""
    import threading

    from primus.tracking import lifecycle

    handlers = ExitHandlers(lambda status: None)
    handlers.install()
    steps = {name: [threading.Event() for _ in range(2)] for name in "AB"}
    masks = {}

    def forking(name, turn):
        for hook, event in zip((lifecycle._block_signals_before_fork, lifecycle._unblock_signals), steps[name]):
            event.wait(10)
            hook()
            turn.set()
        masks[name] = signal.pthread_sigmask(signal.SIG_BLOCK, [])

    try:
        threads = {}
        for name in "AB":
            turn = threading.Event()
            threads[name] = (threading.Thread(target=forking, args=(name, turn)), turn)
            threads[name][0].start()
        for name, index in (("A", 0), ("B", 0), ("A", 1), ("B", 1)):
            thread, turn = threads[name]
            turn.clear()
            steps[name][index].set()
            assert turn.wait(10), f"thread {name} did not run its hook {index}"
        for thread, _ in threads.values():
            thread.join(10)
    finally:
        handlers.uninstall()
    assert {name: signal.SIGTERM in mask or signal.SIGINT in mask for name, mask in masks.items()} == {
        "A": False, "B": False}
