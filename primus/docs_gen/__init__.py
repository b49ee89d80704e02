"""Docs generated from the code they describe: docs/options.md (every option per backend with its
default) and docs/metrics.md (the metric-name schema). Run ``python -m primus.docs_gen [--check]``."""
