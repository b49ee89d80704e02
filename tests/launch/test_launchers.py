"""The command each launcher builds for one representative experiment, checked by structure (parsed
argv, script lines, the node step's statements), then run: the printed text is valid bash, holds no
secret value, and, executed with stand-ins for Slurm and the container runtime, starts the job with
the allow-listed variables (their real values, passed by name) and nothing else."""

from __future__ import annotations

import json
import shlex
import subprocess

import launch_shims
import pytest
from launch_planted import ALLOWED_SECRETS, EXCLUDED_SECRETS, IMAGE, PLAIN, SECRET_VALUES, UNLISTED_SECRETS

ENTRY = "primus.backends.megatron"
PRIMUS_VARS = {"PRIMUS_CONFIG", "PRIMUS_CONFIG_OVERRIDES", "PRIMUS_RUN_DIR"}
# what a Slurm job exports: the allow-list set in the launching environment, and with the host runtime
ALLOWED = "MLFLOW_TRACKING_PASSWORD,MLFLOW_TRACKING_URI,MY_TEAM_SETTING,NCCL_IB_HCA,PRIMUS_PRIVATE_TOKEN,WANDB_API_KEY"
WITH_HOST = ("HOME,LANG,MLFLOW_TRACKING_PASSWORD,MLFLOW_TRACKING_URI,MY_TEAM_SETTING,NCCL_IB_HCA,PATH,"
             "PRIMUS_PRIVATE_TOKEN,WANDB_API_KEY")


def _overrides(run_dir) -> list[str]:
    """What the launcher adds for a Megatron module; the run directory reaches it as every backend's, PRIMUS_RUN_DIR."""
    return ["modules.pre_trainer.overrides.mlflow_experiment_name=llama_test"]


def _assert_job_env(env: dict[str, str], experiment, run_dir) -> None:
    assert env["PRIMUS_CONFIG"] == str(experiment)
    assert json.loads(env["PRIMUS_CONFIG_OVERRIDES"]) == _overrides(run_dir)
    assert env["PRIMUS_RUN_DIR"] == str(run_dir)


def test_local_runs_one_process_or_torchrun_on_this_node(experiment, environ, make_plan):
    one = make_plan(experiment, environ, {"launcher": "local", "nnodes": 1})
    assert one.argv == ["/opt/venv/bin/python", "-m", ENTRY]
    assert one.run_dir.parent == experiment.parent.parent / "ws" / "llama_test"
    _assert_job_env(one.shown_env, experiment, one.run_dir)
    assert one.env == {**environ, **one.shown_env}  # a local child inherits this shell, as any command does

    two = make_plan(experiment, environ, {"launcher": "local", "nnodes": 1, "nproc_per_node": 2})
    forced = make_plan(experiment, environ, {"launcher": "torchrun", "nnodes": 1, "nproc_per_node": 1})
    for plan, nproc in ((two, 2), (forced, 1)):
        assert plan.argv == ["/opt/venv/bin/python", "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
                             "--standalone", "--nnodes=1", "-m", ENTRY]


def test_multi_node_torchrun_static_or_c10d_shares_one_run_directory(experiment, environ, make_plan):
    flags = {"launcher": "torchrun", "nnodes": 2, "nproc_per_node": 4, "rdzv_endpoint": "node001:29400",
             "rdzv_id": "llama-0412"}
    c10d = make_plan(experiment, environ, flags)
    static = make_plan(experiment, environ, {**flags, "node_rank": 1})
    assert c10d.argv[4:-2] == ["--nnodes=2", "--rdzv_backend=c10d", "--rdzv_endpoint=node001:29400",
                               "--rdzv_id=llama-0412"]
    assert static.argv[4:-2] == ["--nnodes=2", "--node_rank=1", "--master_addr=node001", "--master_port=29400"]
    # every node computes the same run directory, named by the job id rather than its own clock
    assert c10d.run_dir == static.run_dir == experiment.parent.parent / "ws" / "llama_test" / "llama-0412"


