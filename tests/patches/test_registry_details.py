"""What a user of the registry reads and gets in the cases the other registry tests leave out: the decorator
form, the platform detected when none is forced, the warning when patch code fails, the record and message of
a required patch that cannot apply, keyword arguments through a guarded wrapper, undo under a later wrapper."""

from __future__ import annotations

import functools
import importlib
import logging

import pytest
import torch
import wrapt
from test_registry_failures import PACKAGING, packaging_upstream, passthrough, wrapping

from primus.patches import Patch, PatchError
from primus.patches.registry import PLATFORM_ENV, PatchContext, detect_platform
from primus.upstreams.release import locate


def test_the_decorator_registers_the_patch_as_declared_and_keeps_the_function(registry, upstream):
    name = upstream()
    gate = packaging_upstream(">=1")

    def install(module, handle):
        handle.replace(module, "greet", lambda who: f"patched {who}")

    assert registry.patch("d.dec", target=name, upstream=gate, versions=f"=={PACKAGING}", required=True,
                          description="says patched")(install) is install
    assert registry.patches() == [Patch("d.dec", name, gate, f"=={PACKAGING}", install, required=True,
                                        description="says patched")]
    registry.patch("d.any", target=name, upstream=gate)(install)
    assert registry.patches()[-1].versions == "", "no range given: every release the upstream supports"
    registry.activate()
    assert importlib.import_module(name).greet("x") == "patched x"


@pytest.mark.parametrize("forced", [None, " CPU ", "cuda"])
def test_the_platform_is_the_forced_one_else_what_torch_sees(monkeypatch, forced):
    if forced is None:
        monkeypatch.delenv(PLATFORM_ENV, raising=False)
    else:
        monkeypatch.setenv(PLATFORM_ENV, forced)
    seen = "cuda" if torch.cuda.is_available() else "cpu"
    assert detect_platform() == (forced.strip().lower() if forced else seen)


def test_a_wrapper_that_fails_is_named_with_its_error_in_the_warning(registry, upstream, caplog):
    module = importlib.import_module(upstream())

    def broken(wrapped, instance, args, kwargs):
        raise TypeError("bug in patch code")

    registry.register(Patch("w.warn", module.__name__, None, "", wrapping("greet", broken)))
    registry.activate()
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        module.greet("k")
    assert [r.getMessage() for r in caplog.records] == [
        "primus patch w.warn failed and is now disabled: TypeError('bug in patch code')"]


def test_a_required_patch_on_an_unsupported_release_is_recorded_with_the_version_where_and_why(registry, upstream):
    name = upstream()
    gate = packaging_upstream("<1")
    registry.register(Patch("v.req", name, gate, "", wrapping("greet", passthrough), required=True))
    registry.activate()
    with pytest.raises(PatchError):
        importlib.import_module(name)
    [record] = registry.records()
    found = locate(gate)
    assert (record.status, record.version, record.where, record.reason) == ("failed", PACKAGING, found.where,
                                                                            found.problem())


def test_a_required_patch_whose_condition_breaks_says_so_without_a_release_to_use(registry, upstream):
    name = upstream()

    def broken(ctx):
        raise KeyError("no such option")

    registry.register(Patch("c.req", name, None, "", wrapping("greet", passthrough), condition=broken, required=True))
    registry.activate()
    with pytest.raises(PatchError) as raised:
        importlib.import_module(name)
    assert str(raised.value) == "required patch c.req cannot be applied: condition raised KeyError('no such option')."


def test_keyword_arguments_reach_upstream_through_a_guarded_wrapper(registry, upstream):
    module = importlib.import_module(upstream())
    registry.register(Patch("w.kw", module.__name__, None, "", wrapping("greet", passthrough)))
    registry.activate()
    assert module.greet(name="k") == "hello k" and module.calls == ["k"]
    assert [r.status for r in registry.records()] == ["applied"]


def test_a_failing_wrapper_falls_back_to_upstream_even_when_upstream_has_attributes_named_result_and_error(
        registry, upstream):
    module = importlib.import_module(upstream())
    module.greet.result, module.greet.error = "not a call's result", ValueError("not a call's error")

    def broken(wrapped, instance, args, kwargs):
        assert wrapped.result == "not a call's result"  # upstream's attributes, seen through the guard's call
        raise TypeError("bug in patch code")

    registry.register(Patch("w.attrs", module.__name__, None, "", wrapping("greet", broken)))
    registry.activate()
    assert module.greet("k") == "hello k" and module.calls == ["k"], "upstream called once, its own result"


def test_a_disabled_wrapper_passes_straight_to_upstream_without_calling_the_patch(registry, upstream):
    module = importlib.import_module(upstream())
    seen = []

    def counting(wrapped, instance, args, kwargs):
        seen.append(args)
        return wrapped(*args, **kwargs)

    registry.register(Patch("w.off", module.__name__, None, "", wrapping("greet", counting)))
    registry.activate()
    early = module.greet  # bound before the patch is turned off: still ours, now a pass-through
    module.greet("a")
    registry.deactivate()
    assert (early("b"), seen, module.calls) == ("hello b", [("a",)], ["a", "b"])


