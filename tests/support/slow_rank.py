"""A training with one rank made slower by a user's own ``sitecustomize`` (a test's instrument, never the
product's): the process whose ``RANK`` is the slow rank sleeps before each call of one upstream function, wrapped
when its module is imported. ``primus-run`` chains it after its own bootstrap, as it does any user's."""

from __future__ import annotations

from pathlib import Path

USERS_SITECUSTOMIZE = '''
import os
import time

import wrapt

MODULE, _, ATTRIBUTE = os.environ["PRIMUS_TEST_SLOW_TARGET"].partition(":")


def slower(wrapped, instance, args, kwargs):
    time.sleep(float(os.environ["PRIMUS_TEST_SLOW_S"]))
    return wrapped(*args, **kwargs)


if os.environ.get("RANK") == os.environ["PRIMUS_TEST_SLOW_RANK"]:
    wrapt.register_post_import_hook(lambda module: wrapt.wrap_function_wrapper(module, ATTRIBUTE, slower), MODULE)
'''


def slow_rank_env(folder: Path, target: str, rank: int, seconds: float) -> dict[str, str]:
    """The environment that makes ``rank`` sleep ``seconds`` before each call of ``target`` (``module:Attr.path``):
    the user's ``sitecustomize``, written into ``folder``, on PYTHONPATH (primus-run puts its bootstrap first)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(USERS_SITECUSTOMIZE)
    return {"PYTHONPATH": str(folder), "PRIMUS_TEST_SLOW_TARGET": target, "PRIMUS_TEST_SLOW_RANK": str(rank),
            "PRIMUS_TEST_SLOW_S": str(seconds)}

