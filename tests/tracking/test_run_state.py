"""run.json is written by the training process and its delivery process: neither loses the other's sections."""

import multiprocessing

from primus.tracking.state import RunState


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
