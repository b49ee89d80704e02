"""A forked child (a DataLoader worker) inherits the run and its exit handlers, but must never end the
parent's run: stopping the child with SIGTERM, or letting it exit, leaves the run RUNNING."""

import json
import signal
import subprocess
import sys
import textwrap

from support.journal_files import journal_lines


def test_forked_children_do_not_end_the_parent_run(tmp_path):
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        from pathlib import Path
        from primus.tracking import TrackingConfig, start_run
        run = start_run(TrackingConfig(run_dir=Path({str(tmp_path / 'run')!r}), exit_deadline_s=5))
        run.install_exit_handlers()
        run.log(1, {{"loss": 1.0}})
        killed = os.fork()
        if killed == 0:
            time.sleep(30)
            os._exit(0)
        exiting = os.fork()
        if exiting == 0:
            sys.exit(0)  # a child that exits through Python's normal path runs the inherited hooks
        os.kill(killed, signal.SIGTERM)
        _, killed_status = os.waitpid(killed, 0)
        _, exiting_status = os.waitpid(exiting, 0)
        print("killed-by", os.WTERMSIG(killed_status) if os.WIFSIGNALED(killed_status) else None, flush=True)
        run.log(2, {{"loss": 0.5}})
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"killed-by {int(signal.SIGTERM)}" in result.stdout  # the child still died of the signal
    records = journal_lines(tmp_path / "run")
    ends = [r for r in records if r["k"] == "e" and r["d"]["event"] == "end"]
    assert [e["d"]["status"] for e in ends] == ["FINISHED"], ends
    assert [r["s"] for r in records if r["k"] == "m"] == [1, 2]
    assert records.index(ends[0]) > max(i for i, r in enumerate(records) if r["k"] == "m")
    assert json.loads((tmp_path / "run" / "run.json").read_text())["run"]["status"] == "FINISHED"