def test_sbatch_submits_one_torchrun_task_per_node(experiment, environ, make_plan, tmp_path):
    plan = make_plan(experiment, environ)
    logs = plan.run_dir / "logs"
    assert plan.argv == ["sbatch", "--job-name=llama_test", "--nodes=2", "--ntasks-per-node=1", f"--chdir={tmp_path}",
                         "--partition=mi300x", "--time=02:00:00", "--gpus-per-node=8",
                         f"--export={WITH_HOST}", f"--output={logs}/slurm-%j.out"]
    assert plan.detached and plan.make_dirs == (logs,)
    shebang, comment, step, *after = plan.stdin.splitlines()
    assert (shebang, comment[0]) == ("#!/bin/bash", "#")
    stopped = plan.run_dir / "stopped-no-progress"
    assert after == ["status=$?", after[1], f"if [ -e {stopped} ]; then exit 93; fi", 'exit "$status"']  # no requeue
    words = shlex.split(step)
    assert words[:5] == ["srun", "--export=ALL", "--kill-on-bad-exit=1", "bash", "-c"] and len(words) == 6
    _assert_node_step(words[5], experiment, plan.run_dir, nproc=8)


def test_srun_runs_the_same_step_attached(experiment, environ, make_plan):
    plan = make_plan(experiment, environ, {"slurm.submit": "srun"})
    words = plan.argv
    assert words[:4] == ["srun", "--job-name=llama_test", "--nodes=2", "--ntasks-per-node=1"]
    assert words[-4:-1] == ["--kill-on-bad-exit=1", "bash", "-c"]
    assert not plan.detached and plan.stdin is None
    _assert_node_step(words[-1], experiment, plan.run_dir, nproc=8)


def _assert_node_step(script: str, experiment, run_dir, nproc: int, python: str = "/opt/venv/bin/python",
                      first_host: str = 'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)'):
    lines = script.split("; ")
    statements = [shlex.split(s) for s in lines]
    exports = dict(s[1].split("=", 1) for s in statements[:3])
    assert [s[0] for s in statements[:3]] == ["export"] * 3
    _assert_job_env(exports, experiment, run_dir)
    assert lines[3] == first_host
    assert statements[4] == ["exec", python, "-m", "torch.distributed.run",
                             f"--nproc_per_node={nproc}", "--nnodes=$SLURM_NNODES", "--node_rank=$SLURM_NODEID",
                             "--master_addr=$MASTER_ADDR", "--master_port=29500", "-m", ENTRY]
    assert len(statements) == 5


def test_container_mounts_own_paths_and_passes_variables_by_name(experiment, environ, make_plan, tmp_path):
    plan = make_plan(experiment, environ, {"launcher": "container", "nnodes": 1, "container.runtime": "podman",
                                           "container.image": IMAGE})
    argv = list(plan.argv)
    assert argv[:5] == ["podman", "run", "--rm", "--ipc=host", "--network=host"]
    options: dict[str, list[str]] = {}
    rest = argv[5:]
    while rest[0] in ("-v", "-w", "-e"):
        options.setdefault(rest[0], []).append(rest[1])
        rest = rest[2:]
    assert rest == ["rocm/primus:test", "python", "-m", ENTRY]
    # the working directory holds the experiment and the run directory: one mount, plus the user's
    assert options["-v"] == [f"{tmp_path}:{tmp_path}", f"{tmp_path / 'data'}:/data:ro"]
    assert options["-w"] == [str(tmp_path)]
    given = dict(e.split("=", 1) for e in options["-e"] if "=" in e)
    assert set(given) == PRIMUS_VARS
    _assert_job_env(given, experiment, plan.run_dir)
    by_name = [e for e in options["-e"] if "=" not in e]
    assert by_name == sorted({*ALLOWED_SECRETS, "NCCL_IB_HCA", "MY_TEAM_SETTING"})
    assert plan.make_dirs == (plan.run_dir,)


