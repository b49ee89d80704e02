"""Every ordering of import, activate and deactivate (after ddtrace's shared patch tests), on real
modules imported through sys.path and on the standard library's ``json``."""

from __future__ import annotations

import importlib
import json
import logging
import sys

import wrapt

from primus.patches import Patch, PatchContext


def shout(wrapped, instance, args, kwargs):
    return wrapped(*args, **kwargs).upper()


def greet_patch(target: str, installs: list | None = None, **kw) -> Patch:
    def install(module, handle):
        if installs is not None:
            installs.append(module)
        handle.wrap(module, "greet", shout)

    return Patch(id="test.shout", target=target, upstream=None, versions="", install=install, **kw)


def is_wrapped(fn) -> bool:
    return isinstance(fn, wrapt.FunctionWrapper)


def hooked_then_deactivated(registry, upstream) -> tuple[str, list]:
    """A patch activated and deactivated before its (not yet imported) target: its hook still waits."""
    name = upstream()
    installs: list = []
    registry.register(greet_patch(name, installs))
    registry.activate()
    registry.deactivate()
    return name, installs


def test_import_then_activate(registry, upstream):
    module = importlib.import_module(upstream())
    registry.register(greet_patch(module.__name__))
    assert module.greet("a") == "hello a"
    registry.activate()
    assert module.greet("a") == "HELLO A"
    [record] = registry.applied()
    assert (record.id, record.target, record.status) == ("test.shout", module.__name__, "applied")


def test_activate_then_import(registry, upstream):
    name = upstream()
    registry.register(greet_patch(name))
    registry.activate()
    assert name not in sys.modules, "activation must not import the target"
    assert [(r.status, r.reason) for r in registry.records()] == [("pending", f"waiting for `import {name}`")]
    module = importlib.import_module(name)
    assert module.greet("b") == "HELLO B"
    assert [(r.status, r.reason) for r in registry.records()] == [("applied", "")]


def test_double_activate_installs_one_wrapper(registry, upstream, caplog):
    module = importlib.import_module(upstream())
    installs: list = []
    registry.register(greet_patch(module.__name__, installs))
    registry.activate()
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.activate()
    assert "primus patches are already active; activate() ignored" in caplog.messages
    assert len(installs) == 1
    assert is_wrapped(module.greet) and not is_wrapped(module.greet.__wrapped__)
    assert module.greet("c") == "HELLO C"


def test_activate_deactivate_activate(registry, upstream):
    module = importlib.import_module(upstream())
    original = module.greet
    installs: list = []
    registry.register(greet_patch(module.__name__, installs))
    registry.activate()
    assert module.greet("d") == "HELLO D"
    registry.deactivate()
    assert module.greet is original
    assert [r.status for r in registry.records()] == ["undone"]
    registry.activate()
    assert module.greet("d") == "HELLO D"
    assert module.greet.__wrapped__ is original
    assert len(installs) == 2


def test_deactivate_before_import_leaves_module_untouched(registry, upstream):
    name, installs = hooked_then_deactivated(registry, upstream)
    module = importlib.import_module(name)
    assert module.greet("e") == "hello e"
    assert installs == []
    assert [(r.status, r.reason) for r in registry.records()] == [
        ("undone", "deactivated before its target was imported")]


def test_reactivation_before_import_applies_once(registry, upstream):
    name, installs = hooked_then_deactivated(registry, upstream)
    registry.activate()  # two hooks now wait on the module: the first one is stale
    module = importlib.import_module(name)
    assert len(installs) == 1
    assert not is_wrapped(module.greet.__wrapped__)


def test_hook_left_by_an_earlier_activation_does_not_apply_an_unselected_patch(registry, upstream):
    name, installs = hooked_then_deactivated(registry, upstream)
    registry.activate(only=[])  # nothing selected this time; the first hook still waits on the module
    module = importlib.import_module(name)
    assert installs == [] and module.greet("z") == "hello z"


def test_patch_registered_after_activation_is_hooked(registry, upstream):
    registry.activate()
    name = upstream()
    registry.register(greet_patch(name))
    assert importlib.import_module(name).greet("f") == "HELLO F"


