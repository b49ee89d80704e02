"""The health detectors (``tracking/health/detectors.py``), driven by made-up journal records and times: no sleeping."""

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from primus.tracking.health.detectors import HealthMonitor, loss_metrics
from primus.tracking.journal.records import EVENT, METRICS, SAVE_START, SAVED, AlertKind, Record
from primus.tracking.settings.config import HealthSettings

T0 = 1_000_000.0


def metrics(step, at, **data):
    return Record(METRICS, step, int(at * 1000), data, end=0)


def event(at, **data):
    return Record(EVENT, 0, int(at * 1000), data, end=0)


def steps(monitor, first, last, every_s, t0=T0, loss=None, throughput=None):
    """Log steps ``first..last`` every ``every_s`` from ``t0``; the alerts they raised."""
    found = []
    for i, step in enumerate(range(first, last + 1)):
        data = {}
        if loss is not None:
            data["lm loss"] = loss(step)
        if throughput is not None:
            data["perf/tokens_per_sec"] = throughput(step)
        found += monitor.observe(metrics(step, t0 + i * every_s, **data))
    return found


def kinds(alerts):
    return [a.kind for a in alerts]


def test_no_stall_during_the_start_up_allowance_then_one_alert():
    m = HealthMonitor(HealthSettings(startup_s=600), now=T0)
    assert m.check(T0 + 599) == []
    [alert] = m.check(T0 + 601)
    assert alert.kind == AlertKind.STALLED and "since the run started" in alert.text
    assert m.check(T0 + 700) == []  # said once


@pytest.mark.parametrize("every_s, allowed", [(1.0, 300.0), (60.0, 600.0)])
def test_the_automatic_allowance_is_ten_medians_and_at_least_300_s(every_s, allowed):
    m = HealthMonitor(HealthSettings(), now=T0)
    steps(m, 1, 20, every_s)
    last = T0 + 19 * every_s
    assert m.check(last + allowed - 1) == []
    [alert] = m.check(last + allowed + 1)
    assert alert.kind == AlertKind.STALLED and alert.iteration == 20
    assert f"allowed {allowed:.0f} s" in alert.text


def test_an_explicit_stall_after_replaces_the_automatic_allowance():
    m = HealthMonitor(HealthSettings(stall_after_s=5), now=T0)
    steps(m, 1, 3, 1.0)
    assert m.check(T0 + 2 + 4.9) == []
    assert kinds(m.check(T0 + 2 + 5.1)) == [AlertKind.STALLED]


def test_resumed_carries_the_gap_and_a_later_stall_is_said_again():
    m = HealthMonitor(HealthSettings(stall_after_s=5), now=T0)
    steps(m, 1, 2, 1.0)
    assert kinds(m.check(T0 + 10)) == [AlertKind.STALLED]
    [resumed] = m.observe(metrics(3, T0 + 41))
    assert resumed.kind == AlertKind.RESUMED and resumed.iteration == 3 and "after 40 s" in resumed.text
    assert kinds(m.check(T0 + 41 + 6)) == [AlertKind.STALLED]


def test_a_checkpoint_save_in_progress_extends_the_allowance_until_the_next_step():
    m = HealthMonitor(HealthSettings(stall_after_s=5, busy_s=100), now=T0)
    steps(m, 1, 2, 1.0)
    m.observe(event(T0 + 2, event="busy", what="checkpoint save", on=True))
    assert m.check(T0 + 90) == []
    assert kinds(m.check(T0 + 103)) == [AlertKind.STALLED]
    m2 = HealthMonitor(HealthSettings(stall_after_s=5, busy_s=100), now=T0)
    steps(m2, 1, 2, 1.0)
    m2.observe(event(T0 + 2, event="busy", what="evaluation", on=True))
    m2.observe(event(T0 + 3, event="busy", what="evaluation", on=False))
    assert kinds(m2.check(T0 + 8)) == [AlertKind.STALLED]  # the evaluation ended: the usual allowance again


