"""One delivery process per node: the runs of a job's ranks (``delivery_group``) are handed to one shared
process, each delivered as a private child would deliver it; a rank that dies ends only its own run; the
process leaves when it serves no run; where it cannot be reached a rank gets its own child."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest
from support.readers import mlflow_history, read_tb_scalars

from primus.tracking import TensorBoardConfig, TrackingConfig, start_run
from primus.tracking.delivery import node
from primus.tracking.delivery.child import Replies, Routes
from primus.tracking.delivery.node import node_address
from primus.tracking.delivery.node_main import IDLE_CHECK_S, NodeDelivery
from primus.tracking.journal import files
from primus.tracking.journal.reader import read_all
from primus.tracking.journal.records import Alert, event_of
from primus.tracking.journal.run_state import RunState

EXIT_DEADLINE_S = 60.0
# A rank of one job: logs steps 1-10, waits for the file go_<rank>, logs steps 11-20, then (ending "kill") dies
# of SIGKILL as soon as they are journaled, or (ending "finish") finishes.
RANK = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, start_run
    from primus.tracking.journal.reader import last_steps
    job, rank, ending = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    run = start_run(TrackingConfig(run_dir=job / f"rank_{rank}", run_name=f"node-rank{rank}",
                                   experiment_name="node-delivery", tensorboard=TensorBoardConfig(job / f"tb_{rank}"),
                                   mlflow=MlflowConfig(), delivery_group=job, exit_deadline_s=float(sys.argv[4])))
    run.install_exit_handlers()
    for step in range(1, 11):
        run.log(step, {"loss": 1.0 / step})
    while not (job / f"go_{rank}").exists():
        time.sleep(0.05)
    for step in range(11, 21):
        run.log(step, {"loss": 1.0 / step})
    if ending == "kill":
        while last_steps(run.run_dir).get(None) != 20:  # journaled by the hub's ticks, not yet delivered
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGKILL)
""")
STEPS = [(s, 1.0 / s) for s in range(1, 21)]


def start_rank(job, rank: int, ending: str) -> subprocess.Popen:
    log = open(job.parent / f"rank_{rank}.log", "w")  # noqa: SIM115 - closed with the test's tmp_path
    return subprocess.Popen([sys.executable, "-c", RANK, str(job), str(rank), ending, str(EXIT_DEADLINE_S)],
                            stdout=log, stderr=subprocess.STDOUT)


def delivery_pid(run_dir, within_s: float) -> int:
    """The pid of the process that delivers the run, once it recorded it."""
    give_up = time.monotonic() + within_s
    while not (pid := RunState(run_dir).section("run").get("delivery_pid")):
        assert time.monotonic() < give_up, f"no delivery process took {run_dir}"
        time.sleep(0.05)
    return pid


def assert_gone(pid: int, within_s: float) -> None:
    give_up = time.monotonic() + within_s
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < give_up, f"the delivery process {pid} is still running"
        time.sleep(0.05)


def mlflow_status_once_ended(mlflow_client, run_dir, within_s: float) -> str:
    """The status the delivery gave the run's MLflow run, once it ended it."""
    give_up = time.monotonic() + within_s
    while (status := mlflow_client.get_run(RunState(run_dir).section("mlflow")["run_id"]).info.status) == "RUNNING":
        assert time.monotonic() < give_up, f"the MLflow run of {run_dir} was not ended"
        time.sleep(0.1)
    return status


@pytest.mark.slow
@pytest.mark.parametrize(("ending", "status", "exit_code"), [("kill", "KILLED", -signal.SIGKILL),
                                                              ("finish", "FINISHED", 0)])
