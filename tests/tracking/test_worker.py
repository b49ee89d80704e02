"""SinkWorker alone: a real journal and cursor store in tmp_path, and a sink that records what it gets (a fake of
the tracker only; the worker's logic is ours). Timing bounds come from the deadlines each test sets."""

import threading
import time
import types

import pytest

from primus.tracking.delivery import worker as worker_module
from primus.tracking.delivery.worker import SinkWorker
from primus.tracking.journal.records import METRICS, Record, encode
from primus.tracking.journal.run_state import CursorStore
from primus.tracking.journal.writer import JournalWriter
from primus.tracking.sinks.sink import Durability, Sink, SinkUnavailable

SECRET_URL = "http://bob:hunter22secret@tracker.example"
WAIT_S = 20.0  # what a test waits at most for a thing that takes milliseconds on an idle box


class Bug(BaseException):
    """Not an Exception: what a bug in a sink could raise past ``outside_except``."""


class RecordingSink(Sink):
    """Records what it gets and the saved cursor at each call; fails the opens and writes it is told to (by
    1-based call number); delivers two records per write."""

    name = "rec"

    def __init__(
        self,
        cursors,
        durability=Durability.ON_WRITE,
        min_interval_s=0.0,
        failing_opens=(),
        failing_writes=(),
        write_error=None,
        open_error=None,
        close_error=None,
        per_write=2,
    ):
        self.cursors = cursors
        self.per_write = per_write
        self.durability = durability
        self.min_interval_s = min_interval_s
        self.failing_opens, self.failing_writes = set(failing_opens), set(failing_writes)
        self.write_error = write_error or ConnectionError(f"{SECRET_URL} refused")
        self.open_error, self.close_error = open_error, close_error
        self.opens = self.writes = 0
        self.got: list[int] = []  # steps, in the order written
        self.calls: list[tuple] = []  # ("write", steps, saved cursor), ("flush", saved), ("close", status, complete)
        self.write_times: list[float] = []
        self.delivered = threading.Condition()

    def open(self):
        self.opens += 1
        if self.open_error is not None:
            raise self.open_error
        if self.opens in self.failing_opens:
            raise ConnectionError(f"{SECRET_URL} down")
        return "target"

    def chunks(self, records):
        if self.per_write is None:
            yield from super().chunks(records)
            return
        for i in range(0, len(records), self.per_write):
            yield records[i : i + self.per_write]

    def write(self, records):
        self.writes += 1
        if self.writes in self.failing_writes:
            raise self.write_error
        with self.delivered:
            self.got += [r.step for r in records]
            self.write_times.append(time.monotonic())
            self.calls.append(("write", [r.step for r in records], self.saved()))
            self.delivered.notify_all()

    def flush(self):
        self.calls.append(("flush", self.saved()))

    def close(self, status, complete):
        self.calls.append(("close", status, complete))
        if self.close_error is not None:
            raise self.close_error

    def saved(self):
        return self.cursors.offset(self.name)

    def wait_for(self, count):
        """Until ``count`` records were written (True), or WAIT_S passed (False)."""
        with self.delivered:
            return self.delivered.wait_for(lambda: len(self.got) >= count, WAIT_S)


def journal_records(run_dir, steps, only=None):
    """Append one metrics record per step (``only``: step -> the sinks it is for); return each record's end."""
    writer = JournalWriter(run_dir)
    only = only or {}
    ends = [writer.append([encode(METRICS, s, 1000 + s, {"loss": float(s)}, only.get(s))]) for s in steps]
    writer.close()
    return ends


def direct(steps, end=0, only=None):
    return [Record(METRICS, s, 1000 + s, {"loss": float(s)}, end, only) for s in steps]


@pytest.fixture
def cursors(tmp_path):
    return CursorStore(tmp_path)


def started(sink, tmp_path, cursors, end=None):
    worker = SinkWorker(sink, tmp_path, cursors)
    if end is not None:
        worker.notify(end)
    worker.start()
    return worker


def closed(worker, status="FINISHED", deadline_s=None):
    """Close and join. With no ``deadline_s`` the deadline is far off and the worker must end well before it,
    once everything is delivered."""
    worker.close(status, time.monotonic() + (deadline_s or 3 * WAIT_S))
    assert worker.join(time.monotonic() + (deadline_s or 0) + WAIT_S)
    return worker


