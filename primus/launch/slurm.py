"""Launch on Slurm: an ``sbatch`` script, or an ``srun`` line attached to this terminal.

One task per node runs torchrun with the node's share of the processes; Slurm gives each node its rank
(SLURM_NODEID) and the node list, whose first host is the rendezvous. The job's environment is the
allow-list, exported by name (``--export=NAME,...``: Slurm reads the values from the submitting
environment), plus the host runtime (PATH, ...) so the same Python starts on the compute nodes. With an
image the step runs in it (``slurm_images``: Pyxis or Apptainer), and the host runtime stays outside."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from primus.launch.job import Job
from primus.launch.passthrough import Passthrough
from primus.launch.plan import LaunchPlan, Shell, assignments, shell_line
from primus.launch.settings import LaunchSettings
from primus.launch.slurm_images import PYXIS, apptainer_prefix, pyxis_first_host, pyxis_options
from primus.launch.torchrun import torchrun_argv
from primus.tracking.goodput.attempts import NO_PROGRESS_EXIT
from primus.tracking.journal.files import LOGS_DIR, NO_PROGRESS_FILE

FIRST_HOST = 'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)'


def plan_slurm(
    job: Job, settings: LaunchSettings, passthrough: Passthrough, environ: Mapping[str, str], python: str, cwd: Path
) -> LaunchPlan:
    s, image = settings.slurm, settings.container.image
    pyxis = image is not None and settings.container.runtime == PYXIS
    allowed = passthrough.select(environ, skip=job.env)
    with_host = passthrough.select(environ, host=True, skip=job.env)
    node = node_script(job, settings, python, cwd, host_names=sorted(set(with_host) - set(allowed)))
    step = ["--kill-on-bad-exit=1", *(pyxis_options(job, settings.container, cwd) if pyxis else []), "bash", "-c", node]
    if s.submit == "srun":  # under Pyxis this one srun starts the task in the image: the host runtime stays out
        options = _options(job, settings, allowed if pyxis else with_host, cwd)
        return LaunchPlan(
            argv=["srun", *options, *step],
            env=dict(environ),
            run_dir=job.run_dir,
            make_dirs=(job.run_dir,) if image else (),
        )  # a mount's source must exist
    logs = job.run_dir / LOGS_DIR
    # srun in a batch job does not take --cpus-per-task from it on every Slurm release: it is said again
    cpus = [f"--cpus-per-task={s.cpus_per_task}"] if s.cpus_per_task else []
    script = batch_script([f"--export={_export(allowed) if pyxis else 'ALL'}", *cpus, *step], job.run_dir, s.requeue)
    # Slurm opens --output before the script runs: its folder must exist
    argv = ["sbatch", *_options(job, settings, with_host, cwd), f"--output={logs}/slurm-%j.out"]
    return LaunchPlan(argv=argv, env=dict(environ), run_dir=job.run_dir, stdin=script, make_dirs=(logs,), detached=True)


def node_script(job: Job, settings: LaunchSettings, python: str, cwd: Path, host_names: Sequence[str] = ()) -> str:
    """What the one task on each node runs: Primus's variables, the first host, torchrun (in the image, if any)."""
    c = settings.container
    rendezvous = [
        Shell('--nnodes="$SLURM_NNODES"'),
        Shell('--node_rank="$SLURM_NODEID"'),
        Shell('--master_addr="$MASTER_ADDR"'),
        f"--master_port={settings.slurm.master_port}",
    ]
    first_host, prefix = FIRST_HOST, []
    if c.image is not None:
        python = c.python
        if c.runtime == PYXIS:
            first_host = pyxis_first_host(python)
        else:
            prefix = apptainer_prefix(job, c, cwd, host_names)
    lines = [f"export {assignment}" for assignment in assignments(job.env)]
    lines += [
        first_host,
        shell_line(["exec", *prefix, *torchrun_argv(python, job.entry, settings.nproc_per_node, rendezvous)]),
    ]
    return "; ".join(lines)


def batch_script(step: list[str], run_dir: Path, requeue: bool) -> str:
    """The options are on sbatch's command line, where the shell quotes them, not in #SBATCH lines. After the step,
    a crash loop's stop (goodput/attempts.py) ends the job with its exit code; else a failed step requeues it."""
    stopped = shlex.quote(str(run_dir / NO_PROGRESS_FILE))
    lines = [
        "#!/bin/bash",
        "# one step: each node's task, with the environment --export names",
        shell_line(["srun", *step]),
        "status=$?",
        f"# primus_no_progress_restarts attempts in a row died without progress: exit {NO_PROGRESS_EXIT}, don't requeue",
        f"if [ -e {stopped} ]; then exit {NO_PROGRESS_EXIT}; fi",
        *(['if [ "$status" -ne 0 ]; then scontrol requeue "$SLURM_JOB_ID"; fi'] if requeue else []),
        'exit "$status"',
    ]
    return "\n".join(lines) + "\n"


def _options(job: Job, settings: LaunchSettings, exported: list[str], cwd: Path) -> list[str]:
    s = settings.slurm
    options = [
        f"--job-name={s.job_name or job.name}",
        f"--nodes={settings.nnodes}",
        "--ntasks-per-node=1",
        f"--chdir={cwd}",
    ]
    for name, value in (
        ("partition", s.partition),
        ("time", s.time),
        ("account", s.account),
        ("qos", s.qos),
        ("gpus-per-node", s.gpus_per_node),
        ("cpus-per-task", s.cpus_per_task),
    ):
        if value is not None:
            options.append(f"--{name}={value}")
    if s.exclusive:
        options.append("--exclusive")
    if s.requeue and s.submit == "sbatch":
        options += ["--requeue", "--open-mode=append"]  # a requeued job's log keeps the earlier attempts' lines
    return [*options, f"--export={_export(exported)}", *s.extra_args]


def _export(names: list[str]) -> str:
    return ",".join(names) or "NONE"