def test_a_nodes_ranks_share_one_delivery_process_and_a_rank_that_ends_ends_only_its_run(
        tmp_path, mlflow_client, ending, status, exit_code):
    """Rank 0 starts the shared process and ends first (SIGKILLed, or finished): its run is delivered and ended;
    the process stays for rank 1, which logs its second half into it only after rank 0's run ended, and finishes;
    then the process leaves."""
    job = tmp_path / "job"
    ranks = [start_rank(job, 0, ending)]
    shared = delivery_pid(job / "rank_0", EXIT_DEADLINE_S)
    ranks.append(start_rank(job, 1, "finish"))
    assert delivery_pid(job / "rank_1", EXIT_DEADLINE_S) == shared
    (job / "go_0").touch()
    assert ranks[0].wait(EXIT_DEADLINE_S) == exit_code
    assert mlflow_status_once_ended(mlflow_client, job / "rank_0", EXIT_DEADLINE_S) == status
    time.sleep(10 * IDLE_CHECK_S)  # ten of the process's checks for whether to leave, with rank 1's run still open
    assert psutil.pid_exists(shared) and psutil.Process(shared).status() != psutil.STATUS_ZOMBIE
    (job / "go_1").touch()  # rank 1 logs its second half after rank 0's run ended
    assert ranks[1].wait(2 * EXIT_DEADLINE_S) == 0, (tmp_path / "rank_1.log").read_text()
    assert shared not in {r.pid for r in ranks}
    assert_gone(shared, EXIT_DEADLINE_S)  # the killed run's delivery may take up to its deadline
    assert not node_address(job)[0].exists()

    for rank, ended in ((0, status), (1, "FINISHED")):
        state = RunState(job / f"rank_{rank}")
        assert state.section("run")["status"] == ended
        run = mlflow_client.get_run(state.section("mlflow")["run_id"])
        assert (run.info.run_name, run.info.status) == (f"node-rank{rank}", ended)
        assert mlflow_history(mlflow_client, run.info.run_id, "loss") == STEPS
        tb = read_tb_scalars(job / f"tb_{rank}")["loss"]
        assert [s for s, _ in tb] == [s for s, _ in STEPS]
        assert [v for _, v in tb] == pytest.approx([v for _, v in STEPS], rel=1e-6)  # float32 in TensorBoard


def test_a_process_serving_no_run_stays_for_a_rank_that_connected_and_then_leaves(tmp_path):
    path, lock = tmp_path / "node.sock", tmp_path / "node.lock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(4)
        node = NodeDelivery(listener, path, lock)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as rank:
            rank.connect(str(path))  # a rank attaching: it is in the socket's queue
            assert node.idle() and not node.leave()
            assert path.exists()
            connection, _ = listener.accept()
            connection.close()
        assert node.leave()
        assert not path.exists()  # a rank that comes later starts a new process


def test_the_node_address_is_the_groups_and_short(tmp_path):
    one, other = tmp_path / ("a" * 200) / "job", tmp_path / "other-job"
    assert node_address(one) == node_address(one) and node_address(one) != node_address(other)
    assert all(len(str(p)) < 108 for p in node_address(one))  # a unix socket's path limit
    assert node_address(one)[0].parent == files.node_dir()


def tb_run(tmp_path, rank: int, group) -> object:
    return start_run(TrackingConfig(run_dir=tmp_path / f"rank_{rank}", tensorboard=TensorBoardConfig(tmp_path / "tb"),
                                    delivery_group=group, exit_deadline_s=EXIT_DEADLINE_S))


@pytest.mark.parametrize("folder", ["under a file", "open to others", "open to the group 0o770", "read by the group 0o750"])
def test_a_rank_that_cannot_use_the_node_folder_starts_its_own_delivery_process(tmp_path, monkeypatch,
                                                                                primus_caplog, folder):
    primus_caplog.set_level(logging.WARNING, logger="primus.tracking")
    if folder == "under a file":
        (tmp_path / "a-file").write_text("")
        monkeypatch.setattr(files, "node_dir", lambda: tmp_path / "a-file" / "delivery")
    else:  # another user could have made it, or reach into it: the run's pipes must not reach their process
        mode = {"open to others": 0o777}.get(folder) or int(folder.rpartition(" ")[2], 8)
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared").chmod(mode)
        monkeypatch.setattr(files, "node_dir", lambda: tmp_path / "shared")
    run = tb_run(tmp_path, 0, tmp_path)
    run.log(1, {"loss": 1.0})
    assert run.flush(EXIT_DEADLINE_S)
    run.finish()
    assert "the delivery process shared by this node's ranks could not be reached or started" in \
        " ".join(r.getMessage() for r in primus_caplog.records)
    assert delivery_pid(tmp_path / "rank_0", 0) != os.getpid()
    assert read_tb_scalars(tmp_path / "tb")["loss"] == [(1, 1.0)]


