"""A corpus of bad inputs, each with the exact error it must get: a message naming the key, the value and
the fix, before any training starts, a non-zero exit code where a command is involved, and nothing
half-written (no run directory, journal or state file).

Most cases are cheap: `primus config validate` and `primus train --dry-run` in this process, and the
tracking core's start_run. The checks that only upstream's argument parsing can make run as real
Megatron and TorchTitan processes (all at once), which must stop before their first iteration. The
disk cases use a real read-only and a real full filesystem (tmpfs mounts; we run as root)."""

from __future__ import annotations

from pathlib import Path

import pytest
from reliability_runs import FAKE_WANDB_KEY, MEGATRON, TORCHTITAN, Training
from reliability_runs import MAXTEXT as MAXTEXT_BACKEND
from support.disks import fill
from support.journal_files import run_dirs_under

from primus.cli.main import main
from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, TrackingConfigError, WandbConfig, start_run
from primus.tracking.goodput.accounting import NAMES as GOODPUT_NAMES

REPO = Path(__file__).resolve().parents[2]
TINY = str(REPO / "configs/megatron/tiny_cpu.yaml")
TITAN = str(REPO / "configs/torchtitan/llama3_debug_cpu.yaml")
MAXTEXT = str(REPO / "configs/maxtext/tiny_cpu.yaml")
PROBLEM = "1 config problem:\n  - "
MODULE = PROBLEM + "modules.pre_trainer: "
CLI = PROBLEM + "command line: "
BOOL = "expected bool (true or false), got str; YAML 1.2 booleans are true and false only"
RANGE = "out of range"
CREDENTIAL = ": a credential is given on the command line; it would be copied into every config dump, param upload and log. "

