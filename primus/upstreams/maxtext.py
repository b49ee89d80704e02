"""The MaxText releases the patches were written and tested for: 0.2.4 and 0.2.5, whose hooks have one form
(``maxtext.configs.pyconfig.initialize``; ``MetricLogger.write_metrics(metrics, step, metric_type)`` behind
one-step deferred writes, the last step written by ``flush_metrics_and_cleanup``; W&B as MaxText's own
``enable_wandb`` keys). Older 0.2.x releases are refused:

* 0.2.3 has no W&B keys: ``enable_wandb``, which every experiment sets, is an unknown key to its config, and
  W&B tracking through MaxText's own switches does not exist there;
* 0.2.0 - 0.2.2 call ``write_metrics(metrics, step, is_training)``, and keep one deferred train entry with eval
  summaries written at once; 0.2.2 computes the per-step FLOP and token counts only when its own TensorBoard
  writer is on (off under Primus, which writes TensorBoard itself: ``record_train_metrics`` then fails);
* 0.2.0 and 0.2.1 also create their TensorBoard writer whatever ``enable_tensorboard`` says (a second event
  file beside Primus's), never abort on a NaN/Inf loss (a diverging run cannot end FAILED), and their
  ``maxtext`` is a namespace package (no ``__init__.py``)."""

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
