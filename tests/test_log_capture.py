"""The console copy behind mlflow_upload_logs: what the console shows reaches the file once, redacted,
and the console itself is unchanged; stopping gives the streams back."""

from __future__ import annotations

import logging
import sys

import pytest

from primus.log_capture import capture_console, stop_console_capture

SECRET = "s3cr3t-v4lue-2b9f"


@pytest.fixture
def upstream_logger():
    """Call it to get a logger whose handler is bound to stdout before the capture starts, as Megatron's
    is at import (in the test body: pytest swaps sys.stdout between fixture set-up and the test)."""
    logger = logging.getLogger("test_log_capture.upstream")
    logger.setLevel(logging.INFO)
    logger.propagate = False

    def bind() -> tuple[logging.Logger, logging.Handler]:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
        logger.addHandler(handler)
        return logger, handler

    yield bind
    stop_console_capture()
    logger.handlers.clear()


def test_console_lines_reach_the_file_once_redacted(tmp_path, capsys, monkeypatch, upstream_logger):
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)
    logger, _ = upstream_logger()
    logger.addHandler(logging.lastResort)  # WARNING and up, to whatever sys.stderr is when it writes
    path = tmp_path / "logs" / "rank_0.log"
    capture_console(path)
    print("iteration 1/3 | lm loss: 6.9")
    logger.info("from a handler bound before the capture")
    logger.addHandler(logging.StreamHandler(sys.stderr))  # bound after it: writes through the tee
    logger.warning("to every handler")
    sys.stdout.write(f"split {SECRET[:6]}")  # a secret cut over several writes is still one line
    sys.stdout.write(f"{SECRET[6:]} end\n")
    print("no newline yet", end="")
    stop_console_capture()

    console = capsys.readouterr()
    assert console.out == ("iteration 1/3 | lm loss: 6.9\nINFO:test_log_capture.upstream:from a handler bound before "
                           "the capture\nWARNING:test_log_capture.upstream:to every handler\n"
                           f"split {SECRET} end\nno newline yet")
    assert console.err == "to every handler\n" * 2
    assert path.read_text().splitlines() == [
        "iteration 1/3 | lm loss: 6.9",
        "INFO:test_log_capture.upstream:from a handler bound before the capture",
        "WARNING:test_log_capture.upstream:to every handler",
        "to every handler",
        "to every handler",
        "split *** end",
        "no newline yet",
    ]


def test_stop_gives_the_console_back(tmp_path, capsys, upstream_logger):
    _, handler = upstream_logger()
    stdout, stderr = sys.stdout, sys.stderr
    path = tmp_path / "rank_0.log"
    capture_console(path)
    assert sys.stdout is not stdout and handler.stream is sys.stdout
    assert sys.stdout.fileno is not None and sys.stdout.encoding == stdout.encoding  # the rest is the stream's
    stop_console_capture()
    assert (sys.stdout, sys.stderr, handler.stream) == (stdout, stderr, stdout)
    print("after the capture")
    assert path.read_text() == ""
    assert capsys.readouterr().out == "after the capture\n"


def test_one_capture_per_process_and_a_resumed_job_appends(tmp_path, capsys):
    first, second = tmp_path / "first.log", tmp_path / "second.log"
    capture_console(first)
    print("one")
    capture_console(second)  # stops the first
    print("two")
    capture_console(first)
    print("three")
    stop_console_capture()
    assert first.read_text() == "one\nthree\n" and second.read_text() == "two\n"
    assert capsys.readouterr().out == "one\ntwo\nthree\n"