def test_an_attribute_of_an_object_without_a_dict_is_replaced_and_restored(registry, upstream):
    module = importlib.import_module(upstream())

    class Slotted:
        __slots__ = ("greeting",)

    target = Slotted()
    target.greeting = "hello"
    registry.register(Patch("s.slots", module.__name__, None, "",
                            lambda mod, handle: handle.replace(target, "greeting", "hi")))
    registry.activate()
    assert target.greeting == "hi"
    registry.deactivate()
    assert target.greeting == "hello"


def test_undo_leaves_an_attribute_someone_replaced_since_and_says_so(registry, upstream, caplog):
    module = importlib.import_module(upstream())
    registry.register(Patch("u.again", module.__name__, None, "", wrapping("greet", passthrough)))
    registry.activate()
    theirs = module.greet = lambda name: f"theirs {name}"
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.deactivate()
    assert module.greet is theirs
    assert [r.getMessage() for r in caplog.records] == [
        f"primus patch u.again: {module.__name__}.greet was replaced again by someone else; left as it is"]


def test_keyword_arguments_reach_upstream_once_the_wrapper_failed(registry, upstream):
    module = importlib.import_module(upstream())

    def broken(wrapped, instance, args, kwargs):
        raise TypeError("bug in patch code")

    registry.register(Patch("w.kwfail", module.__name__, None, "", wrapping("greet", broken)))
    registry.activate()
    assert module.greet(name="a") == "hello a"  # the failing call falls back to upstream
    assert module.greet(name="b") == "hello b"  # and so do the calls after it (the patch is disabled)
    assert module.calls == ["a", "b"]


def test_a_tracking_patch_wraps_as_any_other(registry, upstream):
    # (the benchmarks count its wrapper's CPU from outside: tests/benchmarks/test_cpu_accounting.py)
    module = importlib.import_module(upstream())
    seen = []

    def shout(wrapped, instance, args, kwargs):
        seen.append(args)
        return wrapped(*args, **kwargs).upper()

    registry.register(Patch("core.tracking.greet", module.__name__, None, "", wrapping("greet", shout)))
    registry.register(Patch("core.other.explode", module.__name__, None, "", wrapping("explode", passthrough)))
    registry.activate()
    assert module.greet("t") == "HELLO T" and seen == [("t",)]
    assert [r.status for r in registry.records()] == ["applied", "applied"]
    registry.deactivate()
    assert [(r.status, r.reason) for r in registry.records()] == [("undone", "")] * 2


def test_an_inherited_method_replaced_on_a_subclass_is_deleted_from_it_again_on_undo(registry, upstream):
    module = importlib.import_module(upstream())
    registry.register(Patch("test.inherited", module.__name__, None, "",
                            lambda mod, handle: handle.replace(mod.Child, "greet", lambda self, name: "replaced")))
    registry.activate()
    assert module.Child().greet("j") == "replaced"
    registry.deactivate()
    assert "greet" not in vars(module.Child) and module.Child().greet("j") == "hi j"


@pytest.mark.parametrize(("versions", "condition", "status"), [
    ("<1", None, "skipped"), ("", lambda ctx: False, "skipped"), ("", lambda ctx: 1 / 0, "skipped"),
    ("", None, "applied"), ("", lambda ctx: True, "applied")])
def test_every_record_of_a_gated_patch_names_the_release_judged_and_where(registry, upstream, versions, condition,
                                                                         status):
    name = upstream()
    gate = packaging_upstream(">=1")
    registry.register(Patch("g.rec", name, gate, versions, wrapping("greet", passthrough), condition=condition))
    registry.activate()
    importlib.import_module(name)
    [record] = registry.records()
    assert (record.status, record.version, record.where) == (status, PACKAGING, locate(gate).where)


def test_a_patch_that_cannot_apply_is_recorded_with_the_release_found(registry, upstream, caplog):
    name = upstream()
    gate = packaging_upstream("<1")
    registry.register(Patch("g.bad", name, gate, "", wrapping("greet", passthrough)))
    registry.activate()
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        importlib.import_module(name)
    [record] = registry.records()
    assert (record.status, record.version, record.where) == ("skipped", PACKAGING, locate(gate).where)
    assert [r.getMessage() for r in caplog.records] == [f"primus patch g.bad skipped: {locate(gate).problem()}"]


def test_install_sees_the_context_the_registry_was_activated_with(registry, upstream):
    name = upstream()
    seen = []
    registry.register(Patch("c.ctx", name, None, "", lambda mod, handle: seen.append(handle.context.config)))
    registry.activate(PatchContext(config={"lr": 0.1}))
    importlib.import_module(name)
    assert seen == [{"lr": 0.1}]


