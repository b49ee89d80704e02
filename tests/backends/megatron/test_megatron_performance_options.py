"""--peak-tflops and --mlflow-performance-metrics-across-ranks: parsed, validated before training, and the
across-rank gather on only when the perf set goes to MLflow."""

import argparse

import pytest

from primus.backends.megatron.arguments import add_primus_arguments
from primus.backends.megatron.tracking_plan import plan_tracking
from primus.tracking.plan import TrackingPlanError

UPSTREAM_DEFAULTS = dict(tensorboard_dir=None, wandb_project=None, wandb_exp_name=None, wandb_save_dir=None,
                         wandb_entity=None, save=None, tensorboard_log_interval=1, tensorboard_queue_size=1000,
                         rank=0)


def parse(*argv):
    args = add_primus_arguments(argparse.ArgumentParser()).parse_args(list(argv))
    for key, value in UPSTREAM_DEFAULTS.items():
        setattr(args, key, value)
    return args


@pytest.fixture(autouse=True)
def local_mlflow(monkeypatch, tmp_path):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("PRIMUS_OUTPUT_ROOT", str(tmp_path / "out"))


def test_peak_tflops_is_read_and_a_bad_one_refused_before_training():
    assert parse("--peak-tflops", "835.5").peak_tflops == 835.5
    assert parse().peak_tflops is None
    for bad in ("0", "-1", "nan", "inf"):
        with pytest.raises(TrackingPlanError, match=r"peak_tflops=.* is invalid: --peak-tflops expects float > 0 and "
                                                      r"<= 1000000.0 or null \(Dense peak TFLOP/s of one device"):
            plan_tracking(parse("--peak-tflops", bad))


def test_across_ranks_only_with_the_perf_set_going_to_mlflow():
    on = ("--disable-mlflow", "false", "--mlflow-upload-performance-metrics",
          "--mlflow-performance-metrics-across-ranks")
    assert plan_tracking(parse(*on)).across_ranks
    assert not plan_tracking(parse("--disable-mlflow", "false")).across_ranks  # off by default
    without_perf = plan_tracking(parse("--disable-mlflow", "false", "--mlflow-performance-metrics-across-ranks"))
    assert not without_perf.across_ranks
    assert without_perf.notices.infos == [
        "mlflow_performance_metrics_across_ranks ignored: mlflow_upload_performance_metrics is off"]
    without_mlflow = plan_tracking(parse(*on[2:]))
    assert not without_mlflow.across_ranks
    assert any("mlflow_performance_metrics_across_ranks ignored: MLflow is off (disable_mlflow: true)" in n
               for n in without_mlflow.notices.infos)
