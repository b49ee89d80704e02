"""``launch.upstream_check``: the experiment's say on an upstream release outside the supported range reaches every
rank as PRIMUS_UPSTREAM_CHECK; unset, the job keeps the shell's (passed through with the PRIMUS_ prefix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from primus.config import ConfigError, load_experiment
from primus.launch.job import prepare_job
from primus.upstreams.release import UPSTREAM_CHECK_ENV

MEGATRON = Path(__file__).resolve().parents[2] / "configs" / "megatron" / "tiny_cpu.yaml"


def job_env(tmp_path, *overrides):
    exp = load_experiment(MEGATRON, [f"workspace={tmp_path}", *overrides])
    return prepare_job(exp, exp.modules["pre_trainer"], overrides).env


def test_the_experiments_upstream_check_reaches_the_job(tmp_path):
    assert job_env(tmp_path, "launch.upstream_check=warn")[UPSTREAM_CHECK_ENV] == "warn"
    assert UPSTREAM_CHECK_ENV not in job_env(tmp_path)


def test_an_unknown_upstream_check_is_refused_with_the_config(tmp_path):
    with pytest.raises(ConfigError, match=r"launch: upstream_check = 'loose': expected one of \['strict', 'warn'\] or null"):
        job_env(tmp_path, "launch.upstream_check=loose")
