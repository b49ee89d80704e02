"""What users install is what is tested: the wheel built from this checkout, installed (not editable) into an image
of each training stack (a fresh environment seeing the stack's packages, not this checkout: support/built_package.py),
runs `primus doctor` and one tracked training per backend through the user's own command — Megatron's
``pretrain_gpt.py`` and Megatron-Bridge's ``pretrain()`` script under ``primus-run torchrun``, ``torchrun -m
torchtitan.train`` and MaxText's trainer under ``primus-run`` — each read back from the session's MLflow server: every
step once, the run FINISHED. A backend whose run fails is named with its log."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.built_package import REPO, build_wheel, copy_of_the_sources, image, install, sh
from support.launch import EVERY_STEP_EXIT_DEADLINE_S, FinishedRun, start, tracker_shortfalls, wait_or_kill
from support.readers import mlflow_history

from primus.backends.maxtext.upstream_argv import with_experiment
from primus.backends.torchtitan.assets import ASSETS_ENV
from primus.config import load_experiment
from primus.tracking.measure.names import mlflow_key

pytestmark = pytest.mark.slow

STEPS = 3
TIMEOUT_S = 400.0
TESTS = REPO / "tests"
MEGATRON_SCRIPT = TESTS / "support" / "user_scripts" / "megatron_pretrain_gpt.py"
BRIDGE_SCRIPT = TESTS / "backends" / "megatron_bridge" / "tiny_pretrain.py"
TINY_GPT = (  # the tiny GPT of tests/backends/megatron, as a user's upstream arguments
    "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --ffn-hidden-size 256 --seq-length 128 "
    "--max-position-embeddings 128 --micro-batch-size 2 --global-batch-size 8 --log-interval 1 --eval-iters 0 "
    "--eval-interval 1000 --lr 1e-3 --lr-warmup-iters 1 --mock-data --tokenizer-type NullTokenizer --vocab-size 1024 "
    "--distributed-backend gloo --use-cpu-initialization --no-gradient-accumulation-fusion --transformer-impl local "
    "--no-persist-layer-norm"
).split()
BRIDGE_EXPERIMENT = """modules:
  bridge:
    framework: megatron_bridge
    config: pre_trainer.yaml
    overrides: {recipe: vanilla_gpt_pretrain_config, primus_exit_deadline: %s}
"""


@dataclass(frozen=True)
class Backend:
    stack: str  # the image it runs in (support.built_package.STACKS)
    loss: str  # the loss as upstream names it
    steps: list[int]  # the steps upstream logs it at


BACKENDS = {
    "megatron": Backend("torch", "lm loss", list(range(1, STEPS + 1))),
    "torchtitan": Backend("torch", "loss_metrics/global_avg_loss", list(range(1, STEPS + 1))),
    "maxtext": Backend("maxtext", "learning/loss", list(range(STEPS))),
    "megatron_bridge": Backend("bridge", "lm loss", list(range(1, STEPS + 1))),
}


# the trainers each image holds, as `primus doctor` names them
TRAINERS = {"torch": ("Megatron", "TorchTitan"), "maxtext": ("MaxText",), "bridge": ("Megatron", "Megatron-Bridge")}


def experiment(backend: str) -> str:
    return f"installed-wheel-{backend}"


def maxtext_tiny_cpu_args() -> list[str]:
    """The tiny CPU MaxText experiment as MaxText's own ``key=value`` arguments."""
    module = load_experiment(REPO / "configs" / "maxtext" / "tiny_cpu.yaml").modules["pre_trainer"]
    return with_experiment([], {k: v for k, v in module.params.items() if k not in module.primus_keys}, None)


