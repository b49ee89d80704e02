"""A training with one rank made slower, or held at a gate, by a user's own ``sitecustomize`` (a test's instrument,
never the product's): the process whose ``RANK`` is the chosen rank sleeps before each call of one upstream
function, or waits before its n-th call until the test opens the gate, wrapped when its module is imported.
``primus-run`` chains it after its own bootstrap, as it does any user's; a plain ``torchrun`` imports it first."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

USERS_SITECUSTOMIZE = '''
import os
import time
from pathlib import Path

import wrapt

MODULE, _, ATTRIBUTE = os.environ["PRIMUS_TEST_SLOW_TARGET"].partition(":")
SLEEP_S = float(os.environ.get("PRIMUS_TEST_SLOW_S", "0"))
SLOW_CALLS = int(os.environ.get("PRIMUS_TEST_SLOW_CALLS", "0"))  # sleep in the first n calls only; 0: in every one
HOLD_AT = int(os.environ.get("PRIMUS_TEST_HOLD_AT", "0"))  # the call held at the gate; 0: none
GATE = Path(os.environ.get("PRIMUS_TEST_GATE", "."))
calls = 0


def slower(wrapped, instance, args, kwargs):
    global calls
    calls += 1
    if not SLOW_CALLS or calls <= SLOW_CALLS:
        time.sleep(SLEEP_S)
    if calls == HOLD_AT:
        (GATE / "held").touch()
        # the gate is a FIFO: opening it blocks in the kernel, no Python running, until the test opens the other end
        # (a test that dies first kills the ranks: kill_torchrun)
        with open(GATE / "go", "rb") as gate:
            gate.read()
    return wrapped(*args, **kwargs)


if os.environ.get("RANK") == os.environ["PRIMUS_TEST_SLOW_RANK"]:
    wrapt.register_post_import_hook(lambda module: wrapt.wrap_function_wrapper(module, ATTRIBUTE, slower), MODULE)
'''


def _users_site(folder: Path, target: str, rank: int) -> dict[str, str]:
    """The user's ``sitecustomize``, written into ``folder``, on PYTHONPATH (primus-run puts its bootstrap first)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(USERS_SITECUSTOMIZE)
    return {"PYTHONPATH": str(folder), "PRIMUS_TEST_SLOW_TARGET": target, "PRIMUS_TEST_SLOW_RANK": str(rank)}


def slow_rank_env(folder: Path, target: str, rank: int, seconds: float, calls: int = 0) -> dict[str, str]:
    """The environment that makes ``rank`` sleep ``seconds`` before each call of ``target`` (``module:Attr.path``),
    or before its first ``calls`` only."""
    return {**_users_site(folder, target, rank), "PRIMUS_TEST_SLOW_S": str(seconds), "PRIMUS_TEST_SLOW_CALLS": str(calls)}


def held_rank_env(folder: Path, target: str, rank: int, call: int) -> dict[str, str]:
    """The environment that makes ``rank`` wait before its ``call``-th call of ``target`` (1: the first) until the
    test opens the gate (``open_gate``): the rank touches ``folder/held`` when it starts waiting (its time: when the
    rank stopped making progress) and waits blocked in the kernel, so its frames stay still while it waits."""
    env = {**_users_site(folder, target, rank), "PRIMUS_TEST_HOLD_AT": str(call), "PRIMUS_TEST_GATE": str(folder)}
    os.mkfifo(folder / "go")
    return env


def open_gate(folder: Path, timeout_s: float = 60) -> None:
    """Let the held rank go on: open the FIFO's other end. Without a reader that fails (ENXIO): a signal can take the
    rank out of its open() for a moment (SIGCONT after the drill's SIGSTOP does) before the kernel restarts it."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.close(os.open(folder / "go", os.O_WRONLY | os.O_NONBLOCK))
            return
        except OSError as e:
            if e.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
