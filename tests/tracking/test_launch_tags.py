"""Where and how a run was launched, from the variables each launcher sets (``primus/tracking/tags/launch.py``)."""

import socket

import pytest

from primus.tracking.tags.launch import first_host, launch_tags

SLURM = {
    "SLURM_JOB_ID": "4242",
    "SLURM_ARRAY_JOB_ID": "4240",
    "SLURM_ARRAY_TASK_ID": "2",
    "SLURM_RESTART_COUNT": "1",
    "SLURM_JOB_NUM_NODES": "4",
    "SLURM_JOB_NODELIST": "gpu[007-009,012]",
    "TORCHELASTIC_RESTART_COUNT": "0",
    "GROUP_WORLD_SIZE": "4",
    "MASTER_ADDR": "gpu007",
    "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image": "nvcr.io#nvidia/pytorch:25.01-py3",
}


def test_a_slurm_job_under_pyxis_says_its_job_array_restarts_hosts_image_and_command():
    assert launch_tags(SLURM, ["python", "pretrain_gpt.py", "--tp", "2"]) == {
        "primus.slurm.job_id": "4242",
        "primus.slurm.array_job_id": "4240",
        "primus.slurm.array_task_id": "2",
        "primus.slurm.restart_count": "1",
        "primus.torchelastic.restart_count": "0",
        "primus.hosts.count": "4",
        "primus.hosts.first": "gpu007",
        "primus.container.image": "nvcr.io#nvidia/pytorch:25.01-py3",
        "primus.container.image_from": "SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_container_image",
        "primus.launch_command": "python pretrain_gpt.py --tp 2",
    }


@pytest.mark.parametrize(("nodelist", "first"), [
    ("gpu[003-010,12],cpu1", "gpu003"),
    ("node7", "node7"),
    ("a1,b2", "a1"),
    ("rack1-n[08]", "rack1-n08"),
    ("x[1,3]", "x1"),
])
def test_the_first_host_of_a_compressed_slurm_hostlist(nodelist, first):
    assert first_host(nodelist) == first


def test_torchrun_across_nodes_without_slurm_names_rank_zeros_host():
    tags = launch_tags({"GROUP_WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.5", "TORCHELASTIC_RESTART_COUNT": "3"}, [])
    assert tags == {"primus.hosts.count": "2", "primus.hosts.first": "10.0.0.5", "primus.torchelastic.restart_count": "3"}


def test_a_plain_process_is_one_host_this_one():
    assert launch_tags({"MASTER_ADDR": "localhost"}, []) == {
        "primus.hosts.count": "1", "primus.hosts.first": socket.gethostname()}


@pytest.mark.parametrize(("env", "image", "source"), [
    ({"APPTAINER_CONTAINER": "/images/train.sif"}, "/images/train.sif", "APPTAINER_CONTAINER"),
    ({"SINGULARITY_CONTAINER": "/images/old.sif"}, "/images/old.sif", "SINGULARITY_CONTAINER"),
    ({"PYXIS_CONTAINER_IMAGE": "ubuntu:24.04"}, "ubuntu:24.04", "PYXIS_CONTAINER_IMAGE"),
    ({"SLURM_CONTAINER": "/bundles/oci"}, "/bundles/oci", "SLURM_CONTAINER"),
    # set by the user (a Kubernetes pod spec): wins over what a runtime says
    ({"PRIMUS_CONTAINER_IMAGE": "reg/img:1", "APPTAINER_CONTAINER": "/x.sif"}, "reg/img:1", "PRIMUS_CONTAINER_IMAGE"),
])
def test_the_container_image_from_the_first_variable_set(env, image, source):
    tags = launch_tags(env, [])
    assert (tags["primus.container.image"], tags["primus.container.image_from"]) == (image, source)


def test_no_container_variable_no_image_tag():
    assert not any(k.startswith("primus.container") for k in launch_tags({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, []))


def test_the_launch_command_is_redacted(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "s3kr1t-value-42")
    command = launch_tags({}, ["python", "train.py", "--key", "s3kr1t-value-42", "--uri",
                               "http://me:hunter2@mlflow:5000", "--name", "a b"])["primus.launch_command"]
    assert "s3kr1t" not in command and "hunter2" not in command
    assert command == "python train.py --key *** --uri http://me:***@mlflow:5000 --name 'a b'"
