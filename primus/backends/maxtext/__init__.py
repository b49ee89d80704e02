"""MaxText backend (``backend.py``): patches on unmodified upstream MaxText (JAX, its own environment
``.venv-maxtext``) that send every metric its ``MetricLogger`` writes through Primus's tracking hub, and take
Primus's keys (``enable_mlflow=true``...) and an experiment YAML on MaxText's ``key=value`` command line."""
