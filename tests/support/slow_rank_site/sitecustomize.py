"""A user's own ``sitecustomize`` that makes one rank slow (a test's instrument, never the product's): with
``PRIMUS_TEST_SLOW_TARGET=module:Attribute.path`` and ``PRIMUS_TEST_SLOW_RANK`` set, the process whose ``RANK`` is
that rank sleeps ``PRIMUS_TEST_SLOW_S`` seconds (default 0.2) before each call of that upstream function, wrapped
when its module is imported. ``primus-run`` chains it after its own bootstrap, as it does any user's."""

from __future__ import annotations

import os
import time

TARGET = os.environ.get("PRIMUS_TEST_SLOW_TARGET")


def _slow_down(module) -> None:
    import wrapt

    seconds = float(os.environ.get("PRIMUS_TEST_SLOW_S", "0.2"))

    def slower(wrapped, instance, args, kwargs):
        time.sleep(seconds)
        return wrapped(*args, **kwargs)

    wrapt.wrap_function_wrapper(module, TARGET.partition(":")[2], slower)


if TARGET and os.environ.get("RANK") == os.environ.get("PRIMUS_TEST_SLOW_RANK"):
    import wrapt

    wrapt.register_post_import_hook(_slow_down, TARGET.partition(":")[0])
