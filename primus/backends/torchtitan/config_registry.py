"""TorchTitan config functions shipped with Primus (``--module primus.backends.torchtitan --config NAME``;
upstream's ConfigManager imports ``<module>.config_registry``).

``llama3_debugmodel_cpu``: upstream's ``llama3_debugmodel`` changed only where a CPU cannot follow it,
training on the locally built tiny assets (``assets.py``)."""

from __future__ import annotations

from torchtitan.models.common.attention import FlexAttention, ScaledDotProductAttention, VarlenAttention
from torchtitan.models.llama3.config_registry import llama3_debugmodel
from torchtitan.trainer import Trainer

from primus.backends.torchtitan.assets import ensure_tiny_assets


def use_sdpa(model_config) -> int:
    """FlexAttention has no backward on CPU (torch flex_attention._validate_device) and varlen is
    CUDA-only: use causal SDPA. The trainer builds masks only for Flex/Varlen, so SDPA attends across
    packed documents (positions still restart per document) — fine for smoke tests."""
    replaced = 0
    for cls in (FlexAttention.Config, VarlenAttention.Config):
        for _fqn, _config, parent, attr in list(model_config.traverse(cls)):
            if isinstance(parent, list):
                parent[attr] = ScaledDotProductAttention.Config()
            else:
                setattr(parent, attr, ScaledDotProductAttention.Config())
            replaced += 1
    return replaced


def llama3_debugmodel_cpu() -> Trainer.Config:
    config = llama3_debugmodel()
    if not use_sdpa(config.model_spec.model):
        raise RuntimeError(
            "llama3_debugmodel_cpu: upstream's debug model no longer uses Flex/Varlen attention; "
            "review use_sdpa for this torchtitan version"
        )
    assets = ensure_tiny_assets()
    config.hf_assets_path = str(assets.tokenizer_dir)
    config.dataloader.dataset_path = str(assets.dataset_dir)
    # CPU-sized, all overridable from the experiment YAML or the command line.
    config.training.local_batch_size = 2
    config.training.seq_len = 256
    config.training.steps = 20
    # bf16 autocast runs ~60x slower than fp32 on CPUs without bf16 units (single device and DDP use autocast).
    config.training.mixed_precision_param = "float32"
    config.training.disable_cuda_graphs = True
    config.checkpoint.enable = False
    config.debug.seed = 0  # same initial weights every run: losses are comparable across runs
    config.metrics.log_freq = 1
    return config
