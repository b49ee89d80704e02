"""A real one-node Slurm cluster for the tests: Debian's munged, slurmctld and slurmd (``make setup-slurm``), run as
root from a folder of their own: a generated slurm.conf (this host as the one node, 2 CPUs, proctrack/linuxproc and
no cgroups, free ports), their state, spool, logs and munge key there. ``SLURM_CONF`` points sbatch, squeue,
scontrol and scancel at it. Started once per session (tests/conftest.py, ``slurm_cluster``), stopped after.

A requeued job waits 120 s before it may start again (Slurm's rule); ``release`` lets it start at once."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
START_TIMEOUT_S = 30.0
NODE_CPUS = 2
# a requeued job waits this long before it starts again (Slurm's default: 120 s); long enough to launch a step here
CRED_EXPIRE_S = 15
# Debian installs the daemons in /usr/sbin, which a bare PATH (CI's `env -i PATH=/usr/bin:/bin`) lacks
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def missing() -> str | None:
    """Why this machine cannot run the cluster, else None."""
    absent = [tool for tool in (*DAEMONS, "sbatch", "scontrol") if shutil.which(tool, path=SEARCH_PATH) is None]
    if absent:
        return f"{', '.join(absent)} not installed: run `make setup-slurm` as root"
    if os.geteuid() != 0:
        return "the test cluster's daemons run as root: run the tests as root"
    return None


class SlurmCluster:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.host = socket.gethostname()
        self.conf = self.root / "slurm.conf"
        self.munge_socket = self.root / "munge" / "munge.socket"
        self.env = {**os.environ, "PATH": SEARCH_PATH, "SLURM_CONF": str(self.conf)}
        self._pid_files = {
            "munged": self.root / "munge" / "munged.pid",
            "slurmctld": self.root / "slurmctld.pid",
            "slurmd": self.root / "slurmd.pid",
        }

    def start(self) -> SlurmCluster:
        for folder in ("state", "spool", "log", "munge"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self.conf.write_text(self._config())
        m = self.root / "munge"
        self._run(["munged", "--force", f"--socket={self.munge_socket}", f"--key-file={key}",
                   f"--log-file={m / 'munged.log'}", f"--pid-file={m / 'munged.pid'}", f"--seed-file={m / 'seed'}"])
        self._run(["slurmctld", "-i"])
        self._run(["slurmd"])
        self._wait_idle()
        return self

    def stop(self) -> None:
        """Cancel what is left, then end the three daemons by the pids they wrote."""
        subprocess.run(["scancel", "--full", "--partition=debug"], env=self.env, capture_output=True)
        for name in reversed(DAEMONS):
            pid_file = self._pid_files[name]
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            except (FileNotFoundError, ValueError, ProcessLookupError):
                pass

    def scontrol(self, *args: str) -> str:
        return subprocess.run(["scontrol", *args], env=self.env, capture_output=True, text=True, check=True).stdout

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job``'s fields (JobState, ExitCode, Restarts, Reason...)."""
        return dict(re.findall(r"(\w+)=(\S*)", self.scontrol("show", "job", job_id)))

    def release(self, job_id: str) -> None:
        """A requeued job starts again by itself once its credential's lifetime (``CRED_EXPIRE_S``) has passed: Slurm
        holds it that long, and a launch sooner (``StartTime=now``) is refused as "credential revoked" and lost. Here:
        wait until the node is done with the last run; the job is then released by Slurm."""
        self._wait_idle()

    def _config(self) -> str:
        r = self.root
        return f"""ClusterName=primustest
SlurmctldHost={self.host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket},cred_expire={CRED_EXPIRE_S}
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={self._pid_files['slurmctld']}
SlurmdPidFile={self._pid_files['slurmd']}
SlurmctldLogFile={r / 'log' / 'slurmctld.log'}
SlurmdLogFile={r / 'log' / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
KillWait=10
MinJobAge=3600
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={NODE_CPUS} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""

    def _run(self, argv: list[str]) -> None:
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=START_TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}\n{self.logs()}")

    def _wait_idle(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        state = ""
        while time.monotonic() < deadline:
            done = subprocess.run(["sinfo", "-h", "-o", "%T"], env=self.env, capture_output=True, text=True)
            state = done.stdout.strip()
            if state == "idle":
                return
            time.sleep(0.2)
        raise RuntimeError(f"the node is not idle after {START_TIMEOUT_S} s (sinfo: {state!r})\n{self.logs()}")

    def logs(self) -> str:
        """The daemons' last log lines, for a failure's message."""
        parts = []
        for path in (self.root / "log" / "slurmctld.log", self.root / "log" / "slurmd.log"):
            if path.exists():
                parts.append(f"--- {path.name}\n" + "\n".join(path.read_text().splitlines()[-15:]))
        return "\n".join(parts)
