"""run.json is written by the training process and its delivery process: neither loses the other's sections."""

import fcntl
import multiprocessing
import os
import stat

import pytest

from primus.tracking.journal.files import DELIVERY_LOCK, LOCK_FILE
from primus.tracking.journal.run_state import CursorStore, RunDirBusyError, RunDirLock, RunState, delivery_lock


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
    assert [p.name for p in cursors.dir.iterdir()] == ["mlflow.json"], "no temporary file left behind"
    [warning] = [r.getMessage() for r in primus_caplog.records if "could not save" in r.getMessage()]
    assert warning == (f"primus tracking: could not save mlflow's journal cursor in {cursors.dir} (Is a directory); "
                       "it is kept in memory and saved again with the next delivery")
    (cursors.dir / "mlflow.json").rmdir()
    cursors.save("mlflow", "run-1", 30)
    assert (cursors.load("mlflow", "run-1"), cursors.load("mlflow", "run-2"), cursors.offset("mlflow")) == (30, 0, 30)
    assert CursorStore(tmp_path).offset("mlflow") == 30, "a second store opens the same cursors"
    (cursors.dir / "mlflow.json").unlink()
    (cursors.dir / "mlflow.json").mkdir()  # failing again after it recovered: said again
    cursors.save("mlflow", "run-1", 40)
    assert sum("could not save" in r.getMessage() for r in primus_caplog.records) == 2


def test_updates_merge_into_their_section_and_leave_the_others_and_a_section_read_is_a_copy(tmp_path):
    state = RunState(tmp_path)
    state.update("run", status="RUNNING", a=1)
    state.update("mlflow", id="x")
    state.update("run", status="FINISHED")
    state.section("run")["a"] = 2
    assert [RunState(tmp_path).section(name) for name in ("run", "mlflow", "wandb")] == [
        {"status": "FINISHED", "a": 1}, {"id": "x"}, {}]


def test_a_busy_run_directory_names_the_pid_holding_it_until_it_is_released(tmp_path):
    (tmp_path / LOCK_FILE).write_text("9" * 20)  # a longer pid left by an earlier holder
    first = RunDirLock(tmp_path).acquire()
    assert (tmp_path / LOCK_FILE).read_text() == str(os.getpid())
    with pytest.raises(RunDirBusyError) as busy:
        RunDirLock(tmp_path).acquire()
    assert str(busy.value) == (f"run directory {tmp_path} is in use by pid {os.getpid()}: give each tracked process "
                               "(each rank that logs) its own run_dir, or wait for it to exit")
    first.release()
    first.release()  # twice is harmless
    RunDirLock(tmp_path).acquire().release()


@pytest.mark.parametrize(("written", "named"), [(b"", "another process"), (b"\xff12", "\ufffd12")])
def test_a_holder_that_wrote_no_pid_or_bytes_that_are_not_text_is_still_named(tmp_path, written, named):
    with open(tmp_path / LOCK_FILE, "wb") as held:
        held.write(written)
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(RunDirBusyError, match=f"in use by pid {named}:"):
            RunDirLock(tmp_path).acquire()


def test_the_lock_files_are_made_readable_by_all_and_writable_by_the_owner_and_the_delivery_lock_left_unlocked(tmp_path):
    umask = os.umask(0)
    os.umask(umask)
    RunDirLock(tmp_path).release()  # never acquired: nothing to release
    RunDirLock(tmp_path).acquire().release()
    fd = delivery_lock(tmp_path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert os.write(fd, b"x") == 1, "opened for writing"
    finally:
        os.close(fd)
    for name in (LOCK_FILE, DELIVERY_LOCK):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644 & ~umask
