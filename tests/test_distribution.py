"""The distribution users add to their own training image: `primus-tracking`, whose wheel depends on what the
plugin itself needs and nothing else (no torch, no upstream trainer, no tracker client), carries the trackers
and each backend's supported upstream range as extras, ships py.typed and its LICENSE, installs on Python 3.10,
and — installed into a fresh environment that sees a training stack, as a container recipe does — runs an
upstream command under `primus-run`, tracked."""

from __future__ import annotations

import configparser
import json
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support.launch import start, wait_or_kill

from primus.upstreams.maxtext import MAXTEXT
from primus.upstreams.megatron import MEGATRON
from primus.backends.torchtitan.assets import ASSETS_ENV
from primus.upstreams.torchtitan import TORCHTITAN

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CORE = {"pyyaml", "wrapt", "packaging", "psutil", "pydantic"}
PYDANTIC_OWN = {"pydantic-core", "annotated-types", "typing-extensions", "typing-inspection"}
NEVER_IN_THE_CORE = {"torch", "megatron-core", "torchtitan", "maxtext", "jax", "mlflow", "wandb", "tensorboard",
                     "tensorboardx", "matplotlib", "nvidia-ml-py", "amdsmi"}
OLDEST_PYTHON = Path.home() / ".pyenv" / "versions"  # the core's floor, 3.10, as pyenv installs it


def sh(*command: str | Path, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout, **kwargs)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    sh(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", out, ROOT)
    [built] = out.glob("primus_tracking-*.whl")
    return built


def metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return Parser().parsestr(archive.read(name).decode()), archive.namelist()


def test_the_core_needs_only_what_the_plugin_itself_needs(wheel):
    meta, _ = metadata(wheel)
    requirements = [Requirement(r) for r in meta.get_all("Requires-Dist")]
    core = {r.name.lower() for r in requirements if r.marker is None}
    assert core == CORE
    assert meta["Name"] == "primus-tracking" and meta["Requires-Python"] == ">=3.10"


def test_extras_carry_the_trackers_and_each_backends_supported_range(wheel):
    meta, _ = metadata(wheel)
    extras: dict[str, set[str]] = {}
    for text in meta.get_all("Requires-Dist"):
        requirement = Requirement(text)
        if requirement.marker is not None:
            extra = str(requirement.marker).split("==")[1].strip(' "')
            extras.setdefault(extra, set()).add(f"{requirement.name}{requirement.specifier}")
    for extra, upstream in (("megatron", MEGATRON), ("torchtitan", TORCHTITAN), ("maxtext", MAXTEXT)):
        [requirement] = extras[extra]
        assert Requirement(requirement) == Requirement(f"{upstream.distribution}{upstream.supported}"), extra
    assert {Requirement(r).name for r in extras["all"]} == {"mlflow", "wandb", "tensorboard", "matplotlib",
                                                             "nvidia-ml-py", "amdsmi"}
    for extra in ("mlflow", "wandb", "tensorboard", "report", "gpu"):
        assert extras[extra] <= extras["all"], extra


def test_the_wheel_ships_py_typed_the_license_and_the_presets(wheel):
    _, names = metadata(wheel)
    assert "primus/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "primus/configs/modules/megatron/pre_trainer.yaml" in names and "primus/bootstrap/sitecustomize.py" in names


def test_installing_the_wheel_on_the_oldest_python_pulls_in_only_the_core(wheel, tmp_path):
    """What `pip install primus-tracking` would install into a bare Python 3.10: the core packages (and
    pydantic's own), itself, nothing else. Then the plugin's own commands run there, without any trainer."""
    [python310] = sorted(OLDEST_PYTHON.glob("3.10*/bin/python3.10"))[-1:]
    venv = tmp_path / "py310"
    sh(python310, "-m", "venv", venv)
    pip = [venv / "bin" / "python", "-m", "pip", "--disable-pip-version-check"]
    report = sh(*pip, "install", "--quiet", "--dry-run", "--ignore-installed", "--report", "-", wheel).stdout
    installed = {canonicalize_name(item["metadata"]["name"]) for item in json.loads(report)["install"]}
    assert installed == CORE | PYDANTIC_OWN | {"primus-tracking"}
    assert not installed & NEVER_IN_THE_CORE
    sh(*pip, "install", "--quiet", wheel)
    done = sh(venv / "bin" / "primus", "config", "validate", "--config", ROOT / "configs" / "megatron" / "tiny_cpu.yaml",
              cwd=tmp_path)
    assert done.returncode == 0
    patches = sh(venv / "bin" / "primus", "patches", cwd=tmp_path).stdout
    assert "Megatron   not installed (supported: megatron-core>=0.17,<0.20)" in patches


def test_installed_beside_a_training_stack_primus_run_tracks_an_upstream_command(wheel, tmp_path):
    """A fresh environment whose site-packages also sees the pinned stack (torch, torchtitan, the trackers: a
    container image's), the wheel installed with nothing else: `primus-run python -m torch.distributed.run -m
    torchtitan.train` tracks every step to TensorBoard."""
    venv = tmp_path / "image"
    sh(sys.executable, "-m", "venv", venv)
    [site] = (venv / "lib").glob("python3.*/site-packages")
    (site / "training_stack.pth").write_text(next(p for p in sys.path if p.endswith("site-packages")) + "\n")
    python = venv / "bin" / "python"
    sh(python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--ignore-installed", wheel)
    sh(python, "-m", "pip", "check")  # the core's dependencies are all there: nothing else was needed
    imported = sh(python, "-c", "import primus; print(primus.__file__)", cwd=tmp_path).stdout.strip()
    assert imported.startswith(str(site)), imported

    dump = tmp_path / "dump"
    command = [venv / "bin" / "primus-run", python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1",
               "-m", "torchtitan.train",
               "--module", "primus.backends.torchtitan", "--config", "llama3_debugmodel_cpu", "--training.steps", "3",
               "--dump-folder", dump, "--metrics.enable_tensorboard"]
    process = start([str(c) for c in command], tmp_path, tmp_path / "run.log",
                    {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                     ASSETS_ENV: str(tmp_path / "assets")})
    code = wait_or_kill(process, 300)
    log = (tmp_path / "run.log").read_text()
    assert code == 0, log[-4000:]
    from support.readers import read_tb_scalars

    [logdir] = {p.parent for p in dump.rglob("events.out.tfevents.*")}
    assert [step for step, _ in read_tb_scalars(logdir)["loss_metrics/global_avg_loss"]] == [1, 2, 3]
