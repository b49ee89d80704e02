"""Every supported MaxText release, not only the pinned one: each other release of third_party/upstream-matrix.txt
(its wheel, installed --no-deps beside the pinned JAX stack, first on PYTHONPATH) trains the tiny CPU experiment
under `primus train` with every tracker on, and TensorBoard, the W&B offline run and the MLflow server each hold
every metric at every step once, the MLflow run FINISHED and tagged with the release it ran; a run of that release
whose loss diverges is aborted by upstream and its MLflow run is FAILED.

The newest release below the range (0.2.3, whose config has no W&B keys) is refused before training: a source
tree (the pinned wheel's files, no dist-info) whose version.py says 0.2.3 stops the user's upstream command under
`primus-run` before any step, naming the version and the tree; `primus doctor` says so too."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from maxtext_runs import (
    SCHEDULE,
    STEPS,
    TINY_CPU,
    UPSTREAM_TRAIN,
    assert_every_tracker_holds_every_step,
    every_tracker_args,
    only_run,
)
from support.launch import run_env
from support.readers import mlflow_history, read_wandb_alerts
from support.upstreams import releases, upstream_env, upstream_path
from support.webhook_server import Receiver

from primus.docs_gen import compatibility
from primus.tracking.health.webhook import WEBHOOK_ENV
from primus.upstreams.maxtext import MAXTEXT

pytestmark = pytest.mark.slow

RELEASES = releases("maxtext")
REFUSED = "0.2.3"
# 0.2.4 imports ml_goodput_measurement (Google Cloud) unless told it runs decoupled from Google Cloud
DECOUPLED = {"DECOUPLE_GCLOUD": "TRUE"}


def experiment(version: str, kind: str = "all") -> str:
    return f"h13-maxtext-{version}-{kind}"


def source_tree(root: Path, maxtext_python: str, version: str) -> Path:
    """A MaxText checkout's layout: the pinned wheel's ``maxtext/`` without its dist-info, its version.py
    saying ``version``."""
    installed = subprocess.run([maxtext_python, "-c", "import maxtext; print(maxtext.__path__[0])"],
                               capture_output=True, text=True, check=True, timeout=120).stdout.strip()
    shutil.copytree(installed, root / "maxtext", ignore=shutil.ignore_patterns("__pycache__"))
    info = root / "maxtext" / "version.py"
    info.write_text(re.sub(r'^__version__ = .*$', f'__version__ = "{version}"', info.read_text(), flags=re.M))
    return root


def doctor(maxtext_python: str, pythonpath: Path) -> subprocess.CompletedProcess:
    """`primus doctor` on the MaxText environment's interpreter with ``pythonpath`` first."""
    return subprocess.run([maxtext_python, "-m", "primus.cli.main", "doctor"], capture_output=True, text=True,
                          env=run_env({"PYTHONPATH": str(pythonpath)}), timeout=120)


@pytest.fixture(scope="module")
def runs(start, maxtext_python, primus_run_command, mlflow_server, tmp_path_factory, request):
    """The releases' runs and the refused one start together (most of a MaxText run is imports and compiling);
    the diverging runs post their alerts to one webhook receiver (``results["webhook"]``)."""
    mlflow = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    webhook = Receiver()
    request.addfinalizer(webhook.close)
    waits = {}
    for version in RELEASES:
        env = {**mlflow, **DECOUPLED, **upstream_env("maxtext", version)}
        waits[version, "all"] = start(f"maxtext-{version}", [
            sys.executable, "-m", "primus.cli.main", "train", "--config", str(TINY_CPU), *SCHEDULE,
            *every_tracker_args(experiment(version))],
            # the release on PYTHONPATH makes maxtext importable here too: `primus train` still picks MaxText's
            # environment (JAX is there, not here)
            env={**env, "PRIMUS_WORKSPACE": str(tmp_path_factory.mktemp(f"workspace-{version}"))})
        waits[version, "diverges"] = start(f"maxtext-{version}-diverges", [
            *primus_run_command, "--config", str(TINY_CPU), maxtext_python, *UPSTREAM_TRAIN, f"steps={STEPS}",
            "learning_rate=1e30", "enable_tensorboard=false", f"mlflow_experiment_name={experiment(version, 'nan')}",
            "enable_wandb=true", f"wandb_project_name={experiment(version, 'nan')}",
            "run_name=diverges", "base_output_directory=out"], env={**env, WEBHOOK_ENV: webhook.url})
    tree = source_tree(tmp_path_factory.mktemp("checkout"), maxtext_python, REFUSED)
    waits[REFUSED, "refused"] = start("maxtext-refused", [
        *primus_run_command, "--config", str(TINY_CPU), maxtext_python, *UPSTREAM_TRAIN, f"steps={STEPS}",
        f"mlflow_experiment_name={experiment(REFUSED, 'refused')}", "run_name=refused",
        "base_output_directory=out"], env={**mlflow, "PYTHONPATH": str(tree)})
    results = {key: wait() for key, wait in waits.items()}
    results["tree"] = tree / "maxtext"
    results["webhook"] = webhook
    return results


