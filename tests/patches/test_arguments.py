"""Upstream's arguments by name (primus/patches/arguments.py): read and replaced wherever the caller put
them, defaults filled in, and a renamed argument refused when the patch installs, naming the patch, the
function and the argument."""

from __future__ import annotations

import functools
import importlib

import pytest

from primus.patches import Patch, PatchError
from primus.patches.arguments import Arguments, same_parameters

SOURCE = '''
def log(iteration, loss, extra=None, *, tag="train"):
    return (iteration, loss, extra, tag)

class Logger:
    def write(self, metrics, step, metric_type="train"):
        return (metrics, step, metric_type)
'''


def _log(iteration, loss, extra=None, *, tag="train"):
    return (iteration, loss, extra, tag)


@pytest.mark.parametrize("args, kwargs", [((3, 0.5), {}), ((3,), {"loss": 0.5}), ((), {"iteration": 3, "loss": 0.5})])
def test_an_argument_is_read_wherever_it_was_passed_and_a_default_when_it_was_not(args, kwargs):
    arguments = Arguments(_log, "iteration", "extra", "tag")
    assert [arguments(name, args, kwargs) for name in ("iteration", "extra", "tag")] == [3, None, "train"]


@pytest.mark.parametrize("args, kwargs", [((3, 0.5, {"a": 1}), {}), ((3, 0.5), {"extra": {"a": 1}})])
def test_an_argument_is_replaced_where_it_was_passed(args, kwargs):
    arguments = Arguments(_log, "extra")
    new_args, new_kwargs = arguments.replace("extra", {"b": 2}, args, kwargs)
    assert _log(*new_args, **new_kwargs) == (3, 0.5, {"b": 2}, "train")
    assert len(new_args) == len(args)  # positional stays positional, keyword stays keyword


def test_an_argument_not_passed_is_replaced_by_keyword_and_a_keyword_only_one_is_read_from_kwargs():
    arguments = Arguments(_log, "extra", "tag")
    assert arguments.replace("extra", 1, (3, 0.5), {}) == ((3, 0.5), {"extra": 1})
    assert arguments("tag", (3, 0.5, None), {"tag": "eval"}) == "eval"


def test_a_keyword_only_argument_after_star_args_is_read_from_kwargs_and_a_positional_one_replaced_in_place():
    def upstream(a, b, *rest, tag="x"):
        pass

    arguments = Arguments(upstream, "a", "tag")
    assert arguments("tag", (1, 2, 3, 4), {"tag": "y"}) == "y"
    assert arguments.replace("a", 0, (1, 2, 3), {}) == ((0, 2, 3), {})


def test_every_missing_argument_is_named_and_a_callable_without_a_qualname_by_its_repr():
    partial = functools.partial(_log, 1)
    with pytest.raises(TypeError) as raised:
        Arguments(partial, "step", "epoch")
    assert f"upstream's {partial!r}(loss, extra=None, *, tag='train') has no argument 'step', 'epoch':" in str(
        raised.value)


def test_a_required_argument_not_passed_is_named():
    with pytest.raises(TypeError, match="called without 'loss'"):
        Arguments(_log, "loss")("loss", (3,), {})


def test_a_method_wrapped_on_its_class_is_read_without_self(registry, upstream):
    module = importlib.import_module(upstream(SOURCE))
    seen = []

    def install(mod, handle):
        arguments = Arguments(mod.Logger.write, "step", "metric_type", method=True)

        def write(wrapped, instance, args, kwargs):
            seen.append((arguments("step", args, kwargs), arguments("metric_type", args, kwargs)))
            return wrapped(*args, **kwargs)

        handle.wrap(mod, "Logger.write", write)

    registry.register(Patch("a.method", module.__name__, None, "", install, required=True))
    registry.activate()
    module.Logger().write({}, 7)
    module.Logger().write({}, step=8, metric_type="eval")
    assert seen == [(7, "train"), (8, "eval")]


def test_a_renamed_argument_fails_the_install_naming_the_patch_the_function_and_the_argument(registry, upstream):
    module = importlib.import_module(upstream(SOURCE))
    registry.register(Patch("a.renamed", module.__name__, None, "",
                            lambda mod, handle: Arguments(mod.log, "step"), required=True))
    with pytest.raises(PatchError) as raised:
        registry.activate()
    message = str(raised.value)
    assert "required patch a.renamed failed to install" in message
    assert "log(iteration, loss, extra=None, *, tag='train') has no argument 'step'" in message


class _Upstream:
    def write(self, metrics, step, metric_type="train"):
        pass


def test_a_function_taking_upstreams_arguments_as_upstream_does_passes():
    class Ours:
        def write(self, metrics, step, metric_type="train"):
            pass

    same_parameters(_Upstream.write, Ours.write, method=True)
    same_parameters(_log, _log)


@pytest.mark.parametrize("ours", ["def write(self, metrics, step, metric_type='eval')",
                                  "def write(self, metrics, iteration, metric_type='train')",
                                  "def write(self, metrics, step, *, metric_type='train')",
                                  "def write(self, metrics, step, metric_type='train', extra=None)",
                                  "def write(self, metrics, step)"])
def test_another_default_name_kind_or_count_is_refused_naming_both_functions(ours):
    namespace: dict = {}
    exec(f"class Ours:\n    {ours}:\n        pass", namespace)
    with pytest.raises(TypeError) as raised:
        same_parameters(_Upstream.write, namespace["Ours"].write, method=True)
    assert str(raised.value).startswith("upstream's _Upstream.write(self, metrics, step, metric_type='train') "
                                        "does not take the arguments Ours.write(")
    assert "update the patch for this one" in str(raised.value)


def test_only_a_methods_self_is_left_out_whatever_its_name():
    class Ours:
        def write(this, metrics, step, metric_type="train"):  # noqa: N805 (self under another name)
            pass

        def renamed(self, values, step, metric_type="train"):
            pass

    same_parameters(_Upstream.write, Ours.write, method=True)
    with pytest.raises(TypeError, match="does not take the arguments"):
        same_parameters(_Upstream.write, Ours.renamed, method=True)
    with pytest.raises(TypeError, match="does not take the arguments"):
        same_parameters(_log, lambda step, loss, extra=None, *, tag="train": None)  # a function's first counts
