"""The parallel layout tags (``primus/tracking/tags/parallel.py``)."""

import pytest

from primus.tracking.tags.parallel import layout_tags


def test_every_degree_given_and_the_world_size():
    assert layout_tags(16, tp=2, pp=2, dp=4, cp=1, ep=None) == {
        "primus.parallel.tp": "2", "primus.parallel.pp": "2", "primus.parallel.dp": "4", "primus.parallel.cp": "1",
        "primus.world_size": "16"}


def test_an_unknown_degree_is_a_programming_error():
    with pytest.raises(AssertionError, match="sp"):
        layout_tags(1, sp=2)
