"""`primus train --launcher slurm` on a real one-node Slurm cluster (support/slurm_cluster.py: Debian's munged,
slurmctld, slurmd): the tiny Megatron job (1 rank) trains tracked under it, and ``scancel`` ends its MLflow run
KILLED; with ``launch.slurm.requeue``, a job whose trainer is killed again and again before any new step or
checkpoint is requeued by its batch script until ``no_progress`` stops it, and it ends with exit code 93, not
requeued again. Each wait has its own bound and says what it waited for."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.journal_files import journal_lines
from support.slurm_cluster import free_port

from primus.tracking.goodput.attempts import ATTEMPTS_SECTION, NO_PROGRESS_EXIT
from primus.tracking.health.webhook import WEBHOOK_ENV

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PRIMUS = str(Path(sys.executable).with_name("primus"))
WAIT_S = 180.0  # for a step of a job: its start on the cluster, torch's and Megatron's imports, the model's build


def wait_for(what: str, check, timeout_s: float = WAIT_S, cluster=None):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"waited {timeout_s:.0f} s for {what}" + (f"\n{cluster.logs()}" if cluster else ""))


def submit(workdir: Path, experiment: str, env: dict[str, str], *overrides: str) -> tuple[str, Path]:
    """Submit the tiny Megatron job; its Slurm job id and run directory."""
    env = {**env, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "", "PRIMUS_EXP_NAME": experiment}
    done = subprocess.run([PRIMUS, "train", "--config", str(REPO / "configs/megatron/tiny_cpu.yaml"), "--launcher",
                           "slurm", f"workspace={workdir}", f"launch.slurm.master_port={free_port()}", *overrides],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    job_id = re.search(r"Submitted batch job (\d+)", output)
    run_dir = re.search(r"\[primus\] run directory: (\S+)", output)
    assert job_id and run_dir, output
    return job_id.group(1), Path(run_dir.group(1))


def run_json(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "run.json").read_text())
    except (FileNotFoundError, ValueError):
        return {}


def logged_a_step(run_dir: Path) -> bool:
    return any(r["k"] == "m" for r in journal_lines(run_dir, skip_torn=True)) if (run_dir / "journal").exists() \
        else False


def test_scancel_ends_the_tracked_run_killed(slurm_cluster, mlflow_server, mlflow_client, tmp_path):
    experiment = "slurm-scancel"
    job_id, run_dir = submit(tmp_path, experiment, {**os.environ, "MLFLOW_TRACKING_URI": mlflow_server.uri},
                             "train_iters=100000")

    def mlflow_run():
        runs = mlflow_client.search_runs([e.experiment_id for e in mlflow_client.search_experiments()
                                          if e.name == experiment])
        return runs[0] if runs and runs[0].data.metrics else None

    wait_for("the MLflow run's first metrics", mlflow_run, cluster=slurm_cluster)
    assert slurm_cluster.job(job_id)["JobState"] == "RUNNING"
    subprocess.run(["scancel", job_id], env=slurm_cluster.env, check=True)
    run = wait_for("the MLflow run to end", lambda: (r := mlflow_run()) and r.info.status != "RUNNING" and r,
                   timeout_s=60)
    assert run.info.status == "KILLED", run.info
    wait_for("the job's end", lambda: slurm_cluster.job(job_id)["JobState"] == "CANCELLED", timeout_s=60)
    assert run_json(run_dir)["run"]["status"] == "KILLED"


def test_a_crash_loop_is_requeued_until_no_progress_stops_it_with_exit_93(slurm_cluster, webhook_receiver, tmp_path):
    env = {**os.environ, WEBHOOK_ENV: webhook_receiver.url}
    env.pop("MLFLOW_TRACKING_URI", None)  # TensorBoard and a local MLflow store: the alert is what is read back
    job_id, run_dir = submit(tmp_path, "slurm-crash-loop", env, "train_iters=100000", "launch.slurm.requeue=true",
                             "primus_no_progress_restarts=1")
    killed = []
    for attempt in (1, 2):  # the first logs steps; the second dies before any step beyond them
        def started():
            state = run_json(run_dir)
            pid = state.get("run", {}).get("pid")
            return pid if state.get(ATTEMPTS_SECTION, {}).get("attempts") == attempt and pid not in killed else None

        pid = wait_for(f"attempt {attempt}'s trainer", started, cluster=slurm_cluster)
        if attempt == 1:
            wait_for("attempt 1's first logged step", lambda: logged_a_step(run_dir), cluster=slurm_cluster)
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
        # the batch script requeues the failed job; Slurm would hold it 120 s before it starts again
        job = wait_for(f"the job requeued after attempt {attempt}",
                       lambda: (j := slurm_cluster.job(job_id))["JobState"] == "PENDING" and j, cluster=slurm_cluster)
        assert job["Restarts"] == str(attempt)
        slurm_cluster.release(job_id)
    # COMPLETING: the node still ends the job's processes; its final state comes after
    job = wait_for("the job's end", lambda: (j := slurm_cluster.job(job_id))["JobState"] not in ("PENDING", "RUNNING",
                                                                                                  "COMPLETING") and j)
    assert (job["JobState"], job["ExitCode"], job["Restarts"]) == ("FAILED", f"{NO_PROGRESS_EXIT}:0", "2")
    [alert] = [body for body in webhook_receiver.bodies if body["kind"] == "no_progress"]
    best = max(r["s"] for r in journal_lines(run_dir) if r["k"] == "m")
    assert alert["iteration"] == best and alert["text"].endswith(f"iteration {best}: the last attempt ended without a step beyond {best} or a checkpoint: "
                                    f"it died at or before step {best}; stopped (exit 93, not requeued): fix the cause and launch again"), alert
    console = (run_dir / "logs" / f"slurm-{job_id}.out").read_text()  # every attempt's (--open-mode=append)
    assert console.count("[primus] INFO tensorboard_dir not set") == 3  # each attempt's start
    assert console.count("[primus] ALERT no_progress") == 1
    assert run_json(run_dir)["run"]["status"] == "FAILED"