def command(backend: str, venv: Path, workdir: Path) -> list[str]:
    """The user's own command, ``primus-run`` in front, with MLflow on in the backend's own terms."""
    primus_run, python = str(venv / "bin" / "primus-run"), str(venv / "bin" / "python")
    deadline = str(EVERY_STEP_EXIT_DEADLINE_S)
    torchrun = [python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1"]
    if backend == "megatron":
        return [primus_run, *torchrun, str(MEGATRON_SCRIPT), *TINY_GPT, "--train-iters", str(STEPS),
                "--disable-mlflow", "false", "--mlflow-experiment-name", experiment(backend), "--primus-exit-deadline", deadline]
    if backend == "torchtitan":
        return [primus_run, *torchrun, "-m", "torchtitan.train", "--module", "primus.backends.torchtitan",
                "--config", "llama3_debugmodel_cpu", "--training.steps", str(STEPS), "--dump-folder",
                str(workdir / "dump"), "--metrics.enable_mlflow", "--metrics.mlflow_experiment_name", experiment(backend),
                "--metrics.primus_exit_deadline", deadline]
    if backend == "maxtext":
        return [primus_run, python, "-m", "maxtext.trainers.pre_train.train", *maxtext_tiny_cpu_args(),
                f"steps={STEPS}", "enable_tensorboard=false", "enable_mlflow=true",
                f"mlflow_experiment_name={experiment(backend)}", f"primus_exit_deadline={deadline}", "run_name=installed",
                "base_output_directory=out"]
    # Bridge's logger has no key for the exit deadline: a Primus experiment gives it
    (workdir / "experiment.yaml").write_text(BRIDGE_EXPERIMENT % deadline)
    return [primus_run, "--config", str(workdir / "experiment.yaml"), *torchrun, str(BRIDGE_SCRIPT)]


def environment(backend: str, workdir: Path, mlflow_uri: str) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin", "MLFLOW_TRACKING_URI": mlflow_uri, "PRIMUS_OUTPUT_ROOT": str(workdir / "primus"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    if backend == "torchtitan":
        env[ASSETS_ENV] = str(workdir / "assets")
    if backend == "maxtext":
        env["JAX_PLATFORMS"] = "cpu"
    if backend == "megatron_bridge":
        env |= {"TINY_ITERATIONS": str(STEPS), "TINY_MLFLOW_EXPERIMENT": experiment(backend),
                "TINY_MLFLOW_RUN_NAME": "installed", "TINY_MLFLOW_TRACKING_URI": mlflow_uri, "PYTHONWARNINGS": "ignore"}
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    sources = copy_of_the_sources(tmp_path_factory.mktemp("sources"))
    return build_wheel(sources, tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def images(wheel, tmp_path_factory) -> dict[str, Path]:
    """Each stack's image with the wheel installed in it."""
    built = {}
    for stack in ("torch", "maxtext", "bridge"):
        venv = image(tmp_path_factory.mktemp(f"image-{stack}") / "venv", stack)
        install(venv, wheel)
        built[stack] = venv
    return built


@pytest.fixture(scope="module")
def runs(images, mlflow_server, tmp_path_factory) -> dict[str, FinishedRun]:
    """One training per backend, started together (most of each is imports and waiting on one core), each in a
    folder of its own outside the checkout."""
    started, processes = time.monotonic(), {}
    for backend, spec in BACKENDS.items():
        workdir = tmp_path_factory.mktemp(backend)
        processes[backend] = (workdir, start(command(backend, images[spec.stack], workdir), workdir,
                                             workdir / "run.log", environment(backend, workdir, mlflow_server.uri)))
    finished = {}
    for backend, (workdir, process) in processes.items():
        code = wait_or_kill(process, max(1.0, TIMEOUT_S - (time.monotonic() - started)))
        finished[backend] = FinishedRun(code, workdir / "run.log", time.monotonic() - started)
    return finished


def test_in_each_image_primus_doctor_finds_its_trainers_supported_and_nothing_wrong(images, tmp_path):
    """`primus doctor` exits 0 (1 on any problem) and names each trainer of the stack, found as its wheel, in the
    supported range, with the patches that apply to its release."""
    for stack, venv in images.items():
        report = sh(venv / "bin" / "primus", "doctor", cwd=tmp_path).stdout
        for trainer in TRAINERS[stack]:
            line = rf"^{trainer} +\S+ \S+ \(wheel .*\); supported [^;]+; [1-9]\d* of \d+ patches apply here$"
            assert re.search(line, report, re.MULTILINE), f"{stack} image, {trainer}:\n{report}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_users_own_command_tracks_every_step_once(backend, runs, mlflow_client):
    run, spec = runs[backend], BACKENDS[backend]
    assert run.returncode == 0, f"{backend} with the installed wheel: {run.explain()}"
    assert "failed to install" not in run.output, f"{backend}: a patch did not install: {run.explain()}"
    assert tracker_shortfalls(run.output) == [], run.explain()
    found = mlflow_client.get_experiment_by_name(experiment(backend))
    assert found is not None, f"{backend}: no MLflow experiment {experiment(backend)}: {run.explain()}"
    [mlrun] = mlflow_client.search_runs([found.experiment_id])
    assert mlrun.info.status == "FINISHED", run.explain()
    assert [step for step, _ in mlflow_history(mlflow_client, mlrun.info.run_id, mlflow_key(spec.loss))] == spec.steps