def wait_until(condition):
    deadline = time.monotonic() + WAIT_S
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def warnings(caplog, text):
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def fast_backoff(monkeypatch):
    monkeypatch.setattr(worker_module, "BACKOFF_FIRST_S", 0.01)
    monkeypatch.setattr(worker_module, "BACKOFF_MAX_S", 0.02)


# -- delivery from the journal -----------------------------------------------------------------


def test_every_record_for_the_sink_is_delivered_once_in_order_from_the_saved_cursor(tmp_path, cursors):
    ends = journal_records(tmp_path, range(10), only={4: ("other",), 5: ("rec", "other"), 9: ("other",)})
    cursors.save("rec", "target", ends[2])  # steps 0-2 were delivered by an earlier process
    sink = RecordingSink(cursors)
    worker = SinkWorker(sink, tmp_path, cursors)
    assert worker.name == "rec" and worker.pending_bytes == 0 and worker.failures == 0
    assert worker.last_error == "" and worker.disabled is False and worker.finished is False
    assert worker.thread.daemon and worker.thread.name == "primus-tracking-rec"  # a stuck sink never holds the exit
    worker.notify(ends[-1])
    assert worker.pending_bytes == ends[-1]  # nothing delivered yet
    worker.start()
    closed(worker)
    assert sink.got == [3, 5, 6, 7, 8]
    assert [c[1] for c in sink.calls if c[0] == "write"] == [[3, 5], [6, 7], [8]]
    assert sink.calls[-1] == ("close", "FINISHED", True)
    assert worker.start_cursor == ends[2] and worker.records_sent == 5
    assert worker.cursor == ends[-1] and worker.pending_bytes == 0
    assert cursors.load("rec", "target") == ends[-1]  # past the last record, though it was for another sink
    assert sink.opens == 1 and worker.target == "target" and worker.failures == 0 and worker.finished


def test_a_cursor_saved_for_another_target_is_not_used(tmp_path, cursors):
    ends = journal_records(tmp_path, range(3))
    cursors.save("rec", "an older tracker run", ends[1])
    sink = RecordingSink(cursors)
    closed(started(sink, tmp_path, cursors, ends[-1]))
    assert sink.got == [0, 1, 2]


def test_a_sink_is_never_written_an_empty_batch(tmp_path, cursors):
    ends = journal_records(tmp_path, range(3), only={0: ("other",), 1: ("other",), 2: ("other",)})
    sink = RecordingSink(cursors, per_write=None)  # Sink.chunks: one batch, even of nothing
    closed(started(sink, tmp_path, cursors, ends[-1]))
    assert sink.writes == 0 and sink.calls == [("close", "FINISHED", True)]
    assert cursors.load("rec", "target") == ends[-1]


def test_only_up_to_the_notified_end_is_delivered(tmp_path, cursors):
    ends = journal_records(tmp_path, range(6))
    sink = RecordingSink(cursors)
    worker = started(sink, tmp_path, cursors, ends[2])
    assert sink.wait_for(3)
    assert worker.request_flush(ends[2]).wait(WAIT_S)
    assert sink.got == [0, 1, 2] and worker.pending_bytes == 0
    worker.notify(ends[-1])
    assert sink.wait_for(6)
    closed(worker)
    assert sink.got == list(range(6))


def test_a_line_still_being_written_waits_for_its_end(tmp_path, cursors, monkeypatch):
    monkeypatch.setattr(worker_module, "FLUSH_EVERY_S", 0.0)
    ends = journal_records(tmp_path, range(2))
    line = encode(METRICS, 2, 1002, {"loss": 2.0})
    with open(tmp_path / "journal" / "00000000000000000000.jsonl", "ab") as f:
        f.write(line[:10])  # the writer's os.write seen half done
        f.flush()
        sink = RecordingSink(cursors, Durability.ON_FLUSH)
        worker = started(sink, tmp_path, cursors, ends[-1] + len(line))
        assert sink.wait_for(2)
        assert wait_until(lambda: cursors.offset("rec") == ends[-1])  # what came before is flushed all the same
        f.write(line[10:])
    worker.notify(ends[-1] + len(line))
    closed(worker)
    assert sink.got == [0, 1, 2] and sink.calls[-1] == ("close", "FINISHED", True)


# -- the cursor by durability ------------------------------------------------------------------


