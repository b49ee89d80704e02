"""MaxText backend: patches on unmodified upstream MaxText (PyPI ``maxtext`` 0.2.x, JAX) that send every
metric its ``MetricLogger`` writes through Primus's tracking hub (TensorBoard, W&B, MLflow, journal), take
Primus's own keys (``enable_mlflow=true``...) on MaxText's ``key=value`` command line, and map an
experiment YAML onto that command line.

MaxText and JAX live in their own environment (``scripts/setup-maxtext-venv.sh``: ``.venv-maxtext``).

Entry points: ``python -m primus.backends.maxtext [base.yml] [key=value ...]`` (what `primus train` runs),
or upstream's ``python -m maxtext.trainers.pre_train.train base.yml key=value ...`` under ``primus-run``."""
