"""torchtitan 0.2.2's real ConfigManager with Primus's patches: JobConfig defaults, then upstream's TOML job
file, then the experiment YAML, then the command line, each winning over the one before; Primus's metrics
options accepted in all three; a bad experiment key, or a 0.3-style config function, refused with the key
and the fix before anything is built. One process parses every case (no training)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.launch import run_env
from titan_runs import DEBUG_MODEL_TOML_V0_2_2, V0_2

pytestmark = pytest.mark.slow

PARSE = """
import json, os, sys
import primus.activation
primus.activation.activate()
from torchtitan.config.manager import ConfigManager
from primus.backends.torchtitan.session import TRACKING

def parse(experiment, *args):
    os.environ.pop("PRIMUS_CONFIG", None)
    if experiment:
        os.environ["PRIMUS_CONFIG"] = experiment
    TRACKING.forget_plan()
    try:
        c = ConfigManager().parse_args(list(args))
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}
    return {"steps": c.training.steps, "seq_len": c.training.seq_len, "lr": c.optimizer.lr,
            "log_freq": c.metrics.log_freq, "dump_folder": c.job.dump_folder, "mlflow": c.metrics.enable_mlflow,
            "experiment": c.metrics.mlflow_experiment_name, "tracked": "metrics" in c.to_dict()
            and "enable_mlflow" in c.to_dict()["metrics"]}

print(json.dumps({name: parse(*case) for name, case in json.loads(sys.argv[1]).items()}))
"""
EXPERIMENT = """
modules:
  pre_trainer:
    framework: torchtitan
    config: pre_trainer.yaml
    overrides:
      {overrides}
"""


@pytest.fixture(scope="module")
def parsed(tmp_path_factory) -> dict[str, dict]:
    tmp = tmp_path_factory.mktemp("job-config-v0_2")

    def experiment(name: str, overrides: str) -> str:
        path = tmp / f"{name}.yaml"
        path.write_text(EXPERIMENT.format(overrides=overrides))
        return str(path)

    primus_toml = tmp / "primus_options.toml"
    primus_toml.write_text('[metrics]\nenable_mlflow = true\nmlflow_experiment_name = "from-toml"\n')
    toml = ["--job.config_file", str(DEBUG_MODEL_TOML_V0_2_2), "--job.dump_folder", str(tmp / "dump")]
    good = experiment("good", f"{{dump_folder: {tmp / 'from-yaml'}, training: {{steps: 7, seq_len: 1000}}, "
                              f"metrics: {{enable_mlflow: true, mlflow_experiment_name: from-yaml}}}}")
    cases = {
        "toml": [None, *toml],
        "toml_and_cli": [None, *toml, "--training.steps", "4", "--metrics.enable_mlflow",
                         "--metrics.mlflow_experiment_name", "from-cli"],
        "primus_options_in_toml": [None, "--job.config_file", str(primus_toml), "--job.dump_folder", str(tmp)],
        "experiment": [good, "--job.config_file", str(DEBUG_MODEL_TOML_V0_2_2), "--training.steps", "4"],
        "bad_key": [experiment("bad", "training: {stepz: 3}"), *toml],
        "config_function": [experiment("fn", "model: {module: llama3, config: llama3_debugmodel}"), *toml],
    }
    ran = subprocess.run([sys.executable, "-c", PARSE, json.dumps(cases)], env=run_env(V0_2.env()),
                         capture_output=True, text=True, timeout=300, cwd=tmp)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.splitlines()[-1])


def test_the_toml_job_file_then_the_command_line(parsed):
    toml = parsed["toml"]  # upstream's debug_model.toml; Primus's options are in the config trackers get
    assert (toml["steps"], toml["seq_len"], toml["lr"], toml["log_freq"]) == (10, 2048, 8e-4, 1)
    assert (toml["mlflow"], toml["experiment"], toml["tracked"]) == (False, None, True)
    assert toml["dump_folder"].endswith("/dump")
    cli = parsed["toml_and_cli"]
    assert (cli["steps"], cli["seq_len"], cli["mlflow"], cli["experiment"]) == (4, 2048, True, "from-cli")


def test_primus_options_in_upstreams_toml_file(parsed):
    assert (parsed["primus_options_in_toml"]["mlflow"], parsed["primus_options_in_toml"]["experiment"]) == (
        True, "from-toml")


def test_the_experiment_over_the_toml_file_and_the_command_line_over_both(parsed):
    exp = parsed["experiment"]
    assert exp["steps"] == 4  # command line over the experiment's 7
    assert exp["seq_len"] == 1000 and isinstance(exp["seq_len"], int)  # the experiment's over the TOML's 2048
    assert exp["lr"] == 8e-4  # the TOML's, which the experiment leaves alone
    assert exp["log_freq"] == 1  # the TOML's: pre_trainer.yaml's 10 is the spec's default, the user's job wins
    assert exp["dump_folder"].endswith("/from-yaml")  # Primus's dump_folder is 0.2.2's job.dump_folder
    assert (exp["mlflow"], exp["experiment"]) == (True, "from-yaml")


def test_bad_experiment_keys_are_refused_with_the_fix(parsed):
    assert "training.stepz is not a torchtitan parameter; did you mean training.steps?" in parsed["bad_key"]["error"]
    error = parsed["config_function"]["error"]
    assert error.startswith("ConfigError")
    assert "torchtitan.model.module='llama3': torchtitan 0.2.2 has no --module" in error
    assert "name the TOML job file with job.config_file and the model with model.name and model.flavor" in error
