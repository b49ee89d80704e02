"""`primus train --config EXP.yaml [launch flags] [key=value ...]`: run an experiment with tracking on,
on this machine (one process or torchrun, one node of many), on Slurm or in a container.

Launch flags override the experiment's `launch:` block key by key. Credentials reach Slurm jobs and
containers by name through the passthrough allow-list; `--dry-run` prints the exact command."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from primus.config import ConfigError, load_experiment
from primus.config.schemas.launch import CONTAINER_RUNTIMES, GPU_VENDORS, LAUNCHERS, SLURM_RUNTIMES
from primus.launch.dispatch import plan_launch
from primus.launch.job import select_module
from primus.launch.plan import LaunchPlan
from primus.launch.results import describe_results
from primus.launch.settings import resolve_settings
from primus.redaction import redact_text

# flag destination -> key of the launch: block it overrides
FLAG_KEYS = {
    "launcher": "launcher",
    "nproc_per_node": "nproc_per_node",
    "nnodes": "nnodes",
    "node_rank": "node_rank",
    "rdzv_endpoint": "rdzv_endpoint",
    "rdzv_id": "rdzv_id",
    "slurm_submit": "slurm.submit",
    "partition": "slurm.partition",
    "time": "slurm.time",
    "account": "slurm.account",
    "qos": "slurm.qos",
    "gpus_per_node": "slurm.gpus_per_node",
    "cpus_per_task": "slurm.cpus_per_task",
    "exclusive": "slurm.exclusive",
    "image": "container.image",
    "runtime": "container.runtime",
    "gpu_vendor": "container.gpu_vendor",
    "mounts": "container.mounts",
}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "train",
        help="run an experiment (upstream trainer, patches active)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--config",
        required=True,
        metavar="EXP.yaml",
        help="the experiment file, e.g. --config configs/megatron/tiny_cpu.yaml",
    )
    p.add_argument(
        "--module",
        default=None,
        metavar="NAME",
        help="the module to run when the experiment has several, e.g. --module pre_trainer",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the exact command (secrets redacted) and run nothing, e.g. --dry-run --launcher slurm",
    )
    p.add_argument(
        "--launcher",
        choices=LAUNCHERS,
        help="local (default; torchrun when more than one process), torchrun, slurm or container, "
        "e.g. --launcher slurm",
    )
    nodes = p.add_argument_group("processes and nodes")
    nodes.add_argument(
        "--nproc-per-node",
        type=int,
        metavar="N",
        help="processes per node (torchrun when > 1), e.g. --nproc-per-node 8",
    )
    nodes.add_argument("--nnodes", type=int, metavar="N", help="nodes the job spans, e.g. --nnodes 4")
    nodes.add_argument(
        "--node-rank",
        type=int,
        metavar="R",
        help="this node's rank (static rendezvous); omit for c10d, e.g. --node-rank 0",
    )
    nodes.add_argument(
        "--rdzv-endpoint",
        metavar="HOST:PORT",
        help="where the nodes meet (the first node), e.g. --rdzv-endpoint node001:29400",
    )
    nodes.add_argument(
        "--rdzv-id",
        metavar="ID",
        help="job id, the same on every node (default $SLURM_JOB_ID), e.g. --rdzv-id llama-0412",
    )
    slurm = p.add_argument_group("slurm")
    slurm.add_argument(
        "--slurm-submit",
        choices=("sbatch", "srun"),
        help="a batch job (default) or srun attached to this terminal, e.g. --slurm-submit srun",
    )
    slurm.add_argument("--partition", metavar="NAME", help="the Slurm partition, e.g. --partition mi300x")
    slurm.add_argument("--time", metavar="HH:MM:SS", help="the job's time limit, e.g. --time 04:00:00")
    slurm.add_argument("--account", metavar="NAME", help="the account charged, e.g. --account ml-research")
    slurm.add_argument("--qos", metavar="NAME", help="the quality of service, e.g. --qos high")
    slurm.add_argument("--gpus-per-node", type=int, metavar="N", help="GPUs per node, e.g. --gpus-per-node 8")
    slurm.add_argument(
        "--cpus-per-task",
        type=int,
        metavar="N",
        help="CPUs for each node's task (torchrun and its ranks), e.g. --cpus-per-task 96",
    )
    slurm.add_argument(
        "--exclusive",
        action="store_true",
        default=None,
        help="the nodes are not shared with other jobs, e.g. --exclusive --cpus-per-task 96",
    )
    container = p.add_argument_group(
        "container",
        "with --launcher container (docker, podman), or --launcher "
        "slurm: each node's step in the image (pyxis, apptainer)",
    )
    container.add_argument("--image", help="image with primus installed, e.g. --image rocm/primus:latest")
    container.add_argument(
        "--container-runtime",
        "--runtime",
        dest="runtime",
        choices=(*CONTAINER_RUNTIMES, *SLURM_RUNTIMES),
        help="docker (default) or podman; under Slurm pyxis (default) or apptainer, e.g. --container-runtime apptainer",
    )
    container.add_argument(
        "--gpu-vendor", choices=GPU_VENDORS, help="apptainer: nvidia (--nv) or amd (--rocm), e.g. --gpu-vendor amd"
    )
    container.add_argument(
        "--mount",
        dest="mounts",
        action="append",
        metavar="SRC:DST[:OPTS]",
        help="one more mount (repeatable), e.g. --mount /data:/data:ro",
    )
    p.add_argument(
        "overrides",
        nargs="*",
        metavar="key=value",
        help="config overrides, typed by the schema, anywhere on the line, e.g. train_iters=5 "
        "launch.slurm.partition=mi300x",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        exp = load_experiment(args.config, args.overrides)
        module = select_module(exp, args.module)
        flags = {key: getattr(args, dest) for dest, key in FLAG_KEYS.items()}
        settings = resolve_settings(exp.launch, flags, os.environ)
        plan = plan_launch(exp, module, args.overrides, settings)
    except (ConfigError, ValueError) as e:
        print(f"primus train: {redact_text(str(e))}", file=sys.stderr)
        return 2
    print(f"[primus] run directory: {plan.run_dir}", flush=True)
    print(f"[primus] command: {redact_text(plan.shell())}", flush=True)
    if args.dry_run:
        return 0
    return _execute(plan)


def _execute(plan: LaunchPlan) -> int:
    for folder in plan.make_dirs:
        folder.mkdir(parents=True, exist_ok=True)
    code = subprocess.run(plan.argv, env=plan.env, input=plan.stdin, text=True).returncode
    if plan.detached:
        print(f"[primus] submitted: the run's results will be in {plan.run_dir}", flush=True)
    else:
        print(describe_results(plan.run_dir), flush=True)
    return code
