"""run.json is written by the training process and its delivery process: neither loses the other's sections."""

import multiprocessing

from primus.tracking.state import CursorStore, RunState


def write_section(run_dir, name, count):
    state = RunState(run_dir)
    for i in range(count):
        state.update(name, n=i, **{f"k{i}": i})


def test_two_processes_updating_different_sections_lose_nothing(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    writers = [ctx.Process(target=write_section, args=(tmp_path, name, 60)) for name in ("mlflow", "run")]
    for w in writers:
        w.start()
    write_section(tmp_path, "wandb", 60)
    for w in writers:
        w.join(60)
        assert w.exitcode == 0
    state = RunState(tmp_path)
    for name in ("mlflow", "run", "wandb"):
        assert state.section(name) == {"n": 59, **{f"k{i}": i for i in range(60)}}


def test_a_cursor_that_cannot_be_saved_warns_once_and_is_saved_with_the_next_delivery(tmp_path, primus_caplog):
    cursors = CursorStore(tmp_path)
    assert cursors.offset("mlflow") == 0 and cursors.load("mlflow", "run-1") == 0  # nothing saved yet
    (cursors.dir / "mlflow.json").mkdir()  # the cursor file cannot be replaced, as on a full disk
    cursors.save("mlflow", "run-1", 10)
    cursors.save("mlflow", "run-1", 20)
    [warning] = [r.getMessage() for r in primus_caplog.records if "could not save" in r.getMessage()]
    assert warning == (f"primus tracking: could not save mlflow's journal cursor in {cursors.dir} (Is a directory); "
                       "it is kept in memory and saved again with the next delivery")
    (cursors.dir / "mlflow.json").rmdir()
    cursors.save("mlflow", "run-1", 30)
    assert (cursors.load("mlflow", "run-1"), cursors.load("mlflow", "run-2"), cursors.offset("mlflow")) == (30, 0, 30)
    (cursors.dir / "mlflow.json").unlink()
    (cursors.dir / "mlflow.json").mkdir()  # failing again after it recovered: said again
    cursors.save("mlflow", "run-1", 40)
    assert sum("could not save" in r.getMessage() for r in primus_caplog.records) == 2
