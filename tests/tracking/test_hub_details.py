"""The hub's own logic, fast, with a real journal and no tracker: texts as they are journaled, what a resumed run
says once about the steps it leaves out, and the direct route when the journal cannot be written (a journal whose
disk we say is full, and workers that record what they are handed). The full-disk run end to end, on a real tmpfs,
is test_journal_full_disk.py."""

from __future__ import annotations

import errno
import logging
import threading
import time

import pytest
from support.journal_files import journal_lines
from support.threads import threads_started_by

from primus.tracking.hub import MAX_TEXT_CHARS, MetricsHub, NotJournaled
from primus.tracking.journal.reader import journal_end
from primus.tracking.journal.records import EVENT, METRICS, TEXT
from primus.tracking.journal.writer import JournalWriter


def _closed(hub: MetricsHub) -> list[dict]:
    hub.close("FINISHED", time.monotonic() + 30)
    return journal_lines(hub.journal.dir.parent)


def test_texts_are_journaled_redacted_by_tag_and_shape_and_cut_at_the_limit(tmp_path):
    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=100)
    hub.start()
    hub.log_text("config", "token ghp_" + "a" * 36, step=3, only=["wandb"])
    hub.log_text("hf_api_key", "plain-value-of-a-key")
    hub.log_text("notes", "x" * (MAX_TEXT_CHARS + 10), step=4)
    texts = [(r["s"], r["d"], r.get("o")) for r in _closed(hub) if r["k"] == TEXT]
    assert texts == [
        (3, {"tag": "config", "text": "token ***"}, ["wandb"]),
        (0, {"tag": "hf_api_key", "text": "***"}, None),
        (4, {"tag": "notes", "text": "x" * MAX_TEXT_CHARS}, None),
    ]


def test_texts_past_the_queue_or_after_close_are_counted_as_refused(tmp_path):
    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=2)  # not started: nothing drains the queue
    for n in range(4):
        hub.log_text("t", f"text {n}", step=n)
    assert hub.refused == 2
    hub.start()
    lines = _closed(hub)
    hub.log_text("t", "after the end")  # intake is closed
    assert [r["d"]["text"] for r in lines if r["k"] == TEXT] == ["text 0", "text 1"]
    assert lines[-1]["d"]["dropped"] == {"queue_full": 2}
    assert hub.refused == 1


def test_a_resumed_hub_says_once_from_which_step_it_tracks_again(tmp_path, primus_caplog):
    primus_caplog.set_level(logging.INFO, logger="primus.tracking")
    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=100, tracked_until={None: 5, ("tb",): 2})
    hub.start()
    for step in range(3, 9):
        hub.log(step, {"loss": 1.0})
    hub.log(1, {"loss": 1.0}, only=["tb"])
    _closed(hub)
    said = [r.getMessage() for r in primus_caplog.records if "already tracked" in r.getMessage()]
    assert said == [
        "primus tracking: resumed at step 3, which an earlier process of this run already tracked (up to step 5): "
        "steps trained again since the checkpoint are not tracked twice"
    ]
    assert hub.dropped == {"already_tracked": 4}


def test_what_the_journal_could_not_take_is_described_by_kind_and_the_steps_it_spans():
    lost = NotJournaled()
    lost.add(TEXT, 0)
    assert lost.describe() == "1 records (1 texts)"  # a text's step is not a training step
    for step in (7, 4, 5):  # out of order: steps of several destinations interleave
        lost.add(METRICS, step)
    assert (lost.first_step, lost.last_step, lost.total) == (4, 7, 4)
    assert lost.describe() == "4 records (3 metrics, 1 texts, steps 4-7)"


class _FullDisk(JournalWriter):
    """A journal whose disk is full while ``full`` is set (the real tmpfs case is test_journal_full_disk.py)."""

    full = True
    error = OSError(errno.ENOSPC, "No space left on device")

    def append(self, lines):
        if self.full:
            raise self.error
        return super().append(lines)


class _Route:
    """Stands for a worker's direct route: records what the hub hands over."""

    def __init__(self):
        self.handed: list[tuple[int, list]] = []

    def deliver_direct(self, after, records):
        self.handed.append((after, records))


