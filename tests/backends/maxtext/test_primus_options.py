"""Primus's keys on MaxText's command line: taken off before upstream parses it, typed like the experiment
YAML, every bad one reported at once with the key, the value and what is expected."""

from __future__ import annotations

import pytest

from primus.backends.maxtext.primus_options import PrimusOptions, split_options
from primus.config import ConfigError


def test_primus_keys_leave_maxtexts_argv_typed_and_the_last_value_wins():
    argv = ["train.py", "base.yml", "steps=5", "enable_mlflow=false", "mlflow_run_name=null", "enable_mlflow=true",
            'mlflow_experiment_name="123"', "run_name=enable_mlflow=x"]
    rest, kwargs, options = split_options(argv, {"mlflow_upload_performance_metrics": True, "base_config": "a.yml"})
    assert rest == ["train.py", "base.yml", "steps=5", "run_name=enable_mlflow=x"]
    assert kwargs == {"base_config": "a.yml"}
    assert options == PrimusOptions(enable_mlflow=True, mlflow_run_name=None, mlflow_experiment_name="123",
                                    mlflow_upload_performance_metrics=True)


def test_bad_values_name_the_key_the_value_and_the_fix():
    with pytest.raises(ConfigError) as e:
        split_options(["enable_mlflow=yes", "mlflow_run_name=12"], {})
    assert e.value.problems == [
        "enable_mlflow='yes' on the MaxText command line: expected bool (true or false), got str; YAML 1.2 "
        "booleans are true and false only",
        "mlflow_run_name=12 on the MaxText command line: expected str or null, got int; quote it to make it a "
        "string: '12'",
    ]