def test_an_evaluation_outlasts_the_late_log_of_the_step_before_it_and_ends_at_the_next():
    """MaxText logs a step once the next is handed over: step 2's log comes after the evaluation begun after it."""
    m = HealthMonitor(HealthSettings(stall_after_s=5, busy_s=100), now=T0)
    steps(m, 1, 1, 1.0)
    m.observe(event(T0 + 1, event="busy", what="evaluation", on=True, after_step=2))
    m.observe(metrics(2, T0 + 1.5))
    assert m.check(T0 + 90) == []
    m.observe(metrics(3, T0 + 95))
    assert kinds(m.check(T0 + 101)) == [AlertKind.STALLED]  # step 3 ended it: the usual allowance again


def test_a_checkpoint_s_start_mark_and_save_record_are_its_busy_marks():
    m = HealthMonitor(HealthSettings(stall_after_s=5, busy_s=100), now=T0)
    steps(m, 1, 2, 1.0)
    m.observe(event(T0 + 2, event=SAVE_START, iteration=2))
    assert m.check(T0 + 90) == []
    m.observe(event(T0 + 91, event=SAVED, iteration=2, path="/ckpt/iter_0000002", artifact="ckpt", alias="iter_2"))
    assert kinds(m.check(T0 + 97)) == [AlertKind.STALLED]  # saved: the usual allowance again


def test_nothing_after_the_run_ended():
    m = HealthMonitor(HealthSettings(stall_after_s=5), now=T0)
    steps(m, 1, 2, 1.0)
    m.observe(event(T0 + 2, event="end", status="FINISHED"))
    assert m.check(T0 + 1000) == []
    assert m.observe(metrics(3, T0 + 1001, **{"lm loss": math.nan})) == []


def test_a_record_for_some_sinks_only_is_on_another_axis_and_not_a_step():
    """Megatron's "vs samples" scalars go to TensorBoard only, at the consumed-samples count: not the iteration a
    stall or a killed run names, nor a step that ends a stall."""
    m = HealthMonitor(HealthSettings(stall_after_s=5), now=T0)
    steps(m, 1, 5, 1.0)
    vs_samples = Record(METRICS, 40, int((T0 + 5) * 1000), {"lm loss": math.nan}, end=0, only=("tensorboard",))
    assert m.observe(vs_samples) == []
    assert m.stall.last_step == 5
    [stalled] = m.check(T0 + 100)
    assert stalled.kind == AlertKind.STALLED and stalled.iteration == 5


@pytest.mark.parametrize("name", loss_metrics())
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_loss_that_is_not_finite_is_a_nan_alert_at_once_in_every_backend(name, value):
    m = HealthMonitor(HealthSettings(), now=T0)
    [alert] = m.observe(metrics(6, T0, **{name: value}))
    assert alert.kind == AlertKind.NAN and alert.iteration == 6 and name in alert.text


def test_a_loss_spike_over_k_mads_of_the_recent_median():
    m = HealthMonitor(HealthSettings(spike_k=6, spike_window=20), now=T0)
    noisy = [3.0 + 0.01 * (i % 5) for i in range(20)]
    assert steps(m, 1, 20, 1.0, loss=lambda s: noisy[s - 1]) == []
    median = statistics.median(noisy)
    mad = statistics.median(abs(x - median) for x in noisy)
    assert m.observe(metrics(21, T0 + 21, **{"lm loss": median + 5.9 * mad})) == []
    [alert] = m.observe(metrics(22, T0 + 22, **{"lm loss": 9.0}))
    assert alert.kind == AlertKind.LOSS_SPIKE and alert.iteration == 22


def test_a_flat_loss_has_a_floor_under_its_mad():
    m = HealthMonitor(HealthSettings(spike_k=6, spike_window=20), now=T0)
    steps(m, 1, 20, 1.0, loss=lambda s: 3.0)
    assert m.observe(metrics(21, T0 + 21, **{"lm loss": 3.0 * 1.05})) == []  # under 6 x 1 % of the median
    assert kinds(m.observe(metrics(22, T0 + 22, **{"lm loss": 3.0 * 1.07}))) == [AlertKind.LOSS_SPIKE]