class _Worker:
    """Stands for a sink's worker: only what the hub calls."""

    def __init__(self, route: _Route):
        self.name, self.direct_route, self.ends, self.closed = "stand-in", route, [], []

    def start(self):
        pass

    def notify(self, end):
        self.ends.append(end)

    def close(self, status, deadline):
        self.closed.append((status, deadline))

    def join(self, deadline):
        return True


def _hub_on_a_full_disk(tmp_path, routes):
    journal = _FullDisk(tmp_path)
    workers = [_Worker(route) for route in routes]
    return MetricsHub(journal, workers, capacity=100, tick_s=0.01), journal, workers


def test_records_the_journal_cannot_take_go_to_each_route_once_and_the_outage_is_said_once(tmp_path, primus_caplog):
    shared = _Route()
    hub, journal, workers = _hub_on_a_full_disk(tmp_path, [shared, shared, _Route()])  # two sinks, one process
    journal.full = False
    hub.start()
    hub.log(1, {"loss": 1.0})
    assert hub.flush(30, sinks=())  # drained: the stand-in workers deliver nothing
    journaled = journal.size
    journal.full = True
    for step in (2, 3):
        hub.log(step, {"loss": float(step)})
        assert hub.flush(30, sinks=())
    hub.log_text("note", "kept")
    assert hub.flush(30, sinks=())
    journal.full = False
    hub.log(4, {"loss": 4.0})
    assert hub.flush(30, sinks=())

    assert (
        len(shared.handed) == 3 and shared.handed == workers[2].direct_route.handed
    )  # a route once, however many sinks
    assert {after for after, _ in shared.handed} == {journaled}  # to deliver after what the journal holds
    assert [(r.kind, r.step) for _, records in shared.handed for r in records] == [
        (METRICS, 2),
        (METRICS, 3),
        (TEXT, 0),
    ]
    assert hub.not_journaled.describe() == "3 records (2 metrics, 1 texts, steps 2-3)"
    assert hub.not_journaled.error == "No space left on device"
    said = [r.getMessage() for r in primus_caplog.records if r.levelno == logging.WARNING]
    assert said == [
        f"primus tracking: could not write the journal {journal.dir} (No space left on device): records go directly "
        "to the trackers that are up until it can be written again; the end of the run says how many and where "
        "they went",
        f"primus tracking: the journal {journal.dir} is written again; 3 records went directly to the trackers "
        "meanwhile",
    ]
    assert workers[0].ends[-1] == journal.size  # told the journal's new end once it is written again
    end = _closed(hub)[-1]["d"]
    assert end["event"] == "end" and end["not_journaled"] == {"metrics": 2, "texts": 1}


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (OSError("the volume went away"), "the volume went away"),
        (OSError(errno.EIO, "Input/output error"), "Input/output error"),
    ],
)
def test_the_journals_first_error_is_kept_as_the_system_says_it(tmp_path, error, said):
    hub, journal, _ = _hub_on_a_full_disk(tmp_path, [_Route()])
    journal.error = error
    hub.start()
    hub.log(1, {"loss": 1.0})
    assert hub.flush(30, sinks=())
    journal.error = OSError(errno.ENOSPC, "No space left on device")  # a later, different error
    hub.log(2, {"loss": 1.0})
    assert hub.flush(30, sinks=())
    assert hub.not_journaled.error == said
    hub.close("FINISHED", time.monotonic() + 30)


def test_events_metrics_and_texts_carry_the_time_they_were_logged_in_milliseconds(tmp_path):
    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=100)
    hub.start()
    before = time.time()
    hub.event("start", pid=123)
    hub.log(1, {"loss": 1.0}, only="tb")  # one destination given as a plain name
    hub.log_text("t", "x")
    lines = _closed(hub)
    after = time.time()
    assert [(r["k"], r["s"], r.get("o")) for r in lines] == [
        (EVENT, 0, None),
        (METRICS, 1, ["tb"]),
        (TEXT, 0, None),
        (EVENT, 0, None),
    ]
    assert lines[0]["d"] == {"event": "start", "pid": 123} and lines[-1]["d"]["event"] == "end"
    assert all(int(before * 1000) <= r["t"] <= int(after * 1000) + 1 for r in lines)


