"""The alert webhook: ``PRIMUS_ALERT_WEBHOOK``, a URL that gets each alert as a JSON POST (Slack's incoming
webhooks read its ``text``; a program reads ``kind``, ``run``, ``experiment``, ``iteration``, ``host``, ``time``).

Posted by a thread of its own in the delivery process, never the training thread: ``send`` queues and returns.
Each post has a timeout; a failure (no answer, a refused connection, a 5xx or 429) is retried with capped
exponential backoff, ``attempts`` times, and until ``close``'s deadline at the end of the run. The URL is a
secret (a Slack webhook's path is its credential): it is redacted in every message, and is never written
anywhere; it is read from the environment of the delivery process, which inherits it from the job's.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from primus.redaction import MASK, redact_text

log = logging.getLogger("primus.tracking")

WEBHOOK_ENV = "PRIMUS_ALERT_WEBHOOK"
TIMEOUT_S = 5.0
ATTEMPTS = 8
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0


class Webhook:
    def __init__(
        self,
        url: str,
        timeout_s: float = TIMEOUT_S,
        attempts: int = ATTEMPTS,
        backoff_first_s: float = BACKOFF_FIRST_S,
        backoff_max_s: float = BACKOFF_MAX_S,
    ):
        self._url = url
        self.timeout_s = timeout_s
        self.attempts = attempts
        self.backoff_first_s = backoff_first_s
        self.backoff_max_s = backoff_max_s
        self.delivered = 0
        self.failed = 0  # bodies given up on
        self._queue: queue.Queue[Mapping[str, Any] | None] = queue.Queue()
        self._deadline: float | None = None  # set by close: retry no longer than this
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, name="primus-alert-webhook", daemon=True)
        self._thread.start()

    @staticmethod
    def from_environment(env: Mapping[str, str] | None = None) -> Webhook | None:
        url = (os.environ if env is None else env).get(WEBHOOK_ENV, "").strip()
        return Webhook(url) if url else None

    def send(self, body: Mapping[str, Any]) -> None:
        """Queue one alert's body; never blocks."""
        self._queue.put(body)

    def close(self, deadline: float) -> bool:
        """Post what is queued, retrying until ``deadline`` (monotonic) at most; True when all went out."""
        self._deadline = deadline
        self._queue.put(None)
        self._thread.join(max(0.0, deadline - time.monotonic()))
        self._stop.set()  # past the deadline: a backoff wait ends now
        return not self._thread.is_alive() and self.failed == 0

    def _main(self) -> None:
        while (body := self._queue.get()) is not None:
            self._deliver(body)

    def _deliver(self, body: Mapping[str, Any]) -> None:
        data = json.dumps(body).encode()
        delay, error = self.backoff_first_s, ""
        for attempt in range(1, self.attempts + 1):
            error = self._post(data)
            if not error:
                self.delivered += 1
                return
            if (error.startswith("HTTP 4") and error != "HTTP 429") or attempt == self.attempts:
                break  # refused for good (a wrong or revoked URL), or out of attempts
            if not self._wait(delay):
                break
            delay = min(delay * 2, self.backoff_max_s)
        self.failed += 1
        log.warning(
            "primus tracking: the alert webhook (%s) did not take the %s alert after %d attempts: %s",
            WEBHOOK_ENV,
            body.get("kind"),
            attempt,
            error,
        )

    def _post(self, data: bytes) -> str:
        """'' when the webhook took it, else why not (redacted)."""
        request = urllib.request.Request(self._url, data, {"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                answer.read()
            return ""
        except urllib.error.HTTPError as e:
            return f"HTTP {e.code}"
        except (OSError, ValueError) as e:  # URLError, a timeout, a reset; ValueError: not a URL
            return redact_text(f"{type(e).__name__}: {getattr(e, 'reason', e)}").replace(self._url, MASK)

    def _wait(self, delay: float) -> bool:
        """Back off; False when the close deadline passed (or comes before the wait would end)."""
        deadline = self._deadline
        if deadline is not None and time.monotonic() + delay > deadline:
            return False
        return not self._stop.wait(delay)
