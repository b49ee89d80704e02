"""A redacted copy of this process's console in a file (``mlflow_upload_logs``), so the log uploaded
after training holds what the user saw: upstream's prints, its logging records, Primus's own lines.

``sys.stdout`` and ``sys.stderr`` become tees that write to the console unchanged and, line by line,
redacted, to the file. Logging handlers already bound to those two streams (upstream's handler set at
import, Primus's own) are pointed at the tees, so each record reaches the file exactly once and only
what the console shows: no second handler, no thread. Writes that bypass Python's streams (C code
writing to file descriptor 1 or 2) are not copied.

One capture per process: starting a new one stops the previous."""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

from primus.redaction import redact_text


class _LogFile:
    """The file both tees write to: whole lines only (a secret split over several ``write`` calls is
    still redacted), each written at once (line buffering) so an upload at the run's end has them."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = open(path, "a", encoding="utf-8", errors="replace", buffering=1)
        self._lock = threading.Lock()
        self._closed = False

    def write_lines(self, text: str) -> None:
        with self._lock:
            if not self._closed:
                self._file.write(redact_text(text))

    def reset_lock(self) -> None:
        """In a forked child: the lock may have been held by a thread that does not exist there."""
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._file.close()


class ConsoleTee:
    """Stands in for one console stream; everything but ``write``/``writelines`` is the stream's own."""

    def __init__(self, stream: TextIO, log_file: _LogFile):
        self.stream = stream
        self._log_file = log_file
        self._partial = ""

    def write(self, text: str) -> int:
        written = self.stream.write(text)
        if text:
            lines, sep, self._partial = (self._partial + text).rpartition("\n")
            if sep:
                self._log_file.write_lines(lines + sep)
        return written

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush_partial(self) -> None:
        if self._partial:
            self._log_file.write_lines(self._partial + "\n")
            self._partial = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class ConsoleCapture:
    def __init__(self, path: Path):
        self._file = _LogFile(path)
        self.stdout = ConsoleTee(sys.stdout, self._file)
        self.stderr = ConsoleTee(sys.stderr, self._file)
        self._handlers: list[logging.StreamHandler] = []

    @property
    def path(self) -> Path:
        return self._file.path

    def start(self) -> None:
        tees = {id(self.stdout.stream): self.stdout, id(self.stderr.stream): self.stderr}
        for handler in _stream_handlers():
            tee = tees.get(id(handler.stream))
            if tee is not None:
                handler.setStream(tee)
                self._handlers.append(handler)
        sys.stdout, sys.stderr = self.stdout, self.stderr

    def stop(self) -> None:
        """Give the console back (where nobody replaced our tees meanwhile) and close the file."""
        if sys.stdout is self.stdout:
            sys.stdout = self.stdout.stream
        if sys.stderr is self.stderr:
            sys.stderr = self.stderr.stream
        for handler in self._handlers:
            if handler.stream is self.stdout or handler.stream is self.stderr:
                handler.setStream(handler.stream.stream)
        self._handlers.clear()
        for tee in (self.stdout, self.stderr):
            tee.flush_partial()
        self._file.close()  # a tee still referenced somewhere now writes to the console only


_ACTIVE: ConsoleCapture | None = None


def capture_console(path: Path) -> ConsoleCapture:
    """Copy this process's console output to ``path`` (appended: a resumed job continues its log)."""
    global _ACTIVE
    stop_console_capture()
    _ACTIVE = ConsoleCapture(path)
    _ACTIVE.start()
    return _ACTIVE


def stop_console_capture() -> None:
    """Before the run ends (the log is uploaded when it does); a no-op without a capture."""
    global _ACTIVE
    capture, _ACTIVE = _ACTIVE, None
    if capture is not None:
        capture.stop()


def _stream_handlers() -> list[logging.StreamHandler]:
    loggers = [
        logging.getLogger(),
        *(lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)),
    ]
    # a handler without its own ``stream`` attribute (logging's _StderrHandler) reads sys.stderr when it writes
    return [
        h
        for lg in loggers
        for h in lg.handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler) and "stream" in vars(h)
    ]


def _after_fork_in_child() -> None:
    if _ACTIVE is not None:
        _ACTIVE._file.reset_lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
