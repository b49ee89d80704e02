"""docs/metrics.md: Primus's metric-name schema, which metric each `primus report` panel plots per
backend, and how MLflow spells the names it refuses."""

from __future__ import annotations

from primus.docs_gen.markdown import code, fill, table
from primus.docs_gen.run_tags import run_tags_section
from primus.report.panels import MFU, PANELS
from primus.tracking.health.detectors import (
    STRAGGLER_MIN_LEAD_S,
    STRAGGLER_RATIO,
    STRAGGLER_STEPS,
    THROUGHPUT_METRICS,
    loss_metrics,
)
from primus.tracking.journal.records import COUNT_METRIC, TAG_PREFIX, AlertKind
from primus.tracking.measure.names import READABLE, SCHEMA, MlflowKeys, is_valid_mlflow_key, mlflow_key
from primus.tracking.measure.perf import PEAK_TFLOPS
from primus.tracking.measure.progress import AT_EVERY_LOG_STEP, ETA_WINDOW, FROM_THE_SECOND_LOG_STEP
from primus.tracking.measure.stragglers import SLOW_RATIO
from primus.upstreams.backends import backends


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(code(n + "*" if n.endswith("/") else n) for n in names) or "—"


PEAK_DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")


def _collision_example() -> str:
    keys = MlflowKeys()
    keys("throughput(tps)")
    return keys("throughput_tps")


def render_metrics() -> str:
    panels = table(
        ["Panel", "Primus name", *(b.title for b in backends())],
        [[p.title, _names(p.primus_names), *(_names(p.native(b.name)) for b in backends())] for p in (*PANELS, MFU)],
    )
    every = dict.fromkeys([*SCHEMA, *(n for p in PANELS for b in backends() for n in p.native(b.name))])
    refused = [[code(n), code(mlflow_key(n))] for n in every if not n.endswith("/") and not is_valid_mlflow_key(n)]
    peaks = [[code(key), *(f"{peaks[d]:g}" if d in peaks else "—" for d in PEAK_DTYPES)] for key, peaks in PEAK_TFLOPS]
    spelling = [[code(bad), code(good)] for bad, good in READABLE] + [["any other character", code("_")]]
    return fill(
        "metrics.md",
        schema=table(["Name", "Meaning"], [[code(name), meaning] for name, meaning in SCHEMA.items()]),
        at_every_log_step=_names(AT_EVERY_LOG_STEP),
        from_the_second_log_step=_names(FROM_THE_SECOND_LOG_STEP),
        eta_window=ETA_WINDOW,
        slow_ratio=SLOW_RATIO,
        straggler_ratio=STRAGGLER_RATIO,
        straggler_min_lead_s=STRAGGLER_MIN_LEAD_S,
        straggler_steps=STRAGGLER_STEPS,
        peak_table=table(["Device name contains", *PEAK_DTYPES], peaks),
        loss_names=_names(loss_metrics()),
        throughput_names=_names(THROUGHPUT_METRICS),
        tag_prefix=TAG_PREFIX,
        count_metric=COUNT_METRIC,
        alert_kinds=", ".join(code(k.value) for k in AlertKind),
        run_tags=run_tags_section(),
        panels=panels,
        spelling_table=table(["In the name", "In the MLflow key"], spelling),
        collision_example=code(_collision_example()),
        refused_table=table(["Name", "MLflow key"], refused),
    )
