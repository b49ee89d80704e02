"""The catalog loads the declaring modules, plus PRIMUS_EXTRA_PATCH_MODULES (test/extension hook)."""

from __future__ import annotations

import pytest

from primus.patches import REGISTRY
from primus.patches.catalog import EXTRA_MODULES_ENV, declaring_modules, load_all
from primus.patches.registry import PLATFORM_ENV, detect_platform


def test_every_declared_patch_module_loads_and_declares_unique_ids():
    load_all()  # registering twice would raise DuplicatePatchError: a second load must be a no-op
    load_all()
    ids = [p.id for p in REGISTRY.patches()]
    assert len(ids) == len(set(ids))


def test_extra_modules_are_appended(monkeypatch):
    monkeypatch.setenv(EXTRA_MODULES_ENV, " json , csv")
    assert declaring_modules()[-2:] == ("json", "csv")


def test_an_extra_module_that_cannot_be_imported_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(EXTRA_MODULES_ENV, "primus_no_such_declarations")
    with pytest.raises(ValueError, match="'primus_no_such_declarations'.*PRIMUS_EXTRA_PATCH_MODULES.*PYTHONPATH"):
        load_all()


def test_forced_platform_is_validated(monkeypatch):
    monkeypatch.setenv(PLATFORM_ENV, "CPU")
    assert detect_platform() == "cpu"
    monkeypatch.setenv(PLATFORM_ENV, "gpu")
    with pytest.raises(ValueError, match="PRIMUS_PLATFORM='gpu' is not a platform; use one of cpu, cuda"):
        detect_platform()
