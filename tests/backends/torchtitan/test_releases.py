"""Each supported torchtitan release gets the patches written for it: `primus patches` run on 0.2.2 (PYTHONPATH
to the alternate install) and on 0.3.0 shows the other generation's patches skipped quietly, and on the real
modules of the alternate release the patches install whether upstream is imported before or after
activation, and undo to upstream's own objects. The 0.2.2 job file the end-to-end tests train from is
upstream's, unedited."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
from support.launch import run_env
from titan_runs import DEBUG_MODEL_TOML_V0_2_2, RELEASES, V0_2, V0_3

COMMON = {"torchtitan.cpu.device", "torchtitan.tracking.metrics_processor", "torchtitan.tracking.validation"}
OWN_PATCHES = {
    V0_3.version: COMMON | {"torchtitan.cpu.fsdp_sum_reduction", "torchtitan.config.experiment",
                            "torchtitan.tracking.metric_logger", "torchtitan.tracking.checkpoints"},
    V0_2.version: COMMON | {"torchtitan.cpu.fsdp_sum_reduction_v0_2", "torchtitan.cpu.profiler_activities_v0_2",
                            "torchtitan.config.experiment_v0_2", "torchtitan.tracking.metric_logger_v0_2",
                            "torchtitan.tracking.checkpoints_v0_2"},
}
ALL_PATCHES = set().union(*OWN_PATCHES.values())
RANGES = {V0_3.version: ">=0.3.0,<0.4", V0_2.version: ">=0.2.2,<0.3"}
# git hash-object of torchtitan/models/llama3/train_configs/debug_model.toml at tag v0.2.2 (commit 73a0e69)
UPSTREAM_BLOB = "7760667edd1bb6f6f647c07939b4c223ed245446"

# Activate, import upstream (as `python -m torchtitan.train` does), undo; then import first and activate.
ORDERINGS = """
import json, sys, tyro, torch
from primus.patches import REGISTRY
from primus.patches.catalog import load_all
load_all()
def states():
    return {r.id: [r.status, r.version] for r in REGISTRY.records() if r.id.startswith("torchtitan.")}
REGISTRY.activate()
import torchtitan.train, torchtitan.models.llama3  # the model Trainer builds: its FSDP set-up
import torchtitan.config.manager as manager, torchtitan.components.metrics as metrics
import torchtitan.tools.utils as utils
profiling = sys.modules.get("torchtitan.tools.profiling")  # 0.2.2's profiler module (0.3: tools.profiler)
out = {"patch_then_import": states()}
REGISTRY.deactivate()
out["undone"] = {"tyro": manager.tyro is tyro, "torch": profiling is None or profiling.torch is torch,
                 "device_type": utils.device_type,
                 "wrapped": [n for n, f in (("parse_args", manager.ConfigManager.parse_args),
                                            ("log", metrics.MetricsProcessor.log),
                                            ("_build_metric_logger", getattr(metrics, "_build_metric_logger", None)),
                                            ("MetricsProcessor._build_metric_logger",
                                             getattr(metrics.MetricsProcessor, "_build_metric_logger", None)))
                             if hasattr(f, "__wrapped__")]}
REGISTRY.reset()
REGISTRY.activate()
out["import_then_patch"] = states()
print(json.dumps(out))
"""


def release_env(release) -> dict[str, str]:
    return run_env({"PRIMUS_PLATFORM": "cpu", **release.env()})


@pytest.mark.parametrize("release", RELEASES.values(), ids=lambda r: f"torchtitan-{r.version}")
def test_primus_patches_shows_each_release_its_own_patches(release):
    shown = subprocess.run([sys.executable, "-m", "primus.cli.main", "patches", "--json"], env=release_env(release),
                           capture_output=True, text=True, timeout=120, check=True)
    rows = {r["id"]: r for r in json.loads(shown.stdout) if r["backend"] == "torchtitan"}
    assert set(rows) == ALL_PATCHES
    assert {r["installed"] for r in rows.values()} == {release.version}
    assert {i for i, r in rows.items() if r["would_apply"]} == OWN_PATCHES[release.version]
    for other in set(RELEASES) - {release.version}:
        for patch_id in OWN_PATCHES[other] - OWN_PATCHES[release.version]:
            assert rows[patch_id]["reason"] == f"written for torchtitan{RANGES[other]}, not {release.version}"
    assert "warning" not in shown.stderr.lower(), shown.stderr  # skipped quietly: a supported release


@pytest.mark.slow
@pytest.mark.parametrize("release", [V0_2], ids=lambda r: f"torchtitan-{r.version}")  # the installed 0.3: e2e tests
def test_patches_install_in_either_order_on_the_real_modules_and_undo(release):
    ran = subprocess.run([sys.executable, "-c", ORDERINGS], env=release_env(release), capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    out = json.loads(ran.stdout.splitlines()[-1])
    for ordering in ("patch_then_import", "import_then_patch"):
        applied = {i for i, (status, _) in out[ordering].items() if status == "applied"}
        assert applied == OWN_PATCHES[release.version], (ordering, out[ordering])
        assert {v for _, v in out[ordering].values() if v} == {release.version}
        # the other release's: skipped, or waiting for a module this release does not have
        assert {status for i, (status, _) in out[ordering].items() if i not in applied} <= {"skipped", "pending"}
    assert out["undone"] == {"tyro": True, "torch": True, "device_type": "cuda", "wrapped": []}


def test_the_v0_2_2_job_file_is_upstreams_own():
    content = DEBUG_MODEL_TOML_V0_2_2.read_bytes()
    assert hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest() == UPSTREAM_BLOB
