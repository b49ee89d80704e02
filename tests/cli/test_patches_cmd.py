"""`primus patches` lists every registered patch and whether it would apply, as a table or JSON."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import packaging
import pytest

PACKAGING = importlib.metadata.version("packaging")

DECLARATIONS = f'''
from primus.patches import REGISTRY, Patch
from primus.upstreams.release import Upstream

def noop(module, handle):
    pass

PACKAGING = Upstream("packaging", "packaging", "packaging", ">=1")
REGISTRY.register(Patch("demo.applies", "json", PACKAGING, "=={PACKAGING}", noop, backend="demo"))
REGISTRY.register(Patch("demo.other_release", "json", PACKAGING, "<1", noop, backend="demo"))
REGISTRY.register(Patch("demo.too_new", "json", Upstream("packaging", "packaging", "packaging", "<1"), "", noop,
                        backend="demo"))
REGISTRY.register(Patch("demo.no_dist", "json", Upstream("Nothing", "primus-no-such-distribution", "primus_nothing",
                                                         ">=1"), "", noop, backend="demo"))
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
    where = f"wheel {Path(packaging.__file__).parent}"
    assert rows["demo.applies"] | {"description": ""} == {
        "id": "demo.applies", "backend": "demo", "target": "json", "distribution": "packaging",
        "versions": f"=={PACKAGING}", "installed": PACKAGING, "where": where, "would_apply": True, "reason": "",
        "description": ""}
    assert (rows["demo.other_release"]["would_apply"], rows["demo.other_release"]["reason"]) == (
        False, f"written for packaging<1, not {PACKAGING}")
    assert (rows["demo.too_new"]["versions"], rows["demo.too_new"]["reason"]) == (
        "<1", f"packaging {PACKAGING} ({where}) is outside the supported range '<1'")
    assert (rows["demo.no_dist"]["installed"], rows["demo.no_dist"]["where"], rows["demo.no_dist"]["reason"]) == (
        None, "not importable", "primus_nothing is not importable (primus-no-such-distribution is not installed)")
    assert rows["demo.off"]["reason"].startswith("not selected")


def test_table(env):
    done = primus("patches", env=env)
    assert done.returncode == 0, done.stderr
    upstream_lines, table = done.stdout.split("\n\n")
    assert upstream_lines.startswith(f"Megatron   megatron-core {importlib.metadata.version('megatron-core')} (wheel ")
    lines = table.splitlines()
    assert lines[0].split() == ["ID", "BACKEND", "TARGET", "SUPPORTS", "INSTALLED", "APPLIES"]
    [applies] = [line for line in lines if line.startswith("demo.applies")]
    assert applies.split() == ["demo.applies", "demo", "json", f"packaging=={PACKAGING}", PACKAGING, "yes"]
    [off] = [line for line in lines if line.startswith("demo.off")]
    assert off.endswith("no: condition false")


def test_unknown_id_in_selection_is_a_clear_error(env):
    done = primus("patches", env=env | {"PRIMUS_PATCHES": "demo.aplies"})
    assert done.returncode == 2
    assert "PRIMUS_PATCHES='demo.aplies' names unknown patch ids ['demo.aplies']" in done.stderr
