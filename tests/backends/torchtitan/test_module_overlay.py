"""The stand-in an upstream module gets for a module it names globally: what is replaced is ours, the rest
is the real module's."""

from __future__ import annotations

import json

from primus.backends.torchtitan.module_overlay import Overlay


def test_replaced_attributes_are_ours_and_the_rest_the_modules():
    overlay = Overlay(json, dumps=lambda obj, **kw: "ours")
    assert overlay.dumps({}) == "ours" and json.dumps({}) == "{}"
    assert overlay.loads("[1]") == [1] and overlay.JSONDecodeError is json.JSONDecodeError
    assert "dumps" in repr(overlay)
