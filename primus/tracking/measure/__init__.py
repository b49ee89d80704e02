"""Performance figures: throughput, FLOPs and MFU, memory and utilisation, the same over ranks, stragglers, progress,
and the names every metric is logged under."""
