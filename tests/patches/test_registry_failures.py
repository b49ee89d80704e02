"""What goes wrong, and who pays: patch-code failures disable the patch and never reach the caller;
upstream's exceptions reach the caller unchanged; a required patch that cannot apply stops the run."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import traceback
from pathlib import Path

import packaging
import pytest

from primus.config import ConfigError
from primus.errors import SettingsError
from primus.patches import DuplicatePatchError, Patch, PatchError
from primus.tracking.plan import TrackingPlanError
from primus.upstreams.release import Upstream, in_range

PACKAGING = importlib.metadata.version("packaging")  # a real installed distribution to gate on


def wrapping(attribute: str, wrapper):
    """An install function that wraps ``module.<attribute>`` with ``wrapper``."""
    return lambda module, handle: handle.wrap(module, attribute, wrapper)


def passthrough(wrapped, instance, args, kwargs):
    return wrapped(*args, **kwargs)


def status(registry) -> list[tuple[str, str, str]]:
    return [(r.id, r.status, r.reason) for r in registry.records()]


# -- declaration -------------------------------------------------------------------------------
def test_duplicate_id_is_refused_at_registration(registry):
    first = registry.register(Patch("dup", "json", None, "", lambda m, h: None))
    with pytest.raises(DuplicatePatchError, match="'dup' is already registered"):
        registry.register(Patch("dup", "csv", None, "", lambda m, h: None))
    assert registry.patches() == [first]


@pytest.mark.parametrize("kwargs,message", [
    ({"id": "a,b"}, "without commas"),
    ({"id": ""}, "non-empty"),
    ({"versions": ">=banana"}, "invalid version specifier"),
])
def test_bad_declarations_are_refused(kwargs, message):
    fields = {"id": "ok", "target": "json", "upstream": None, "versions": "", "install": lambda m, h: None}
    with pytest.raises(ValueError, match=message):
        Patch(**(fields | kwargs))


# -- eligibility -------------------------------------------------------------------------------
def packaging_upstream(supported: str) -> Upstream:
    """A real installed wheel to gate on: packaging, whose ``__init__.py`` carries ``__version__``."""
    return Upstream("packaging", "packaging", "packaging", supported)


def test_version_in_range_applies_and_records_the_version_and_where_it_came_from(registry, upstream):
    module = importlib.import_module(upstream())
    registry.register(Patch("v.ok", module.__name__, packaging_upstream(">=1"), f"=={PACKAGING}",
                            wrapping("greet", passthrough)))
    registry.activate()
    [record] = registry.applied()
    assert (record.distribution, record.version) == ("packaging", PACKAGING)
    assert record.where == f"wheel {Path(packaging.__file__).parent}"


def test_supported_release_outside_the_patch_range_skips_quietly(registry, upstream, caplog):
    """Another patch serves this release: no warning, and a required one does not stop the run."""
    module = importlib.import_module(upstream())
    original = module.greet
    registry.register(Patch("v.other", module.__name__, packaging_upstream(">=1"), "<1",
                            wrapping("greet", passthrough), required=True))
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.activate()
    assert module.greet is original
    assert status(registry) == [("v.other", "skipped", f"written for packaging<1, not {PACKAGING}")]
    assert caplog.text == ""


def test_unsupported_release_is_skipped_with_a_warning_naming_version_and_path(registry, upstream, caplog):
    module = importlib.import_module(upstream())
    original = module.greet
    registry.register(Patch("v.old", module.__name__, packaging_upstream("<1"), "", wrapping("greet", passthrough)))
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.activate()
    assert module.greet is original
    where = Path(packaging.__file__).parent
    assert status(registry) == [("v.old", "skipped",
                                 f"packaging {PACKAGING} (wheel {where}) is outside the supported range '<1'")]
    assert "v.old skipped" in caplog.text


def test_required_patch_on_an_unsupported_release_raises_at_import(registry, upstream):
    name = upstream()
    registry.register(Patch("v.req", name, packaging_upstream("<1"), "", wrapping("greet", passthrough),
                            required=True))
    registry.activate()
    with pytest.raises(PatchError, match=rf"required patch v.req cannot be applied: packaging {PACKAGING} "
                                         r"\(wheel .*\) is outside.*Use a supported release \(packaging<1\)"):
        importlib.import_module(name)
    assert status(registry)[0][1] == "failed"


def test_required_patch_on_an_unsupported_release_raises_at_activation_when_already_imported(registry, upstream):
    module = importlib.import_module(upstream())
    registry.register(Patch("v.req", module.__name__, packaging_upstream("<1"), "", wrapping("greet", passthrough),
                            required=True))
    with pytest.raises(PatchError):
        registry.activate()


def test_upstream_not_importable_is_skipped(registry, upstream):
    module = importlib.import_module(upstream())
    missing = Upstream("Nothing", "primus-no-such-distribution", "primus_no_such_package", ">=1")
    registry.register(Patch("v.none", module.__name__, missing, "", wrapping("greet", passthrough)))
    registry.activate()
    assert status(registry) == [("v.none", "skipped", "primus_no_such_package is not importable "
                                                      "(primus-no-such-distribution is not installed)")]
    assert module.greet("x") == "hello x"


def test_false_condition_skips_quietly(registry, upstream, caplog):
    module = importlib.import_module(upstream())
    registry.register(Patch("c.false", module.__name__, None, "", wrapping("greet", passthrough),
                            condition=lambda ctx: False))
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.activate()
    assert status(registry) == [("c.false", "skipped", "condition false")]
    assert caplog.text == ""


def test_raising_condition_skips_with_a_warning(registry, upstream, caplog):
    module = importlib.import_module(upstream())

    def broken(ctx):
        raise KeyError("no such option")

    registry.register(Patch("c.raise", module.__name__, None, "", wrapping("greet", passthrough), condition=broken))
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.activate()
    [(_, state, reason)] = status(registry)
    assert state == "skipped" and "condition raised KeyError('no such option')" in reason
    assert "c.raise skipped" in caplog.text


# -- install failures --------------------------------------------------------------------------
def test_failing_install_is_skipped_recorded_and_its_partial_changes_undone(registry, upstream, caplog):
    module = importlib.import_module(upstream())
    original = module.greet

    def install(mod, handle):
        handle.wrap(mod, "greet", passthrough)
        raise AttributeError("upstream renamed training_log")

    registry.register(Patch("i.fail", module.__name__, None, "", install))
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.activate()
    assert module.greet is original
    assert status(registry) == [("i.fail", "failed", "install raised AttributeError('upstream renamed training_log')")]
    assert "i.fail failed to install" in caplog.text


def test_failing_required_install_raises_patch_error(registry, upstream):
    name = upstream()

    def install(mod, handle):
        raise AttributeError("gone")

    registry.register(Patch("i.req", name, None, "", install, required=True))
    registry.activate()
    with pytest.raises(PatchError, match="required patch i.req failed to install") as info:
        importlib.import_module(name)
    assert isinstance(info.value.__cause__, AttributeError)


# -- failures at call time ---------------------------------------------------------------------
def test_wrapper_failing_before_the_call_falls_back_to_the_original(registry, upstream, caplog):
    module = importlib.import_module(upstream())
    invocations = []

    def broken(wrapped, instance, args, kwargs):
        invocations.append(args)
        raise TypeError("bug in patch code")

    registry.register(Patch("w.before", module.__name__, None, "", wrapping("greet", broken)))
    registry.activate()
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        assert module.greet("k") == "hello k"
    assert module.calls == ["k"]
    assert "w.before failed and is now disabled" in caplog.text
    assert status(registry) == [("w.before", "failed", "disabled at run time: TypeError('bug in patch code')")]
    assert module.greet("l") == "hello l"
    assert len(invocations) == 1, "a disabled patch's wrapper is not called again"


def test_wrapper_failing_after_the_call_returns_upstream_result_without_calling_twice(registry, upstream):
    module = importlib.import_module(upstream())

    def broken(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        return result + 1  # str + int: a bug in the patch, after upstream ran

    registry.register(Patch("w.after", module.__name__, None, "", wrapping("greet", broken)))
    registry.activate()
    assert module.greet("m") == "hello m"
    assert module.calls == ["m"]
    assert registry.records()[0].status == "failed"


def test_upstream_exception_propagates_unchanged(registry, upstream):
    module = importlib.import_module(upstream())
    registry.register(Patch("w.upstream", module.__name__, None, "", wrapping("explode", passthrough)))
    registry.activate()
    with pytest.raises(ValueError) as info:
        module.explode()
    error = info.value
    assert str(error) == "upstream boom"
    assert error.__context__ is None and error.__cause__ is None
    frames = traceback.extract_tb(error.__traceback__)
    assert (frames[-1].name, frames[-1].filename) == ("explode", module.__file__)
    assert registry.records()[0].status == "applied", "upstream's error is not the patch failing"


def test_upstream_exception_wins_over_a_wrapper_that_replaces_it(registry, upstream):
    module = importlib.import_module(upstream())
    raised = []

    def converting(wrapped, instance, args, kwargs):
        try:
            return wrapped(*args, **kwargs)
        except ValueError as e:
            raised.append(e)
            raise RuntimeError("patch rewrote the error") from e

    registry.register(Patch("w.convert", module.__name__, None, "", wrapping("explode", converting)))
    registry.activate()
    with pytest.raises(ValueError) as info:
        module.explode()
    assert info.value is raised[0]
    assert info.value.__context__ is None, "nothing is chained onto upstream's exception"
    assert registry.records()[0].status == "failed"


def test_keyboard_interrupt_from_a_wrapper_is_not_swallowed(registry, upstream):
    module = importlib.import_module(upstream())

    def interrupted(wrapped, instance, args, kwargs):
        raise KeyboardInterrupt

    registry.register(Patch("w.kbd", module.__name__, None, "", wrapping("greet", interrupted)))
    registry.activate()
    with pytest.raises(KeyboardInterrupt):
        module.greet("n")


@pytest.mark.parametrize("required", [False, True])
@pytest.mark.parametrize("refusal", [ConfigError(["train_iters = 'ten': expected int"]),
                                     TrackingPlanError(["log_avg_reset_interval=0 is invalid: expects int >= 1"])],
                         ids=["config", "tracking plan"])
def test_the_users_settings_refused_by_a_patch_reach_the_caller_and_the_patch_stays_on(registry, upstream, caplog,
                                                                                       refusal, required):
    """A patch that stops a bad configuration is doing its job: the caller gets the refusal as raised (for the entry
    point to print), with no "failed and is now disabled" and nothing chained; the patch still checks the next call."""
    module = importlib.import_module(upstream())

    def validating(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        if args[0] == "bad":
            raise refusal
        return result

    registry.register(Patch("w.validate", module.__name__, None, "", wrapping("greet", validating),
                            required=required))
    registry.activate()
    with caplog.at_level(logging.WARNING, logger="primus.patches"), pytest.raises(SettingsError) as info:
        module.greet("bad")
    assert info.value is refusal and info.value.__context__ is None
    assert caplog.text == ""
    assert [r.status for r in registry.records()] == ["applied"]
    with pytest.raises(SettingsError):
        module.greet("bad")
    assert module.greet("ok") == "hello ok"


def test_required_wrapper_failure_raises(registry, upstream):
    module = importlib.import_module(upstream())

    def broken(wrapped, instance, args, kwargs):
        raise TypeError("required patch bug")

    registry.register(Patch("w.req", module.__name__, None, "", wrapping("greet", broken), required=True))
    registry.activate()
    with pytest.raises(TypeError, match="required patch bug"):
        module.greet("o")
    assert [(r.status, r.reason) for r in registry.records()] == [
        ("failed", "disabled at run time: TypeError('required patch bug')")]


def test_an_unsupported_release_skips_a_patch_whose_condition_holds(registry, upstream, caplog):
    """The version check comes first: a true condition does not let a patch onto code it was not written for."""
    module = importlib.import_module(upstream())
    original = module.greet
    registry.register(Patch("v.cond", module.__name__, packaging_upstream("<1"), "", wrapping("greet", passthrough),
                            condition=lambda ctx: True))
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.activate()
    assert module.greet is original
    [(_, state, reason)] = status(registry)
    assert state == "skipped" and reason.endswith("is outside the supported range '<1'")


def test_an_upstream_whose_version_cannot_be_parsed_is_not_patched(registry, upstream, tmp_path):
    (tmp_path / "primus_unversioned").mkdir()
    (tmp_path / "primus_unversioned" / "__init__.py").write_text('__version__ = "nightly-build"\n')
    module = importlib.import_module(upstream())
    original = module.greet
    unversioned = Upstream("Unversioned", "primus-unversioned", "primus_unversioned", ">=0")
    registry.register(Patch("v.bad", module.__name__, unversioned, "", wrapping("greet", passthrough),
                            condition=lambda ctx: True))
    registry.activate()
    assert module.greet is original
    assert status(registry) == [("v.bad", "skipped", "cannot tell which Unversioned release the source tree "
                                 f"{tmp_path / 'primus_unversioned'} is: no version in __init__.py")]
    assert not in_range("nightly-build", ">=0")
