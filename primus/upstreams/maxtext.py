"""The MaxText releases the patches were written and tested for: 0.2.4 and 0.2.5, whose hooks have one form.
Why older 0.2.x releases are refused is ``differences``' last row (docs/compatibility.md)."""

from primus.upstreams.release import Upstream

MAXTEXT = Upstream(
    name="MaxText",
    distribution="maxtext",
    package="maxtext",
    supported=">=0.2.4,<0.3",
    version_files=("version.py",),
    entry_points=(
        "primus-run [--config <experiment.yaml>] python -m maxtext.trainers.pre_train.train [<base.yml>] key=value ...",
        "python -m primus.backends.maxtext [<base.yml>] key=value ...",
        "primus train --config <experiment.yaml>",
    ),
    differences=(
        (
            "0.2.4, 0.2.5",
            "every hook Primus patches has the same form: `pyconfig.initialize(argv, **kwargs)`, "
            "`MetricLogger.write_metrics(metrics, step, metric_type)` one step late (eval summaries "
            "at the train step they follow), the last step in `flush_metrics_and_cleanup`; "
            "`MetricLogger(config, learning_rate_schedule)` gains `start_step` in 0.2.5",
        ),
        (
            "0.2.4",
            "imports `ml_goodput_measurement` unconditionally (0.2.5 stubs it when missing): install it, or "
            "set `DECOUPLE_GCLOUD=TRUE` (upstream's own TensorBoard writer is then off; Primus's is not)",
        ),
        ("0.2.4, 0.2.5", "metric names are the same (`learning/loss`, `perf/step_time_seconds`, `eval/avg_loss`...)"),
        (
            "0.2.0 - 0.2.3",
            "refused: 0.2.3's config has no `enable_wandb` / `wandb_*` keys; 0.2.0 - 0.2.2 call "
            "`write_metrics(metrics, step, is_training)` and need their own TensorBoard writer on to "
            "count a step's FLOPs and tokens; 0.2.0 and 0.2.1 never abort on a NaN loss",
        ),
    ),
)