# -- experiment YAML and overrides: `primus config validate` ------------------------------------------------------
CONFIG_CASES = {
    "int as text": ([TINY, "train_iters=ten"], MODULE + "train_iters = 'ten': expected int or null, got str"),
    "float for an int": ([TINY, "train_iters=1.5"], MODULE + "train_iters = '1.5': expected int or null, got float"),
    "yes for a bool": ([TINY, "disable_mlflow=yes"], MODULE + f"disable_mlflow = 'yes': {BOOL}"),
    "text for a float": ([TINY, "lr=fast"], MODULE + "lr = 'fast': expected float >= 0 or null, got str"),
    "typo in a key": ([TINY, "log_intervall=1"], CLI + "log_intervall: no module has this parameter; did you mean log_interval?"),
    "unknown key": ([TINY, "tensorboard_folder=tb"], CLI + "tensorboard_folder: no module has this parameter"),
    "typo in a choice": ([TINY, "lr_decay_style=cosin"], MODULE + "lr_decay_style = 'cosin': expected one of ['constant', "
                         "'linear', 'cosine', 'inverse-square-root', 'WSD'], not a valid choice"),
    "API key in an override": ([TINY, "wandb_api_key=abcdef0123456789"],
                               CLI + "wandb_api_key" + CREDENTIAL + "Delete it and export WANDB_API_KEY instead"),
    "user:password URL": ([TINY, "mlflow_run_name=https://u:pw12345@host/x"], CLI + "mlflow_run_name" + CREDENTIAL),
    "token in an override": ([TINY, "hf_token=hf_abcdefghijklmnopqrstuvwxyz0123"],
                             CLI + "hf_token" + CREDENTIAL + "Delete it and export HF_TOKEN instead"),
    "TorchTitan section typo": ([TITAN, "metrics.log_frq=1"],
                                CLI + "metrics.log_frq: no module has this parameter; did you mean metrics.log_freq?"),
    "TorchTitan bad bool": ([TITAN, "metrics.enable_wandb=maybe"], MODULE + f"metrics.enable_wandb = 'maybe': {BOOL}"),
    "missing experiment file": (["/nonexistent/exp.yaml"], "/nonexistent/exp.yaml: no such file"),
    "log interval zero": ([TINY, "log_interval=0"], MODULE + f"log_interval = '0': expected int >= 1, {RANGE}"),
    "TensorBoard interval negative": ([TINY, "tensorboard_log_interval=-1"],
                                      MODULE + f"tensorboard_log_interval = '-1': expected int >= 1, {RANGE}"),
    "TensorBoard queue zero": ([TINY, "tensorboard_queue_size=0"],
                               MODULE + f"tensorboard_queue_size = '0': expected int >= 1, {RANGE}"),
    "averaging window zero": ([TINY, "log_avg_reset_interval=0"],
                              MODULE + f"log_avg_reset_interval = '0': expected int >= 1, {RANGE}"),
    "exit deadline negative": ([TINY, "primus_exit_deadline=-5"],
                               MODULE + f"primus_exit_deadline = '-5': expected float > 0 and <= 86400, {RANGE}"),
    "dropout above one": ([TINY, "hidden_dropout=1.5"], MODULE + f"hidden_dropout = '1.5': expected float >= 0 and <= 1, "
                                                                 f"{RANGE}"),
    "every range problem at once": ([TINY, "log_interval=0", "tensorboard_queue_size=0", "primus_exit_deadline=0"],
                                    "3 config problems:\n"
                                    f"  - modules.pre_trainer: log_interval = '0': expected int >= 1, {RANGE}\n"
                                    f"  - modules.pre_trainer: tensorboard_queue_size = '0': expected int >= 1, {RANGE}\n"
                                    f"  - modules.pre_trainer: primus_exit_deadline = '0': expected float > 0 and <= 86400, {RANGE}"),
    "TorchTitan log_freq zero": ([TITAN, "metrics.log_freq=0"], MODULE + f"metrics.log_freq = '0': expected int >= 1, {RANGE}"),
    "MaxText log_period zero": ([MAXTEXT, "log_period=0"], MODULE + f"log_period = '0': expected int >= 1, {RANGE}"),
    # TorchTitan and MaxText: every key typed by upstream's own annotations (the generated tables)
    "TorchTitan choice upstream does not allow": ([TITAN, "training.mixed_precision_param=bf16"],
                                                  MODULE + "training.mixed_precision_param = 'bf16': expected one of "
                                                  "['bfloat16', 'float32'], not a valid choice"),
    "TorchTitan typo in an upstream section": ([TITAN, "training.stepz=3"],
                                               CLI + "training.stepz: no module has this parameter; did you mean "
                                               "training.steps?"),
    "TorchTitan int as text": ([TITAN, "training.steps=ten"], MODULE + "training.steps = 'ten': expected int, got str"),
    "TorchTitan float for an int": ([TITAN, "dataloader.num_workers=1.5"],
                                    MODULE + "dataloader.num_workers = '1.5': expected int, got float"),
    "TorchTitan nested list of the wrong type": ([TITAN, "parallelism.module_fqns_per_model_part=[[a, 1]]"],
                                                 MODULE + "parallelism.module_fqns_per_model_part = '[[a, 1]]': "
                                                 "expected list[list[str]] or null, got int at [0][1]"),
    "TorchTitan key at the wrong level": ([TITAN, "log_freq=3"],
                                          CLI + "log_freq: no module has this parameter; did you mean metrics.log_freq?"),
    "MaxText choice upstream does not allow": ([MAXTEXT, "dtype=bf16"],
                                               MODULE + "dtype = 'bf16': expected one of ['bfloat16', 'float32', "
                                               "'float16', 'float8_e4m3fn', 'float8_e5m2'], not a valid choice"),
    "MaxText typo in a key": ([MAXTEXT, "stepz=3"], CLI + "stepz: no module has this parameter; did you mean steps?"),
    "MaxText below upstream's bound": ([MAXTEXT, "steps=-5"], MODULE + f"steps = '-5': expected int >= -1, {RANGE}"),
    "MaxText yes for a bool": ([MAXTEXT, "enable_checkpointing=yes"], MODULE + f"enable_checkpointing = 'yes': {BOOL}"),
    "MaxText bound inside a section": ([MAXTEXT, "lora.lora_rank=-1"],
                                       MODULE + f"lora.lora_rank = '-1': expected int >= 0, {RANGE}"),
    "MaxText every problem at once": ([MAXTEXT, "dtype=bf16", "steps=ten", "base_emb_dim=0.5"],
                                      "3 config problems:\n"  # in the order of the experiment's keys
                                      "  - modules.pre_trainer: base_emb_dim = '0.5': expected int, got float\n"
                                      "  - modules.pre_trainer: steps = 'ten': expected int >= -1, got str\n"
                                      "  - modules.pre_trainer: dtype = 'bf16': expected one of ['bfloat16', 'float32', "
                                      "'float16', 'float8_e4m3fn', 'float8_e5m2'], not a valid choice"),
}
YAML_CASES = {  # whole experiment files
    "secret in YAML": ("modules: {m: {framework: megatron, config: pre_trainer.yaml, overrides: "
                       "{wandb_api_key: abcdef0123456789abcdef}}}\n",
                       "modules.m.overrides.wandb_api_key: a credential is written in config", "abcdef0123456789abcdef"),
    "password URL in YAML": ("modules: {m: {framework: megatron, config: pre_trainer.yaml, overrides: "
                             "{data_path: ['https://bob:hunter2hunter2@data.example/x']}}}\n",
                             "modules.m.overrides.data_path[0]: a credential is written in config", "hunter2hunter2"),
    "unset variable": ("work_group: ${PRIMUS_H10_UNSET_TEAM}\nmodules: {m: {framework: megatron, config: pre_trainer.yaml}}\n",
                       "PRIMUS_H10_UNSET_TEAM", None),
    "section not a mapping": ("modules: {m: {framework: torchtitan, config: pre_trainer.yaml, overrides: {metrics: 3}}}\n",
                              "metrics is a section; write its keys under it as a mapping", None),
    "unknown framework": ("modules: {m: {framework: megatronn, config: pre_trainer.yaml}}\n", "megatronn", None),
    "malformed YAML": ("modules: {m: {framework: megatron\n", "exp.yaml:2:1: invalid YAML: did not find expected ',' "
                       "or '}' (while parsing a flow mapping started at line 1)", None),
    "a list as a mapping key": ("modules:\n  ? [a, b]\n  : 1\n", "exp.yaml:2:5: invalid YAML: a list or mapping as a "
                                "key (`? [a, b]`) is not supported: keys are names", None),
    "merge of a scalar": ("modules:\n  m:\n    <<: 3\n", "exp.yaml:3:9: invalid YAML: expected a mapping or list of "
                          "mappings for merging, but found scalar (while constructing a mapping started at line 3)", None),
    "merge of an undefined anchor": ("modules:\n  m:\n    <<: *base\n", "exp.yaml:3:9: invalid YAML: found undefined "
                                     "alias", None),
    "top-level key that is not x-": ("defaults: &d {lr: 1}\nmodules: {m: {framework: megatron, config: pre_trainer.yaml, "
                                     "overrides: {<<: *d}}}\n",
                                     "exp.yaml: defaults is not a top-level key; remove it or check the spelling", None),
    "merged value of the wrong type": ("x-base: &b {train_iters: ten}\nmodules: {m: {framework: megatron, "
                                       "config: pre_trainer.yaml, overrides: {<<: *b}}}\n",
                                       "modules.m: train_iters = 'ten': expected int or null, got str", None),
    "TorchTitan upstream types in YAML": ("modules: {m: {framework: torchtitan, config: pre_trainer.yaml, overrides: "
                                          "{training: {stepz: 3, mixed_precision_param: bf16}}}}\n",
                                          "2 config problems:\n  - modules.m: training.stepz is not a torchtitan "
                                          "parameter; did you mean training.steps?\n  - modules.m: "
                                          "training.mixed_precision_param = 'bf16': expected one of ['bfloat16', "
                                          "'float32'], not a valid choice", None),
    "MaxText unknown key in YAML": ("modules: {m: {framework: maxtext, config: pre_trainer.yaml, overrides: "
                                    "{per_device_batchsize: 2}}}\n",
                                    "modules.m: per_device_batchsize is not a maxtext parameter; did you mean "
                                    "per_device_batch_size?", None),
    "extends a missing file": ("extends: /nonexistent/base.yaml\nmodules: {m: {framework: megatron, config: pre_trainer.yaml}}\n",
                               "/nonexistent/base.yaml", None),
    "out of range in YAML": ("modules: {m: {framework: megatron, config: pre_trainer.yaml, overrides: "
                             "{log_interval: 0, tensorboard_log_interval: -1}}}\n",
                             "2 config problems:\n  - modules.m: log_interval = 0: expected int >= 1, out of range\n"
                             "  - modules.m: tensorboard_log_interval = -1: expected int >= 1, out of range", None),
}


