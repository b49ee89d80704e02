"""The first host of a Slurm node list (Slurm lists the nodes in order: the first is node 0, where torchrun's
static rendezvous listens), read inside a Pyxis container where scontrol is not installed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from primus.launch.first_host import first_host


@pytest.mark.parametrize("nodelist, host", [
    ("node001", "node001"),
    ("node001,node002", "node001"),
    ("gpu[007-009,012],cpu1", "gpu007"),  # zero padding kept
    ("rack[1-2]-n[01-04]", "rack1-n01"),
    ("a-b.cluster,c", "a-b.cluster"),
])
def test_first_host_of_a_compressed_node_list(nodelist, host):
    assert first_host(nodelist) == host


def test_outside_a_job_it_says_so():
    env = {k: v for k, v in os.environ.items() if k != "SLURM_JOB_NODELIST"}
    done = subprocess.run([sys.executable, "-m", "primus.launch.first_host"], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert "SLURM_JOB_NODELIST='' names no host: run it in a Slurm job step" in done.stderr
    done = subprocess.run([sys.executable, "-m", "primus.launch.first_host"], capture_output=True, text=True,
                          env={**env, "SLURM_JOB_NODELIST": "gpu[007-009]"})
    assert (done.returncode, done.stdout) == (0, "gpu007\n")
