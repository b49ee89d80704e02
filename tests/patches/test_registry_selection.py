"""PRIMUS_PATCHES (all | none | ids) and PRIMUS_DISABLE_PATCHES pick the patches; a typo is an error."""

from __future__ import annotations

import importlib

import pytest

from primus.patches import Patch
from primus.patches.registry import DISABLE_ENV, SELECT_ENV


@pytest.fixture
def two_patches(registry, upstream):
    """Patches 'p.one' and 'p.two' on one imported module, each appending its mark to greet()."""
    module = importlib.import_module(upstream())
    for mark in ("one", "two"):
        def install(mod, handle, mark=mark):
            handle.wrap(mod, "greet", lambda wrapped, instance, args, kwargs: wrapped(*args, **kwargs) + f" {mark}")

        registry.register(Patch(f"p.{mark}", module.__name__, None, "", install))
    return module


def statuses(registry) -> dict[str, str]:
    return {r.id: r.status for r in registry.records()}


def test_all_by_default(registry, two_patches):
    registry.activate()
    assert two_patches.greet("a") == "hello a one two"


def test_none(registry, two_patches, monkeypatch):
    monkeypatch.setenv(SELECT_ENV, "none")
    registry.activate()
    assert two_patches.greet("a") == "hello a"
    assert statuses(registry) == {"p.one": "skipped", "p.two": "skipped"}
    assert all("not selected" in r.reason and r.where == "" for r in registry.records())


def test_list(registry, two_patches, monkeypatch):
    monkeypatch.setenv(SELECT_ENV, " p.two ,")
    registry.activate()
    assert two_patches.greet("a") == "hello a two"
    assert statuses(registry) == {"p.one": "skipped", "p.two": "applied"}


def test_unknown_id_is_an_error_that_names_the_variable_and_the_fix(registry, two_patches, monkeypatch):
    monkeypatch.setenv(SELECT_ENV, "p.one,p.tow")
    with pytest.raises(ValueError) as info:
        registry.activate()
    message = str(info.value)
    assert "PRIMUS_PATCHES='p.one,p.tow'" in message and "['p.tow']" in message and "primus patches" in message
    assert not registry.active and two_patches.greet("a") == "hello a"


def test_disable_removes_ids(registry, two_patches, monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "p.one")
    registry.activate()
    assert two_patches.greet("a") == "hello a two"


@pytest.mark.parametrize(("select", "only", "selected"), [
    (None, None, {"p.two"}), ("  ", None, {"p.two"}), ("none", None, set()), ("p.one,p.two", None, {"p.two"}),
    ("none", ["p.one", "p.two"], {"p.two"})])
def test_disabled_ids_are_taken_out_of_every_kind_of_selection(registry, two_patches, monkeypatch, select, only,
                                                               selected):
    monkeypatch.setenv(DISABLE_ENV, "p.one")
    if select is not None:
        monkeypatch.setenv(SELECT_ENV, select)
    selection = registry.selection(only)
    assert {patch_id for patch_id in ("p.one", "p.two") if patch_id in selection} == selected


def test_with_disable_set_a_patch_registered_after_activation_is_still_hooked(registry, upstream, monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "early")
    registry.register(Patch("early", upstream(), None, "", lambda m, h: None))
    registry.activate()
    registry.register(Patch("late", upstream(), None, "", lambda m, h: None))
    assert statuses(registry) == {"early": "skipped", "late": "pending"}


def test_unknown_disabled_id_is_an_error(registry, two_patches, monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "p.three")
    with pytest.raises(ValueError, match="PRIMUS_DISABLE_PATCHES='p.three' names unknown patch ids"):
        registry.activate()


def test_only_argument_overrides_the_environment(registry, two_patches, monkeypatch):
    monkeypatch.setenv(SELECT_ENV, "none")
    registry.activate(only=["p.one"])
    assert two_patches.greet("a") == "hello a one"
    with pytest.raises(ValueError, match="only='nope'"):
        registry.selection(only=["nope"])