def test_a_journal_ending_in_a_torn_line_is_never_complete(tmp_path, cursors):
    ends = journal_records(tmp_path, range(2))
    with open(tmp_path / "journal" / "00000000000000000000.jsonl", "ab") as f:
        f.write(b'{"k":"m","s":2')  # a writer killed mid-line
    sink = RecordingSink(cursors)
    worker = started(sink, tmp_path, cursors, ends[-1] + 100)
    assert sink.wait_for(2)
    closed(worker, deadline_s=0.3)
    assert sink.got == [0, 1] and not [c for c in sink.calls if c[0] == "close"] and worker.pending_bytes == 100


def test_on_write_the_cursor_is_saved_after_each_write(tmp_path, cursors, monkeypatch):
    monkeypatch.setattr(worker_module, "FLUSH_EVERY_S", 0.0)
    ends = journal_records(tmp_path, range(5))
    sink = RecordingSink(cursors, Durability.ON_WRITE)
    worker = started(sink, tmp_path, cursors, ends[-1])
    assert sink.wait_for(5)
    assert [c[2] for c in sink.calls if c[0] == "write"] == [0, ends[1], ends[3]]
    assert wait_until(lambda: cursors.load("rec", "target") == ends[-1])  # a crash now resends nothing
    closed(worker)
    assert "flush" not in [c[0] for c in sink.calls]  # nothing to make durable: never flushed unasked


def test_on_flush_the_cursor_is_saved_only_once_the_sink_flushed(tmp_path, cursors, monkeypatch):
    monkeypatch.setattr(worker_module, "FLUSH_EVERY_S", 3600.0)
    ends = journal_records(tmp_path, range(5))
    sink = RecordingSink(cursors, Durability.ON_FLUSH)
    worker = started(sink, tmp_path, cursors, ends[2])
    assert sink.wait_for(3)
    assert cursors.offset("rec") == 0  # delivered, not flushed: a crash now resends it
    assert worker.request_flush(ends[2]).wait(WAIT_S)
    assert [c for c in sink.calls if c[0] == "flush"] == [("flush", 0)]  # once, asked for
    assert cursors.load("rec", "target") == ends[2]  # a crash now resends nothing
    worker.notify(ends[-1])
    assert sink.wait_for(5)
    assert cursors.load("rec", "target") == ends[2]
    closed(worker)
    assert cursors.load("rec", "target") == ends[-1]  # the sink's close flushed the rest


def test_on_flush_the_sink_is_flushed_every_flush_every_s_without_a_request(tmp_path, cursors, monkeypatch):
    monkeypatch.setattr(worker_module, "FLUSH_EVERY_S", 3600.0)
    ends = journal_records(tmp_path, range(3))
    sink = RecordingSink(cursors, Durability.ON_FLUSH)
    worker = started(sink, tmp_path, cursors, ends[-1])
    assert sink.wait_for(3)
    monkeypatch.setattr(worker_module, "FLUSH_EVERY_S", 0.0)  # due now, with nothing new to wake the worker
    assert wait_until(lambda: cursors.offset("rec") == ends[-1])
    assert ("flush", 0) in sink.calls
    closed(worker)


def test_on_close_the_cursor_is_saved_only_by_close(tmp_path, cursors):
    ends = journal_records(tmp_path, range(5))
    sink = RecordingSink(cursors, Durability.ON_CLOSE)
    worker = started(sink, tmp_path, cursors, ends[-1])
    assert sink.wait_for(5)
    assert worker.request_flush(ends[-1]).wait(WAIT_S)
    assert ("flush", 0) in sink.calls
    assert cursors.offset("rec") == 0  # flushed yet not safe: a crash now resends all to the same tracker run
    closed(worker)
    assert cursors.load("rec", "target") == ends[-1]


def test_a_close_with_nothing_new_keeps_the_saved_cursor(tmp_path, cursors):
    ends = journal_records(tmp_path, range(3))
    cursors.save("rec", "target", ends[-1])
    sink = RecordingSink(cursors, Durability.ON_CLOSE)
    closed(started(sink, tmp_path, cursors, ends[-1]))
    assert sink.got == [] and sink.calls == [("close", "FINISHED", True)]
    assert cursors.load("rec", "target") == ends[-1]


# -- records the journal could not take --------------------------------------------------------


