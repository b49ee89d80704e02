"""Docs generated from the code they describe: docs/options.md (every option per backend with its
default), docs/metrics.md (the metric-name schema) and docs/compatibility.md. Their prose is markdown in
docs/templates/, the tables and figures come from code. Run ``python -m primus.docs_gen [--check]``."""
