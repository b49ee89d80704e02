"""Launch settings: the launch: block typed by the schema, flags over it, every problem reported at once
with the key, the flag and the fix."""

from __future__ import annotations

import pytest

from primus.config import ConfigError, load_experiment
from primus.launch.settings import Rendezvous, resolve_settings


def _problems(block, flags=None, environ=None) -> str:
    with pytest.raises(ConfigError) as error:
        resolve_settings(block, flags or {}, environ or {})
    return str(error.value)


def test_defaults_and_flags_over_the_block():
    plain = resolve_settings({}, {}, {})
    assert (plain.launcher, plain.nproc_per_node, plain.nnodes, plain.rendezvous) == ("local", 1, 1, None)
    assert (plain.slurm.submit, plain.container.runtime, plain.container.python) == ("sbatch", "docker", "python")

    block = {"launcher": "container", "container": {"image": "a", "mounts": ["/d:/d"]}}
    settings = resolve_settings(block, {"container.image": "b", "container.mounts": ["/e:/e"], "nnodes": None}, {})
    assert settings.container.image == "b"
    assert settings.container.mounts == ("/d:/d", "/e:/e")  # --mount adds to the experiment's mounts


def test_slurm_processes_default_to_the_gpus_asked_for():
    settings = resolve_settings({"launcher": "slurm", "slurm": {"gpus_per_node": 8}}, {}, {})
    assert settings.nproc_per_node == 8
    assert resolve_settings({"slurm": {"gpus_per_node": 8}}, {}, {}).nproc_per_node == 1


def test_multi_node_needs_an_endpoint_and_a_shared_id():
    message = _problems({"nnodes": 2})
    assert "launch.rdzv_endpoint (--rdzv-endpoint) = None: give HOST:PORT of the first node" in message
    assert "launch.rdzv_id (--rdzv-id) = None: give a job id, the same on every node" in message
    settings = resolve_settings({"nnodes": 2, "rdzv_endpoint": "n1:29400"}, {"node_rank": 1}, {"SLURM_JOB_ID": "77"})
    assert settings.rendezvous == Rendezvous(nnodes=2, host="n1", port=29400, run_id="77", node_rank=1)


def test_inconsistent_settings_are_reported_together():
    message = _problems({"nnodes": 2, "rdzv_endpoint": "n1", "rdzv_id": "x", "node_rank": 2, "nproc_per_node": 0})
    assert "config problems" in message
    assert "launch.nproc_per_node (--nproc-per-node) = 0: give at least 1" in message
    assert "launch.rdzv_endpoint (--rdzv-endpoint) = 'n1': give HOST:PORT" in message
    assert "launch.node_rank (--node-rank) = 2: give this node's rank, 0 to 1" in message
    assert "under Slurm every node gets its rank" in _problems({"launcher": "slurm"}, {"rdzv_endpoint": "n1:1"})
    assert "launch.container.image (--image) = None: name the image" in _problems({"launcher": "container"})
    assert "launch: launcher = 'k8s': expected one of ['local', 'torchrun', 'slurm', 'container']" in \
        _problems({"launcher": "k8s"})


def test_the_experiment_block_is_checked_when_the_config_loads(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("launch: {slurm: {partiton: gpu}, nnodes: two}\nmodules:\n  m: {framework: megatron, "
                    "config: pre_trainer.yaml}\n")
    with pytest.raises(ConfigError) as error:
        load_experiment(path)
    message = str(error.value)
    assert "launch: slurm.partiton is not a launch setting; did you mean slurm.partition?" in message
    assert "launch: nnodes = 'two': expected int" in message
    path.write_text(path.read_text().replace("partiton: gpu", "time: '1:00:00'").replace("nnodes: two", "nnodes: 1"))
    exp = load_experiment(path, ["launch.slurm.partition=gpu", "launch.nnodes=2"])  # typed by the schema
    assert exp.launch == {"slurm": {"time": "1:00:00", "partition": "gpu"}, "nnodes": 2}


def test_the_runtime_follows_the_launcher_and_slurm_keys_are_typed():
    container = resolve_settings({"launcher": "container", "container": {"image": "i"}}, {}, {}).container
    assert container.runtime == "docker"
    slurm = resolve_settings({"launcher": "slurm"}, {"container.image": "i", "slurm.cpus_per_task": 16,
                                                     "slurm.exclusive": True, "slurm.qos": "high"}, {})
    assert (slurm.container.runtime, slurm.in_image) == ("pyxis", True)
    assert (slurm.slurm.cpus_per_task, slurm.slurm.exclusive, slurm.slurm.qos) == (16, True, "high")
    assert not resolve_settings({"launcher": "slurm"}, {}, {}).in_image
    assert "launch: slurm.cpus_per_task = 0: expected int >= 1 or null, out of range" in _problems(
        {"slurm": {"cpus_per_task": 0}})


def test_image_runtime_combinations_that_cannot_work_are_refused():
    slurm = {"launcher": "slurm", "slurm": {"gpus_per_node": 8}}
    assert ("launch.container.runtime (--container-runtime) = 'apptainer': a runtime runs the job in an image: name "
            "it with --image IMAGE") in _problems(slurm, {"container.runtime": "apptainer"})
    assert ("launch.container.gpu_vendor (--gpu-vendor) = 'amd': only apptainer needs it (--nv/--rocm), and the "
            "runtime is pyxis") in _problems(slurm, {"container.image": "i", "container.gpu_vendor": "amd"})
    assert "launch.container.gpu_vendor (--gpu-vendor) = None: the job asks for 8 GPUs per node and apptainer" in \
        _problems(slurm, {"container.image": "i", "container.runtime": "apptainer"})
    assert "launch.container.runtime (--container-runtime) = 'docker': a Slurm job runs its image through pyxis" in \
        _problems(slurm, {"container.image": "i", "container.runtime": "docker"})
    assert "launch.container.runtime (--container-runtime) = 'pyxis': pyxis and apptainer run images in Slurm jobs" \
        in _problems({"launcher": "container", "container": {"image": "i", "runtime": "pyxis"}})
    assert "launch.container.mounts (--mount) = '/d:/d:ro,z': pyxis separates mounts with ','" in \
        _problems(slurm, {"container.image": "i", "container.mounts": ["/d:/d:ro,z"]})
    # a CPU job needs no vendor; apptainer with one is fine
    resolve_settings({"launcher": "slurm"}, {"container.image": "i", "container.runtime": "apptainer"}, {})
    resolve_settings(slurm, {"container.image": "i", "container.runtime": "apptainer", "container.gpu_vendor": "amd"},
                     {})