def test_direct_records_come_after_the_journal_up_to_their_offset_then_the_journal_goes_on(tmp_path, cursors):
    ends = journal_records(tmp_path, range(5))
    sink = RecordingSink(cursors)
    worker = SinkWorker(sink, tmp_path, cursors)
    mixed = direct([100, 101], ends[2]) + direct([103], ends[2], ("other",)) + direct([102], ends[2], ("other", "rec"))
    worker.deliver_direct(ends[2], mixed)
    worker.deliver_direct(ends[2], direct([104], ends[2], ("other",)))  # nothing for this sink: nothing held
    worker.notify(ends[-1])  # the journal goes on past them before the worker's first look
    worker.start()
    closed(worker)
    assert sink.got == [0, 1, 2, 100, 101, 102, 3, 4]
    assert worker.direct_delivered == 3 and worker.direct_lost == 0
    assert sink.calls[-1] == ("close", "FINISHED", True)
    assert cursors.load("rec", "target") == ends[-1]


def test_direct_records_past_the_known_end_bring_the_journal_up_to_them(tmp_path, cursors):
    ends = journal_records(tmp_path, range(3))
    sink = RecordingSink(cursors)
    worker = started(sink, tmp_path, cursors)
    worker.deliver_direct(ends[-1], direct([100], ends[-1]))  # no notify: the hub's tick failed to journal
    assert sink.wait_for(4)
    assert sink.got == [0, 1, 2, 100] and worker.pending_bytes == 0
    closed(worker)
    assert worker.direct_delivered == 1


def test_a_direct_batch_retried_after_a_failure_sends_only_what_is_left(tmp_path, cursors, monkeypatch):
    fast_backoff(monkeypatch)
    sink = RecordingSink(cursors, failing_writes={2})
    worker = SinkWorker(sink, tmp_path, cursors)
    worker.deliver_direct(0, direct(range(100, 105)))
    worker.start()
    closed(worker)
    assert sink.got == [100, 101, 102, 103, 104] and worker.failures == 1
    assert worker.direct_delivered == 5 and worker.direct_lost == 0


def test_direct_records_past_direct_max_are_lost(tmp_path, cursors, monkeypatch):
    monkeypatch.setattr(worker_module, "DIRECT_MAX", 3)
    sink = RecordingSink(cursors)
    worker = SinkWorker(sink, tmp_path, cursors)
    worker.deliver_direct(0, direct([100, 101]))
    worker.deliver_direct(0, direct([102, 103]))  # 4 held would pass 3: the whole batch is lost
    worker.deliver_direct(0, direct([104]))  # 3 held: still room
    worker.deliver_direct(0, direct([108]))  # full
    worker.start()
    assert sink.wait_for(3)
    worker.deliver_direct(0, direct([105, 106, 107]))  # those delivered are no longer held
    assert sink.wait_for(6)
    closed(worker)
    assert sink.got == [100, 101, 104, 105, 106, 107]
    assert worker.direct_delivered == 6 and worker.direct_lost == 3


def test_direct_records_held_when_the_worker_gives_up_or_after_it_ended_are_lost(tmp_path, cursors, monkeypatch):
    fast_backoff(monkeypatch)
    sink = RecordingSink(cursors, failing_writes=range(1, 10**6))
    worker = SinkWorker(sink, tmp_path, cursors)
    worker.deliver_direct(0, direct([100, 101, 102]))
    worker.start()
    closed(worker, deadline_s=0.2)
    assert sink.got == [] and ("close", "FINISHED", False) not in sink.calls
    assert worker.direct_lost == 3 and worker.direct_delivered == 0
    worker.deliver_direct(0, direct([103, 104]) + direct([105], 0, ("other",)))
    assert worker.direct_lost == 5


def test_a_flush_waits_for_direct_records_held(tmp_path, cursors, monkeypatch):
    fast_backoff(monkeypatch)
    sink = RecordingSink(cursors, failing_writes=range(1, 10**6))
    worker = SinkWorker(sink, tmp_path, cursors)
    worker.deliver_direct(0, direct([100]))
    worker.start()
    done = worker.request_flush(0)
    assert not done.wait(0.3) and worker.failures > 0  # the journal is delivered up to 0; the direct record is not
    sink.failing_writes.clear()
    assert done.wait(WAIT_S) and sink.got == [100]
    closed(worker)


# -- flushes -----------------------------------------------------------------------------------


