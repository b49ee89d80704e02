"""A pytest plugin counting the ``assert`` statements that passed, per test, in the modules pytest rewrites (test
modules and conftest files; not helper modules). ``scripts/count-asserts`` loads it with the
``enable_assertion_pass_hook`` option on, which pytest needs to call ``pytest_assertion_pass``."""

from __future__ import annotations

from collections import Counter

import pytest

PASSED: Counter[str] = Counter()  # test node id -> assertions passed while it ran (its fixtures' included)


def pytest_assertion_pass(item: pytest.Item, lineno: int, orig: str, expl: str) -> None:
    PASSED[item.nodeid] += 1
