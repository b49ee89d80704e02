"""Each Primus option is declared once (primus/config/schemas/tracking.py): every backend's spelling of it — the
experiment schema, Megatron's argparse flags, TorchTitan's metrics fields, MaxText's keys — has its name, type and
default from there, and one function checks a value whichever way it came."""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from primus.backends.maxtext.primus_options import KEYS, PrimusOptions
from primus.backends.megatron.arguments import add_primus_arguments
from primus.backends.torchtitan.metrics_options import primus_config_class
from primus.config.schemas import schema_for
from primus.upstreams.backends import backend_named
from primus.config.schemas.tracking import OPTIONS, params_for, problems

EVERY = ("megatron", "torchtitan", "maxtext")  # the backends that take every option in their own config
from primus.tracking.plan import Destinations, Notices, TrackingPlanError, plan_run


def bare(backend: str) -> dict:
    return {p.name: p for p in params_for(backend, in_section=False)}


@pytest.mark.parametrize("backend", EVERY)
def test_each_backends_schema_has_the_catalogues_options_as_declared(backend):
    schema = schema_for(backend).params
    for param in params_for(backend):
        assert schema[param.name] == param
    # an option of other backends is not this one's as Primus's (Megatron's One-Logger options are upstream's own)
    has = backend_named(backend)
    names = [has.option_section + o.param.name for o in OPTIONS if not has.has(o.group)]
    assert not [name for name in names if name in schema and schema[name].primus]


def test_megatron_flags_are_the_catalogues_with_its_defaults():
    parsed = vars(add_primus_arguments(argparse.ArgumentParser()).parse_args([]))
    assert parsed == {name: p.default for name, p in bare("megatron").items()}


@dataclass(kw_only=True, slots=True)
class UpstreamMetrics:
    log_freq: int = 10


def test_torchtitan_metrics_fields_are_the_catalogues_with_its_defaults():
    cls = primus_config_class(UpstreamMetrics)
    added = {f.name: f.default for f in dataclasses.fields(cls) if f.name != "log_freq"}
    assert added == {name: p.default for name, p in bare("torchtitan").items()}


def test_maxtext_keys_are_the_catalogues_with_its_defaults():
    assert KEYS == set(bare("maxtext"))
    assert dataclasses.asdict(PrimusOptions()) == {name: p.default for name, p in bare("maxtext").items()}


def test_a_bad_value_names_the_key_the_value_what_it_must_be_and_what_it_is_for():
    params = params_for("torchtitan")
    values = {"metrics.primus_exit_deadline": math.inf, "metrics.primus_journal_retention": "forever"}
    found = problems(params, lambda key: values.get(key, bare("torchtitan")[key.removeprefix("metrics.")].default))
    assert found == [
        "metrics.primus_exit_deadline=inf is invalid: expected float > 0 and <= 86400 (Seconds to wait at exit for "
        "the trackers to deliver; what they could not deliver stays in the run's journal for `primus tracking sync`.)",
        "metrics.primus_journal_retention='forever' is invalid: expected one of ['keep', 'delivered'] (keep: the "
        "run's journal stays whole (report and sync can replay all of it); delivered: a closed journal segment is "
        "deleted once every tracker of the run has it.)",
    ]


def test_a_bad_value_on_a_command_line_of_flags_names_the_flag_and_never_shows_a_secret():
    secret = "https://user:hunter2@example.com/x"
    found = problems(params_for("megatron"), lambda key: secret if key == "log_avg_reset_interval" else
                     bare("megatron")[key].default, flag=lambda key: "--" + key.replace("_", "-"))
    assert len(found) == 1 and found[0].startswith("log_avg_reset_interval=")
    assert "--log-avg-reset-interval expects int >= 1" in found[0] and "hunter2" not in found[0]


def destinations(tmp_path: Path, **kw):
    def where(notices: Notices) -> Destinations:
        return Destinations(run_dir=tmp_path / "run", run_name="own", tensorboard=None, wandb=None, **kw)

    return where


def values(backend: str, **given):
    return lambda name: given.get(name, bare(backend)[name].default)


def test_plan_run_says_which_uploads_it_ignores_without_mlflow_in_the_backends_spelling(tmp_path):
    plan = plan_run("torchtitan", values("torchtitan", mlflow_upload_logs=True,
                                         mlflow_performance_metrics_across_ranks=True),
                    destinations(tmp_path), Notices(), mlflow=False, mlflow_off_by="metrics.enable_mlflow: false")
    assert plan.config is None and plan.log_file is None and not plan.across_ranks
    assert plan.notices.infos == ["metrics.mlflow_performance_metrics_across_ranks, metrics.mlflow_upload_logs "
                                  "ignored: MLflow is off (metrics.enable_mlflow: false)"]