def test_a_flush_is_set_once_delivered_up_to_its_offset(tmp_path, cursors):
    ends = journal_records(tmp_path, range(4))
    sink = RecordingSink(cursors)
    worker = started(sink, tmp_path, cursors, ends[0])
    first, second = worker.request_flush(ends[0]), worker.request_flush(ends[-1])
    assert first.wait(WAIT_S) and sink.got == [0] and ("flush", ends[0]) in sink.calls
    assert not second.wait(0.3)  # the journal's end was not notified yet
    worker.notify(ends[-1])
    assert second.wait(WAIT_S) and sink.got == [0, 1, 2, 3] and sink.calls[-1] == ("flush", ends[-1])
    closed(worker)


def test_flushes_left_when_the_worker_ends_are_set_and_new_ones_at_once(tmp_path, cursors):
    sink = RecordingSink(cursors)
    worker = started(sink, tmp_path, cursors)
    never = worker.request_flush(10**9)  # past anything the journal will hold
    closed(worker)
    assert never.is_set()
    assert worker.request_flush(10**9).is_set()


# -- close -------------------------------------------------------------------------------------


def test_close_ends_the_tracker_run_with_the_status_once_everything_is_delivered(tmp_path, cursors, monkeypatch):
    fast_backoff(monkeypatch)
    ends = journal_records(tmp_path, range(4))
    sink = RecordingSink(cursors, failing_writes={1, 2})
    closed(started(sink, tmp_path, cursors, ends[-1]), "FAILED")
    assert sink.got == [0, 1, 2, 3]
    assert [c for c in sink.calls if c[0] == "close"] == [("close", "FAILED", True)]


def test_out_of_time_the_tracker_run_is_left_open_for_sync(tmp_path, cursors, monkeypatch):
    fast_backoff(monkeypatch)
    ends = journal_records(tmp_path, range(4))
    sink = RecordingSink(cursors, failing_writes=range(1, 10**6))
    worker = started(sink, tmp_path, cursors, ends[-1])
    closed(worker, deadline_s=0.3)
    assert sink.got == [] and not [c for c in sink.calls if c[0] == "close"] and worker.failures > 1
    assert worker.pending_bytes == ends[-1] and cursors.offset("rec") == 0


def test_a_close_past_its_deadline_still_ends_the_tracker_run_when_everything_was_delivered(tmp_path, cursors):
    ends = journal_records(tmp_path, range(2))
    sink = RecordingSink(cursors, Durability.ON_CLOSE)
    worker = started(sink, tmp_path, cursors, ends[-1])
    assert sink.wait_for(2)
    worker.close("FINISHED", time.monotonic())
    assert worker.join(time.monotonic() + WAIT_S)
    assert sink.calls[-1] == ("close", "FINISHED", True) and cursors.load("rec", "target") == ends[-1]


def test_a_sink_that_never_opened_by_the_deadline_is_never_written_or_closed(tmp_path, cursors, monkeypatch):
    fast_backoff(monkeypatch)
    ends = journal_records(tmp_path, range(2))
    sink = RecordingSink(cursors, failing_opens=range(1, 10**6))
    worker = started(sink, tmp_path, cursors, ends[-1])
    closed(worker, deadline_s=0.3)
    assert sink.opens > 1 and sink.writes == 0 and sink.calls == [] and worker.failures == sink.opens


def timed_join(worker, deadline):
    """``worker.join(deadline)`` and the seconds it took, run on another thread so that a join that never returns
    fails the test instead of hanging it."""
    result = []

    def join():
        begun = time.monotonic()
        result.append((worker.join(deadline), time.monotonic() - begun))

    waiter = threading.Thread(target=join, daemon=True)
    waiter.start()
    waiter.join(WAIT_S)
    return result[0] if result else (None, WAIT_S)


def test_join_returns_false_at_its_deadline_while_the_worker_runs(tmp_path, cursors):
    worker = started(RecordingSink(cursors), tmp_path, cursors)  # never closed yet: it runs on
    ended, took = timed_join(worker, time.monotonic())
    assert ended is False and took < 1.0  # a deadline passed: no wait (a second would be a bug, not a slow box)
    ended, took = timed_join(worker, time.monotonic() + 0.1)
    assert ended is False and took < WAIT_S
    closed(worker)


