"""Every supported megatron-core release, not only the pinned one: each other release of
third_party/upstream-matrix.txt (its wheel, installed --no-deps beside the pinned stack) trains through the
drop-in pretrain_gpt.py with every tracker on, and each sink holds every step once, from one writer, the MLflow
run FINISHED and tagged with the release it ran. A source checkout is judged by its own package_info: the
pinned wheel's files claiming the next minor release (0.20.0) are refused before training, naming the version and
the tree, unless PRIMUS_UPSTREAM_CHECK=warn lets it be tried (trained, said once, tagged); a checkout whose patched
function changed its signature is refused in both modes, naming the function and the patch; a checkout of a
supported release (0.18.2's files without their dist-info) trains."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from megatron_tracking_runs import RUNS, assert_sinks, mlflow_runs, on_release, result, start
from support.upstreams import releases, upstream_path

pytestmark = pytest.mark.slow

RELEASES = releases("megatron-core")
INSTALLED_MEGATRON = Path(importlib.util.find_spec("megatron").submodule_search_locations[0])  # the pinned wheel's


@pytest.fixture(scope="module")
def release_run(megatron_run, mlflow_server):
    for version in RELEASES:
        upstream_path("megatron-core", version)  # built by make setup, or a clear failure
    start(megatron_run, mlflow_server.uri, *map(on_release, RELEASES))
    return lambda version: result(megatron_run, mlflow_server.uri, on_release(version))


def test_the_matrix_holds_every_other_supported_minor_release():
    assert sorted({v.rsplit(".", 1)[0] for v in RELEASES}) == ["0.17", "0.18"]


@pytest.mark.parametrize("version", RELEASES)
def test_release_trains_with_every_tracker_holding_every_step(release_run, version, mlflow_client):
    run = release_run(version)
    run.assert_trained()
    spec = RUNS[on_release(version)]
    assert_sinks(run, spec, mlflow_client)
    [mlflow_run] = mlflow_runs(mlflow_client, spec.experiment)
    tags = mlflow_run.data.tags
    assert tags["primus.version.megatron-core"] == version
    assert tags["primus.source.megatron-core"] == f"wheel {upstream_path('megatron-core', version)}/megatron/core"
    assert "megatron.tracking.training_log@" + version in tags["primus.patches"]


def source_tree(root: Path, megatron_dir: Path, version: tuple[int, int, int] | None = None) -> Path:
    """A Megatron-LM checkout's layout: ``megatron/`` with core and training, no dist-info; ``version``
    rewrites its package_info as a release would."""
    shutil.copytree(megatron_dir, root / "megatron", ignore=shutil.ignore_patterns("__pycache__"))
    if version is not None:
        info = root / "megatron" / "core" / "package_info.py"
        text = info.read_text()
        for name, value in zip(("MAJOR", "MINOR", "PATCH"), version):
            text = re.sub(rf"^{name} = .*$", f"{name} = {value}", text, flags=re.MULTILINE)
        info.write_text(text)
    return root


NEXT_MINOR = (0, 20, 0)  # the release after the supported range


def test_source_tree_of_an_unknown_release_is_refused_before_training(megatron_run, tmp_path):
    tree = source_tree(tmp_path / "checkout", INSTALLED_MEGATRON, version=NEXT_MINOR)
    run = megatron_run("tree020", "--disable-mlflow", "true", env={"PYTHONPATH": str(tree)})
    assert run.returncode != 0, run.explain()
    where = f"source tree {tree / 'megatron' / 'core'}"
    assert f"megatron-core 0.20.0 ({where}) is outside the supported range '>=0.17,<0.20'" in run.output, run.explain()
    assert ("Use a supported release (megatron-core>=0.17,<0.20) or update the patch, or set "
            "PRIMUS_UPSTREAM_CHECK=warn to try this release.") in run.output
    assert run.iteration_lines() == [] and "building GPT model" not in run.output, run.explain()

    doctor = subprocess.run([sys.executable, "-m", "primus.cli.main", "doctor"], capture_output=True, text=True,
                            env=os.environ | {"PYTHONPATH": str(tree)}, timeout=120)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert f"Megatron   megatron-core 0.20.0 ({where}); supported >=0.17,<0.20; REFUSED:" in doctor.stdout
    assert f"megatron-core: a source tree ({tree / 'megatron' / 'core'}): no wheel RECORD" in doctor.stdout

    allowed = subprocess.run([sys.executable, "-m", "primus.cli.main", "doctor"], capture_output=True, text=True,
                             env=os.environ | {"PYTHONPATH": str(tree), "PRIMUS_UPSTREAM_CHECK": "warn"}, timeout=120)
    assert re.search(re.escape(f"Megatron   megatron-core 0.20.0 (source tree {tree / 'megatron' / 'core'}); supported "
                               ">=0.17,<0.20; untested, allowed (PRIMUS_UPSTREAM_CHECK=warn); ")
                     + r"(\d+) of \1 patches apply here", allowed.stdout), allowed.stdout + allowed.stderr


def test_the_next_release_trains_when_tried_said_once_and_tagged(megatron_run, tmp_path, mlflow_uri, mlflow_client):
    tree = source_tree(tmp_path / "checkout", INSTALLED_MEGATRON, version=NEXT_MINOR)
    run = megatron_run("tree020_warn", "--disable-tensorboard", "true", "--disable-wandb", "true",
                       "--disable-mlflow", "false", "--mlflow-experiment-name", "h32-untested",
                       env={"PYTHONPATH": str(tree), "MLFLOW_TRACKING_URI": mlflow_uri,
                            "PRIMUS_UPSTREAM_CHECK": "warn"})
    run.assert_trained()
    said = f"primus: megatron-core 0.20.0 (source tree {tree / 'megatron' / 'core'}) is outside the supported range " \
           "'>=0.17,<0.20' and is tried (PRIMUS_UPSTREAM_CHECK=warn): its patches were written for megatron-core" \
           ">=0.17,<0.20: "
    assert run.output.count(said) == 1, run.explain()
    [mlflow_run] = mlflow_runs(mlflow_client, "h32-untested")
    assert mlflow_run.info.status == "FINISHED"
    assert mlflow_run.data.tags["primus.upstream.untested"] == "megatron-core 0.20.0"
    assert "megatron.tracking.training_log@0.20.0" in mlflow_run.data.tags["primus.patches"]


@pytest.mark.parametrize("mode", ["strict", "warn"])
def test_a_patched_function_whose_signature_changed_is_refused_in_both_modes(megatron_run, tmp_path, mode):
    tree = source_tree(tmp_path / "checkout", INSTALLED_MEGATRON, version=NEXT_MINOR if mode == "warn" else None)
    arguments = tree / "megatron" / "training" / "arguments.py"
    text = arguments.read_text()
    assert "def parse_args(extra_args_provider=None" in text  # what the patch binds by name
    arguments.write_text(text.replace("def parse_args(extra_args_provider=None", "def parse_args(provider=None", 1)
                         .replace("if extra_args_provider is not None:", "if provider is not None:", 1)
                         .replace("parser = extra_args_provider(parser)", "parser = provider(parser)", 1))
    run = megatron_run(f"changed_{mode}", "--disable-mlflow", "true",
                       env={"PYTHONPATH": str(tree), "PRIMUS_UPSTREAM_CHECK": mode})
    assert run.returncode != 0, run.explain()
    assert "required patch megatron.args.primus_arguments failed to install on megatron.training.arguments" \
           in run.output, run.explain()
    assert "upstream's parse_args(provider=None" in run.output and "has no argument 'extra_args_provider'" \
           in run.output, run.explain()
    assert run.iteration_lines() == [], run.explain()


def test_source_tree_of_a_supported_release_trains_and_is_tagged_as_such(megatron_run, tmp_path, mlflow_uri,
                                                                         mlflow_client):
    release = RELEASES[0]
    tree = source_tree(tmp_path / "checkout", upstream_path("megatron-core", release) / "megatron")
    run = megatron_run("tree_release", "--disable-tensorboard", "true", "--disable-wandb", "true",
                       "--disable-mlflow", "false", "--mlflow-experiment-name", "h13-source-tree",
                       env={"PYTHONPATH": str(tree), "MLFLOW_TRACKING_URI": mlflow_uri})
    run.assert_trained()
    [mlflow_run] = mlflow_runs(mlflow_client, "h13-source-tree")
    assert mlflow_run.info.status == "FINISHED"
    assert mlflow_run.data.tags["primus.version.megatron-core"] == release
    assert mlflow_run.data.tags["primus.source.megatron-core"] == f"source tree {tree / 'megatron' / 'core'}"