def test_early_bound_reference_becomes_pass_through_after_deactivate(registry, upstream):
    module = importlib.import_module(upstream())
    registry.register(greet_patch(module.__name__))
    registry.activate()
    early = module.greet  # what `from upstream import greet` would have kept
    registry.deactivate()
    assert early("g") == "hello g"


def test_method_wrapper_binds_and_undo_removes_inherited_override(registry, upstream):
    module = importlib.import_module(upstream())
    seen = []

    def install(mod, handle):
        def wrapper(wrapped, instance, args, kwargs):
            seen.append(instance)
            return wrapped(*args, **kwargs) + "!"

        handle.wrap(mod, "Child.greet", wrapper)

    registry.register(Patch("test.method", module.__name__, None, "", install))
    registry.activate()
    child = module.Child()
    assert child.greet("h") == "hi h!"
    assert seen == [child]
    assert module.Greeter().greet("h") == "hi h", "the base class is not patched"
    registry.deactivate()
    assert "greet" not in vars(module.Child)
    assert child.greet("h") == "hi h"


def test_replace_restores_or_removes(registry, upstream):
    module = importlib.import_module(upstream())

    def install(mod, handle):
        handle.replace(mod, "greet", lambda name: "replaced")
        handle.replace(mod, "added", 42)

    registry.register(Patch("test.replace", module.__name__, None, "", install))
    original = module.greet
    registry.activate()
    assert (module.greet("i"), module.added) == ("replaced", 42)
    registry.deactivate()
    assert module.greet is original and not hasattr(module, "added")


def test_undo_leaves_a_later_replacement_in_place(registry, upstream, caplog):
    module = importlib.import_module(upstream())
    registry.register(greet_patch(module.__name__))
    registry.activate()
    ours = module.greet
    module.greet = theirs = lambda name: "theirs"
    with caplog.at_level(logging.WARNING, logger="primus.patches"):
        registry.deactivate()
    assert module.greet is theirs and "replaced again by someone else" in caplog.text
    assert ours("p") == "hello p", "our wrapper, if still referenced, passes through"


def test_wrapper_sees_the_upstream_callable_attributes(registry, upstream):
    module = importlib.import_module(upstream())
    names = []

    def install(mod, handle):
        def wrapper(wrapped, instance, args, kwargs):
            names.append((wrapped.__name__, wrapped.__module__))
            return wrapped(*args, **kwargs)

        handle.wrap(mod, "greet", wrapper)

    registry.register(Patch("test.names", module.__name__, None, "", install))
    registry.activate()
    assert module.greet("q") == "hello q"
    assert names == [("greet", module.__name__)]
    assert registry.applied(), "reading attributes of wrapped is not a patch failure"


def test_on_undo_runs_in_reverse_order(registry, upstream):
    module = importlib.import_module(upstream())
    order: list[str] = []

    def install(mod, handle):
        handle.on_undo(lambda: order.append("first"))
        handle.on_undo(lambda: order.append("second"))

    registry.register(Patch("test.undo", module.__name__, None, "", install))
    registry.activate()
    registry.deactivate()
    assert order == ["second", "first"]


def test_condition_sees_the_activation_context(registry, upstream):
    module = importlib.import_module(upstream())
    registry.register(greet_patch(module.__name__, condition=lambda ctx: ctx.config.get("shout") is True))
    registry.activate(PatchContext(config={"shout": True}))
    assert module.greet("j") == "HELLO J"


def test_real_stdlib_target_json(registry):
    original = json.dumps

    def install(module, handle):
        handle.wrap(module, "dumps", lambda wrapped, instance, args, kwargs: "<" + wrapped(*args, **kwargs) + ">")

    registry.register(Patch("test.json", "json", None, "", install))
    registry.activate()
    try:
        assert json.dumps({"a": 1}) == '<{"a": 1}>'
        registry.activate()
        assert json.dumps([]) == "<[]>", "a second activation adds no second wrapper"
    finally:
        registry.deactivate()
    assert json.dumps is original
