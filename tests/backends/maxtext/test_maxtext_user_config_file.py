"""Upstream MaxText 0.2.5 builds its config (``pyconfig.initialize``, patched by Primus, no training) from a
user's own config file under an experiment: a value the file's chain sets wins over the module preset's
default, a key the file leaves to upstream's base.yml gets the preset's value, and the experiment's overrides
win over the file."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

MARK = "config read back: "
READ_BACK = f"""
import json, sys
import primus.activation
primus.activation.activate()  # as `primus train` and primus-run do, before maxtext is imported
from maxtext.configs import pyconfig
config = pyconfig.initialize(sys.argv)
print({MARK!r} + json.dumps({{k: getattr(config, k) for k in ("log_period", "enable_tensorboard", "steps")}}))
"""


def test_upstreams_config_keeps_the_users_file_over_the_presets_defaults(tmp_path, start, maxtext_python):
    (tmp_path / "experiment.yaml").write_text(
        "modules:\n  pre_trainer:\n    framework: maxtext\n    config: pre_trainer.yaml\n    overrides: {steps: 3}\n"
    )
    (tmp_path / "parent.yml").write_text("base_config: base.yml\nlog_period: 7\n")  # base.yml: MaxText's
    (tmp_path / "my.yml").write_text("base_config: parent.yml\nsteps: 50\n")
    run = start(
        "user-config-file",
        [maxtext_python, "-c", READ_BACK, str(tmp_path / "my.yml"), "hardware=cpu", "skip_jax_distributed_system=true"],
        env={"PRIMUS_CONFIG": str(tmp_path / "experiment.yaml")},
    )()
    assert run.returncode == 0, run.explain()
    [line] = [line for line in run.output.splitlines() if line.startswith(MARK)]
    # the preset says log_period 100 and enable_tensorboard false; MaxText's base.yml says 100 and true
    assert json.loads(line[len(MARK) :]) == {"log_period": 7, "enable_tensorboard": False, "steps": 3}
