"""TorchTitan backend: patches on unmodified upstream torchtitan (0.2.2 and 0.3.x) that route every metric its
``MetricsProcessor`` computes through Primus's tracking hub (TensorBoard, W&B, MLflow, journal), map an
experiment YAML onto upstream's config, and let it train on a CPU-only host.

Entry points: ``python -m primus.backends.torchtitan [torchtitan args]`` (what `primus train` runs), or
upstream's own ``torchrun ... -m torchtitan.train ...`` under ``primus-run``."""
