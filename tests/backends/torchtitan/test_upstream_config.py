"""An experiment's sections onto upstream's real ``Trainer.Config``, and Primus's metrics options as
fields upstream's command-line parser (tyro) accepts."""

from __future__ import annotations

import json

import pytest
from torchtitan.models.llama3 import config_registry as tt_registry

from primus.backends.torchtitan.experiment import experiment_params
from primus.backends.torchtitan.metrics_options import PRIMUS_FIELDS, primus_job_config_class, with_primus_options
from primus.backends.torchtitan.upstream_config import apply_sections, config_function_sections, job_config_sections
from primus.config import ConfigError
from primus.config.environment import module_from_env


@pytest.fixture
def config():
    return tt_registry.llama3_debugmodel()


def test_sections_set_upstream_fields(config):
    apply_sections(config, {"dump_folder": "/tmp/x", "training": {"steps": 7, "seq_len": 1e3},
                            "metrics": {"log_freq": 2, "enable_tensorboard": True}})
    assert (config.dump_folder, config.training.steps, config.metrics.log_freq) == ("/tmp/x", 7, 2)
    assert config.training.seq_len == 1000 and type(config.training.seq_len) is int
    assert config.metrics.enable_tensorboard is True


def test_every_bad_key_is_reported_with_the_fix(config):
    with pytest.raises(ConfigError) as error:
        apply_sections(config, {"training": {"stepz": 3, "steps": "many"}, "metrics": 5, "no_such": 1})
    problems = error.value.problems
    assert len(problems) == 4
    assert problems[0].startswith("torchtitan.training.stepz: TrainingConfig has no field 'stepz'; did you mean "
                                  "'steps'?")
    assert problems[1] == "torchtitan.training.steps='many': expected a number like upstream's default 10"
    assert "torchtitan.metrics=5: this is a section" in problems[2]
    assert problems[3].startswith("torchtitan.no_such: ")
    assert config.training.steps == 10  # a rejected value is not set


def test_primus_options_are_upstream_fields_on_the_command_line(config):
    import tyro
    from torchtitan.components.metrics import MetricsProcessor
    from torchtitan.config.manager import custom_registry

    config.metrics = with_primus_options(config.metrics)
    assert config.metrics.log_freq == 1  # upstream's value kept
    assert config.metrics._owner is MetricsProcessor  # build() still constructs upstream's processor
    parsed = tyro.cli(type(config), default=config, registry=custom_registry,
                      args=["--metrics.enable-mlflow", "--metrics.mlflow-experiment-name", "exp"])
    assert parsed.metrics.enable_mlflow is True and parsed.metrics.mlflow_experiment_name == "exp"
    assert set(PRIMUS_FIELDS) <= set(parsed.to_dict()["metrics"])  # trackers receive them with the config


def test_a_user_subclass_keeps_its_processor(config):
    from dataclasses import dataclass

    from torchtitan.components.metrics import MetricsProcessor

    class MyProcessor(MetricsProcessor):
        @dataclass(kw_only=True, slots=True)
        class Config(MetricsProcessor.Config):
            extra: int = 3

    options = with_primus_options(MyProcessor.Config(extra=4))
    assert options._owner is MyProcessor and options.extra == 4 and options.enable_mlflow is False
    assert with_primus_options(options) is options


def test_a_config_function_release_drops_the_model_it_names():
    assert config_function_sections({"model": {"module": "llama3"}, "training": {"steps": 2}}) == {
        "training": {"steps": 2}}


def test_a_toml_release_gets_jobconfig_sections():
    assert job_config_sections({"dump_folder": "/d", "model": {"name": "llama3"}, "job": {"config_file": "f"}}) == {
        "job": {"config_file": "f", "dump_folder": "/d"}, "model": {"name": "llama3"}}
    assert job_config_sections({"dump_folder": "/derived", "job": {"dump_folder": "/mine"}}) == {
        "job": {"dump_folder": "/mine"}}  # the experiment's own job.dump_folder wins over primus train's


def test_a_config_function_on_a_toml_release_is_refused_with_the_fix():
    with pytest.raises(ConfigError) as error:
        job_config_sections({"model": {"module": "llama3", "config": "llama3_8b"}})
    assert [p.split(":")[0] for p in error.value.problems] == ["torchtitan.model.module='llama3'",
                                                               "torchtitan.model.config='llama3_8b'"]
    assert "name the TOML job file with job.config_file" in error.value.problems[0]


def test_a_jobconfig_class_gets_primus_options_in_its_metrics_section():
    import dataclasses

    import tyro

    # the shape of torchtitan 0.2.2's JobConfig: plain dataclasses whose field types are classes, not strings
    Metrics = dataclasses.make_dataclass("Metrics", [("log_freq", int, 10)])
    JobConfig = dataclasses.make_dataclass("JobConfig", [("metrics", Metrics, dataclasses.field(
        default_factory=Metrics)), ("steps", int, 1)])

    cls = primus_job_config_class(JobConfig)
    assert issubclass(cls, JobConfig) and primus_job_config_class(cls) is cls
    parsed = tyro.cli(cls, args=["--metrics.enable-mlflow", "--metrics.log-freq", "2"])
    assert (parsed.metrics.enable_mlflow, parsed.metrics.log_freq, parsed.steps) == (True, 2, 1)
    assert isinstance(parsed.metrics, Metrics)


def experiment(tmp_path, overrides: str = "{}", cli: tuple[str, ...] = ()) -> dict[str, str]:
    path = tmp_path / "exp.yaml"
    path.write_text("modules:\n  pre_trainer:\n    framework: torchtitan\n    config: pre_trainer.yaml\n"
                    f"    model: null\n    overrides: {overrides}\n")
    return {"PRIMUS_CONFIG": str(path), "PRIMUS_CONFIG_OVERRIDES": json.dumps(list(cli))}


def test_the_users_job_keeps_its_values_where_only_the_preset_spoke(config, tmp_path):
    """The debug model's config function logs every step (log_freq 1); the preset's spec default (10) must not
    replace it, while the experiment's own overrides and the command line still do."""
    config.metrics = with_primus_options(config.metrics)  # as the config patch does
    apply_sections(config, config_function_sections(experiment_params(experiment(tmp_path))))
    assert config.metrics.log_freq == 1
    assert config.metrics.enable_mlflow is False  # Primus's own options still come from the preset
    overridden = experiment(tmp_path, "{metrics: {log_freq: 5}}")
    apply_sections(config, config_function_sections(experiment_params(overridden)))
    assert config.metrics.log_freq == 5
    on_command_line = experiment(tmp_path, cli=("metrics.log_freq=7",))
    apply_sections(config, config_function_sections(experiment_params(on_command_line)))
    assert config.metrics.log_freq == 7


def test_the_presets_upstream_values_are_upstreams_defaults(tmp_path):
    """Leaving them out when the job does not set them changes nothing."""
    from torchtitan.components.metrics import MetricsProcessor

    module = module_from_env("torchtitan", experiment(tmp_path))
    upstream_keys = module.preset_defaults - module.primus_keys
    assert upstream_keys and all(key.startswith("metrics.") for key in upstream_keys), upstream_keys
    defaults = MetricsProcessor.Config()
    for key in upstream_keys:
        name = key.removeprefix("metrics.")
        assert getattr(defaults, name) == module.params["metrics"][name], key
