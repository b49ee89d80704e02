"""The alert webhook against a real HTTP server on 127.0.0.1: up, down then up, slow, refusing; and its URL in
no message."""

from __future__ import annotations

import logging
import time

from support.webhook_server import SECRET_PATH, Receiver, free_port

from primus.tracking.health.webhook import WEBHOOK_ENV, Webhook

BODY = {"text": "[primus] ALERT stalled ...", "kind": "stalled", "iteration": 7}


def test_an_alert_is_posted_as_json(webhook_receiver):
    hook = Webhook(webhook_receiver.url)
    hook.send(BODY)
    assert hook.close(time.monotonic() + 10)
    assert webhook_receiver.bodies == [BODY] and webhook_receiver.paths == [SECRET_PATH]


def test_a_webhook_down_at_first_gets_the_alert_once_it_is_up(caplog):
    port = free_port()
    hook = Webhook(f"http://127.0.0.1:{port}{SECRET_PATH}", backoff_first_s=0.2, backoff_max_s=0.4, attempts=50)
    started = time.monotonic()
    hook.send(BODY)
    assert time.monotonic() - started < 0.1  # send never waits for the server
    time.sleep(1.0)
    late = Receiver(port)
    try:
        assert hook.close(time.monotonic() + 10)
        assert late.bodies == [BODY]
    finally:
        late.close()


def test_a_slow_webhook_times_out_and_is_retried():
    slow = Receiver(delay_s=1.0)
    try:
        hook = Webhook(slow.url, timeout_s=0.3, backoff_first_s=0.1)
        hook.send(BODY)
        time.sleep(0.5)
        slow.delay_s = 0.0
        assert hook.close(time.monotonic() + 10)
        assert len(slow.paths) >= 2 and BODY in slow.bodies  # the first answer came after the timeout
    finally:
        slow.close()


def test_a_webhook_that_stays_down_is_given_up_at_the_deadline_with_a_warning_without_its_url(caplog, monkeypatch):
    url = f"http://127.0.0.1:{free_port()}{SECRET_PATH}"
    monkeypatch.setenv(WEBHOOK_ENV, url)
    hook = Webhook.from_environment()
    assert hook is not None
    hook.send(BODY)
    with caplog.at_level(logging.WARNING, logger="primus.tracking"):
        started = time.monotonic()
        assert not hook.close(time.monotonic() + 1.5)
        assert time.monotonic() - started < 3.0
        deadline = time.monotonic() + 5
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.05)
    assert "did not take the stalled alert" in caplog.text
    assert SECRET_PATH not in caplog.text and "127.0.0.1" not in caplog.text


def test_a_refused_url_is_not_retried(webhook_receiver):
    webhook_receiver.status = 404
    hook = Webhook(webhook_receiver.url, backoff_first_s=0.1)
    hook.send(BODY)
    assert not hook.close(time.monotonic() + 5)
    assert webhook_receiver.paths == [SECRET_PATH]  # one attempt


def test_no_webhook_without_the_variable():
    assert Webhook.from_environment({}) is None
    assert Webhook.from_environment({WEBHOOK_ENV: " "}) is None
