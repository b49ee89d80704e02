"""`primus monitoring rules` prints a rules file Prometheus's own checker passes (Debian's ``promtool``, installed by
`make setup-prometheus`), with the stall threshold given, every rule annotated with run, experiment and host;
`primus monitoring dashboard` prints a Grafana dashboard model (the panels' queries against a real run:
tests/backends/megatron/test_megatron_prometheus.py)."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from primus.cli.main import main

RULES = {"PrimusRunStalled", "PrimusLossNotFinite", "PrimusThroughputDrop", "PrimusStraggler", "PrimusRunFailed",
         "PrimusPushgatewayDown"}


def test_the_rules_pass_promtool_with_the_stall_time_given(tmp_path, capsys):
    assert main(["monitoring", "rules", "--stall-after", "1200"]) == 0
    text = capsys.readouterr().out
    (tmp_path / "rules.yml").write_text(text)
    checked = subprocess.run(["promtool", "check", "rules", str(tmp_path / "rules.yml")], capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 0 and "SUCCESS: 6 rules found" in checked.stdout, checked.stdout + checked.stderr
    rules = {r["alert"]: r for r in yaml.safe_load(text)["groups"][0]["rules"]}
    assert rules.keys() == RULES
    assert "> 1200\n" in rules["PrimusRunStalled"]["expr"]
    for name, rule in rules.items():
        if name != "PrimusPushgatewayDown":  # the gateway's, not a run's
            for label in ("$labels.run", "$labels.job", "$labels.host"):
                assert label in rule["annotations"]["summary"] and label in rule["annotations"]["description"], name


# promtool's own rule unit test, minute by minute: run r1's last step time freezes at 240 s and stays RUNNING (its
# node died); r2's freezes too but it pushed FINISHED; r3's loss turns NaN at 2 m; r4 was KILLED
RULE_TESTS = """\
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'primus_last_step_timestamp_seconds{job="exp",run="r1",backend="megatron",host="n1"}'
        values: '0+60x4 240x20'
      - series: 'primus_run_status{job="exp",run="r1",backend="megatron",host="n1",status="RUNNING"}'
        values: '1x24'
      - series: 'primus_last_step_timestamp_seconds{job="exp",run="r2",backend="megatron",host="n1"}'
        values: '0+60x4 240x20'
      - series: 'primus_run_status{job="exp",run="r2",backend="megatron",host="n1",status="FINISHED"}'
        values: '_x4 1x20'
      - series: 'primus_lm_loss{job="exp",run="r3",backend="torchtitan",host="n2"}'
        values: '2 1.5 NaN'
      - series: 'primus_run_status{job="exp",run="r4",backend="maxtext",host="n3",status="KILLED"}'
        values: '1x3'
    alert_rule_test:
      - eval_time: 9m
        alertname: PrimusRunStalled
        exp_alerts: []
      - eval_time: 10m
        alertname: PrimusRunStalled
        exp_alerts:
          - exp_labels: {severity: critical, job: exp, run: r1, backend: megatron, host: n1}
            exp_annotations:
              summary: Primus run r1 (experiment exp) on n1 stalled
              description: "No new step from run r1 (experiment exp) on n1 (backend megatron) for 6m 0s (threshold 300 s): the job, or its node, may be dead."
      - eval_time: 1m
        alertname: PrimusLossNotFinite
        exp_alerts: []
      - eval_time: 2m
        alertname: PrimusLossNotFinite
        exp_alerts:
          - exp_labels: {severity: critical, job: exp, run: r3, backend: torchtitan, host: n2}
            exp_annotations:
              summary: "Primus run r3 (experiment exp) on n2: the loss is not finite"
              description: "The latest loss of run r3 (experiment exp) on n2 is NaN: training has diverged."
      - eval_time: 1m
        alertname: PrimusRunFailed
        exp_alerts:
          - exp_labels: {severity: critical, job: exp, run: r4, backend: maxtext, host: n3, status: KILLED}
            exp_annotations:
              summary: Primus run r4 (experiment exp) on n3 ended KILLED
              description: The run r4 (experiment exp) on n3 (backend maxtext) ended KILLED.
"""


def test_each_rule_fires_for_the_run_it_is_about_and_no_other(tmp_path, capsys):
    """Exact labels and annotations, from promtool's evaluation of the rules on made-up series (no clock involved):
    the stall fires for r1 only once its last step is over 300 s old, not for r2, which ended."""
    assert main(["monitoring", "rules", "--stall-after", "300"]) == 0
    (tmp_path / "rules.yml").write_text(capsys.readouterr().out)
    (tmp_path / "t.yml").write_text(RULE_TESTS)
    checked = subprocess.run(["promtool", "test", "rules", "t.yml"], capture_output=True, text=True, timeout=60,
                             cwd=tmp_path)
    assert checked.returncode == 0 and "SUCCESS" in checked.stdout, checked.stdout + checked.stderr


def test_a_broken_rule_fails_promtool(tmp_path):
    """The check above can fail: promtool refuses an expression it cannot parse."""
    (tmp_path / "bad.yml").write_text("groups: [{name: x, rules: [{alert: X, expr: 'time() >'}]}]")
    checked = subprocess.run(["promtool", "check", "rules", str(tmp_path / "bad.yml")], capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 1 and "could not parse expression" in checked.stdout + checked.stderr


@pytest.mark.parametrize("value", ["0", "-5", "soon", "inf"])
def test_a_stall_time_that_is_not_a_positive_number_is_refused(value, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["monitoring", "rules", "--stall-after", value])
    assert exit_.value.code == 2
    assert f"--stall-after={value!r} is not valid: give a positive number of seconds" in capsys.readouterr().err


def test_the_dashboard_is_a_grafana_model_on_stdout(capsys):
    assert main(["monitoring", "dashboard"]) == 0
    model = json.loads(capsys.readouterr().out)
    assert model["uid"] == "primus-runs" and model["schemaVersion"] >= 36
    assert [v["name"] for v in model["templating"]["list"]] == ["datasource", "job", "run"]
    titles = [p["title"] for p in model["panels"]]
    for wanted in ("Loss", "Throughput", "MFU", "Goodput", "Memory", "Stragglers", "Alerts by run"):
        assert any(t.startswith(wanted) for t in titles), (wanted, titles)
    assert len({p["id"] for p in model["panels"]}) == len(model["panels"])
    assert all('job=~"$job", run=~"$run"' in t["expr"] for p in model["panels"] for t in p["targets"])