def test_a_failing_sink_close_is_warned_redacted_and_cut_not_raised(tmp_path, cursors, primus_caplog):
    ends = journal_records(tmp_path, range(2))
    sink = RecordingSink(cursors, Durability.ON_CLOSE, close_error=RuntimeError(f"{SECRET_URL} " + "x" * 1000))
    worker = closed(started(sink, tmp_path, cursors, ends[-1]))
    (message,) = warnings(primus_caplog, "could not end its run cleanly")
    detail = message.split("cleanly (", 1)[1]
    assert message.startswith("primus tracking: rec got every record but could not end its run cleanly (")
    assert detail.startswith("RuntimeError: http://bob:***@tracker.example xxx") and detail.endswith("x)")
    assert len(detail) == 500 + len(")") and "hunter22secret" not in primus_caplog.text
    assert worker.failures == 0 and worker.finished
    assert cursors.load("rec", "target") == ends[-1]


# -- failures ----------------------------------------------------------------------------------


def test_a_sink_unavailable_at_open_is_off_for_the_run_with_one_warning(tmp_path, cursors, primus_caplog):
    ends = journal_records(tmp_path, range(2))
    sink = RecordingSink(cursors, open_error=SinkUnavailable(f"mode refused for {SECRET_URL}"))
    worker = started(sink, tmp_path, cursors, ends[-1])
    assert worker.join(time.monotonic() + WAIT_S)  # ends by itself, no close needed
    assert worker.disabled and sink.opens == 1 and sink.calls == [] and worker.failures == 0
    assert worker.start_cursor == worker.cursor == 0  # what sync's progress line reads: nothing sent
    assert [r.getMessage() for r in primus_caplog.records] == [
        "primus tracking: rec is off for this run: mode refused for http://bob:***@tracker.example"
    ]


def test_a_failing_open_is_retried_warned_once_and_its_recovery_once(tmp_path, cursors, monkeypatch, primus_caplog):
    fast_backoff(monkeypatch)
    ends = journal_records(tmp_path, range(2))
    sink = RecordingSink(cursors, failing_opens={1, 2, 3})
    worker = closed(started(sink, tmp_path, cursors, ends[-1]))
    assert sink.opens == 4 and sink.got == [0, 1] and worker.failures == 3 and not worker.disabled
    assert worker.last_error == "ConnectionError: http://bob:***@tracker.example down"
    assert [r.getMessage() for r in primus_caplog.records] == [
        "primus tracking: rec could not start (ConnectionError: http://bob:***@tracker.example down). Training "
        f"continues; records stay in {tmp_path / 'journal'} and are retried every few seconds.",
        "primus tracking: rec is delivering again after 3 failed attempts",
    ]


def test_each_outage_is_warned_once_and_each_recovery_once(tmp_path, cursors, monkeypatch, primus_caplog):
    fast_backoff(monkeypatch)
    ends = journal_records(tmp_path, range(4))
    error = ConnectionError(f"{SECRET_URL} " + "y" * 1000)
    sink = RecordingSink(cursors, failing_writes={1, 2, 4}, write_error=error)
    worker = started(sink, tmp_path, cursors, ends[1])
    assert sink.wait_for(2)
    assert len(worker.last_error) == 500 and worker.last_error.startswith("ConnectionError: http://bob:***@")
    worker.notify(ends[-1])
    closed(worker)
    assert sink.got == [0, 1, 2, 3] and worker.failures == 3
    outages = warnings(primus_caplog, "rec failed to deliver (ConnectionError: http://bob:***@tracker.example yyy")
    assert len(outages) == 2 and f"{'y' * 10}). Training continues" in outages[0]
    assert warnings(primus_caplog, "delivering again") == [
        "primus tracking: rec is delivering again after 2 failed attempts",
        "primus tracking: rec is delivering again after 3 failed attempts",
    ]
    assert "hunter22secret" not in primus_caplog.text


def test_a_bug_that_escapes_the_sink_ends_the_worker_not_the_process(tmp_path, cursors, primus_caplog):
    sink = RecordingSink(cursors, failing_writes={1}, write_error=Bug(f"at {SECRET_URL}"))
    worker = SinkWorker(sink, tmp_path, cursors)
    worker.deliver_direct(0, direct([100, 101]))
    pending = worker.request_flush(0)
    worker.start()
    assert worker.join(time.monotonic() + WAIT_S)
    assert worker.finished and pending.is_set() and worker.direct_lost == 2 and worker.failures == 1
    assert warnings(primus_caplog, "rec stopped (Bug: at http://bob:***@tracker.example)")


# -- backoff and pacing --------------------------------------------------------------------------


