"""Launch on Slurm: an ``sbatch`` script, or an ``srun`` line attached to this terminal.

One task per node runs torchrun with the node's share of the processes; Slurm gives each node its rank
(SLURM_NODEID) and the node list, whose first host is the rendezvous. The job's environment is the
allow-list, exported by name (``--export=NAME,...``: Slurm reads the values from the submitting
environment), plus the host runtime (PATH, ...) so the same Python starts on the compute nodes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from primus.launch.job import Job
from primus.launch.passthrough import Passthrough
from primus.launch.plan import LaunchPlan, Shell, assignments, shell_line
from primus.launch.settings import LaunchSettings
from primus.launch.torchrun import torchrun_argv

FIRST_HOST = 'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)'


def plan_slurm(job: Job, settings: LaunchSettings, passthrough: Passthrough, environ: Mapping[str, str],
               python: str, cwd: Path) -> LaunchPlan:
    options = _options(job, settings, passthrough, environ, cwd)
    node_step = ["--kill-on-bad-exit=1", "bash", "-c", node_script(job, settings, python)]
    if settings.slurm.submit == "srun":
        return LaunchPlan(argv=["srun", *options, *node_step], env=dict(environ), run_dir=job.run_dir)
    logs = job.run_dir / "logs"
    # Slurm opens --output before the script runs: its folder must exist
    return LaunchPlan(argv=["sbatch", *options, f"--output={logs}/slurm-%j.out"], env=dict(environ),
                      run_dir=job.run_dir, stdin=batch_script(node_step), make_dirs=(logs,), detached=True)


def node_script(job: Job, settings: LaunchSettings, python: str) -> str:
    """What the one task on each node runs: Primus's variables, the first host, torchrun."""
    rendezvous = [Shell('--nnodes="$SLURM_NNODES"'), Shell('--node_rank="$SLURM_NODEID"'),
                  Shell('--master_addr="$MASTER_ADDR"'), f"--master_port={settings.slurm.master_port}"]
    lines = [f"export {assignment}" for assignment in assignments(job.env)]
    lines += [FIRST_HOST, shell_line(["exec", *torchrun_argv(python, job.entry, settings.nproc_per_node, rendezvous)])]
    return "; ".join(lines)


def batch_script(node_step: list[str]) -> str:
    """The options are on sbatch's command line, where the shell quotes them, not in #SBATCH lines."""
    lines = ["#!/bin/bash", "# the batch environment is already the allow-list: the step gets all of it",
             shell_line(["srun", "--export=ALL", *node_step])]
    return "\n".join(lines) + "\n"


def _options(job: Job, settings: LaunchSettings, passthrough: Passthrough, environ: Mapping[str, str],
             cwd: Path) -> list[str]:
    s = settings.slurm
    exported = passthrough.select(environ, host=True, skip=job.env)
    options = [f"--job-name={s.job_name or job.name}", f"--nodes={settings.nnodes}", "--ntasks-per-node=1",
               f"--chdir={cwd}"]
    for name, value in (("partition", s.partition), ("time", s.time), ("account", s.account),
                        ("gpus-per-node", s.gpus_per_node)):
        if value is not None:
            options.append(f"--{name}={value}")
    return [*options, f"--export={','.join(exported) or 'NONE'}", *s.extra_args]
