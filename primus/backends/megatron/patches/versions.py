"""The upstream range the Megatron patches were written and tested for."""

MEGATRON_CORE = "megatron-core"
SUPPORTED = ">=0.19.2,<0.20"