@pytest.mark.parametrize("gated", [True, False])
def test_a_failed_install_is_recorded_logged_and_for_a_required_patch_raised_naming_the_release(registry, upstream,
                                                                                               caplog, gated):
    gate = packaging_upstream(">=1") if gated else None

    def install(mod, handle):
        raise AttributeError("gone")

    optional, required = upstream(), upstream()
    registry.register(Patch("i.opt", optional, gate, "", install))
    registry.register(Patch("i.req", required, gate, "", install, required=True))
    registry.activate()
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        importlib.import_module(optional)
    assert [r.getMessage() for r in caplog.records] == [
        "primus patch i.opt failed to install and is skipped: AttributeError('gone')"]
    release = f" of {locate(gate).describe()}" if gated else ""
    with pytest.raises(PatchError) as raised:
        importlib.import_module(required)
    assert str(raised.value) == f"required patch i.req failed to install on {required}{release}: AttributeError('gone')"
    assert [(r.status, r.version) for r in registry.records()] == [("failed", PACKAGING if gated else None)] * 2


@pytest.mark.parametrize("gated", [True, False])
def test_an_applied_patch_is_logged_at_debug_with_the_release_it_was_judged_on(registry, upstream, caplog, gated):
    gate = packaging_upstream(">=1") if gated else None
    name = upstream()
    registry.register(Patch("d.log", name, gate, "", wrapping("greet", passthrough)))
    registry.activate()
    with caplog.at_level(logging.DEBUG, logger="primus.patches"):
        importlib.import_module(name)
    judged = locate(gate).describe() if gated else "no version check"
    assert [r.getMessage() for r in caplog.records] == [f"primus patch d.log applied to {name} ({judged})"]


def test_an_attribute_an_object_without_a_dict_lacked_is_removed_again_on_undo(registry, upstream):
    module = importlib.import_module(upstream())

    class Slotted:
        __slots__ = ("greeting",)

    target = Slotted()
    registry.register(Patch("s.unset", module.__name__, None, "",
                            lambda mod, handle: handle.replace(target, "greeting", "hi")))
    registry.activate()
    assert target.greeting == "hi"
    registry.deactivate()
    assert not hasattr(target, "greeting")


def test_undo_names_an_instance_someone_replaced_an_attribute_of(registry, upstream, caplog):
    module = importlib.import_module(upstream())
    target = module.Greeter()
    registry.register(Patch("u.inst", module.__name__, None, "",
                            lambda mod, handle: handle.replace(target, "greet", lambda name: "ours")))
    registry.activate()
    target.greet = lambda name: "theirs"
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.deactivate()
    assert [r.getMessage() for r in caplog.records] == [
        f"primus patch u.inst: {target!r}.greet was replaced again by someone else; left as it is"]


def test_undo_splices_our_wrapper_out_from_under_a_later_one(registry, upstream):
    module = importlib.import_module(upstream())
    original = module.greet

    def ours(wrapped, instance, args, kwargs):
        return "ours " + wrapped(*args, **kwargs)

    def theirs(wrapped, instance, args, kwargs):
        return "theirs " + wrapped(*args, **kwargs)

    registry.register(Patch("u.covered", module.__name__, None, "", wrapping("greet", ours)))
    registry.activate()
    covering = wrapt.wrap_function_wrapper(module, "greet", theirs)
    assert module.greet("a") == "theirs ours hello a"
    registry.deactivate()
    assert module.greet is covering and covering.__wrapped__ is original  # theirs stays, ours is gone
    assert module.greet("b") == "theirs hello b"


def test_undo_under_a_plain_decorator_leaves_ours_in_place_but_off_and_says_so(registry, upstream, caplog):
    module = importlib.import_module(upstream())

    def ours(wrapped, instance, args, kwargs):
        return "ours " + wrapped(*args, **kwargs)

    registry.register(Patch("u.decorated", module.__name__, None, "", wrapping("greet", ours)))
    registry.activate()
    covered = module.greet
    module.greet = functools.wraps(covered)(lambda name: "theirs " + covered(name))
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.deactivate()
    assert [r.getMessage() for r in caplog.records] == [
        f"primus patch u.decorated: {module.__name__}.greet was replaced again by someone else; left as it is"]
    assert module.greet("a") == "theirs hello a"  # ours cannot be spliced out from under a closure: it passes through


def test_a_condition_judged_before_activation_sees_a_default_context(registry, upstream):
    """What `primus patches` does: the global registry is judged without being activated."""
    seen = []
    patch = Patch("d.cond", upstream(), None, "", lambda m, h: None, condition=lambda ctx: seen.append(ctx) or True)
    assert registry.eligibility(patch).ok and seen == [PatchContext()]