def test_pyxis_runs_each_node_step_in_the_image(experiment, environ, make_plan, tmp_path):
    flags = {"container.image": IMAGE, "slurm.cpus_per_task": 96, "slurm.exclusive": True, "slurm.qos": "high",
             "slurm.account": "ml"}
    plan = make_plan(experiment, environ, flags)
    logs = plan.run_dir / "logs"
    # the batch script runs on the host, with the host runtime; the step in the image gets the allow-list only
    assert plan.argv == ["sbatch", "--job-name=llama_test", "--nodes=2", "--ntasks-per-node=1", f"--chdir={tmp_path}",
                         "--partition=mi300x", "--time=02:00:00", "--account=ml", "--qos=high", "--gpus-per-node=8",
                         "--cpus-per-task=96", "--exclusive", f"--export={WITH_HOST}", f"--output={logs}/slurm-%j.out"]
    _, _, step, *_ = plan.stdin.splitlines()
    words = shlex.split(step)
    assert words[:-1] == ["srun", f"--export={ALLOWED}", "--cpus-per-task=96", "--kill-on-bad-exit=1",
                          f"--container-image={IMAGE}",
                          f"--container-mounts={tmp_path}:{tmp_path},{tmp_path / 'data'}:/data:ro",
                          f"--container-workdir={tmp_path}", "bash", "-c"]
    _assert_node_step(words[-1], experiment, plan.run_dir, nproc=8, python="python",
                      first_host="MASTER_ADDR=$(python -m primus.launch.first_host) || exit 1")


def test_apptainer_starts_the_image_on_each_node_with_the_gpus(experiment, environ, make_plan, tmp_path):
    flags = {"container.image": "/shared/primus.sif", "container.runtime": "apptainer", "container.gpu_vendor": "amd"}
    plan = make_plan(experiment, environ, {**flags, "slurm.submit": "srun"})
    assert plan.make_dirs == (plan.run_dir,)  # a bind source must exist
    script = plan.argv[-1]
    statements = [shlex.split(line) for line in script.split("; ")]
    assert statements[3] == ["MASTER_ADDR=$(scontrol", "show", "hostnames", "$SLURM_JOB_NODELIST", "|", "head",
                             "-n", "1)"]  # on the node, where scontrol is
    # the host runtime stays out of the image (PATH and HOME apptainer needs, and replaces inside)
    assert statements[4][:15] == ["exec", "env", "-u", "LANG", "apptainer", "exec", "--rocm",
                                  "--bind", f"{tmp_path}:{tmp_path}", "--bind", f"{tmp_path / 'data'}:/data:ro",
                                  "--pwd", str(tmp_path), "/shared/primus.sif", "python"]
    nvidia = make_plan(experiment, environ, {**flags, "container.gpu_vendor": "nvidia"})
    assert " apptainer exec --nv --bind " in nvidia.stdin


LAUNCHES = {
    "local": {"launcher": "local", "nnodes": 1},
    "torchrun": {"launcher": "torchrun", "nnodes": 1, "nproc_per_node": 2},
    "sbatch": {},
    "srun": {"slurm.submit": "srun"},
    "container": {"launcher": "container", "nnodes": 1, "container.image": IMAGE},
    "pyxis sbatch": {"container.image": IMAGE, "slurm.cpus_per_task": 8, "slurm.exclusive": True},
    "pyxis srun": {"container.image": IMAGE, "slurm.submit": "srun"},
    "apptainer sbatch": {"container.image": IMAGE, "container.runtime": "apptainer", "container.gpu_vendor": "nvidia"},
    "apptainer srun": {"container.image": IMAGE, "container.runtime": "apptainer", "container.gpu_vendor": "amd",
                       "slurm.submit": "srun"},
}
IN_IMAGE = [name for name in LAUNCHES if name.startswith(("container", "pyxis", "apptainer"))]


