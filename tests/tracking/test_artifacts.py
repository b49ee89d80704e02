"""After training, the MLflow sink uploads this run's own logs and traces, and nothing outside the run."""

import pytest

from primus.tracking import MlflowConfig, TrackingConfig, start_run

pytestmark = pytest.mark.slow


def test_logs_and_traces_of_this_run_only_are_uploaded(tmp_path, mlflow_client, primus_caplog):
    run = start_run(TrackingConfig(run_dir=tmp_path / "run", experiment_name="artifacts",
                                   mlflow=MlflowConfig(upload_logs=True, upload_traces=True)))
    run.logs_dir.mkdir()
    (run.logs_dir / "train.log").write_text("step 1 loss 2.0\n")
    (run.traces_dir / "rank0").mkdir(parents=True)
    (run.traces_dir / "rank0" / "trace.json").write_text('{"traceEvents": []}')
    (tmp_path / "elsewhere.log").write_text("another run's log")
    (run.logs_dir / "linked.log").symlink_to(tmp_path / "elsewhere.log")
    run.log(0, {"loss": 2.0})
    run.finish()

    def listing(path=None):
        out = []
        for info in mlflow_client.list_artifacts(run.mlflow_run_id, path):
            out += listing(info.path) if info.is_dir else [info.path]
        return out

    assert sorted(listing()) == ["logs/train.log", "traces/rank0/trace.json"]
    local = mlflow_client.download_artifacts(run.mlflow_run_id, "logs/train.log", str(tmp_path / "down"))
    assert open(local).read() == "step 1 loss 2.0\n"
    assert "points outside the run directory" in primus_caplog.text
    assert mlflow_client.get_run(run.mlflow_run_id).info.status == "FINISHED"
