"""What `primus train` prints after a run, from real run directories written by the tracking core."""

from pathlib import Path

from primus.launch.results import describe_results
from primus.tracking import MlflowConfig, TensorBoardConfig, TrackingConfig, start_run


def _tracked_run(run_dir: Path, mlflow: bool = True) -> None:
    """A run logging one step to TensorBoard and, with ``mlflow``, to an MLflow sqlite store (seconds of set-up)."""
    store = MlflowConfig(tracking_uri=f"sqlite:///{run_dir.parent / 'mlflow.db'}") if mlflow else None
    run = start_run(TrackingConfig(run_dir=run_dir, tensorboard=TensorBoardConfig(log_dir=run_dir / "tb"),
                                   mlflow=store, exit_deadline_s=60))
    run.log(1, {"lm loss": 1.0})
    run.finish()


def test_untracked_run(tmp_path):
    assert "no tracking in this run" in describe_results(tmp_path)


def test_tracked_run_says_where_and_how_to_open(tmp_path):
    _tracked_run(tmp_path / "run")
    text = describe_results(tmp_path / "run")
    assert f"tensorboard --logdir {tmp_path / 'run' / 'tb'}" in text
    assert f"mlflow ui --backend-store-uri sqlite:///{tmp_path / 'mlflow.db'}" in text
    assert str(tmp_path / "run" / "journal") + "/" in text


def test_one_block_per_rank_with_save_for_all_ranks(tmp_path):
    for rank in (0, 1):
        _tracked_run(tmp_path / "run" / f"rank_{rank}", mlflow=False)  # the trackers are the test above's
    text = describe_results(tmp_path / "run")
    assert text.count("[primus] results of") == 2
    assert "rank_0" in text and "rank_1" in text
