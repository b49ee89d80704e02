"""TorchTitan's layout from upstream's ParallelDims (``primus/backends/torchtitan/parallel_tags.py``)."""

import pytest
from torchtitan.distributed.parallel_dims import ParallelDims

from primus.backends.torchtitan.parallel_tags import layout_tags_of


def test_hsdp_is_data_parallel_over_both_axes_and_the_shard_degree_resolved():
    dims = ParallelDims(dp_replicate=2, dp_shard=-1, cp=1, tp=2, pp=1, ep=1, world_size=8)
    assert layout_tags_of(dims) == {"primus.parallel.tp": "2", "primus.parallel.pp": "1", "primus.parallel.dp": "4",
                                    "primus.parallel.cp": "1", "primus.parallel.ep": "1", "primus.world_size": "8"}


@pytest.mark.parametrize("dims", [None])
def test_no_parallel_dims_no_layout(dims):
    assert layout_tags_of(dims) == {}