@pytest.mark.parametrize("argv, expected", CONFIG_CASES.values(), ids=CONFIG_CASES.keys())
def test_bad_config_values_are_refused_by_config_validate(argv, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["config", "validate", "--config", *argv]) == 1
    captured = capsys.readouterr()
    assert expected in captured.err, captured.err
    assert "abcdef0123456789" not in captured.err and "pw12345" not in captured.err and "uvwxyz0123" not in captured.err
    assert captured.out == "" and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text, expected, secret", YAML_CASES.values(), ids=YAML_CASES.keys())
def test_bad_experiment_files_are_refused(text, expected, secret, capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("PRIMUS_H10_UNSET_TEAM", raising=False)
    exp = tmp_path / "exp.yaml"
    exp.write_text(text)
    assert main(["config", "validate", "--config", str(exp)]) == 1
    err = capsys.readouterr().err
    assert expected in err, err
    assert secret is None or secret not in err
    assert list(tmp_path.iterdir()) == [exp]


# -- the launcher: `primus train` refuses before it creates or starts anything --------------------------------------
TRAIN_CASES = {
    "no processes": (["--nproc-per-node", "0"], "launch.nproc_per_node (--nproc-per-node) = 0: give at least 1"),
    "container without image": (["--launcher", "container"], "launch.container.image (--image) = None: name the image"),
    "endpoint without port": (["--nnodes", "2", "--rdzv-endpoint", "node001", "--rdzv-id", "j1"],
                              "launch.rdzv_endpoint (--rdzv-endpoint) = 'node001': give HOST:PORT of the first node"),
    "multi-node without job id": (["--nnodes", "2", "--rdzv-endpoint", "node001:29500"],
                                  "launch.rdzv_id (--rdzv-id) = None: give a job id"),
    "unknown launcher": (["--launcher", "kubernetes"], "invalid choice: 'kubernetes'"),
    "W&B on, no credentials, in a container": (["--launcher", "container", "--image", "img", "disable_wandb=false"],
                                               "W&B is enabled and online (WANDB_MODE=online) but WANDB_API_KEY is not set"),
    "log interval zero": (["log_interval=0"], "modules.pre_trainer: log_interval = '0': expected int >= 1, out of range"),
    "container runtime without image": (["--launcher", "slurm", "--container-runtime", "apptainer"],
                                        "launch.container.runtime (--container-runtime) = 'apptainer': a runtime runs "
                                        "the job in an image: name it with --image IMAGE"),
    "GPU vendor with pyxis": (["--launcher", "slurm", "--image", "img", "--gpu-vendor", "nvidia"],
                              "launch.container.gpu_vendor (--gpu-vendor) = 'nvidia': only apptainer needs it "
                              "(--nv/--rocm), and the runtime is pyxis"),
    "GPU vendor with docker": (["--launcher", "container", "--image", "img", "--gpu-vendor", "amd"],
                               "launch.container.gpu_vendor (--gpu-vendor) = 'amd': only apptainer needs it "
                               "(--nv/--rocm), and the runtime is docker"),
    "apptainer with GPUs but no vendor": (["--launcher", "slurm", "--image", "x.sif", "--container-runtime",
                                           "apptainer", "--gpus-per-node", "8"],
                                          "launch.container.gpu_vendor (--gpu-vendor) = None: the job asks for 8 GPUs "
                                          "per node and apptainer shows them to the container only with --nv or --rocm"),
    "pyxis under the container launcher": (["--launcher", "container", "--image", "img", "--container-runtime", "pyxis"],
                                           "launch.container.runtime (--container-runtime) = 'pyxis': pyxis and "
                                           "apptainer run images in Slurm jobs: add --launcher slurm"),
    "docker under Slurm": (["--launcher", "slurm", "--image", "img", "--container-runtime", "docker"],
                           "launch.container.runtime (--container-runtime) = 'docker': a Slurm job runs its image "
                           "through pyxis"),
    "comma in a pyxis mount": (["--launcher", "slurm", "--image", "img", "--mount", "/data:/data:ro,z"],
                               "launch.container.mounts (--mount) = '/data:/data:ro,z': pyxis separates mounts with ','"),
    "no CPUs per task": (["--launcher", "slurm", "--cpus-per-task", "0"],
                         "launch: slurm.cpus_per_task = 0: expected int >= 1 or null, out of range"),
    "unknown GPU vendor": (["--launcher", "slurm", "--image", "x.sif", "--container-runtime", "apptainer",
                            "--gpu-vendor", "intel"], "invalid choice: 'intel'"),
    "W&B on, no credentials, in a Slurm image": (["--launcher", "slurm", "--image", "img", "disable_wandb=false"],
                                                 "W&B is enabled and online (WANDB_MODE=online) but WANDB_API_KEY is "
                                                 "not set and there is no `wandb login` (a container does not see "
                                                 "~/.netrc)"),
}


@pytest.mark.parametrize("flags, expected", TRAIN_CASES.values(), ids=TRAIN_CASES.keys())
def test_bad_launches_stop_before_anything_starts(flags, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    try:
        code = main(["train", "--config", TINY, *flags, f"workspace={tmp_path / 'ws'}"])
    except SystemExit as e:  # argparse's own refusal
        code = e.code
    captured = capsys.readouterr()
    assert code == 2 and expected in captured.err, captured.err
    assert not (tmp_path / "ws").exists()


EMPTY_REFUSED = "it is set but empty, which W&B refuses: unset it (unset {0}) or give it a value"
LAUNCH_CASES = {  # every backend, and the environment the job would start with
    "W&B on with WANDB_MODE empty": (TINY, ["disable_wandb=false"], {"WANDB_MODE": ""},
                                     "WANDB_MODE='' is not valid for W&B (Input should be 'online', 'offline', 'shared', "
                                     "'disabled', 'dryrun' or 'run'): " + EMPTY_REFUSED.format("WANDB_MODE")),
    "TorchTitan W&B on with WANDB_BASE_URL empty": (TITAN, ["metrics.enable_wandb=true"], {"WANDB_BASE_URL": ""},
                                                    "WANDB_BASE_URL='' is not valid for W&B (Input should be a valid "
                                                    "URL, input is empty): " + EMPTY_REFUSED.format("WANDB_BASE_URL")),
    "MaxText W&B on with WANDB_RESUME empty": (MAXTEXT, ["enable_wandb=true"], {"WANDB_RESUME": ""},
                                               "WANDB_RESUME='' is not valid for W&B (Input should be 'allow', 'must', "
                                               "'never' or 'auto'): " + EMPTY_REFUSED.format("WANDB_RESUME")),
    "TorchTitan choice upstream does not allow": (TITAN, ["training.mixed_precision_param=bf16"], {},
                                                  "training.mixed_precision_param = 'bf16': expected one of "
                                                  "['bfloat16', 'float32'], not a valid choice"),
    "MaxText typo in a key": (MAXTEXT, ["stepz=3"], {}, "stepz: no module has this parameter; did you mean steps?"),
    "plugin tracker not installed": (TINY, [], {"PRIMUS_SINKS": "neptune,aim"},
                                     "PRIMUS_SINKS names 'neptune' but no installed distribution has an entry point "
                                     "'neptune' in group primus.sinks (installed: none): install the plugin into this "
                                     "environment (the image's, for a container), or remove 'neptune' from PRIMUS_SINKS; "
                                     "PRIMUS_SINKS names 'aim'"),
    "a bad override after a flag": (TINY, ["--nproc-per-node", "1", "log_interval=0"], {},
                                    "modules.pre_trainer: log_interval = '0': expected int >= 1, out of range"),
    "an unknown flag between overrides": (TINY, ["train_iters=2", "--nprocs-per-node", "2", "lr=1e-3"], {},
                                          "unrecognized arguments: --nprocs-per-node 2"),
}


@pytest.mark.parametrize("config, flags, env, expected", LAUNCH_CASES.values(), ids=LAUNCH_CASES.keys())
def test_bad_launches_of_every_backend_stop_before_anything_starts(config, flags, env, expected, capsys, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        code = main(["train", "--config", config, *flags, f"workspace={tmp_path / 'ws'}"])
    except SystemExit as e:  # argparse's own refusal
        code = e.code
    captured = capsys.readouterr()
    assert code == 2 and expected in captured.err, captured.err
    assert not (tmp_path / "ws").exists()


# -- the tracking core: start_run refuses before it creates the run directory -------------------------------------
def _tracking(tmp_path: Path, **kw) -> TrackingConfig:
    return TrackingConfig(run_dir=tmp_path / "run", **kw)


TRACKING_CASES = {
    "W&B mode typo": (dict(wandb=WandbConfig(mode="onlin")), {}, "wandb.mode (or WANDB_MODE)='onlin' is not valid: use "
                      "one of online, offline, disabled, shared"),
    "WANDB_INIT_TIMEOUT not a number": (dict(wandb=WandbConfig(mode="offline")), {"WANDB_INIT_TIMEOUT": "soon"},
                                        "WANDB_INIT_TIMEOUT='soon' is not valid: give a positive number of seconds"),
    "WANDB_INIT_TIMEOUT zero": (dict(wandb=WandbConfig(mode="offline")), {"WANDB_INIT_TIMEOUT": "0"},
                                "WANDB_INIT_TIMEOUT=0.0 is not valid: give a positive number of seconds"),
    "exit deadline zero": (dict(exit_deadline_s=0), {}, "exit_deadline_s=0 is not valid: give a positive number"),
    "journal segment zero": (dict(journal_segment_bytes=0), {},
                             "journal_segment_bytes=0 is not valid: give a positive integer"),
    "TensorBoard dir empty": (dict(tensorboard=TensorBoardConfig(log_dir="")), {},
                              "tensorboard.log_dir='' is not valid: set tensorboard_dir to a directory"),
    "MLflow URI host:port without scheme": (dict(mlflow=MlflowConfig()), {"MLFLOW_TRACKING_URI": "localhost:5000"},
                                            "MLFLOW_TRACKING_URI='localhost:5000' is not valid: unknown scheme 'localhost'"),
    "MLflow URI missing colon": (dict(mlflow=MlflowConfig(tracking_uri="http//127.0.0.1:5000")), {},
                                 "mlflow.tracking_uri='http//127.0.0.1:5000' is not valid: give an MLflow server"),
    "MLflow URI without host": (dict(mlflow=MlflowConfig(tracking_uri="http://:5000")), {},
                                "mlflow.tracking_uri='http://:5000' is not valid: give the server as http://HOST:PORT"),
    "MLflow URI bad port": (dict(mlflow=MlflowConfig(tracking_uri="http://127.0.0.1:mlflow")), {},
                            "mlflow.tracking_uri='http://127.0.0.1:mlflow' is not valid: give the server as http://HOST:PORT"),
    "MLflow URI scheme typo": (dict(mlflow=MlflowConfig(tracking_uri="htp://127.0.0.1:5000")), {},
                               "mlflow.tracking_uri='htp://127.0.0.1:5000' is not valid: unknown scheme 'htp'"),
    "MLflow bare path": (dict(mlflow=MlflowConfig(tracking_uri="mlruns")), {},
                         "a bare path is MLflow's retired file store"),
    "MLflow URI password is not echoed": (dict(mlflow=MlflowConfig(tracking_uri="htp://u:s3cr3tpass@x:5000")), {},
                                          "mlflow.tracking_uri='htp://u:***@x:5000' is not valid"),
    "Databricks without credentials": (dict(mlflow=MlflowConfig(experiment_name="/Users/me/x")),
                                       {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_CONFIG_FILE": "/nonexistent"},
                                       "Databricks-hosted MLflow needs DATABRICKS_HOST and DATABRICKS_TOKEN"),
    "Databricks experiment not a path": (dict(mlflow=MlflowConfig(experiment_name="exp")),
                                         {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": "https://x.databricks.com",
                                          "DATABRICKS_TOKEN": "dapi" + "0" * 32},
                                         "Databricks experiment names are workspace paths: use e.g. '/Users/<you>/exp'"),
    "WANDB_MODE empty": (dict(wandb=WandbConfig()), {"WANDB_MODE": ""},
                         "WANDB_MODE='' is not valid for W&B (Input should be 'online', 'offline', 'shared', 'disabled', "
                         "'dryrun' or 'run'): " + EMPTY_REFUSED.format("WANDB_MODE")),
    "WANDB_INIT_TIMEOUT empty is the default, WANDB_CONSOLE empty is not": (
        dict(wandb=WandbConfig(mode="offline")), {"WANDB_INIT_TIMEOUT": "", "WANDB_CONSOLE": ""},
        "WANDB_CONSOLE='' is not valid for W&B"),
    "plugin tracker not installed": (dict(), {"PRIMUS_SINKS": "neptune"},
                                     "PRIMUS_SINKS names 'neptune' but no installed distribution has an entry point "
                                     "'neptune' in group primus.sinks (installed: none): install the plugin"),
    "built-in tracker as a plugin": (dict(), {"PRIMUS_SINKS": "wandb"},
                                     "PRIMUS_SINKS names 'wandb', which is a built-in sink: list plugin sinks only"),
    "DATABRICKS_HOST empty": (dict(mlflow=MlflowConfig(experiment_name="/Users/me/x")),
                              {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_HOST": "",
                               "DATABRICKS_CONFIG_FILE": "/nonexistent"},
                              "Databricks-hosted MLflow needs DATABRICKS_HOST (set but empty) and DATABRICKS_TOKEN"),
}


@pytest.mark.parametrize("kw, env, expected", TRACKING_CASES.values(), ids=TRACKING_CASES.keys())
def test_bad_tracking_settings_are_refused_before_the_run_starts(kw, env, expected, tmp_path, monkeypatch):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(TrackingConfigError) as error:
        start_run(_tracking(tmp_path, **kw))
    assert expected in str(error.value)
    assert "s3cr3tpass" not in str(error.value)
    assert not (tmp_path / "run").exists()


# -- disks: read-only, full, and a file where the run directory should be ----------------------------------------
def test_read_only_run_directory_is_refused(tmpfs):
    readonly = tmpfs("ro", "ro,size=64k")
    with pytest.raises(TrackingConfigError) as error:
        start_run(TrackingConfig(run_dir=readonly / "run"))
    assert f"run_dir='{readonly / 'run'}' is not usable (Read-only file system" in str(error.value)
    assert "give the run a writable directory with free space" in str(error.value)


def test_full_disk_for_the_journal_is_refused_with_nothing_half_written(tmpfs):
    full = tmpfs("full", "size=64k")
    fill(full)
    with pytest.raises(TrackingConfigError) as error:
        start_run(TrackingConfig(run_dir=full / "run"))
    assert "is not usable (No space left on device" in str(error.value)
    leftovers = [p.name for p in (full / "run").iterdir()]
    assert not [n for n in leftovers if n.endswith(".tmp") or n in ("journal", "meta.json", "run.json")], leftovers


def test_a_file_in_place_of_the_run_directory_is_refused(tmp_path):
    (tmp_path / "run").write_text("not a directory")
    with pytest.raises(TrackingConfigError, match=r"run_dir='.*/run' is not usable \(File exists"):
        start_run(TrackingConfig(run_dir=tmp_path / "run"))


# -- metric names and values a trainer may hand the hub: never an error in training ------------------------------------
def test_invalid_metric_names_and_values_never_reach_training(tmp_path, mlflow_uri, mlflow_client, primus_caplog):
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", experiment_name="h10-names", mlflow=MlflowConfig()))
    run.log(1, {"throughput(tps)": 1.0, "mfu(%)": 2.0, "a..b": 3.0, "/lead": 4.0, "": 5.0, "x" * 300: 6.0})
    run.log(2, {"loss": "not a number", "ok": 7.0})
    run.log(3, None)  # not a mapping
    assert run.flush(120)
    run.finish()
    keys = set(mlflow_client.get_run(run.mlflow_run_id).data.metrics) - set(GOODPUT_NAMES)  # every run's own
    # names MLflow refuses are spelled for it readably (a hash only where two would meet): none is lost
    assert keys == {"throughput_tps", "mfu_pct", "a..b", "lead", "metric", "x" * 250, "ok"}, keys
    assert all(len(k) <= 250 and not k.startswith("/") for k in keys)
    assert "metric 'loss' has a value that is not a number (str); it is skipped" in primus_caplog.text
    assert run.stats()["dropped"] == {"invalid_value": 1, "not_a_mapping": 1}


# -- what only upstream's argument parsing sees: real processes, stopped before their first iteration ------------------
UPSTREAM_CASES = {
    "Megatron out-of-range Primus arguments": (
        MEGATRON, ["--log-avg-reset-interval", "0", "--primus-exit-deadline", "-1", "--tensorboard-log-interval", "0",
                   "--disable-tensorboard", "false"], {},
        ["log_avg_reset_interval=0 is invalid: --log-avg-reset-interval expects int >= 1 (Log entries",
         "primus_exit_deadline=-1.0 is invalid: --primus-exit-deadline expects float > 0 and <= 86400 (Seconds to "
         "wait at exit", "tensorboard_log_interval=0 is invalid: --tensorboard-log-interval expects int >= 1"]),
    "Megatron toggle that is not a bool": (MEGATRON, ["--disable-wandb", "maybe"], {},
                                           ["argument --disable-wandb: expected true or false, got 'maybe'"]),
    "Megatron malformed MLflow URI": (MEGATRON, ["--disable-mlflow", "false"], {"MLFLOW_TRACKING_URI": "localhost:5000"},
                                      ["MLFLOW_TRACKING_URI='localhost:5000' is not valid: unknown scheme 'localhost'"]),
    "Megatron Databricks without token": (MEGATRON, ["--disable-mlflow", "false"],
                                          {"MLFLOW_TRACKING_URI": "databricks", "DATABRICKS_CONFIG_FILE": "/nonexistent"},
                                          ["Databricks-hosted MLflow needs DATABRICKS_HOST and DATABRICKS_TOKEN"]),
    "TorchTitan log_freq zero": (TORCHTITAN, ["--metrics.log-freq", "0", "--metrics.enable-tensorboard"], {},
                                 ["metrics.log_freq=0 is invalid: expected int >= 1 (Steps between metric logs.)"]),
    "TorchTitan MLflow URI without host": (TORCHTITAN, ["--metrics.enable-mlflow"], {"MLFLOW_TRACKING_URI": "http://:5000"},
                                           ["MLFLOW_TRACKING_URI='http://:5000' is not valid: give the server as "
                                            "http://HOST:PORT"]),
    "Megatron W&B on with WANDB_MODE empty": (MEGATRON, ["--disable-wandb", "false"],
                                              {"WANDB_MODE": "", "WANDB_API_KEY": FAKE_WANDB_KEY},
                                              ["WANDB_MODE='' is not valid for W&B", EMPTY_REFUSED.format("WANDB_MODE")]),
    "TorchTitan W&B on with WANDB_MODE empty": (TORCHTITAN, ["--metrics.enable-wandb"], {"WANDB_MODE": ""},
                                                ["WANDB_MODE='' is not valid for W&B",
                                                 EMPTY_REFUSED.format("WANDB_MODE")]),
    "TorchTitan ill-typed experiment keys": (TORCHTITAN, [], {}, [
        "modules.m: training.stepz is not a torchtitan parameter; did you mean training.steps?",
        "modules.m: training.mixed_precision_param = 'bf16': expected one of ['bfloat16', 'float32'], not a valid "
        "choice"]),
    "MaxText ill-typed experiment keys": (MAXTEXT_BACKEND, [], {}, [
        "modules.m: per_device_batchsize is not a maxtext parameter; did you mean per_device_batch_size?",
        "modules.m: dtype = 'bf16': expected one of ['bfloat16', 'float32', 'float16', 'float8_e4m3fn', "
        "'float8_e5m2'], not a valid choice"]),
}
# cases whose experiment file (PRIMUS_CONFIG, as `primus train` and `primus-run --config` set it) is bad
EXPERIMENTS = {
    "TorchTitan ill-typed experiment keys": "modules: {m: {framework: torchtitan, config: pre_trainer.yaml, overrides: "
                                            "{training: {stepz: 3, mixed_precision_param: bf16}}}}\n",
    "MaxText ill-typed experiment keys": "modules: {m: {framework: maxtext, config: pre_trainer.yaml, overrides: "
                                         "{per_device_batchsize: 2, dtype: bf16}}}\n",
}


@pytest.fixture(scope="module")
def upstream_refusals(tmp_path_factory, titan_assets_dir):
    """Every case's process, started together (each spends its seconds importing upstream), then waited for."""
    root = tmp_path_factory.mktemp("upstream-refusals")
    started = {}
    for i, (name, (backend, args, env, _)) in enumerate(UPSTREAM_CASES.items()):
        base = backend.args(3, f"h10-bad-{i}", tensorboard=False, mlflow=False)
        if name in EXPERIMENTS:
            experiment = root / f"case{i}.yaml"
            experiment.write_text(EXPERIMENTS[name])
            env = {**env, "PRIMUS_CONFIG": str(experiment)}
        started[name] = Training(backend, root / f"case{i}", [*base, *args], env=env, assets=titan_assets_dir)
    return {name: training.wait(timeout=400) and training for name, training in started.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", UPSTREAM_CASES)
def test_upstream_arguments_are_refused_before_training(upstream_refusals, name):
    training = upstream_refusals[name]
    result = training.result()
    assert result.returncode not in (0, None), result.explain()
    for line in UPSTREAM_CASES[name][3]:
        assert line in result.output, result.explain()
    assert "iteration        1/" not in result.output and "step:  1" not in result.output
    assert "completed step:" not in result.output  # MaxText's
    assert run_dirs_under(training.workdir) == [] and list(training.workdir.rglob("run.json")) == []
