"""The final status a real MLflow run gets for each way a training process can end, with the exit
handlers installed: FINISHED on sys.exit(0), FAILED on an exception or a non-zero exit, KILLED on SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.journal_files import journal_lines
from support.readers import mlflow_history

pytestmark = pytest.mark.slow

CHILD = Path(__file__).with_name("lifecycle_child.py")
ENDINGS = {"sys.exit(0)": (0, "FINISHED"), "sys.exit(3)": (3, "FAILED"), "exception": (1, "FAILED"),
           "SIGTERM": (-signal.SIGTERM, "KILLED")}


def test_final_status_for_each_way_a_process_ends(tmp_path, mlflow_uri, mlflow_client):
    children = {}
    for i, ending in enumerate(ENDINGS):  # all at once: each child spends seconds importing mlflow
        run_dir = tmp_path / f"run{i}"
        children[ending] = (run_dir, subprocess.Popen([sys.executable, str(CHILD), str(run_dir), "lifecycle", ending],
                                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    run_dir, proc = children["SIGTERM"]
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    proc.send_signal(signal.SIGTERM)

    for ending, (run_dir, proc) in children.items():
        _, err = proc.communicate(timeout=120)
        code, status = ENDINGS[ending]
        assert proc.returncode == code, (ending, err)
        run_id = json.loads((run_dir / "run.json").read_text())["mlflow"]["run_id"]
        assert mlflow_client.get_run(run_id).info.status == status, ending
        assert mlflow_history(mlflow_client, run_id, "loss") == [(s, float(s)) for s in range(5)]
        end = journal_lines(run_dir)[-1]
        assert end["d"]["event"] == "end" and end["d"]["status"] == status
        if ending == "exception":
            assert "RuntimeError: boom in training" in err  # the traceback is still printed
