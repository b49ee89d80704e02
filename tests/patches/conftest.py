"""Fixtures for registry tests: a fresh registry per test (the global REGISTRY is never touched) and
throwaway upstream modules written to tmp_path, imported for real through sys.path."""

from __future__ import annotations

import importlib
import itertools
import sys
import textwrap

import pytest

from primus.patches import PatchRegistry
from primus.patches.registry import DISABLE_ENV, SELECT_ENV

UPSTREAM_SOURCE = '''
calls = []

def greet(name):
    calls.append(name)
    return f"hello {name}"

def explode():
    raise ValueError("upstream boom")

class Greeter:
    def greet(self, name):
        return f"hi {name}"

class Child(Greeter):
    pass
'''

_names = itertools.count()


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.delenv(SELECT_ENV, raising=False)
    monkeypatch.delenv(DISABLE_ENV, raising=False)
    reg = PatchRegistry()
    yield reg
    reg.deactivate()


@pytest.fixture
def upstream(tmp_path, monkeypatch):
    """Returns ``write(source=UPSTREAM_SOURCE) -> module name``: a new, not yet imported module."""
    written: list[str] = []
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(source: str = UPSTREAM_SOURCE) -> str:
        name = f"primus_test_upstream_{next(_names)}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        written.append(name)
        importlib.invalidate_caches()  # the directory listing may be cached from an earlier write
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)
