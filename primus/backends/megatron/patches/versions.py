"""The Megatron releases the patches were written and tested for: every megatron-core release that ships
``megatron.training`` (0.17 on; 0.16 and older wheels have none), and source checkouts of them, judged by
their own ``megatron/core/package_info.py``."""

from primus.patches.upstream import Upstream

MEGATRON = Upstream(name="Megatron", distribution="megatron-core", package="megatron.core",
                    supported=">=0.17,<0.20", version_files=("package_info.py",))
