import math

from primus.tracking.measure.across_ranks import GATHERED, summarise


def test_min_mean_max_per_name_over_ranks():
    names = ("mem/a", "sys/b")
    assert summarise([[1.0, 10.0], [3.0, 20.0], [2.0, 60.0]], names) == {
        "mem/a/min": 1.0, "mem/a/mean": 2.0, "mem/a/max": 3.0, "sys/b/min": 10.0, "sys/b/mean": 30.0, "sys/b/max": 60.0}


def test_a_rank_without_a_reading_is_left_out_of_that_name_only():
    names = ("sys/gpu_util_pct", "mem/host_rss_gib")
    out = summarise([[math.nan, 1.0], [40.0, 3.0]], names)
    assert out["sys/gpu_util_pct/min"] == out["sys/gpu_util_pct/max"] == 40.0
    assert out["mem/host_rss_gib/mean"] == 2.0
    assert summarise([[math.nan], [math.nan]], ("sys/gpu_util_pct",)) == {}


def test_memory_and_utilisation_names_are_gathered_and_throughput_is_not():
    assert "mem/peak_allocated_gib" in GATHERED and "sys/gpu_util_pct" in GATHERED
    assert not any(n.startswith("perf/") for n in GATHERED)  # tokens/s and TFLOP/s are the job's already
