"""Stand-ins for sbatch, srun, scontrol, docker and podman that run the job on this machine with the
environment the real tool would give it, so a test can execute the exact text `primus train --dry-run`
prints and see what the job receives.

* sbatch/srun: ``--export=NAMES`` gives the job only those variables (values read from the caller's
  environment, as Slurm does) plus SLURM_* for one node; ``ALL`` gives everything; ``NONE`` SLURM_* only.
  sbatch runs its standard input with bash; srun runs its command.
* docker/podman run: a fresh environment with only ``-e NAME`` (the caller's value) and ``-e NAME=value``,
  in the ``-w`` directory; every ``-v`` source must exist.
* scontrol show hostnames: ``localhost``.

A probe (``write_probe``) stands in for Python: it records its arguments and environment as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TOOLS = ("sbatch", "srun", "scontrol", "docker", "podman")
ONE_NODE = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "localhost", "SLURM_NNODES": "1", "SLURM_NODEID": "0"}


def install(bin_dir: Path) -> Path:
    """Put the stand-ins in ``bin_dir``; returns it (put it first on PATH)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for tool in TOOLS:
        path = bin_dir / tool
        path.write_text(f"#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} {tool} \"$@\"\n")
        path.chmod(0o755)
    return bin_dir


def write_probe(path: Path, record: Path) -> Path:
    """An executable that appends {"argv": [...], "env": {...}} to ``record`` and exits 0."""
    path.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    f"with open({str(record)!r}, 'a') as f:\n"
                    f"    f.write(json.dumps({{'argv': sys.argv[1:], 'env': dict(os.environ)}}) + '\\n')\n")
    path.chmod(0o755)
    return path


def read_probe(record: Path) -> list[dict]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def _slurm(tool: str, args: list[str]) -> int:
    export = "ALL"
    while args and args[0].startswith("--"):
        option = args.pop(0)
        if option.startswith("--export="):
            export = option.split("=", 1)[1]
    if export == "ALL":
        env = dict(os.environ)
    else:
        env = {k: v for k, v in os.environ.items() if k.startswith("SLURM_")}
        for item in export.split(",") if export != "NONE" else ():
            name, sep, value = item.partition("=")
            if sep:
                env[name] = value
            elif name in os.environ:
                env[name] = os.environ[name]
    env.update(ONE_NODE)
    if tool == "sbatch":
        return subprocess.run(["bash", "-s"], input=sys.stdin.read(), text=True, env=env).returncode
    return subprocess.run(args, env=env).returncode


def _container(args: list[str]) -> int:
    assert args.pop(0) == "run", args
    env: dict[str, str] = {}
    workdir = None
    while args[0].startswith("-"):
        option = args.pop(0)
        if option in ("-e", "-v", "-w"):
            value = args.pop(0)
            if option == "-e":
                name, sep, given = value.partition("=")
                if sep:
                    env[name] = given
                elif name in os.environ:
                    env[name] = os.environ[name]
            elif option == "-v":
                assert Path(value.split(":")[0]).exists(), f"mount source missing: {value}"
            else:
                workdir = value
    image, command = args[0], args[1:]
    env["CONTAINER_IMAGE"] = image
    return subprocess.run(command, env=env, cwd=workdir).returncode


def main(tool: str, args: list[str]) -> int:
    if tool == "scontrol":
        print("localhost")
        return 0
    if tool in ("sbatch", "srun"):
        return _slurm(tool, args)
    return _container(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
