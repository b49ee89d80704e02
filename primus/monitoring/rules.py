"""Prometheus alerting rules for runs that push to a Pushgateway. The gateway keeps a run's last figures for ever
and Prometheus stamps them with each scrape's time, so silence cannot be seen from a sample's age: the stall rule
compares ``time()`` with the step time the run pushed, which goes on ageing when the whole node is gone (nothing
on it can tell anyone). A run's own final push (``primus_run_status`` other than RUNNING) ends its live rules; its
FAILED or KILLED status then fires ``PrimusRunFailed``. Node and Prometheus clocks must agree to well under the
stall time (NTP). The gateway's own outage silences the stall rule (its series go stale): ``PrimusPushgatewayDown``."""

from __future__ import annotations

from typing import Any

import yaml

from primus.tracking.health.detectors import THROUGHPUT_METRICS, loss_metrics
from primus.tracking.settings.config import HealthSettings
from primus.tracking.trackers import prometheus_names as names

DEFAULT_STALL_AFTER_S = 900.0  # above a long checkpoint save between two log steps; raise it if yours take longer
STRAGGLER_RATIO = 1.25  # the slowest rank this many times the median busy time, for STRAGGLER_FOR
STRAGGLER_FOR = "10m"
DROP_FOR, DROP_WINDOW = "5m", "30m"  # throughput under the fraction of its median over the window, for this long
RUN = ", ".join(names.GROUP_LABELS)  # one alert per run and node
LIVE = f'unless on ({RUN}) ({names.STATUS}{{{names.STATUS_LABEL}!="RUNNING"}} == 1)'
WHERE = "run {{ $labels.run }} (experiment {{ $labels.job }}) on {{ $labels.host }}"


def alerting_rules(stall_after_s: float = DEFAULT_STALL_AFTER_S) -> dict[str, Any]:
    """The rules file's content: one group, ``primus``."""
    loss = "\n  or ".join(  # NaN is the one value not equal to itself
        f"({n} != {n}) or (abs({n}) == +Inf)" for n in (names.metric_name(key) for key in loss_metrics())
    )
    [throughput] = (names.metric_name(key) for key in THROUGHPUT_METRICS)
    straggler = names.metric_name("straggler/slowest_over_median")
    drop = HealthSettings().drop_fraction
    rules = [
        _rule(
            "PrimusRunStalled",
            f"(time() - max by ({RUN}) ({names.LAST_STEP_TIME})) > {stall_after_s:g}\n{LIVE}",
            "critical",
            f"Primus {WHERE} stalled",
            f"No new step from {WHERE} (backend {{{{ $labels.backend }}}}) for {{{{ $value | humanizeDuration }}}} "
            f"(threshold {stall_after_s:g} s): the job, or its node, may be dead.",
        ),
        _rule(
            "PrimusLossNotFinite",
            f"max by ({RUN}) (\n  {loss}\n)\n{LIVE}",
            "critical",
            f"Primus {WHERE}: the loss is not finite",
            f"The latest loss of {WHERE} is {{{{ $value }}}}: training has diverged.",
        ),
        _rule(
            "PrimusThroughputDrop",
            f"max by ({RUN}) ({throughput} < {drop:g} * quantile_over_time(0.5, {throughput}[{DROP_WINDOW}]))\n{LIVE}",
            "warning",
            f"Primus {WHERE}: throughput dropped",
            f"Tokens/s of {WHERE} have stayed under {drop:g} x their median of the last {DROP_WINDOW} for "
            f"{DROP_FOR} (now {{{{ $value | humanize }}}}).",
            DROP_FOR,
        ),
        _rule(
            "PrimusStraggler",
            f"max by ({RUN}) ({straggler}) >= {STRAGGLER_RATIO:g}\n{LIVE}",
            "warning",
            f"Primus {WHERE}: a straggling rank",
            f"The slowest rank of {WHERE} has been busy {{{{ $value | humanize }}}} x the median rank for "
            f"{STRAGGLER_FOR} (primus_straggler_slowest_rank says which).",
            STRAGGLER_FOR,
        ),
        _rule(
            "PrimusRunFailed",
            f'max by ({RUN}, {names.STATUS_LABEL}) ({names.STATUS}{{{names.STATUS_LABEL}=~"FAILED|KILLED"}} == 1)',
            "critical",
            f"Primus {WHERE} ended {{{{ $labels.status }}}}",
            f"The {WHERE} (backend {{{{ $labels.backend }}}}) ended {{{{ $labels.status }}}}.",
        ),
        _rule(
            "PrimusPushgatewayDown",
            'up{job=~".*pushgateway.*"} == 0',
            "warning",
            "The Pushgateway {{ $labels.instance }} is down",
            "Prometheus cannot scrape {{ $labels.instance }}: no Primus run's figures arrive, and PrimusRunStalled "
            "cannot fire while it is down.",
            "2m",
        ),
    ]
    return {"groups": [{"name": "primus", "rules": rules}]}


def _rule(name: str, expr: str, severity: str, summary: str, description: str, for_: str = "0s") -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": for_,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": description},
    }


def rules_yaml(stall_after_s: float = DEFAULT_STALL_AFTER_S) -> str:
    """The rules file, a multi-line expression as a YAML block, as people write them."""
    return yaml.dump(alerting_rules(stall_after_s), Dumper=_BlockDumper, sort_keys=False, width=1_000)


class _BlockDumper(yaml.SafeDumper):
    pass


def _text(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_BlockDumper.add_representer(str, _text)
