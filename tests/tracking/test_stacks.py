"""Stacks of a hung rank: a real process blocked in C (a read with no writer; a gloo collective a peer never
joins), stopped, or busy in Python in every thread has every thread's Python stack written to the run's stacks/ when
the delivery side asks, and goes on unharmed."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.timing import wait_for

from primus.tracking.journal import files
from primus.tracking.health.stacks import (
    ABANDONED_AFTER_S,
    dump_stacks,
    register_for_stacks,
    release_stacks,
    request_fifo,
)

BLOCKED_IN_READ = textwrap.dedent(
    """
    import os, sys, threading
    from primus.tracking.health.stacks import register_for_stacks

    register_for_stacks(__import__("pathlib").Path(sys.argv[1]))
    r, w = os.pipe()

    def side_thread_waits():
        threading.Event().wait()

    def wait_in_c():
        os.read(r, 1)  # no writer ever writes: blocked in the read(2) system call

    threading.Thread(target=side_thread_waits, daemon=True).start()
    print("ready", flush=True)
    wait_in_c()
    """
)

BLOCKED_IN_COLLECTIVE = textwrap.dedent(
    """
    import os, sys, datetime
    import torch, torch.distributed as dist
    from primus.tracking.health.stacks import register_for_stacks

    rank = int(sys.argv[2])
    register_for_stacks(__import__("pathlib").Path(sys.argv[1]))
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + sys.argv[3], rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=300))

    def all_reduce_a_peer_never_joins():
        dist.all_reduce(torch.ones(4))

    print("ready", flush=True)
    if rank == 0:
        all_reduce_a_peer_never_joins()
    else:
        __import__("time").sleep(300)
    """
)


def start(tmp_path: Path, code: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path), *args], stdout=subprocess.PIPE, text=True,
                            env=env)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def wait_for_text(path: Path, text: str) -> str:
    wait_for(lambda: text in path.read_text(), 30, f"{text!r} in {path}")
    return path.read_text()


def stop(*procs):
    for p in procs:
        p.kill()
        p.wait()


def test_a_process_blocked_in_a_c_call_has_every_threads_stack_saved(tmp_path):
    proc = start(tmp_path, BLOCKED_IN_READ)
    try:
        time.sleep(0.3)  # into the read
        assert dump_stacks(tmp_path, "stalled: no step for 31 s after step 7") == [proc.pid]
        [path] = (tmp_path / "stacks").glob("*.txt")
        text = wait_for_text(path, "wait_in_c")
        assert path.name.endswith(f"-{proc.pid}.txt")
        assert "stalled: no step for 31 s after step 7" in text
        assert "side_thread_waits" in text  # every thread
        assert proc.poll() is None  # the signal did not stop it
    finally:
        stop(proc)


def test_an_ended_process_or_a_reused_pid_is_not_asked(tmp_path):
    proc = start(tmp_path, BLOCKED_IN_READ)
    stop(proc)
    assert dump_stacks(tmp_path, "stalled") == []
    [path] = (tmp_path / "stacks").glob("*.txt")
    path.write_text(path.read_text().replace(f"pid {proc.pid} ", f"pid {os.getpid()} "))  # a live pid, not the rank
    assert dump_stacks(tmp_path, "stalled") == []


BUSY_IN_PYTHON = textwrap.dedent(
    """
    import signal, sys, threading
    from primus.tracking.health.stacks import register_for_stacks

    signal.signal(signal.SIGUSR2, lambda *_: print("own handler", flush=True))  # the program's, left alone
    register_for_stacks(__import__("pathlib").Path(sys.argv[1]))

    def spin_in_python():
        while True:
            sum(range(100))

    for _ in range(3):
        threading.Thread(target=spin_in_python, daemon=True).start()
    print("ready", flush=True)
    spin_in_python()
    """
)


def test_threads_running_python_while_their_stacks_are_taken_go_on_unharmed(tmp_path):
    """The stacks of a rank whose threads all run Python (a signal handler reading frames meanwhile crashed ranks
    with SIGSEGV): asked many times, it answers each time and lives; a program's own SIGUSR2 handler is untouched."""
    proc = start(tmp_path, BUSY_IN_PYTHON)
    try:
        [path] = (tmp_path / "stacks").glob("*.txt")
        for ask in range(1, 21):
            assert dump_stacks(tmp_path, f"ask {ask}") == [proc.pid]
            wait_for(lambda n=4 * ask: path.read_text().count("spin_in_python") >= n, 30, f"the stacks of ask {ask}")
        assert proc.poll() is None
        proc.send_signal(signal.SIGUSR2)
        assert proc.stdout.readline().strip() == "own handler"
    finally:
        stop(proc)