def test_metrics_past_the_queue_and_values_that_are_not_numbers_are_counted_and_said_once(tmp_path, primus_caplog):
    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=2)  # not started: nothing drains the queue
    hub.log(0, None)
    hub.log(0, [1.0])
    for step in range(4):
        hub.log(step, {"loss": 1.0, "note": "n/a"})
    hub.start()
    lines = _closed(hub)
    assert [(r["s"], r["d"]) for r in lines if r["k"] == METRICS] == [(0, {"loss": 1.0}), (1, {"loss": 1.0})]
    assert lines[-1]["d"]["dropped"] == {"queue_full": 2, "not_a_mapping": 2, "invalid_value": 2}
    said = [r.getMessage() for r in primus_caplog.records if "not a number" in r.getMessage()]
    assert said == ["primus tracking: metric 'note' has a value that is not a number (str); it is skipped"]


def test_the_first_step_left_out_is_said_against_its_own_destinations_last_tracked_step(tmp_path, primus_caplog):
    primus_caplog.set_level(logging.INFO, logger="primus.tracking")
    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=100, tracked_until={None: 9, ("tb",): 2})
    hub.start()
    hub.log(1, {"loss": 1.0}, only=["tb"])
    _closed(hub)
    assert [r.getMessage() for r in primus_caplog.records if "already tracked" in r.getMessage()] == [
        "primus tracking: resumed at step 1, which an earlier process of this run already tracked (up to step 2): "
        "steps trained again since the checkpoint are not tracked twice"
    ]


def test_the_hub_journals_on_its_own_tick_without_being_asked(tmp_path):
    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=100)
    hub.start()
    hub.log(1, {"loss": 1.0})
    deadline = time.monotonic() + 30  # many ticks of 0.1 s, on a loaded box
    while journal_end(tmp_path) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert journal_end(tmp_path) > 0
    hub.close("FINISHED", time.monotonic() + 30)


class _Stuck(JournalWriter):
    """A journal whose disk hangs: an append waits until ``release`` is set."""

    release_after_s = 60.0

    def __init__(self, run_dir):
        super().__init__(run_dir)
        self.release = threading.Event()

    def append(self, lines):
        self.release.wait(self.release_after_s)
        return super().append(lines)


def test_a_hanging_disk_makes_flush_and_close_give_up_at_their_deadlines(tmp_path):
    """A hung journal write must not hold the training thread past what it was given: flush says False, close
    returns by its deadline (no end record: the disk hangs), and the workers are still told to close."""
    journal = _Stuck(tmp_path)
    worker = _Worker(_Route())
    hub = MetricsHub(journal, [worker], capacity=100)
    hub.start()
    hub.log(1, {"loss": 1.0})
    started = time.monotonic()
    assert hub.flush(0.5) is False
    late = hub.close("FINISHED", time.monotonic() + 0.5)
    assert time.monotonic() - started < journal.release_after_s / 2  # gave up long before the disk came back
    assert worker.closed == [("FINISHED", pytest.approx(started + 0.5, abs=30))] and late == []
    journal.release.set()


def test_close_returns_the_workers_that_did_not_finish_in_time(tmp_path):
    done, stuck = _Worker(_Route()), _Worker(_Route())
    stuck.join = lambda deadline: False
    hub = MetricsHub(JournalWriter(tmp_path), [done, stuck], capacity=100)
    hub.start()
    assert hub.close("FAILED", time.monotonic() + 30) == [stuck]
    assert [w.closed[0][0] for w in (done, stuck)] == ["FAILED", "FAILED"]


def test_a_bug_while_journaling_is_said_once_redacted_and_the_hub_goes_on(tmp_path, primus_caplog):
    journal = _FullDisk(tmp_path)
    journal.error = RuntimeError("bug near password=hunter2hunter2")  # not an OSError: not a full disk
    hub = MetricsHub(journal, [], capacity=100)
    hub.start()
    for step in (1, 2):
        hub.log(step, {"loss": 1.0})
        assert hub.flush(30, sinks=())
    journal.full = False
    hub.log(3, {"loss": 1.0})
    lines = _closed(hub)
    said = [r.getMessage() for r in primus_caplog.records if r.levelno == logging.WARNING]
    assert said == [
        f"primus tracking: could not journal the queued records in {journal.dir}: RuntimeError('bug near password=***')"
    ]
    assert [r["s"] for r in lines if r["k"] == METRICS] == [3]


