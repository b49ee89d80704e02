"""The status a MaxText run ends with, from what is in flight when upstream's logger is cleaned up (it is
called from train_loop's ``finally``)."""

from __future__ import annotations

import pytest

from primus.backends.maxtext.session import status_for


@pytest.mark.parametrize("error, status", [
    (None, "FINISHED"), (SystemExit(0), "FINISHED"), (SystemExit(None), "FINISHED"),
    (SystemExit(1), "FAILED"), (RuntimeError("boom"), "FAILED"), (KeyboardInterrupt(), "KILLED"),
])
def test_status_for_what_is_in_flight(error, status):
    assert status_for(error) == status