def test_loss_spikes_can_be_turned_off():
    m = HealthMonitor(HealthSettings(spike_k=0, spike_window=20), now=T0)
    steps(m, 1, 20, 1.0, loss=lambda s: 3.0)
    assert m.observe(metrics(21, T0 + 21, **{"lm loss": 1e9})) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0.1, max_value=100.0), min_size=10, max_size=60))
def test_no_spike_for_a_loss_that_never_rises_above_its_window(losses):
    """A loss at or below every earlier one is never a spike, whatever the series."""
    m = HealthMonitor(HealthSettings(spike_window=10), now=T0)
    descending = sorted(losses, reverse=True)
    assert AlertKind.LOSS_SPIKE not in kinds(steps(m, 1, len(descending), 1.0, loss=lambda s: descending[s - 1]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0.01, max_value=1000.0), min_size=2, max_size=40))
def test_the_automatic_allowance_follows_the_median_interval(intervals):
    """Whatever the intervals, the alert comes just past max(300, 10 x their median), never before."""
    m = HealthMonitor(HealthSettings(), now=T0)
    at = T0
    m.observe(metrics(0, at))
    for i, gap in enumerate(intervals, start=1):
        at += gap
        m.observe(metrics(i, at))
    allowed = max(300.0, 10 * statistics.median(intervals))
    assert m.check(at + allowed * 0.999) == []
    assert kinds(m.check(at + allowed * 1.001)) == [AlertKind.STALLED]


def test_a_throughput_drop_for_several_log_steps_is_said_once_per_drop():
    s = HealthSettings(drop_steps=3)
    m = HealthMonitor(s, now=T0)
    assert steps(m, 1, 9, 1.0, throughput=lambda _: 1000.0) == []
    assert steps(m, 10, 11, 1.0, throughput=lambda _: 400.0) == []  # two low steps: not yet
    [alert] = steps(m, 12, 12, 1.0, throughput=lambda _: 400.0)
    assert alert.kind == AlertKind.THROUGHPUT_DROP and alert.iteration == 12
    assert steps(m, 13, 15, 1.0, throughput=lambda _: 400.0) == []  # the same drop
    assert steps(m, 16, 16, 1.0, throughput=lambda _: 1000.0) == []  # recovered
    assert kinds(steps(m, 17, 19, 1.0, throughput=lambda _: 100.0)) == [AlertKind.THROUGHPUT_DROP]


def test_throughput_at_half_the_median_is_no_drop():
    m = HealthMonitor(HealthSettings(drop_steps=3), now=T0)
    steps(m, 1, 9, 1.0, throughput=lambda _: 1000.0)
    assert steps(m, 10, 20, 1.0, throughput=lambda _: 500.0) == []


@pytest.mark.parametrize(
    "bad", [{"stall_after_s": 0}, {"stall_min_s": -1}, {"spike_k": -1}, {"drop_fraction": 1.0}, {"spike_window": 2}]
)
def test_settings_out_of_range_are_refused(bad):
    with pytest.raises(ValueError):
        HealthSettings(**bad)


# -- a watch started again (its delivery process died): primed with what the earlier one judged --------------------
def alert_record(at, kind, iteration):
    return event(at, event="alert", kind=str(kind), iteration=iteration, text="", notified=True)


def test_a_primed_monitor_keeps_the_runs_allowance_and_last_step_and_raises_nothing_old():
    records = [metrics(s, T0 + (s - 1) * 100.0, **{"lm loss": 1.0 if s != 5 else math.nan}) for s in range(1, 11)]
    last = T0 + 900.0
    primed = HealthMonitor(HealthSettings(), now=last + 5)
    assert primed.prime(records) is None  # the NaN of step 5 was told by the earlier watch, not again
    assert primed.check(last + 999) == []  # ten medians of 100 s
    [alert] = primed.check(last + 1001)
    assert alert.kind == AlertKind.STALLED and alert.iteration == 10 and "after step 10" in alert.text
    fresh = HealthMonitor(HealthSettings(), now=last + 5)  # what a watch knowing none of it would do: start-up's
    assert fresh.check(last + 1001) == []


