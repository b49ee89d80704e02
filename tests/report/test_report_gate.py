"""`primus report --baseline`: the regression gate. Its arithmetic on made-up runs (a figure worse by more than the
bound regresses, whichever way is better for it; what a run lacks is not judged; the loss compared at the step both
reached), then on real tiny Megatron runs: one slowed by a user's ``sitecustomize`` fails the gate naming its
throughput and step time; the baseline against itself passes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from report_support import PRIMUS, train_tiny_megatron
from support.slow_rank import slow_rank_env

from primus.report.gate import judge
from primus.report.run_data import Point, RunData

FORWARD_STEP = "megatron.core.pipeline_parallel.schedules:forward_step"


def run(label: str, seconds_per_step: float, tokens_per_sec: float, loss: float = 2.0, steps: int = 8,
        goodput: float | None = 0.8) -> RunData:
    """A made-up Megatron run logging every step: its loss, tokens/s and TFLOP/s, at ``seconds_per_step``."""
    points = {name: [Point(s, value, 1, 1000.0 + s * seconds_per_step) for s in range(1, steps + 1)]
              for name, value in (("lm loss", loss), ("perf/tokens_per_sec_per_gpu", tokens_per_sec),
                                  ("perf/tflops_per_gpu", tokens_per_sec / 100))}
    return RunData(Path(label), label, "megatron", 2, points, [],
                   goodput={"goodput/productive_fraction": goodput} if goodput is not None else None)


def by_key(verdict) -> dict:
    return {c.figure.key: c for c in verdict.comparisons}


def test_a_slower_run_regresses_on_throughput_and_step_time_and_nothing_else():
    verdict = judge(run("base", 1.0, 1000.0), run("slow", 1.25, 800.0), 5.0)
    figures = by_key(verdict)
    assert sorted(c.figure.key for c in verdict.regressed) == [
        "median_step_time_s", "median_tflops_per_gpu", "median_tokens_per_sec_per_gpu"]
    assert figures["median_tokens_per_sec_per_gpu"].change_pct == pytest.approx(-20.0)
    assert figures["median_step_time_s"].change_pct == pytest.approx(25.0)
    assert figures["loss_at_common_step"].label == "loss at step 8"
    assert not figures["goodput_fraction"].regressed and not figures["loss_at_common_step"].regressed


@pytest.mark.parametrize("worse_by, regressed", [(4.9, False), (5.1, True)])
def test_the_bound_is_how_much_worse_either_way(worse_by, regressed):
    higher_loss = judge(run("base", 1.0, 1000.0), run("r", 1.0, 1000.0, loss=2.0 * (1 + worse_by / 100)), 5.0)
    lower_goodput = judge(run("base", 1.0, 1000.0), run("r", 1.0, 1000.0, goodput=0.8 * (1 - worse_by / 100)), 5.0)
    assert by_key(higher_loss)["loss_at_common_step"].regressed is regressed
    assert by_key(lower_goodput)["goodput_fraction"].regressed is regressed
    better = judge(run("base", 1.0, 1000.0), run("r", 0.5, 2000.0, loss=1.0, goodput=0.99), 5.0)
    assert better.regressed == []


def test_what_a_run_lacks_is_shown_not_judged_and_the_loss_is_compared_where_both_got():
    verdict = judge(run("base", 1.0, 1000.0, steps=8), run("short", 1.0, 1000.0, steps=5, goodput=None), 5.0)
    figures = by_key(verdict)
    assert figures["goodput_fraction"].value is None and not figures["goodput_fraction"].regressed
    assert figures["loss_at_common_step"].label == "loss at step 5"


@given(st.floats(0.01, 100.0), st.floats(1.0, 1e6), st.floats(0.01, 10.0), st.floats(0.0, 50.0))
def test_a_run_never_regresses_against_itself(seconds, tokens, loss, pct):
    same = run("a", seconds, tokens, loss)
    assert judge(same, same, pct).regressed == []


@pytest.mark.slow
def test_a_slowed_real_run_fails_the_gate_naming_its_throughput_and_the_baseline_passes(megatron_run_dir, tmp_path):
    # one process, started without torchrun: RANK given, so the user's sitecustomize knows it is rank 0 as it starts
    slowed = train_tiny_megatron(tmp_path, {**slow_rank_env(tmp_path / "site", FORWARD_STEP, 0, 0.5), "RANK": "0"})

    def gate(*args: str | Path) -> subprocess.CompletedProcess:
        return subprocess.run([PRIMUS, "report", "--baseline", megatron_run_dir, *args], capture_output=True,
                              text=True, timeout=120)

    failed = gate(slowed)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "REGRESSED" in failed.stdout and "tokens/s per GPU" in failed.stdout
    [verdict] = [line for line in failed.stderr.splitlines() if "regressed beyond 5 %" in line]
    assert "tokens/s per GPU -" in verdict and "seconds per step +" in verdict, verdict
    assert "loss at step" not in verdict  # the sleep changes no arithmetic
    as_json = json.loads(gate("--format", "json", slowed).stdout)
    assert not as_json["passed"] and "median_tokens_per_sec_per_gpu" in as_json["runs"][0]["regressed"]

    passed = gate(megatron_run_dir)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "no figure regressed beyond 5 %" in passed.stderr


@pytest.mark.parametrize("args, said", [
    (["--max-regression-pct", "10", "run"], "--max-regression-pct 10 needs --baseline BASE_DIR"),
    (["--baseline", "base", "--max-regression-pct", "150", "run"], "--max-regression-pct 150: give a percentage"),
    (["--baseline", "no-such-dir", "run"], "no-such-dir: no such directory"),
])
def test_a_bad_gate_is_refused_naming_the_value_and_the_fix(args, said, tmp_path, monkeypatch, capsys):
    from primus.cli.main import main as primus_cli

    monkeypatch.chdir(tmp_path)
    assert primus_cli(["report", *args]) == 2
    assert said in capsys.readouterr().err
