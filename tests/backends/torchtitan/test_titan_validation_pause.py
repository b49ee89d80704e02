"""TorchTitan's evaluation is an expected pause in steps (patches/validation_patches.py): each ``validate`` is
journaled as the start and the end of a busy spell, which the stall alert allows for (tracking/health/detectors.py), and
the validation metrics upstream logs reach the trackers at their step."""

from __future__ import annotations

import pytest
from support.journal_files import journal_lines, run_dirs_under
from support.readers import read_tb_scalars

from primus.backends.torchtitan.assets import VERSION, ensure_tiny_assets

pytestmark = pytest.mark.slow  # a real training: not one of the fast tests `-m "not slow"` (mutation testing) runs


def test_each_evaluation_is_journaled_as_an_expected_pause(titan_run, titan_assets):
    dataset = ensure_tiny_assets(titan_assets / VERSION).dataset_dir
    run = titan_run("validation", "--validator.enable", "--validator.freq", "2", "--validator.steps", "1",
                    "--validator.dataloader.dataset", "c4_test", "--validator.dataloader.dataset-path", str(dataset),
                    "--metrics.enable-tensorboard")
    run.assert_trained()
    [run_dir] = run_dirs_under(run.dump)
    records = [(r["k"], r["s"], r["d"]) for r in journal_lines(run_dir)]
    busy = [i for i, (kind, _, data) in enumerate(records) if kind == "e" and data.get("event") == "busy"]
    # upstream validates after step 1 and every freq-th step: 1 and 2 of 3
    assert [records[i][2] for i in busy] == [{"event": "busy", "what": "evaluation", "on": on}
                                             for on in (True, False, True, False)]
    for start, end, step in ((busy[0], busy[1], 1), (busy[2], busy[3], 2)):  # no training step inside a pause
        assert {s for kind, s, _ in records[start:end] if kind == "m"} <= {step}
    [logdir] = {p.parent for p in run.dump.rglob("events.out.tfevents.*")}
    assert [step for step, _ in read_tb_scalars(logdir)["validation_metrics/loss"]] == [1, 2]
