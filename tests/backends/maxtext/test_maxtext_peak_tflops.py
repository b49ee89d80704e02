"""peak_tflops=… on MaxText's command line: typed and refused like MaxText's own keys, carried by the plan to
the perf set, where perf/mfu is measured against it (and JAX's local device is the one read)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from primus.backends.maxtext.primus_options import split_options
from primus.backends.maxtext.tracking_metric_writer import StepScalarsPerf
from primus.backends.maxtext.tracking_plan import plan_tracking
from primus.config import ConfigError


def config(tmp_path) -> SimpleNamespace:
    return SimpleNamespace(run_name="tiny", base_output_directory=str(tmp_path), log_period=100,
                           enable_tensorboard=True, enable_wandb=False, tensorboard_dir=f"{tmp_path}/tiny/tensorboard/")


def test_peak_tflops_from_the_command_line_reaches_the_plan(tmp_path):
    rest, _, options = split_options(["steps=3", "peak_tflops=989.4"], {})
    assert rest == ["steps=3"] and options.peak_tflops == 989.4
    assert plan_tracking(config(tmp_path), options, environ={}).peak_tflops == 989.4


@pytest.mark.parametrize("bad", ["0", "-5", "fast"])
def test_a_bad_peak_is_refused_naming_the_key(bad):
    with pytest.raises(ConfigError, match=rf"peak_tflops='?{bad}'? on the MaxText command line: expected float > 0"):
        split_options([f"peak_tflops={bad}"], {})


class Device:
    device_kind = "cpu"
    local_hardware_id = 0

    def memory_stats(self):
        return {}


def test_mfu_against_the_given_peak_and_none_without_one():
    scalars = {"perf/step_time_seconds": 0.5}
    perf = StepScalarsPerf(per_device_tokens=100, per_device_tflops=1.0, devices=[Device(), Device()], dtype="bfloat16",
                           local_device=Device(), peak_tflops=4.0)
    given = perf.measure(scalars, perf.device.now())
    assert given["perf/tflops_per_gpu"] == pytest.approx(2.0) and given["perf/mfu"] == pytest.approx(0.5)
    table = StepScalarsPerf(per_device_tokens=100, per_device_tflops=1.0, devices=[Device()], dtype="bfloat16")
    assert "perf/mfu" not in table.measure(scalars, table.device.now())
