"""The extras resolve where users install them: in an image of each training stack (a fresh environment seeing the
stack's packages: support/built_package.py), ``pip install --dry-run`` of the wheel with the extras asks the package
index for what the image lacks and must move none of the image's own packages — the pins a user's image has (the
Megatron-Bridge image's wandb 0.29.0 among them). The README's install line is resolved as written.

Every tracker, report and GPU extra is part of ``all`` (tests/test_distribution.py), so ``all`` resolving beside an
image's pins means each of them does; a failure is narrowed to the extras that fail alone. Megatron-Bridge's own
declared dependencies include CUDA builds that need torch to build their metadata (transformer-engine,
fast-hadamard-transform), absent from this CPU image of it: its extra is checked as the image's megatron-bridge
satisfying the extra's range."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support.built_package import REPO, STACKS, build_wheel, copy_of_the_sources, image, sh, wheel_metadata

pytestmark = pytest.mark.slow

README_INSTALL = re.compile(r'pip install "primus-tracking\[([a-z,-]+)\]"')
# the extras each image is resolved with: the tracker extras (in all) and its trainers' own
EXTRAS = {"torch": ("all", "megatron", "torchtitan"), "maxtext": ("all", "maxtext"), "bridge": ("all",)}
# the Megatron-Bridge image's W&B: the release megatron-bridge 0.6 pins (`make setup` puts it in .venv/tracker-floors)
BRIDGE_WANDB = STACKS["torch"] / "tracker-floors"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(copy_of_the_sources(tmp_path_factory.mktemp("sources")), tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> dict[str, Path]:
    return {stack: image(tmp_path_factory.mktemp(f"image-{stack}") / "venv", stack,
                         before=(BRIDGE_WANDB,) if stack == "bridge" else ())
            for stack in EXTRAS}


def installed(venv: Path) -> dict[str, str]:
    listed = sh(venv / "bin" / "python", "-m", "pip", "list", "--format", "json", "--disable-pip-version-check")
    return {canonicalize_name(p["name"]): p["version"] for p in json.loads(listed.stdout)}


def dry_run(venv: Path, wheel: Path, extras: str) -> tuple[str | None, list[str]]:
    """(pip's complaint or None, what it would install) for the wheel with ``extras`` in the image ``venv``."""
    done = subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "--dry-run", "--quiet", "--disable-pip-version-check",
         "--report", "-", f"primus-tracking[{extras}] @ {wheel.as_uri()}"],
        capture_output=True, text=True, timeout=600, cwd=venv)
    if done.returncode != 0:
        return done.stderr[-3000:], []
    return None, [f"{item['metadata']['name']}=={item['metadata']['version']}"
                  for item in json.loads(done.stdout)["install"]]


def problems(venv: Path, wheel: Path, extras: str) -> list[str]:
    """What keeps ``extras`` from installing beside the image's packages: pip failing, or a package of the image
    it would replace (this distribution itself aside: the image may hold another build of it)."""
    complaint, install = dry_run(venv, wheel, extras)
    if complaint is not None:
        return [f"[{extras}]: pip failed: {complaint}"]
    have = installed(venv)
    pairs = [requirement.split("==") for requirement in install]
    return [f"[{extras}] would replace the image's {name} {have[canonicalize_name(name)]} with {version}"
            for name, version in pairs if canonicalize_name(name) in have.keys() - {"primus-tracking"}]


def narrowed(venv: Path, wheel: Path, extras: tuple[str, ...]) -> list[str]:
    """Problems of the extras together; when there are some, those of each extra alone too, naming it."""
    together = problems(venv, wheel, ",".join(extras))
    if not together or len(extras) == 1:
        return together
    return together + [problem for extra in extras for problem in problems(venv, wheel, extra)]


@pytest.mark.parametrize("stack", EXTRAS)
def test_the_extras_resolve_beside_the_images_own_packages(stack, images, wheel):
    assert narrowed(images[stack], wheel, EXTRAS[stack]) == []


def test_the_bridge_image_keeps_its_wandb_and_holds_a_megatron_bridge_the_extra_accepts(images, wheel):
    have = installed(images["bridge"])
    assert have["wandb"] == "0.29.0"
    [extra] = [Requirement(r) for r in wheel_metadata(wheel).get_all("Requires-Dist") if 'extra == "megatron-bridge"' in r]
    assert extra.specifier.contains(have["megatron-bridge"]), (extra, have["megatron-bridge"])


def test_the_readmes_install_line_resolves_as_written_in_the_image_it_names(images, wheel):
    """The README's Dockerfile starts from a Megatron image: the torch stack's."""
    lines = README_INSTALL.findall((REPO / "README.md").read_text())
    assert lines, "the README has no `pip install \"primus-tracking[...]\"` line"
    for extras in lines:
        assert problems(images["torch"], wheel, extras) == []
