"""Stand-ins for sbatch, srun (with Pyxis's options), scontrol, docker, podman and apptainer that run the job on
this machine with the environment the real tool would give it, so a test can execute the exact text
`primus train --dry-run` prints and see what the job receives. Each call is recorded (tool, argv,
environment) in ``<bin dir>/calls.jsonl``.

* sbatch/srun: ``--export=NAMES`` gives the job only those variables (values read from the caller's
  environment, as Slurm does) plus SLURM_* for one node; ``ALL`` gives everything; ``NONE`` SLURM_* only.
  sbatch runs its standard input with bash; srun runs its command. With ``--container-image`` (Pyxis) the
  command runs "in the image": in ``--container-workdir``, every ``--container-mounts`` source must exist, and
  the image's own PATH wins over an exported one.
* docker/podman run: a fresh environment with only ``-e NAME`` (the caller's value) and ``-e NAME=value``,
  in the ``-w`` directory; every ``-v`` source must exist.
* apptainer exec: the caller's environment with the image's PATH, in the ``--pwd`` directory; every ``--bind``
  source must exist; ``--nv``/``--rocm`` shows as CONTAINER_GPU.
* scontrol show hostnames: ``localhost``.

In every "image" CONTAINER_IMAGE names the image. A probe (``write_probe``) stands in for Python: it records its
arguments and environment as JSON (``-m primus.launch.first_host`` runs for real, as the image's Python would)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TOOLS = ("sbatch", "srun", "scontrol", "docker", "podman", "apptainer")
ONE_NODE = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "localhost", "SLURM_NNODES": "1", "SLURM_NODEID": "0"}
IMAGE_PATH = "/usr/local/bin:/usr/bin:/bin"  # what an image's own PATH looks like
CALLS = "calls.jsonl"


def install(bin_dir: Path) -> Path:
    """Put the stand-ins in ``bin_dir``; returns it (put it first on PATH)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for tool in TOOLS:
        path = bin_dir / tool
        shim = f"{sys.executable} {Path(__file__).resolve()} {tool} {bin_dir / CALLS}"
        path.write_text(f"#!/bin/sh\nexec {shim} \"$@\"\n")
        path.chmod(0o755)
    return bin_dir


def read_calls(bin_dir: Path) -> list[dict]:
    """Every stand-in call so far: {"tool", "argv", "env"}."""
    return read_probe(bin_dir / CALLS)


def write_probe(path: Path, record: Path) -> Path:
    """An executable that appends {"argv": [...], "env": {...}} to ``record`` and exits 0."""
    path.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                    f"if sys.argv[1:3] == ['-m', 'primus.launch.first_host']:\n"
                    f"    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
                    f"with open({str(record)!r}, 'a') as f:\n"
                    f"    f.write(json.dumps({{'argv': sys.argv[1:], 'env': dict(os.environ)}}) + '\\n')\n")
    path.chmod(0o755)
    return path


def read_probe(record: Path) -> list[dict]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def _mounted(source: str) -> None:
    assert Path(source).exists(), f"mount source missing: {source}"


def _slurm(tool: str, args: list[str]) -> int:
    export, image, workdir = "ALL", None, None
    while args and args[0].startswith("--"):
        option, _, value = args.pop(0).partition("=")
        if option == "--export":
            export = value
        elif option == "--container-image":
            image = value
        elif option == "--container-mounts":
            for mount in value.split(","):
                _mounted(mount.split(":")[0])
        elif option == "--container-workdir":
            workdir = value
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
    if image is not None:
        env.update(PATH=IMAGE_PATH, CONTAINER_IMAGE=image)
    if tool == "sbatch":
        return subprocess.run(["bash", "-s"], input=sys.stdin.read(), text=True, env=env).returncode
    return subprocess.run(args, env=env, cwd=workdir).returncode


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
                _mounted(value.split(":")[0])
            else:
                workdir = value
    image, command = args[0], args[1:]
    env["CONTAINER_IMAGE"] = image
    return subprocess.run(command, env=env, cwd=workdir).returncode


def _apptainer(args: list[str]) -> int:
    assert args.pop(0) == "exec", args
    env = {**os.environ, "PATH": IMAGE_PATH}
    workdir = None
    while args[0].startswith("-"):
        option = args.pop(0)
        if option in ("--nv", "--rocm"):
            env["CONTAINER_GPU"] = option
        elif option == "--bind":
            _mounted(args.pop(0).split(":")[0])
        elif option == "--pwd":
            workdir = args.pop(0)
    env["CONTAINER_IMAGE"] = args[0]
    return subprocess.run(args[1:], env=env, cwd=workdir).returncode


def main(tool: str, record: str, args: list[str]) -> int:
    with open(record, "a") as f:
        f.write(json.dumps({"tool": tool, "argv": args, "env": dict(os.environ)}) + "\n")
    if tool == "scontrol":
        print("localhost")
        return 0
    if tool in ("sbatch", "srun"):
        return _slurm(tool, args)
    if tool == "apptainer":
        return _apptainer(args)
    return _container(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
