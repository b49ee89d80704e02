"""MaxText's parallel layout from its mesh settings (``primus/backends/maxtext/parallel_tags.py``): each axis the product
of its ICI and DCN degrees, an axis of -1 taking the devices the others leave."""

from primus.backends.maxtext.parallel_tags import layout_tags_of

BASE = {f"{net}_{axis}_parallelism": 1 for net in ("ici", "dcn")
        for axis in ("data", "fsdp", "fsdp_transpose", "tensor", "pipeline", "context", "expert", "sequence")}


def test_maxtexts_defaults_shard_every_device_over_fsdp():
    tags = layout_tags_of({**BASE, "ici_fsdp_parallelism": -1, "dcn_data_parallelism": -1, "num_slices": 1}, 8)
    assert tags == {"primus.parallel.tp": "1", "primus.parallel.pp": "1", "primus.parallel.dp": "8",
                    "primus.parallel.cp": "1", "primus.parallel.ep": "1", "primus.world_size": "8"}


def test_tensor_and_pipeline_over_slices_leave_the_rest_to_data():
    settings = {**BASE, "ici_tensor_parallelism": 4, "dcn_pipeline_parallelism": 2, "ici_fsdp_parallelism": -1,
                "ici_expert_parallelism": 2, "dcn_data_parallelism": -1, "num_slices": 4, "model_name": "tiny"}
    tags = layout_tags_of(settings, 64)  # 4 slices of 16 devices: fsdp 16/(4*2) = 2, data over slices 4/2 = 2
    assert (tags["primus.parallel.tp"], tags["primus.parallel.pp"], tags["primus.parallel.ep"],
            tags["primus.parallel.dp"]) == ("4", "2", "2", "4")
