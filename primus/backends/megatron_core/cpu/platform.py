"""What every Megatron CPU-platform patch shares: the upstream (``primus.upstreams.megatron.MEGATRON``; the CPU
platform was verified end to end on 0.19.2, 1 process, DP=2, TP=2, PP=2) and the condition that turns
it on (``primus.patches.platform.on_cpu``)."""

from __future__ import annotations

from primus.patches.platform import cpu_patches
from primus.upstreams.megatron import MEGATRON

cpu_patch = cpu_patches(MEGATRON, "megatron")
