"""No device synchronisation and no collective of ours, proven on CPU: during real Megatron trainings (2 ranks with
every tracker, the perf set over ranks and the stragglers by default; TensorBoard + W&B logging every other
iteration), Primus's code reads no tensor on the training thread and calls none of torch.distributed's collectives
(the figures over ranks go through the job's store). It reads only the scalars upstream hands the writer it takes
for its TensorBoard/W&B writer (the read upstream's own ``SummaryWriter.add_scalar`` makes of the same value, on
logged steps only), on the hub's thread. Counted by ``support/host_reads_site/sitecustomize.py`` in every process
(each process that exits writes its record)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from megatron_tracking_runs import RUNS, result
from support.host_reads import host_reads, host_reads_env

import primus

# Upstream's training_log hands the loss as a tensor: "lm loss" and its "lm loss vs samples" twin per logged step
HUB_READ = ("tracking/hub.py", "MetricsHub._floats")


def sites(entries: list[dict]) -> set[tuple[str, str]]:
    return {(e["site"].rpartition(":")[0], e["function"]) for e in entries}


@pytest.mark.slow
@pytest.mark.parametrize(("name", "logged_steps"), [("dp2_all", 3), ("tb_wandb", 2)])
def test_primus_reads_no_tensor_but_what_upstreams_writer_would(megatron_run, mlflow_server, name, logged_steps):
    run = result(megatron_run, mlflow_server.uri, name)
    assert run.returncode == 0, run.explain()
    records = host_reads(run.log_path.parent)
    trainers = [r for r in records if r["rank"] is not None]
    assert len(trainers) == RUNS[name].nproc, records  # every rank's process counted
    for record in trainers:
        assert sites(record["reads"]) <= {HUB_READ}, record["reads"]
        assert {e["thread"] for e in record["reads"]} <= {"primus-tracking-hub"}, record["reads"]
        assert record["own_host_tensors"] == [] and record["collectives"] == [], record
    # the writer rank's loss and its "vs samples" twin at each logged step, none at the steps between; no other rank
    assert sorted(len(r["reads"]) for r in trainers) == [0] * (len(trainers) - 1) + [2 * logged_steps], trainers


def test_the_count_sees_a_read_in_primus_code_and_none_elsewhere(tmp_path):
    """The instrument itself: a read or a collective from a file of the primus package is counted, the same
    elsewhere not; a tensor Primus made on the host is listed apart."""
    ours = str(primus.__path__[0]) + "/tracking/not_a_module.py"
    code = textwrap.dedent(f"""
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        t = torch.ones(2) * 3
        exec(compile("float(t[0]); t.tolist(); t.to('cpu'); t.to(torch.float64); mine = torch.zeros(2); mine.tolist()"
                     "; dist.all_reduce(t)", {ours!r}, "exec"))
        float(t[1]); t.tolist(); dist.all_reduce(t)
        dist.destroy_process_group()
    """)
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=host_reads_env({}) | {"PATH": ""}, check=True,
                   timeout=120)
    [record] = host_reads(tmp_path)
    assert [(e["read"], e["site"]) for e in record["reads"]] == [
        ("__float__", "tracking/not_a_module.py:1"), ("tolist", "tracking/not_a_module.py:1"),
        ("to", "tracking/not_a_module.py:1")]
    assert [e["read"] for e in record["own_host_tensors"]] == ["tolist"]
    assert [(e["collective"], e["site"]) for e in record["collectives"]] == [("all_reduce", "tracking/not_a_module.py:1")]
