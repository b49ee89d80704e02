"""TorchTitan backend (``backend.py``): patches on unmodified upstream torchtitan (0.2.2 and 0.3.x) that route every
metric its ``MetricsProcessor`` computes through Primus's tracking hub, map an experiment YAML onto upstream's
config, and let it train on a CPU-only host."""
