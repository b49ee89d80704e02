"""What every TorchTitan CPU-platform patch shares: the upstream and the condition that turns it on
(``primus.patches.platform.on_cpu``)."""

from __future__ import annotations

from primus.patches.platform import cpu_patches
from primus.upstreams.torchtitan import TORCHTITAN

cpu_patch = cpu_patches(TORCHTITAN, "torchtitan")
