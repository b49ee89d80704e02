"""`primus report --baseline BASE RUN...`: each run against a baseline run on what a slower or worse training shows —
median tokens/s and TFLOP/s per device and median seconds per step after warm-up, goodput, and the loss at the last
step both runs logged — each judged against ``max_regression_pct`` of the baseline's value (the loss too, relative
to the baseline's). A figure either run lacks is shown, not judged. README, "A regression gate": a nightly job."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from primus.report.goodput import goodput_fraction
from primus.report.panels import LOSS, TFLOPS, TOKENS_PER_SEC
from primus.report.rows import csv_text, median_after_warmup
from primus.report.run_data import RunData
from primus.report.summary import first_log_starts_clock, log_intervals
from primus.report.table import padded

DEFAULT_MAX_REGRESSION_PCT = 5.0


@dataclass(frozen=True)
class Figure:
    key: str  # its name in the JSON and CSV output
    label: str  # in the table; ``{step}``: the step the loss is compared at
    higher_is_better: bool
    of: Callable[[RunData, int | None], float | None]  # a run's figure, given the step both runs' losses reach


def median_step_seconds(run: RunData, _: int | None = None) -> float | None:
    """Seconds per iteration over the log intervals after warm-up (the loss's log entries: every backend logs it)."""
    name = run.metric_for(LOSS)
    if name is None:
        return None
    kept = log_intervals(run.points[name], run.skip_iterations, first_log_starts_clock(run.backend))
    seconds = [(point.at - previous.at) / n for n, previous, point in kept if previous is not None]
    return statistics.median(seconds) if seconds else None


def loss_at(run: RunData, step: int | None) -> float | None:
    name = run.metric_for(LOSS)
    if name is None or step is None:
        return None
    steps, values = run.series(name)
    return values[steps.index(step)]


FIGURES = (
    Figure(
        "median_tokens_per_sec_per_gpu", "tokens/s per GPU", True, lambda r, _: median_after_warmup(r, TOKENS_PER_SEC)
    ),
    Figure("median_tflops_per_gpu", "TFLOP/s per GPU", True, lambda r, _: median_after_warmup(r, TFLOPS)),
    Figure("median_step_time_s", "seconds per step", False, median_step_seconds),
    Figure("goodput_fraction", "goodput", True, lambda r, _: goodput_fraction(r)),
    Figure("loss_at_common_step", "loss at step {step}", False, loss_at),
)


@dataclass(frozen=True)
class Comparison:
    figure: Figure
    label: str
    baseline: float | None
    value: float | None
    max_regression_pct: float

    @property
    def change_pct(self) -> float | None:
        if self.baseline is None or self.value is None or self.baseline == 0:
            return None
        return 100.0 * (self.value - self.baseline) / abs(self.baseline)

    @property
    def regressed(self) -> bool:
        change = self.change_pct
        if change is None:
            return False
        return (-change if self.figure.higher_is_better else change) > self.max_regression_pct

    def describe(self) -> str:
        return f"{self.label} {self.change_pct:+.1f} %"


@dataclass(frozen=True)
class Verdict:
    run: RunData
    comparisons: list[Comparison]

    @property
    def regressed(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.regressed]


def common_loss_step(baseline: RunData, run: RunData) -> int | None:
    """The last step both runs logged their loss at (a run stopped early is compared where it got to)."""
    steps = [set(r.series(name)[0]) for r in (baseline, run) if (name := r.metric_for(LOSS)) is not None]
    both = set.intersection(*steps) if len(steps) == 2 else set()
    return max(both) if both else None


def judge(baseline: RunData, run: RunData, max_regression_pct: float) -> Verdict:
    step = common_loss_step(baseline, run)
    return Verdict(
        run,
        [
            Comparison(f, f.label.format(step=step), f.of(baseline, step), f.of(run, step), max_regression_pct)
            for f in FIGURES
        ],
    )


def _cell(value: float | None, suffix: str = "") -> str:
    return "—" if value is None else f"{value:.4g}{suffix}"


def text(baseline: RunData, verdicts: Sequence[Verdict], max_regression_pct: float) -> str:
    """A table per run: each figure, the baseline's, the run's, the change, and whether it regressed."""
    blocks = []
    for verdict in verdicts:
        rows = [["figure", "baseline", "run", "change", ""]]
        for c in verdict.comparisons:
            change = "—" if c.change_pct is None else f"{c.change_pct:+.1f} %"
            rows.append([c.label, _cell(c.baseline), _cell(c.value), change, "REGRESSED" if c.regressed else ""])
        head = f"{verdict.run.label} against baseline {baseline.label} (regressed: worse by more than {max_regression_pct:g} %)"
        blocks.append(f"{head}\n{padded(rows)}")
    return "\n\n".join(blocks) + "\n"


def as_dict(baseline: RunData, verdicts: Sequence[Verdict], max_regression_pct: float) -> dict[str, Any]:
    return {
        "baseline": {"run": baseline.label, "path": str(baseline.path)},
        "max_regression_pct": max_regression_pct,
        "passed": not any(v.regressed for v in verdicts),
        "runs": [
            {
                "run": v.run.label,
                "path": str(v.run.path),
                "regressed": [c.figure.key for c in v.regressed],
                "figures": [
                    {
                        "figure": c.figure.key,
                        "label": c.label,
                        "baseline": c.baseline,
                        "value": c.value,
                        "change_pct": c.change_pct,
                        "higher_is_better": c.figure.higher_is_better,
                        "regressed": c.regressed,
                    }
                    for c in v.comparisons
                ],
            }
            for v in verdicts
        ],
    }


def formatted(baseline: RunData, verdicts: Sequence[Verdict], max_regression_pct: float, fmt: str | None) -> str:
    """The gate as a table (``fmt`` None), JSON, or CSV (a row per run and figure)."""
    if fmt is None:
        return text(baseline, verdicts, max_regression_pct)
    result = as_dict(baseline, verdicts, max_regression_pct)
    if fmt == "json":
        return json.dumps(result, indent=1) + "\n"
    rows = ({"run": run["run"], "path": run["path"], **figure} for run in result["runs"] for figure in run["figures"])
    return csv_text(rows, ["run", "path", "figure", "baseline", "value", "change_pct", "regressed"])


def failure_line(verdicts: Sequence[Verdict], max_regression_pct: float) -> str | None:
    """What regressed, every figure of every run, in one line; None when nothing did."""
    failed = [f"{v.run.label}: {', '.join(c.describe() for c in v.regressed)}" for v in verdicts if v.regressed]
    if not failed:
        return None
    return f"regressed beyond {max_regression_pct:g} % of the baseline: " + "; ".join(failed)
