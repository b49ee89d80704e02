"""The per-backend mapping: which metric each panel plots."""

from __future__ import annotations

from primus.report.panels import LEARNING_RATE, LOSS, MEMORY, TOKENS_PER_SEC, pick_name


def test_each_backend_gets_its_own_loss():
    logged = {"lm loss", "loss_metrics/global_avg_loss", "learning/loss"}
    assert pick_name(LOSS, "megatron", logged) == "lm loss"
    assert pick_name(LOSS, "torchtitan", logged) == "loss_metrics/global_avg_loss"
    assert pick_name(LOSS, "maxtext", logged) == "learning/loss"


def test_primus_names_come_first_and_unknown_backends_try_every_name():
    assert pick_name(TOKENS_PER_SEC, "torchtitan", {"throughput(tps)", "perf/tokens_per_sec_per_gpu"}) == \
        "perf/tokens_per_sec_per_gpu"
    assert pick_name(LOSS, None, {"loss_metrics/global_avg_loss"}) == "loss_metrics/global_avg_loss"
    assert pick_name(LOSS, "megatron", {"loss_metrics/global_avg_loss"}) is None  # not another backend's name
    assert pick_name(MEMORY, "megatron", {"mem/host_rss_gib", "mem-max-allocated-bytes"}) == "mem/host_rss_gib"


def test_a_prefix_matches_the_optimizer_named_learning_rate():
    assert pick_name(LEARNING_RATE, "torchtitan", {"lr/Muon/1", "lr/Muon/0", "loss"}) == "lr/Muon/0"
    assert pick_name(LEARNING_RATE, "torchtitan", {"lr_warmup"}) is None
