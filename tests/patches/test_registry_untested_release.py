"""PRIMUS_UPSTREAM_CHECK: a release outside the supported range is refused by default (strict) and tried with
warn: the patch written for the end of the range it lies beyond installs, the release is said once on the
console, and the records say it was untested (for the run's tags)."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from pathlib import Path

import packaging
import pytest

from primus.patches import Patch, PatchError
from primus.upstreams.release import UPSTREAM_CHECK_ENV, Upstream

PACKAGING = importlib.metadata.version("packaging")  # a real installed wheel, here "newer" than every range
MAJOR = int(PACKAGING.split(".")[0])
BELOW = f">=1,<{MAJOR}"  # a supported range packaging's installed release is above
PACKAGING_UPSTREAM = Upstream("packaging", "packaging", "packaging", BELOW)


def wrapping_greet(mark: str):
    def install(module, handle):
        handle.wrap(module, "greet", lambda wrapped, instance, args, kwargs: f"{mark}:{wrapped(*args, **kwargs)}")

    return install


def declare_variants(registry, target: str) -> None:
    """One patch in two variants, as a backend declares them where upstream changed; and one for every release."""
    registry.register(Patch("greet.old", target, PACKAGING_UPSTREAM, f"<{MAJOR - 1}", wrapping_greet("old"),
                            required=True))
    registry.register(Patch("greet.new", target, PACKAGING_UPSTREAM, f">={MAJOR - 1},<{MAJOR}",
                            wrapping_greet("new"), required=True))
    registry.register(Patch("greet.all", target, PACKAGING_UPSTREAM, "", wrapping_greet("all")))


def test_strict_refuses_the_release_naming_it_and_how_to_try_it(registry, upstream, monkeypatch):
    monkeypatch.delenv(UPSTREAM_CHECK_ENV, raising=False)
    name = upstream()
    declare_variants(registry, name)
    registry.activate()
    with pytest.raises(PatchError, match=rf"packaging {PACKAGING} \(wheel .*\) is outside the supported range "
                                         rf"'{BELOW}'\. Use a supported release \(packaging{BELOW}\) or update the "
                                         rf"patch, or set {UPSTREAM_CHECK_ENV}=warn to try this release\."):
        importlib.import_module(name)


def test_warn_tries_the_release_with_the_newest_variant_said_once_and_recorded(registry, upstream, monkeypatch,
                                                                               caplog):
    monkeypatch.setenv(UPSTREAM_CHECK_ENV, "Warn")
    module = importlib.import_module(upstream())
    declare_variants(registry, module.__name__)
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.activate()
    assert module.greet("x") == "all:new:hello x"
    applied = {r.id: r for r in registry.applied()}
    assert set(applied) == {"greet.new", "greet.all"} and all(r.untested for r in applied.values())
    [said] = [r.getMessage() for r in caplog.records]
    where = f"wheel {Path(packaging.__file__).parent}"
    assert said == (f"primus: packaging {PACKAGING} ({where}) is outside the supported range '{BELOW}' and is tried "
                    f"({UPSTREAM_CHECK_ENV}=warn): its patches were written for packaging{BELOW}: greet.old "
                    f"(<{MAJOR - 1}), greet.new (>={MAJOR - 1},<{MAJOR}), greet.all (all). Metrics may be wrong "
                    "where upstream changed; a patch whose hold on upstream broke stops the job.")


def test_a_reset_registry_says_the_untested_release_again(registry, upstream, monkeypatch, caplog):
    """Once per process means once per activation history: reset forgets it with the records, so the next
    activation (a test's, an in-process re-run's) tells the console again which release it tries."""
    monkeypatch.setenv(UPSTREAM_CHECK_ENV, "warn")
    module = importlib.import_module(upstream())
    declare_variants(registry, module.__name__)
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.activate()
        registry.deactivate()
        registry.activate()  # the same history: not said twice
        registry.reset()
        registry.activate()
    said = [r.getMessage() for r in caplog.records if "is outside the supported range" in r.getMessage()]
    assert len(said) == 2, said
    assert module.greet("x") == "all:new:hello x"


def test_warn_still_stops_at_a_patch_whose_hold_on_upstream_broke(registry, upstream, monkeypatch):
    monkeypatch.setenv(UPSTREAM_CHECK_ENV, "warn")
    name = upstream("def hello(name):\n    return name\n")  # greet was renamed upstream
    declare_variants(registry, name)
    registry.activate()
    with pytest.raises(PatchError, match="required patch greet.new failed to install on .*greet"):
        importlib.import_module(name)


def test_a_bad_mode_is_refused_at_activation_naming_the_variable_and_the_modes(registry, monkeypatch):
    monkeypatch.setenv(UPSTREAM_CHECK_ENV, "loose")
    with pytest.raises(ValueError, match=rf"{UPSTREAM_CHECK_ENV}='loose' is not a mode: use strict .* or warn"):
        registry.activate()
    assert not registry.active


def test_a_refusal_for_another_reason_does_not_offer_to_try_the_release(registry, upstream, monkeypatch):
    """Only a release outside the range can be tried: a missing upstream is refused with the plain fix."""
    monkeypatch.delenv(UPSTREAM_CHECK_ENV, raising=False)
    missing = Upstream("Nothing", "primus-no-such-distribution", "primus_no_such_package", ">=1")
    name = upstream()
    registry.register(Patch("greet.req", name, missing, "", wrapping_greet("req"), required=True))
    registry.activate()
    with pytest.raises(PatchError) as refused:
        importlib.import_module(name)
    assert str(refused.value) == ("required patch greet.req cannot be applied: primus_no_such_package is not importable "
                                  "(primus-no-such-distribution is not installed). Use a supported release "
                                  "(primus-no-such-distribution>=1) or update the patch.")
