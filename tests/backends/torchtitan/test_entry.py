"""`python -m primus.backends.torchtitan`: upstream's command line completed from the experiment."""

from __future__ import annotations

from primus.backends.torchtitan.entry import single_process_env, upstream_argv

MODEL = {"model": {"module": "llama3", "config": "llama3_8b"}}


def test_module_and_config_come_from_the_experiment():
    assert upstream_argv(["--training.steps", "3"], MODEL) == ["--training.steps", "3", "--module", "llama3",
                                                               "--config", "llama3_8b"]


def test_the_command_line_wins():
    argv = ["--module=mine", "--config", "fn"]
    assert upstream_argv(argv, MODEL) == argv
    assert upstream_argv(["--x"], None) == ["--x"]


def test_a_toml_job_file_comes_from_the_experiment():
    job = {"job": {"config_file": "/x/debug_model.toml", "dump_folder": "/d"}}
    assert upstream_argv(["--training.steps", "3"], job) == ["--training.steps", "3", "--job.config_file",
                                                             "/x/debug_model.toml"]
    for given in (["--job.config_file", "/mine.toml"], ["--job.config-file=/mine.toml"]):
        assert upstream_argv(given, job) == given


def test_one_process_world_without_torchrun():
    env = {"RANK": "3"}
    single_process_env(env)
    assert env["RANK"] == "3" and env["WORLD_SIZE"] == "1" and env["LOCAL_RANK"] == "0"
    assert int(env["MASTER_PORT"]) > 0 and env["MASTER_ADDR"] == "127.0.0.1"
