"""The CPU platform: without its patches upstream cannot start on this host; a bad experiment stops
the job with the key, the value and the fix before any training; the host device module's memory."""

from __future__ import annotations

import pytest

from primus.backends.torchtitan.cpu.device_module import CpuDeviceModule


def test_host_memory_is_this_processs_resident_peak():
    module = CpuDeviceModule()
    ballast = bytearray(64 << 20)  # 64 MiB touched: the resident peak must include it
    peak = module.memory_stats()["reserved_bytes.all.peak"]
    assert peak > len(ballast) and module.memory_stats()["active_bytes.all.peak"] == peak
    del ballast
    module.reset_peak_memory_stats()
    assert module.memory_stats()["reserved_bytes.all.peak"] < peak
    assert module.current_device() == 0 and module.get_device_name().startswith("CPU")
    assert module.get_device_properties().total_memory > peak


@pytest.mark.slow
def test_without_the_cpu_patches_upstream_refuses_to_start(titan_run):
    run = titan_run("unpatched", env={"PRIMUS_PATCHES": "none"})
    assert run.returncode != 0 and "Training starts" not in run.output, run.explain()
    assert "NVIDIA driver" in run.output or "CUDA" in run.output, run.explain()


@pytest.mark.slow
def test_bad_experiment_key_stops_the_job_before_training(titan_run, tmp_path):
    exp = tmp_path / "bad.yaml"
    exp.write_text("modules:\n  pre_trainer:\n    framework: torchtitan\n    config: pre_trainer.yaml\n"
                   "    overrides:\n      training: {stepz: 3}\n")
    run = titan_run("bad-key", env={"PRIMUS_CONFIG": str(exp)})
    assert run.returncode != 0 and "Training starts" not in run.output, run.explain()
    assert "training.stepz is not a torchtitan parameter; did you mean training.steps?" in run.output, run.explain()
    assert "Traceback" not in run.output, run.explain()
