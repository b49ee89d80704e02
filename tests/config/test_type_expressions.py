"""Type expressions of the generated upstream tables (config/type_expressions.py): YAML has no tuples, so a list
of the right items is one; a bare ``tuple`` (Megatron-Bridge's untyped tuple fields) is one of any items, checked
the same way on every pydantic 2 release the core allows (tests/test_dependency_floors.py runs this on the floor)."""

from __future__ import annotations

import pytest

from primus.config.type_expressions import check


@pytest.mark.parametrize("expression, value", [
    ("tuple", [1, "a", None]), ("tuple", []), ("tuple | None", None), ("list[tuple]", [[1], ["x", 2.0]]),
    ("tuple[int, ...]", [1, 2]), ("dict[str, tuple]", {"k": [1]}),
])
def test_a_list_is_a_tuple(expression, value):
    assert check(expression, value) is None


@pytest.mark.parametrize("expression, value, problem", [
    ("tuple", 3, "got int"), ("tuple[int, ...]", ["a"], "got str at [0]"), ("list[tuple]", [3], "got int at [0]"),
])
def test_what_is_not_a_tuple_is_named(expression, value, problem):
    assert check(expression, value) == problem