def test_ci_trains_every_supported_release():
    pinned, others = compatibility.tested_releases("maxtext")  # from third_party/
    assert sorted([pinned, *others]) == ["0.2.4", "0.2.5"] and others == RELEASES
    assert all(MAXTEXT.supports(v) for v in [pinned, *others]) and not MAXTEXT.supports(REFUSED)


@pytest.mark.parametrize("version", RELEASES)
def test_release_trains_with_every_tracker_holding_every_step(runs, version, mlflow_client):
    mlflow_run = assert_every_tracker_holds_every_step(runs[version, "all"], mlflow_client, experiment(version))
    tags = mlflow_run.data.tags
    assert tags["primus.version.maxtext"] == version
    assert tags["primus.source.maxtext"] == f"wheel {upstream_path('maxtext', version) / 'maxtext'}"
    assert f"maxtext.tracking.metric_logger@{version}" in tags["primus.patches"].split(",")


@pytest.mark.parametrize("version", RELEASES)
def test_doctor_shows_the_release_supported_and_its_files_clean(version, maxtext_python):
    folder = upstream_path("maxtext", version)
    found = doctor(maxtext_python, folder)
    assert found.returncode == 0, found.stdout + found.stderr
    assert (f"MaxText    maxtext {version} (wheel {folder / 'maxtext'}); supported {MAXTEXT.supported}; "
            f"4 of 4 patches apply here") in found.stdout
    assert f"maxtext {version}: clean" in found.stdout


@pytest.mark.parametrize("version", RELEASES)
def test_a_diverging_run_of_the_release_is_failed(runs, version, mlflow_client):
    run = runs[version, "diverges"]
    assert run.returncode == 1 and "Aborting training due to NaN loss." in run.output, run.explain()
    mlflow_run = only_run(mlflow_client, experiment(version, "nan"))
    assert mlflow_run.info.status == "FAILED"
    assert mlflow_run.data.tags["primus.version.maxtext"] == version
    history = mlflow_history(mlflow_client, mlflow_run.info.run_id, "learning/loss")
    losses = [value for _, value in history]
    assert math.isfinite(losses[0]) and math.isnan(losses[-1])  # up to and including the NaN step
    # the person is told (run health, issue 28): the NaN at its step, then the failure. Upstream aborts at that
    # very step; the run's end has the health watch read the journal first, so the trackers get both alerts too
    nan_step = history[-1][0]
    said = f"iteration {nan_step}: learning/loss is nan at iteration {nan_step}"
    assert f"[primus] ALERT nan run diverges {said}" in run.output, run.explain()
    assert mlflow_run.data.tags["primus.alert.nan"] == said
    assert mlflow_run.data.tags["primus.alert.failed"].startswith(f"iteration {nan_step}: ")
    posted = [(b["kind"], b["iteration"]) for b in runs["webhook"].bodies if b["experiment"] == experiment(version, "nan")]
    assert posted == [("nan", nan_step), ("failed", nan_step)]
    alerts = read_wandb_alerts(run.workdir)  # W&B's run.alert, kept in the offline run file
    assert [(title, text) for title, text, _ in alerts][:1] == [("primus: nan", said)]
    assert [title for title, _, _ in alerts] == ["primus: nan", "primus: failed"]


def test_a_source_tree_of_a_release_below_the_range_is_refused_before_training(runs, mlflow_client):
    run = runs[REFUSED, "refused"]
    assert run.returncode != 0, run.explain()
    found = f"maxtext {REFUSED} (source tree {runs['tree']}) is outside the supported range '{MAXTEXT.supported}'"
    assert found in run.output, run.explain()
    assert f"Use a supported release (maxtext{MAXTEXT.supported})" in run.output, run.explain()
    assert "completed step" not in run.output, run.explain()
    assert mlflow_client.get_experiment_by_name(experiment(REFUSED, "refused")) is None  # no run was started


def test_doctor_refuses_the_source_tree_below_the_range(runs, maxtext_python):
    found = doctor(maxtext_python, runs["tree"].parent)
    assert found.returncode == 1, found.stdout + found.stderr
    assert (f"MaxText    maxtext {REFUSED} (source tree {runs['tree']}); supported {MAXTEXT.supported}; REFUSED: "
            f"maxtext {REFUSED} (source tree {runs['tree']}) is outside the supported range") in found.stdout