@pytest.mark.parametrize("launch", LAUNCHES)
def test_printed_command_is_bash_without_secret_values(experiment, environ, make_plan, launch):
    plan = make_plan(experiment, environ, LAUNCHES[launch])
    text = plan.shell()
    checked = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True)
    assert checked.returncode == 0, checked.stderr + text
    written = "\n".join([text, *plan.argv, plan.stdin or "", *plan.shown_env.values()])
    for value in SECRET_VALUES:
        assert value not in written


@pytest.mark.parametrize("launch", [name for name in LAUNCHES if name not in ("local", "torchrun")])
def test_printed_command_starts_the_job_with_allow_listed_values(experiment, environ, make_plan, tmp_path, launch):
    shims = launch_shims.install(tmp_path / "bin")
    probe = launch_shims.write_probe(tmp_path / "probe", tmp_path / "probe.jsonl")
    environ = {**environ, "PATH": f"{shims}:{environ['PATH']}"}
    flags = {**LAUNCHES[launch], "container.python": str(probe)}
    plan = make_plan(experiment, environ, flags, python=str(probe))

    done = subprocess.run(["bash", "-c", plan.shell()], env=environ, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    [job] = launch_shims.read_probe(tmp_path / "probe.jsonl")
    env = job["env"]
    for name, value in {**ALLOWED_SECRETS, **PLAIN}.items():
        assert env[name] == value, name  # the real value, read by name from the launching environment
    for name in (*EXCLUDED_SECRETS, *UNLISTED_SECRETS):
        assert name not in env
    _assert_job_env(env, experiment, plan.run_dir)
    calls = launch_shims.read_calls(shims)
    for call in calls:  # what reached the tools' command lines: names, never a value
        for value in SECRET_VALUES:
            assert value not in " ".join(call["argv"]), call["tool"]
    if launch in IN_IMAGE:
        assert env["CONTAINER_IMAGE"] == IMAGE
        assert "LANG" not in env  # the host runtime stays outside the image
    if launch.startswith("apptainer"):
        assert env["CONTAINER_GPU"] == {"nvidia": "--nv", "amd": "--rocm"}[LAUNCHES[launch]["container.gpu_vendor"]]
    if launch == "container":
        assert job["argv"] == ["-m", ENTRY]
    else:  # Slurm's rank and first host reached torchrun's arguments through the node step
        assert job["argv"][:6] == ["-m", "torch.distributed.run", "--nproc_per_node=8", "--nnodes=1",
                                   "--node_rank=0", "--master_addr=localhost"]
    if launch == "pyxis sbatch":  # said again to the step: srun in a batch job may not inherit it
        [step] = [c for c in calls if c["tool"] == "srun"]
        assert "--cpus-per-task=8" in step["argv"]


@pytest.mark.parametrize(("step_exit", "stopped", "job_exit", "requeued"),
                         [(1, False, 1, True), (0, False, 0, False), (1, True, 93, False)],
                         ids=["failed: requeued", "finished", "no_progress: exit 93, not requeued"])
def test_the_batch_script_requeues_a_failed_step_unless_a_crash_loop_stopped_it(
        experiment, environ, make_plan, tmp_path, step_exit, stopped, job_exit, requeued):
    """The script's own logic, its srun and scontrol stand-ins on PATH; the real Slurm runs it in
    tests/launch/test_slurm_cluster.py."""
    plan = make_plan(experiment, environ, {"slurm.requeue": True})
    assert {"--requeue", "--open-mode=append"} <= set(plan.argv)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(f"#!/bin/sh\nexit {step_exit}\n")
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\necho \"$@\" >> {bin_dir / 'scontrol.calls'}\n")
    for tool in ("srun", "scontrol"):
        (bin_dir / tool).chmod(0o755)
    plan.run_dir.mkdir(parents=True)
    if stopped:
        (plan.run_dir / "stopped-no-progress").write_text("3 attempts in a row ...\n")
    done = subprocess.run(["bash", "-s"], input=plan.stdin, text=True,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_JOB_ID": "77"})
    assert done.returncode == job_exit
    calls = bin_dir / "scontrol.calls"
    assert (calls.read_text() if calls.exists() else "") == ("requeue 77\n" if requeued else "")