def test_the_hub_runs_on_one_daemon_thread_named_for_it(tmp_path):
    """Named, it shows for what it is in py-spy and faulthandler dumps; a daemon, it does not hold a trainer
    that exits without finishing its run."""
    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=10)
    assert threads_started_by(hub.start) == [("primus-tracking-hub", True)]
    hub.close("FINISHED", time.monotonic() + 30)


# log_later: a function the hub thread calls for a step's records, in its place in the queue


def test_records_given_later_are_journaled_in_their_place_as_logs_would_be(tmp_path):
    import torch

    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=100)
    threads: list[str] = []

    def records():
        threads.append(threading.current_thread().name)
        return [(2, {"loss": torch.tensor(0.5), "lr": 1}, None), (16, {"loss vs samples": 0.5}, ("tensorboard",))]

    hub.start()
    hub.log(1, {"loss": 1.0})
    before = time.time()
    hub.log_later(records)
    after = time.time()
    hub.log(3, {"loss": 0.25})
    metrics = [r for r in _closed(hub) if r["k"] == METRICS]
    assert [(r["s"], r["d"], r.get("o")) for r in metrics] == [
        (1, {"loss": 1.0}, None),
        (2, {"loss": 0.5, "lr": 1.0}, None),
        (16, {"loss vs samples": 0.5}, ["tensorboard"]),
        (3, {"loss": 0.25}, None),
    ]
    assert int(before * 1000) <= metrics[1]["t"] == metrics[2]["t"] <= int(after * 1000)  # the call's time
    assert threads == ["primus-tracking-hub"]


def test_the_completion_gets_each_functions_records_with_its_calls_time_and_last_step_follows_the_steps(tmp_path):
    """``complete`` (goodput's figures) runs on the hub's thread on each later function's records, with the time
    log_later was called; ``last_step`` (the iteration a failed or killed alert names) is the latest step given."""
    seen: list[float] = []

    def complete(records, ts):
        records = list(records)
        seen.append(ts)
        return [*records, (records[0][0], {"goodput": ts}, None)]

    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=100, complete=complete)
    assert hub.last_step == 0
    hub.start()
    before = time.time()
    hub.log_later(lambda: [(7, {"loss": 1.0}, None)], step=7)
    after = time.time()
    hub.log_later(lambda: [(8, {"loss": 2.0}, None)])  # no step given: last_step stays
    assert hub.last_step == 7
    metrics = [r for r in _closed(hub) if r["k"] == METRICS]
    assert [(r["s"], sorted(r["d"])) for r in metrics] == [(7, ["loss"]), (7, ["goodput"]), (8, ["loss"]),
                                                           (8, ["goodput"])]
    assert len(seen) == 2 and before <= seen[0] <= after and metrics[1]["d"]["goodput"] == seen[0]


def test_a_function_that_fails_loses_its_records_only_counted_and_said_once(tmp_path, primus_caplog):
    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=100)

    def broken():
        raise ValueError("no records for token ghp_" + "a" * 36)

    hub.start()
    hub.log_later(broken)
    hub.log_later(broken)
    hub.log(5, {"loss": 1.0})
    lines = _closed(hub)
    assert [(r["s"], r["d"]) for r in lines if r["k"] == METRICS] == [(5, {"loss": 1.0})]
    assert lines[-1]["d"]["dropped"] == {"records_failed": 2}
    assert primus_caplog.text.count("records could not be made") == 1
    assert "ValueError('no records for token ***')" in primus_caplog.text  # what failed, redacted


def test_functions_past_the_queue_or_after_close_are_refused(tmp_path):
    hub = MetricsHub(JournalWriter(tmp_path), [], capacity=1)  # not started: nothing drains the queue
    hub.log_later(lambda: [(1, {"loss": 1.0}, None)])
    hub.log_later(lambda: [(2, {"loss": 1.0}, None)])
    hub.log_later(lambda: [(3, {"loss": 1.0}, None)])
    assert hub.refused == 2
    hub.start()
    lines = _closed(hub)
    hub.log_later(lambda: [(4, {"loss": 1.0}, None)])
    assert [r["s"] for r in lines if r["k"] == METRICS] == [1]
    assert hub.refused == 1
