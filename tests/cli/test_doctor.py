"""`primus doctor`: versions, GPU, and upstream files checked against their wheel RECORD hashes —
on a throwaway distribution we can modify, and on the real installed megatron-core; the installed plugins."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.demo_wheel import install_demo_wheel
from support.plugin_dists import install_patch_plugin, install_sink_plugin
from support.this_primus import this_primus_folder, with_this_primus

from primus.cli.main import main
from primus.cli.plugin_lines import PluginRow, format_plugin_lines
from primus.patches.integrity import verify_distribution

FILES = {"demo_upstream/__init__.py": "VERSION = 1\n", "demo_upstream/training.py": "def train():\n    return 0\n",
         "demo_upstream/data/vocab.txt": "a\nb\n"}


@pytest.fixture
def demo_dist(tmp_path, monkeypatch):
    """A distribution 'demo-upstream' 1.0 installed as a wheel installs it."""
    install_demo_wheel(tmp_path, FILES)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    return tmp_path


def test_clean_distribution(demo_dist, capsys):
    assert main(["doctor", "--dist", "demo-upstream"]) == 0
    out = capsys.readouterr().out
    assert "demo-upstream 1.0: clean (3 files)" in out
    for name in ("python", "Megatron", "TorchTitan", "MaxText", "torch", "wandb", "mlflow", "comet_ml", "comet key",
                 "tensorboard", "wrapt", "gpu"):
        assert any(line.startswith(name) for line in out.splitlines()), name


def test_modified_file_is_reported_exactly(demo_dist, capsys):
    with open(demo_dist / "demo_upstream/training.py", "a") as f:
        f.write("# a local hotfix\n")
    assert main(["doctor", "--dist", "demo-upstream"]) == 1
    out = capsys.readouterr().out
    assert "demo-upstream 1.0: 1 modified, 0 missing of 3 files" in out
    assert [line.strip() for line in out.splitlines() if line.strip().startswith(("modified:", "missing:"))] == [
        "modified: demo_upstream/training.py"]


def test_missing_file_is_reported(demo_dist):
    (demo_dist / "demo_upstream/data/vocab.txt").unlink()
    report = verify_distribution("demo-upstream")
    assert (report.modified, report.missing, report.clean) == ([], ["demo_upstream/data/vocab.txt"], False)


def test_distribution_without_record_cannot_be_verified(demo_dist):
    (demo_dist / "demo_upstream-1.0.dist-info/RECORD").unlink()
    report = verify_distribution("demo-upstream")
    assert not report.clean and "no RECORD" in report.unverifiable


def test_asked_for_distribution_that_is_not_installed_fails(capsys):
    assert main(["doctor", "--dist", "primus-no-such-distribution"]) == 1
    assert "primus-no-such-distribution: not installed" in capsys.readouterr().out


def test_installed_megatron_core_is_clean():
    report = verify_distribution("megatron-core")
    assert report.clean, (report.modified, report.missing)
    assert report.checked > 500  # every hashed file of the wheel, not a sample


def test_progress_is_reported_while_hashing(demo_dist):
    seen = []
    report = verify_distribution("demo-upstream", progress=lambda done, total: seen.append((done, total)),
                                 progress_every_s=0)
    assert report.clean and seen == [(0, 3), (1, 3), (2, 3)]  # before each file: how many of how many are hashed


def test_json_output_for_a_ci_job(demo_dist, capsys):
    with open(demo_dist / "demo_upstream/training.py", "a") as f:
        f.write("# a local hotfix\n")
    assert main(["doctor", "--json", "--dist", "demo-upstream"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["ok"] is False
    assert result["integrity"]["demo-upstream"]["modified"] == ["demo_upstream/training.py"]
    assert result["integrity"]["megatron-core"]["clean"] is True
    assert [u["backend"] for u in result["upstreams"]] == ["Megatron", "TorchTitan", "MaxText", "Megatron-Bridge"]
    assert set(result["distributions"]) == {"torch", "wandb", "mlflow", "comet_ml", "tensorboard", "wrapt"}
    if result["distributions"]["comet_ml"] is None:  # .venv: comet_ml is in .venv-bridge only
        assert result["comet_api_key"] == "not checked (comet_ml is not installed)"


def test_plugins_are_loaded_and_a_broken_or_missing_one_fails(tmp_path):
    """In a child: loading a patch plugin registers its patches for the rest of the process."""
    site = install_sink_plugin(tmp_path / "site")
    install_patch_plugin(site, value="primus_demo_patches.gone")
    env = {**os.environ, "PYTHONPATH": str(site), "PRIMUS_SINKS": "demo,nosuch"}
    done = subprocess.run([sys.executable, "-m", "primus.cli.main", "doctor", "--json"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    # Primus's own patch modules are entry points too, not plugins: only the two installed ones are listed
    assert [(row["group"], row["name"]) for row in report["plugins"]] == [("primus.sinks", "demo"),
                                                                          ("primus.patches", "demo")]
    rows = {row["group"]: row for row in report["plugins"]}
    assert rows["primus.sinks"] == {"group": "primus.sinks", "name": "demo", "value": "primus_demo_tracker:DemoSink",
                                    "distribution": "primus-demo-tracker", "version": "0.3", "problem": ""}
    assert rows["primus.patches"]["problem"].startswith(
        "entry point `demo = primus_demo_patches.gone` (group primus.patches) of distribution primus-demo-patches 0.1 "
        "cannot be loaded (ModuleNotFoundError")
    assert report["declarations_problem"] == rows["primus.patches"]["problem"]  # upstreams need every declaration
    assert report["requested_sinks_problem"].startswith("PRIMUS_SINKS names 'nosuch' but no installed distribution")
    assert not report["ok"]


def test_plugin_lines():
    rows = [PluginRow("primus.sinks", "demo", "m:DemoSink", "primus-demo-tracker", "0.3", "")]
    assert format_plugin_lines(rows, {"PRIMUS_SINKS": "demo"}) == [
        "  primus.sinks    demo = m:DemoSink (primus-demo-tracker 0.3): loads",
        "  PRIMUS_SINKS=demo: PRIMUS_SINKS names 'demo' but no installed distribution has an entry point 'demo' in "
        "group primus.sinks (installed: none): install the plugin into this environment (the image's, for a "
        "container), or remove 'demo' from PRIMUS_SINKS"]
    assert format_plugin_lines([], {}) == ["  none installed"]


BRIDGE_PYTHON = Path(__file__).resolve().parents[2] / ".venv-bridge" / "bin" / "python"
COMET_KEY = "cometkey0123456789abcdefDoNotPrint"


@pytest.mark.parametrize("key", [COMET_KEY, None], ids=["a key", "no key"])
def test_comet_ml_its_version_and_whether_it_finds_a_key_never_the_key(tmp_path, key):
    """On .venv-bridge (the environment with comet_ml), in a home without ~/.comet.config."""
    if not BRIDGE_PYTHON.exists():
        pytest.skip(f"{BRIDGE_PYTHON} is missing: scripts/setup-bridge-venv.sh builds it (with comet_ml)")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **({"COMET_API_KEY": key} if key else {})}
    env = with_this_primus(this_primus_folder(tmp_path), env)
    done = subprocess.run([BRIDGE_PYTHON, "-m", "primus.cli.main", "doctor"], env=env, capture_output=True, text=True,
                          timeout=300)
    lines = {line[:14].strip(): line[14:] for line in done.stdout.splitlines()}
    [installed] = BRIDGE_PYTHON.parents[1].glob("lib/python*/site-packages/comet_ml-*.dist-info")
    assert lines["comet_ml"] == installed.name.removeprefix("comet_ml-").removesuffix(".dist-info"), done.stdout
    if key:
        assert lines["comet key"] == "present (COMET_API_KEY)"
    else:
        assert lines["comet key"].startswith("none (Comet online needs one: export COMET_API_KEY")
    assert COMET_KEY not in done.stdout + done.stderr


def test_which_one_logger_is_present_and_what_a_run_records(capsys, monkeypatch, tmp_path):
    """.venv has the public nv-one-logger (make setup); a legacy ``one_logger`` on the path wins; without either the
    line names the extra."""
    assert main(["doctor", "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["one_logger"]["present"] == "public"
    (tmp_path / "one_logger.py").write_text("class OneLogger: ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    main(["doctor"])
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("one-logger")]
    assert "legacy one_logger" in line
    monkeypatch.setitem(sys.modules, "one_logger", None)
    monkeypatch.setitem(sys.modules, "nv_one_logger", None)
    main(["doctor"])
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("one-logger")]
    assert "primus-tracking[one-logger]" in line