def test_a_killed_shared_process_is_started_again_once_and_every_run_it_served_resumes_in_it(tmp_path):
    """Both runs notice, one of them starts a new shared process (under the start lock) and both hand their runs
    over to it again: each tracker gets every step once, and each run journals its delivery_restarted alert."""
    runs = [start_run(TrackingConfig(run_dir=tmp_path / f"rank_{rank}", tensorboard=TensorBoardConfig(
        tmp_path / f"tb_{rank}"), delivery_group=tmp_path, exit_deadline_s=EXIT_DEADLINE_S)) for rank in (0, 1)]
    shared = {delivery_pid(tmp_path / f"rank_{rank}", EXIT_DEADLINE_S) for rank in (0, 1)}
    assert len(shared) == 1 and shared != {os.getpid()}
    for run in runs:
        for step, loss in STEPS[:10]:
            run.log(step, {"loss": loss})
        assert run.flush(EXIT_DEADLINE_S)
    killed = shared.pop()
    os.kill(killed, signal.SIGKILL)
    for rank in (0, 1):  # each run's delivery_pid, once the process serving it again recorded it
        give_up = time.monotonic() + EXIT_DEADLINE_S
        while RunState(tmp_path / f"rank_{rank}").section("run").get("delivery_pid") == killed:
            assert time.monotonic() < give_up, f"rank {rank}'s run was not handed over again"
            time.sleep(0.05)
    again = {RunState(tmp_path / f"rank_{rank}").section("run")["delivery_pid"] for rank in (0, 1)}
    assert len(again) == 1 and again != {os.getpid()}, again  # one new shared process, not one per rank
    for run in runs:
        for step, loss in STEPS[10:]:
            run.log(step, {"loss": loss})
        run.finish()
    for rank, run in enumerate(runs):
        assert run.stats()["delivery_restarts"] == 1
        assert [s for s, _ in read_tb_scalars(tmp_path / f"tb_{rank}")["loss"]] == [s for s, _ in STEPS]
        alerts = [a.text for r in read_all(tmp_path / f"rank_{rank}") if isinstance(a := event_of(r), Alert)]
        assert len(alerts) == 1 and alerts[0].startswith(
            "the node's shared delivery process stopped delivering to tensorboard; restarted (1 of "), alerts


def test_a_rank_never_waits_for_the_shared_process_to_start(tmp_path, monkeypatch, primus_caplog):
    """The rank binds the socket and queues its run there: it goes on while the process starts, and here, where
    the process cannot start at all, its run is reported undelivered when the queued handover is dropped."""
    primus_caplog.set_level(logging.WARNING, logger="primus.tracking")
    monkeypatch.setattr(node, "SERVER_MODULE", "primus.tracking.no_such_module")
    run = tb_run(tmp_path, 0, tmp_path)
    run.log(1, {"loss": 1.0})
    t = time.monotonic()
    run.finish()
    assert time.monotonic() - t < EXIT_DEADLINE_S / 4
    assert run.stats()["sinks"]["tensorboard"]["disabled"]
    assert "the node's shared delivery process stopped delivering to tensorboard" in \
        " ".join(r.getMessage() for r in primus_caplog.records)


def test_what_a_runs_threads_log_reaches_only_its_trainer_and_the_rest_every_trainer():
    pipes = [os.pipe() for _ in range(2)]
    runs = [Replies(write) for _, write in pipes]
    routes = Routes()
    for replies in runs:
        routes.add(replies, [])
    ours = threading.Thread(target=routes.send, args=({"t": "log", "msg": "mine"},))
    routes.add_threads(runs[0], [ours])
    ours.start()
    ours.join()
    routes.send({"t": "log", "msg": "a tracker client's"})  # from a thread no run started
    routes.remove(runs[1])
    for replies in runs:
        replies.close()
    received = [os.fdopen(read, "rb").read().decode().splitlines() for read, _ in pipes]
    assert [[json.loads(line)["msg"] for line in lines] for lines in received] == \
        [["mine", "a tracker client's"], ["a tracker client's"]]
    assert routes.send({"t": "log", "msg": "late"}) is False  # run 0's delivery ended: nobody takes it
