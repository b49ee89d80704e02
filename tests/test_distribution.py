"""The distribution users add to their own training image: `primus-tracking`, built from this checkout's files.
Its wheel and its sdist hold every file of ``primus/`` (a folder that is not a package once left three modules
out: an image built from the wheel could not track Megatron), its entry points name modules it holds; it depends on
what the plugin itself needs and nothing else (no torch, no upstream trainer, no tracker client), carries the
trackers and each backend's supported upstream range as extras, ships py.typed and its LICENSE, and installs on
Python 3.10. tests/test_installed_package.py trains with it installed; tests/test_extras_resolve.py resolves its
extras beside the images' pins."""

from __future__ import annotations

import configparser
import json
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support.built_package import (
    build_sdist,
    build_wheel,
    copy_of_the_sources,
    sdist_files,
    sh,
    source_files,
    wheel_files,
    wheel_metadata,
)

from primus.upstreams.backends import backends
from primus.upstreams.maxtext import MAXTEXT
from primus.upstreams.megatron import MEGATRON
from primus.upstreams.megatron_bridge import MEGATRON_BRIDGE
from primus.upstreams.torchtitan import TORCHTITAN

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CORE = {"pyyaml", "wrapt", "packaging", "psutil", "pydantic"}
PYDANTIC_OWN = {"pydantic-core", "annotated-types", "typing-extensions", "typing-inspection"}
NEVER_IN_THE_CORE = {"torch", "megatron-core", "torchtitan", "maxtext", "jax", "mlflow", "wandb", "tensorboard",
                     "tensorboardx", "matplotlib", "nvidia-ml-py", "amdsmi"}
OLDEST_PYTHON = Path.home() / ".pyenv" / "versions"  # the core's floor, 3.10, as pyenv installs it
# the sdist's own files beside primus/: what a build from it needs, and the docs its metadata reads
SDIST_TOP = {"setup.cfg", "pyproject.toml", "README.md", "LICENSE", "PKG-INFO"}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> Path:
    return copy_of_the_sources(tmp_path_factory.mktemp("sources"))


@pytest.fixture(scope="module")
def wheel(sources, tmp_path_factory) -> Path:
    return build_wheel(sources, tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def sdist(sources, tmp_path_factory) -> Path:
    return build_sdist(sources, tmp_path_factory.mktemp("sdist"))


def primus_files() -> set[str]:
    return {name for name in source_files() if name.startswith("primus/")}


def test_the_wheel_holds_every_file_of_primus(wheel):
    """Every tracked file under primus/, code and data alike, and nothing else of the checkout's."""
    held = set(wheel_files(wheel))
    missing = sorted(primus_files() - held)
    assert not missing, f"missing from the wheel: {missing}"
    assert sorted(n for n in held if not n.startswith(("primus/", "primus_tracking-"))) == []


def test_the_sdist_holds_every_file_of_primus_and_builds_the_same_wheel(sdist, tmp_path):
    """What pip builds when it installs from the sdist (no wheel for the platform, `--no-binary`) holds the same
    files as the wheel built from the checkout."""
    held = set(sdist_files(sdist))
    missing = sorted(primus_files() - held)
    assert not missing, f"missing from the sdist: {missing}"
    assert SDIST_TOP <= held, sorted(SDIST_TOP - held)
    sh("tar", "-xzf", sdist, "-C", tmp_path)
    [unpacked] = tmp_path.glob("primus_tracking-*")
    rebuilt = build_wheel(unpacked, tmp_path / "wheel")
    assert sorted(n for n in wheel_files(rebuilt) if n.startswith("primus/")) == sorted(primus_files())


def entry_points(wheel: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # entry point names keep their case
    [name] = [n for n in wheel_files(wheel) if n.endswith(".dist-info/entry_points.txt")]
    with zipfile.ZipFile(wheel) as archive:
        parser.read_string(archive.read(name).decode())
    return parser


def module_file(module: str) -> set[str]:
    """Where a module's code sits in a wheel, as a module or as a package."""
    base = module.replace(".", "/")
    return {f"{base}.py", f"{base}/__init__.py"}


def test_the_entry_points_name_modules_the_wheel_holds(wheel):
    """The commands `primus` and `primus-run`, and every backend of the group primus.backends, the same as setup.cfg
    lists; each a module in the wheel, and so is every module a backend names (its patches, entry, schema)."""
    held = set(wheel_files(wheel))
    points = entry_points(wheel)
    scripts = dict(points["console_scripts"])
    assert set(scripts) == {"primus", "primus-run"}
    declared = configparser.ConfigParser(delimiters=("=",))
    declared.optionxform = str  # type: ignore[assignment,method-assign]
    declared.read(ROOT / "setup.cfg")
    own = dict(points["primus.backends"])
    listed = declared["options.entry_points"]["primus.backends"].strip().splitlines()
    assert own == dict(line.split(" = ") for line in listed)
    for name, value in [*scripts.items(), *own.items()]:
        assert module_file(value.split(":")[0]) & held, f"entry point {name} = {value}: module not in the wheel"
    for backend in backends():
        named = [*backend.patch_modules, backend.entry_module, backend.schema_builder, backend.upstream_table_finder]
        for module in (name.split(":")[0] for name in named):
            assert module_file(module) & held, f"backend {backend.name} names {module}, which is not in the wheel"


def test_the_core_needs_only_what_the_plugin_itself_needs(wheel):
    meta = wheel_metadata(wheel)
    requirements = [Requirement(r) for r in meta.get_all("Requires-Dist")]
    core = {r.name.lower() for r in requirements if r.marker is None}
    assert core == CORE
    assert meta["Name"] == "primus-tracking" and meta["Requires-Python"] == ">=3.10"


def test_extras_carry_the_trackers_and_each_backends_supported_range(wheel):
    meta = wheel_metadata(wheel)
    extras: dict[str, set[str]] = {}
    for text in meta.get_all("Requires-Dist"):
        requirement = Requirement(text)
        if requirement.marker is not None:
            extra = str(requirement.marker).split("==")[1].strip(' "')
            extras.setdefault(extra, set()).add(f"{requirement.name}{requirement.specifier}")
    upstreams = (("megatron", MEGATRON), ("torchtitan", TORCHTITAN), ("maxtext", MAXTEXT),
                 ("megatron-bridge", MEGATRON_BRIDGE))
    assert set(meta.get_all("Provides-Extra")) == {"mlflow", "wandb", "tensorboard", "comet", "otlp", "prometheus", "report",
                                                   "gpu", "one-logger", "all",
                                                   *(extra for extra, _ in upstreams)}
    for extra, upstream in upstreams:
        [requirement] = extras[extra]
        assert Requirement(requirement) == Requirement(f"{upstream.distribution}{upstream.supported}"), extra
    assert {Requirement(r).name for r in extras["all"]} == {
        "mlflow", "wandb", "tensorboard", "comet-ml", "matplotlib", "nvidia-ml-py", "amdsmi", "opentelemetry-proto",
        "prometheus-client", "nv-one-logger-core", "nv-one-logger-training-telemetry", "nv-one-logger-otel"}
    for extra in ("mlflow", "wandb", "tensorboard", "comet", "otlp", "prometheus", "report", "gpu", "one-logger"):
        assert extras[extra] <= extras["all"], extra


def test_the_wheel_ships_py_typed_the_license_and_the_presets(wheel):
    names = wheel_files(wheel)
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
