"""`primus train`: what it prints for each launcher (valid bash, no secret value), what it refuses before
launching, and one real launch: torchrun with two processes training the tiny Megatron GPT on CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.journal_files import journal_lines
from support.readers import read_tb_scalars

from primus.cli.main import main

REPO = Path(__file__).resolve().parents[2]
TINY = str(REPO / "configs" / "megatron" / "tiny_cpu.yaml")
PLANTED = {
    "WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567",
    "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz012345",
    "PRIMUS_PRIVATE_TOKEN": "primus-token-0815",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-key-1234567890",
}
COMMAND = "[primus] command: "


@pytest.fixture
def planted(monkeypatch):
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PRIMUS_PASSTHROUGH_FILE", raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    return PLANTED


def _assert_no_secret(text: str) -> None:
    for name, value in PLANTED.items():
        assert value not in text, name


@pytest.mark.parametrize("flags", [
    [], ["--nproc-per-node", "2"], ["--nnodes", "2", "--rdzv-endpoint", "node001:29400", "--rdzv-id", "run7"],
    ["--launcher", "slurm", "--nnodes", "4", "--gpus-per-node", "8", "--partition", "mi300x", "--time", "04:00:00"],
    ["--launcher", "slurm", "--slurm-submit", "srun", "--nnodes", "2"],
    ["--launcher", "container", "--image", "rocm/primus:test", "--runtime", "podman", "--mount", "/data:/data:ro"],
], ids=["local", "torchrun", "multi-node", "sbatch", "srun", "container"])
def test_dry_run_prints_a_bash_command_without_secrets(planted, tmp_path, capsys, flags):
    code = main(["train", "--config", TINY, "--dry-run", *flags, "disable_wandb=false", f"workspace={tmp_path}"])
    out, err = capsys.readouterr()
    assert code == 0, err
    _assert_no_secret(out + err)
    command = out.split(COMMAND, 1)[1]
    checked = subprocess.run(["bash", "-n"], input=command, text=True, capture_output=True)
    assert checked.returncode == 0, checked.stderr + command
    assert not any(tmp_path.iterdir())  # a dry run creates nothing


def test_missing_credential_stops_before_anything_starts(planted, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY")
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    code = main(["train", "--config", TINY, "--launcher", "container", "--image", "i", "disable_wandb=false",
                 f"workspace={tmp_path}"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "primus train: cannot launch:" in err and "WANDB_API_KEY is not set" in err
    assert not any(tmp_path.iterdir())


def test_a_credential_in_the_launch_block_is_refused_unechoed(planted, tmp_path, capsys):
    exp = tmp_path / "exp.yaml"
    exp.write_text(f"extends: {TINY}\nlaunch:\n  container:\n    image: https://bob:registry-pass-99@reg.example/img\n")
    assert main(["train", "--config", str(exp), "--launcher", "container", "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert "launch.container.image: a credential is written in config" in err
    assert "registry-pass-99" not in out + err


@pytest.mark.slow
def test_torchrun_two_processes_train_end_to_end(tmp_path):
    env = {**os.environ, **PLANTED, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "primus.cli.main", "train", "--config", TINY, "--launcher",
                           "torchrun", "--nproc-per-node", "2", "train_iters=3", "disable_mlflow=true",
                           f"workspace={tmp_path}"],
                          env=env, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    command = output.split(COMMAND, 1)[1].splitlines()[0]
    assert "-m torch.distributed.run --nproc_per_node=2 --standalone" in command
    [run_dir] = [p for p in (tmp_path / "tiny_cpu").iterdir() if p.is_dir()]

    steps = journal_lines(run_dir)
    metrics = {r["s"]: r["d"] for r in steps if r["k"] == "m" and "lm loss" in r["d"]}
    assert sorted(metrics) == [1, 2, 3]
    per_gpu = metrics[3]["perf/tokens_per_sec_per_gpu"]
    assert metrics[3]["perf/tokens_per_sec"] == pytest.approx(2 * per_gpu)  # two ranks trained
    assert [step for step, _ in read_tb_scalars(run_dir / "tensorboard")["lm loss"]] == [1, 2, 3]

    _assert_no_secret(output)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            _assert_no_secret(path.read_bytes().decode(errors="replace"))