def test_a_stopped_process_writes_its_stacks_once_it_goes_on(tmp_path):
    proc = start(tmp_path, BLOCKED_IN_READ)
    try:
        time.sleep(0.3)  # into the read
        proc.send_signal(signal.SIGSTOP)
        assert dump_stacks(tmp_path, "stalled") == [proc.pid]  # the ask waits in the FIFO
        [path] = (tmp_path / "stacks").glob("*.txt")
        proc.send_signal(signal.SIGCONT)
        wait_for_text(path, "wait_in_c")
    finally:
        stop(proc)


def test_without_a_private_node_folder_there_are_no_stacks_and_a_warning(tmp_path, monkeypatch, primus_caplog):
    (tmp_path / "shared").mkdir(mode=0o777)
    (tmp_path / "shared").chmod(0o777)
    monkeypatch.setattr(files, "node_dir", lambda: tmp_path / "shared")
    assert register_for_stacks(tmp_path / "run") is None
    assert not (tmp_path / "run").exists() and not list((tmp_path / "shared").iterdir())
    assert "no stacks on a stall for this process" in primus_caplog.text


def test_a_dead_ranks_fifo_is_removed_when_a_rank_registers_and_a_live_or_new_ones_kept(tmp_path, monkeypatch):
    folder = tmp_path / "node"
    folder.mkdir(mode=0o700)
    monkeypatch.setattr(files, "node_dir", lambda: folder)
    made_long_ago = time.time() - ABANDONED_AFTER_S - 1
    dead, held, new = (folder / f"stacks-{name}.fifo" for name in ("dead", "held", "new"))
    for fifo in (dead, held, new):
        os.mkfifo(fifo, 0o600)
    for fifo in (dead, held):
        os.utime(fifo, (made_long_ago, made_long_ago))
    holder = os.open(held, os.O_RDWR)  # as a live rank's thread holds its own
    try:
        path = register_for_stacks(tmp_path / "run")
        # the dead rank's gone; the live rank's, one just made (its rank about to open it) and ours stay
        assert sorted(f.name for f in folder.iterdir()) == sorted([held.name, new.name, request_fifo(path).name])
        assert select.select([holder], [], [], 0)[0] == []  # looked at, and nothing asked of it
        release_stacks(path)
    finally:
        os.close(holder)


@pytest.mark.slow
def test_a_rank_blocked_in_a_gloo_collective_shows_the_collective(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    env_ranks = [subprocess.Popen([sys.executable, "-c", BLOCKED_IN_COLLECTIVE, str(tmp_path), str(r), port],
                                  stdout=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
                 for r in (0, 1)]
    try:
        for p in env_ranks:
            assert p.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # rank 0 into the all_reduce
        assert sorted(dump_stacks(tmp_path, "stalled")) == sorted(p.pid for p in env_ranks)
        text = wait_for_text(tmp_path / "stacks" / f"{socket.gethostname()}-{env_ranks[0].pid}.txt",
                             "all_reduce_a_peer_never_joins")
        assert "in all_reduce" in text  # torch.distributed's frame, waiting in C
    finally:
        stop(*env_ranks)


def test_a_file_without_stacks_is_removed_at_the_end_and_one_with_stacks_kept(tmp_path):
    path = register_for_stacks(tmp_path / "quiet")
    release_stacks(path)
    assert not (tmp_path / "quiet" / "stacks").exists()
    path = register_for_stacks(tmp_path / "stalled")
    assert dump_stacks(tmp_path / "stalled", "stalled") == [os.getpid()]
    wait_for_text(path, "test_a_file_without_stacks_is_removed")
    release_stacks(path)
    assert path.is_file()


def test_the_stacks_can_be_asked_for_by_hand(tmp_path):
    proc = start(tmp_path, BLOCKED_IN_READ)
    try:
        told = subprocess.run([sys.executable, "-m", "primus.cli.main", "tracking", "stacks", str(tmp_path)],
                              capture_output=True, text=True, timeout=120)
        assert told.returncode == 0, told.stderr
        assert f"asked 1 rank(s) (pids {proc.pid})" in told.stdout
        [path] = (tmp_path / "stacks").glob("*.txt")
        assert "asked by hand (primus tracking stacks)" in wait_for_text(path, "wait_in_c")
    finally:
        stop(proc)
    told = subprocess.run([sys.executable, "-m", "primus.cli.main", "tracking", "stacks", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert told.returncode == 1 and "no live rank of this node is registered in" in told.stderr