def test_a_stall_told_before_the_restart_is_not_told_again_and_its_end_is():
    records = [metrics(s, T0 + (s - 1) * 10.0) for s in range(1, 11)]
    records.append(alert_record(T0 + 500.0, AlertKind.STALLED, 10))
    m = HealthMonitor(HealthSettings(), now=T0 + 505)
    m.prime(records)
    assert m.check(T0 + 2000) == []
    assert kinds(m.observe(metrics(11, T0 + 2100))) == [AlertKind.RESUMED]


def straggling(monitor, slowest, ratios, first=1, **extra):
    """Log steps from ``first`` whose straggler figures name ``slowest[i]`` at ``ratios[i]`` × the median."""
    found = []
    for i, (rank, ratio) in enumerate(zip(slowest, ratios, strict=True)):
        data = {"straggler/slowest_rank": float(rank), "straggler/slowest_over_median": ratio, **extra}
        found += monitor.observe(metrics(first + i, T0 + i, **data))
    return found


def test_a_rank_slowest_on_most_recent_log_steps_is_a_straggler_once_named_with_its_host_then_resolved():
    m = HealthMonitor(HealthSettings(), now=T0)
    m.observe(event(T0, event="rank_hosts", hosts=["node-a", "node-b", "node-c"]))
    assert straggling(m, [2, 1, 2], [1.5, 1.5, 1.1]) == []  # rank 2 far above the median on 1 of 3 only
    [alert] = straggling(m, [2, 2], [1.3, 1.25], first=4)  # now on 3 of the last 5
    assert alert.kind == AlertKind.STRAGGLER and alert.iteration == 5
    assert alert.text.startswith("rank 2 (node-c) is the slowest at 1.2x the median busy time or more on 3 of the last 5")
    assert straggling(m, [2, 0, 2, 1], [1.3, 1.0, 1.9, 1.0], first=6) == []  # the same episode: told once
    [over] = straggling(m, [0], [1.0], first=10)  # rank 2 on 2 of the last 5 (steps 6 and 8)
    assert over.kind == AlertKind.STRAGGLER_RESOLVED and over.iteration == 10
    assert over.text == ("rank 2 (node-c) is no longer the slowest on most of the last 5 log steps (a straggler since "
                         "iteration 5)")


def test_no_straggler_for_a_balanced_run_or_without_the_figures():
    m = HealthMonitor(HealthSettings(), now=T0)
    assert straggling(m, [1] * 20, [1.19] * 20) == []  # always the same rank, never 1.2x the median
    assert straggling(m, [0, 1, 2, 3] * 5, [2.0] * 20, first=21) == []  # far above, never the same rank
    lead = {"straggler/busy_s_max": 0.3, "straggler/busy_s_median": 0.1}  # 3x the median, 0.2 s ahead
    assert straggling(m, [1] * 10, [3.0] * 10, first=61, **lead) == []
    assert steps(m, 41, 60, 1.0, loss=lambda s: 1.0) == []


@pytest.mark.parametrize("waited, said", [(0.3, "75% of its busy time is data wait: waiting for data"),
                                          (0.1, "25% of its busy time is data wait: compute and the rest")])
def test_the_straggler_alert_says_whether_data_wait_dominates_the_slow_ranks_busy_time(waited, said):
    m = HealthMonitor(HealthSettings(), now=T0)
    extra = {"straggler/busy_s_max": 0.8, "straggler/busy_s_median": 0.4, "straggler/slowest_data_wait_s": 2 * waited}
    [alert] = straggling(m, [0, 0, 0], [1.5] * 3, **extra)
    assert said in alert.text and "(0)" not in alert.text  # no host known: the rank alone


def test_the_detectors_read_the_straggler_figures_by_the_names_the_ranks_log_them_under():
    from primus.tracking.health import detectors
    from primus.tracking.measure import stragglers

    assert (detectors.SLOWEST_RANK, detectors.SLOWEST_OVER_MEDIAN, detectors.BUSY_MAX, detectors.BUSY_MEDIAN,
            detectors.SLOWEST_DATA_WAIT) == (stragglers.SLOWEST_RANK, stragglers.SLOWEST_OVER_MEDIAN,
                                             stragglers.BUSY_MAX, stragglers.BUSY_MEDIAN, stragglers.SLOWEST_DATA_WAIT)
