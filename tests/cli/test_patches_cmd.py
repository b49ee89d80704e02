"""`primus patches` lists every registered patch and whether it would apply, as a table or JSON."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys

import pytest

PACKAGING = importlib.metadata.version("packaging")

DECLARATIONS = f'''
from primus.patches import REGISTRY, Patch

def noop(module, handle):
    pass

REGISTRY.register(Patch("demo.applies", "json", "packaging", "=={PACKAGING}", noop, backend="demo"))
REGISTRY.register(Patch("demo.too_new", "json", "packaging", "<1", noop, backend="demo"))
REGISTRY.register(Patch("demo.no_dist", "json", "primus-no-such-distribution", ">=1", noop, backend="demo"))
REGISTRY.register(Patch("demo.off", "json", None, "", noop, backend="demo", condition=lambda ctx: False))
'''


@pytest.fixture
def env(tmp_path):
    """The environment of a child `primus patches` that also loads four demo declarations (platform
    forced, so the CPU patches' condition does not import torch to find out)."""
    (tmp_path / "demo_patch_declarations.py").write_text(DECLARATIONS)
    return os.environ | {"PYTHONPATH": str(tmp_path), "PRIMUS_EXTRA_PATCH_MODULES": "demo_patch_declarations",
                         "PRIMUS_PLATFORM": "cpu"}


def primus(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "primus.cli.main", *args], env=env, capture_output=True, text=True,
                          timeout=60)


def test_json_lists_every_patch_with_why_it_would_not_apply(env):
    done = primus("patches", "--json", env=env | {"PRIMUS_DISABLE_PATCHES": "demo.off"})
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in json.loads(done.stdout) if row["backend"] == "demo"}
    assert rows["demo.applies"] | {"description": ""} == {
        "id": "demo.applies", "backend": "demo", "target": "json", "distribution": "packaging",
        "versions": f"=={PACKAGING}", "installed": PACKAGING, "would_apply": True, "reason": "", "description": ""}
    assert (rows["demo.too_new"]["would_apply"], rows["demo.too_new"]["reason"]) == (
        False, f"packaging {PACKAGING} is outside the supported range '<1'")
    assert (rows["demo.no_dist"]["installed"], rows["demo.no_dist"]["reason"]) == (
        None, "distribution primus-no-such-distribution is not installed")
    assert rows["demo.off"]["reason"].startswith("not selected")


def test_table(env):
    done = primus("patches", env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["ID", "BACKEND", "TARGET", "SUPPORTS", "INSTALLED", "APPLIES"]
    [applies] = [line for line in lines if line.startswith("demo.applies")]
    assert applies.split() == ["demo.applies", "demo", "json", f"packaging=={PACKAGING}", PACKAGING, "yes"]
    [off] = [line for line in lines if line.startswith("demo.off")]
    assert off.endswith("no: condition false")


def test_unknown_id_in_selection_is_a_clear_error(env):
    done = primus("patches", env=env | {"PRIMUS_PATCHES": "demo.aplies"})
    assert done.returncode == 2
    assert "PRIMUS_PATCHES='demo.aplies' names unknown patch ids ['demo.aplies']" in done.stderr