def recorded_sleeps(monkeypatch, real=False):
    """The worker's sleeps, recorded (and slept for real when ``real``, else not at all)."""
    sleeps: list[float] = []

    def sleep(seconds):
        sleeps.append(seconds)
        if real:
            time.sleep(seconds)

    monkeypatch.setattr(worker_module, "time", types.SimpleNamespace(monotonic=time.monotonic, sleep=sleep))
    return sleeps


def test_the_backoff_doubles_up_to_its_cap(tmp_path, cursors, monkeypatch):
    sleeps = recorded_sleeps(monkeypatch)
    ends = journal_records(tmp_path, range(1))
    sink = RecordingSink(cursors, failing_opens=range(1, 8))
    worker = started(sink, tmp_path, cursors, ends[-1])
    assert sink.wait_for(1)  # before close: its deadline would cut the sleeps
    closed(worker)
    first, cap = worker_module.BACKOFF_FIRST_S, worker_module.BACKOFF_MAX_S
    expected = [first]
    while len(expected) < 7:
        expected.append(min(expected[-1] * 2, cap))
    assert sleeps == expected and expected[-1] == cap  # reached the cap and stayed there


def test_the_backoff_starts_again_after_a_delivery(tmp_path, cursors, monkeypatch):
    sleeps = recorded_sleeps(monkeypatch)
    ends = journal_records(tmp_path, range(2))
    sink = RecordingSink(cursors, failing_writes={1, 2, 4, 5})
    worker = started(sink, tmp_path, cursors, ends[0])
    assert sink.wait_for(1)
    worker.notify(ends[-1])
    assert sink.wait_for(2)
    closed(worker)
    first = worker_module.BACKOFF_FIRST_S
    assert sink.got == [0, 1] and sleeps == [first, 2 * first, first, 2 * first]


def test_the_backoff_never_sleeps_past_the_close_deadline(tmp_path, cursors, monkeypatch):
    monkeypatch.setattr(worker_module, "BACKOFF_FIRST_S", 60.0)
    monkeypatch.setattr(worker_module, "BACKOFF_MAX_S", 600.0)
    sleeps = recorded_sleeps(monkeypatch, real=True)
    ends = journal_records(tmp_path, range(2))
    sink = RecordingSink(cursors, failing_writes=range(1, 10**6))
    worker = SinkWorker(sink, tmp_path, cursors)
    worker.notify(ends[-1])
    deadline_s = 0.5
    worker.close("FINISHED", time.monotonic() + deadline_s)  # before the first failure: a sleep begun is not cut
    worker.start()
    assert worker.join(time.monotonic() + deadline_s + WAIT_S)
    assert sleeps and all(0 <= s <= deadline_s for s in sleeps) and worker.failures >= 1


def test_pacing_spaces_deliveries_by_min_interval(tmp_path, cursors):
    ends = journal_records(tmp_path, range(3))
    min_interval_s = 0.4
    sink = RecordingSink(cursors, min_interval_s=min_interval_s)
    worker = started(sink, tmp_path, cursors, ends[0])
    assert sink.wait_for(1)
    worker.notify(ends[1])
    assert sink.wait_for(2)
    worker.notify(ends[2])
    assert sink.wait_for(3)
    closed(worker)
    gaps = [b - a for a, b in zip(sink.write_times, sink.write_times[1:], strict=False)]
    # measured from one write to the next, not from the passes' starts the worker paces by: half of it at least
    assert len(gaps) == 2 and all(gap >= min_interval_s / 2 for gap in gaps)


def test_pacing_ends_early_for_a_flush_and_for_a_close(tmp_path, cursors):
    ends = journal_records(tmp_path, range(3))
    # longer than this machine has been up (its monotonic clock), and far past what this test waits: the first
    # delivery must not be paced from a clock's zero (a machine booted less than min_interval_s ago held it back)
    sink = RecordingSink(cursors, min_interval_s=time.monotonic() + 3600.0)
    worker = started(sink, tmp_path, cursors, ends[0])
    assert sink.wait_for(1)  # the first delivery is not held back
    worker.notify(ends[1])
    assert worker.request_flush(ends[1]).wait(WAIT_S) and sink.got == [0, 1]
    worker.notify(ends[2])
    closed(worker)
    assert sink.got == [0, 1, 2] and sink.calls[-1] == ("close", "FINISHED", True)