def test_plan_run_names_the_run_once_for_every_backend(tmp_path):
    environ = {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/m.db"}
    named = plan_run("maxtext", values("maxtext", mlflow_run_name="mine"), destinations(tmp_path), Notices(),
                     mlflow=True, mlflow_off_by="enable_mlflow=false", environ=environ)
    own = plan_run("megatron", values("megatron"), destinations(tmp_path, run_name_suffix="-rank3"), Notices(),
                   mlflow=True, mlflow_off_by="disable_mlflow: true", environ=environ)
    assert (named.config.run_name, named.config.mlflow.run_name) == ("mine", "mine")
    assert own.config.run_name == "own-rank3"


def test_plan_run_asks_nothing_of_the_backend_until_every_option_is_valid(tmp_path):
    def never(notices):
        raise AssertionError("destinations asked with an invalid option")

    notices = Notices()
    notices.error("metrics.log_freq=0 is invalid: expected int >= 1")
    with pytest.raises(TrackingPlanError) as refused:
        plan_run("torchtitan", values("torchtitan", primus_exit_deadline=0.0), never, notices, mlflow=True,
                 mlflow_off_by="metrics.enable_mlflow: false")
    assert [p.split(" is invalid")[0] for p in refused.value.problems] == ["metrics.log_freq=0",
                                                                           "metrics.primus_exit_deadline=0.0"]


@pytest.mark.parametrize("backend", EVERY)
def test_the_health_options_reach_the_runs_detectors(tmp_path, backend):
    environ = {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/m.db"}
    plan = plan_run(backend, values(backend, primus_stall_after=45.0, primus_loss_spike_mads=0.0,
                                    primus_throughput_drop_fraction=0.25),
                    destinations(tmp_path), Notices(), mlflow=True, mlflow_off_by="-", environ=environ)
    health = plan.config.health
    assert (health.stall_after_s, health.spike_k, health.drop_fraction) == (45.0, 0.0, 0.25)
    default = plan_run(backend, values(backend), destinations(tmp_path), Notices(), mlflow=True, mlflow_off_by="-",
                       environ=environ).config.health
    assert default.stall_after_s is None  # automatic


@pytest.mark.parametrize("backend", EVERY)
def test_checkpoint_uploads_are_asked_for_by_the_option_and_need_mlflow(tmp_path, backend):
    environ = {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/m.db"}
    asked = values(backend, mlflow_upload_checkpoints=True)
    assert plan_run(backend, asked, destinations(tmp_path), Notices(), mlflow=True, mlflow_off_by="-",
                    environ=environ).config.mlflow.upload_checkpoints
    assert not plan_run(backend, values(backend), destinations(tmp_path), Notices(), mlflow=True,
                        mlflow_off_by="-", environ=environ).config.mlflow.upload_checkpoints
    off = plan_run(backend, asked, destinations(tmp_path), Notices(), mlflow=False, mlflow_off_by="mlflow off",
                   environ=environ)
    assert off.notices.infos == [f"{backend_named(backend).option_section}mlflow_upload_checkpoints ignored: MLflow is off "
                                 "(mlflow off)"]


@pytest.mark.parametrize("backend", ["megatron", "torchtitan"])
def test_stragglers_on_unless_turned_off_with_or_without_a_tracker(tmp_path, backend):
    """Unset: on (no collective: the figures go through the job's store, docs/metrics.md); on without any tracker
    too: the console line needs none."""
    off_by = {"megatron": "disable_mlflow: true", "torchtitan": "metrics.enable_mlflow: false"}[backend]

    def plan(**given):
        return plan_run(backend, values(backend, **given), lambda notices: None, Notices(), mlflow=False,
                        mlflow_off_by=off_by)

    assert plan().stragglers
    assert plan(primus_stragglers=True).stragglers and not plan(primus_stragglers=False).stragglers
    with pytest.raises(TrackingPlanError, match="primus_stragglers='yes please' is invalid"):
        plan(primus_stragglers="yes please")
    assert "primus_stragglers" not in bare("maxtext")  # JAX: no torch.distributed waits to count


@pytest.mark.parametrize("backend", EVERY)
def test_goodput_windows_reach_the_config_and_a_bad_one_names_key_value_and_fix(tmp_path, backend):
    from primus.tracking.settings.config import GOODPUT_WINDOWS

    def plan(**given):
        return plan_run(backend, values(backend, **given), destinations(tmp_path), Notices(), mlflow=True,
                        mlflow_off_by="-", environ={"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db"})

    assert plan().config.goodput_windows == GOODPUT_WINDOWS  # the schema's default is the core's
    assert plan(primus_goodput_windows=[600, 30]).config.goodput_windows == (30, 600)
    assert plan(primus_goodput_windows="120, 60").config.goodput_windows == (60, 120)
    key = backend_named(backend).option_section + "primus_goodput_windows"
    for bad in ("60,5m", [0], [], "1,2,3,4,5,6,7,8,9", [60.5], 10**7):
        with pytest.raises(TrackingPlanError, match=re.escape(f"{key}={bad!r} is invalid: give 1 to 8")) as e:
            plan(primus_goodput_windows=bad)
        assert "e.g. 60,300,900" in str(e.value)
