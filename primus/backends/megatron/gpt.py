"""GPT pretraining on upstream Megatron: the model, batch, loss and dataset providers that
``megatron.training.pretrain`` needs, and the ``main()`` behind the drop-in ``pretrain_gpt.py``.

Modelled on upstream's ``pretrain_gpt.py`` (pretraining only: no SFT, FIM or ModelOpt), with the
GPT model and layer specs from megatron-core. Import it after ``primus.activation.activate()``: it
imports Megatron, and the patches install when Megatron is imported.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import MutableMapping
from functools import partial
from typing import Any

import torch
from megatron.core import mpu
from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig, MockGPTDataset
from megatron.core.enums import ModelType
from megatron.core.models.gpt import GPTModel
from megatron.core.models.gpt.gpt_layer_specs import (
    get_gpt_layer_local_spec,
    get_gpt_layer_with_transformer_engine_spec,
)
from megatron.core.transformer.spec_utils import ModuleSpec
from megatron.core.utils import get_attr_wrapped_model
from megatron.training import get_args, get_timers, get_tokenizer, pretrain, print_rank_0
from megatron.training.arguments import core_transformer_config_from_args
from megatron.training.training import set_startup_timestamps
from megatron.training.utils import get_blend_and_blend_per_split, is_first_or_last_pipeline_stage

from primus.backends.megatron.upstream_calls import broadcast_batch, pretrain_gpt, slice_for_context_parallel
from primus.errors import SettingsError
from primus.patches import REGISTRY

log = logging.getLogger(__name__)

BATCH_KEYS = ("tokens", "labels", "loss_mask", "attention_mask", "position_ids")


# -- model -------------------------------------------------------------------------------------
def layer_spec(args: Any) -> ModuleSpec:
    """The transformer layer spec that ``--transformer-impl`` names (``local`` runs without TE)."""
    spec_args = dict(
        num_experts=args.num_experts,
        moe_grouped_gemm=args.moe_grouped_gemm,
        qk_layernorm=args.qk_layernorm,
        multi_latent_attention=args.multi_latent_attention,
        normalization=args.normalization,
    )
    if args.transformer_impl == "local":
        return get_gpt_layer_local_spec(**spec_args)
    return get_gpt_layer_with_transformer_engine_spec(**spec_args)


def model_provider(
    pre_process: bool = True,
    post_process: bool = True,
    vp_stage: int | None = None,
    config: Any = None,
    pg_collection: Any = None,
) -> GPTModel:
    args = get_args()
    return GPTModel(
        config=config if config is not None else core_transformer_config_from_args(args),
        transformer_layer_spec=layer_spec(args),
        vocab_size=args.padded_vocab_size,
        max_sequence_length=args.max_position_embeddings,
        pre_process=pre_process,
        post_process=post_process,
        fp16_lm_cross_entropy=args.fp16_lm_cross_entropy,
        parallel_output=True,
        share_embeddings_and_output_weights=not args.untie_embeddings_and_output_weights,
        position_embedding_type=args.position_embedding_type,
        rotary_percent=args.rotary_percent,
        rotary_base=args.rotary_base,
        vp_stage=vp_stage,
        pg_collection=pg_collection,
    )


# -- batches and loss ----------------------------------------------------------------------------
def get_batch(data_iterator: Any, vp_stage: int | None = None) -> tuple[Any, ...]:
    """This rank's micro-batch: read on tensor-parallel rank 0, broadcast to the others, then cut to
    this rank's slice of the sequence under context parallelism. Middle pipeline stages get none."""
    if not is_first_or_last_pipeline_stage(vp_stage):
        return (None,) * len(BATCH_KEYS)
    args = get_args()
    batch = next(data_iterator) if mpu.get_tensor_model_parallel_rank() == 0 else {}
    if mpu.get_tensor_model_parallel_world_size() > 1:
        batch = broadcast_batch(batch, args)
    if args.context_parallel_size > 1:
        batch = slice_for_context_parallel(batch)
    return tuple(batch.get(key) for key in BATCH_KEYS)


def loss_func(loss_mask: torch.Tensor, output_tensor: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """Summed token loss, the token count, and the ``lm loss`` report upstream averages over DP."""
    losses = output_tensor.view(-1).float()
    mask = loss_mask.view(-1).float()
    loss = torch.sum(losses * mask)
    num_tokens = mask.sum().clone().detach().to(torch.int)
    return loss, num_tokens, {"lm loss": torch.cat([loss.clone().detach().view(1), num_tokens.view(1)])}


def forward_step(data_iterator: Any, model: GPTModel) -> tuple[torch.Tensor, partial]:
    timers = get_timers()
    timers("batch-generator", log_level=2).start()
    tokens, labels, loss_mask, attention_mask, position_ids = get_batch(
        data_iterator, get_attr_wrapped_model(model, "vp_stage")
    )
    timers("batch-generator").stop()
    output_tensor = model(tokens, position_ids, attention_mask, labels=labels, loss_mask=loss_mask)
    return output_tensor, partial(loss_func, loss_mask)


# -- datasets ------------------------------------------------------------------------------------
def is_dataset_built_on_rank(vp_stage: int | None = None) -> bool:
    return is_first_or_last_pipeline_stage(vp_stage) and mpu.get_tensor_model_parallel_rank() == 0


def dataset_config(args: Any) -> GPTDatasetConfig:
    blend, blend_per_split = get_blend_and_blend_per_split(args)
    return GPTDatasetConfig(
        random_seed=args.seed,
        sequence_length=args.seq_length,
        blend=blend,
        blend_per_split=blend_per_split,
        split=args.split,
        multiple_validation_sets=args.multiple_validation_sets,
        full_validation=args.full_validation,
        num_dataset_builder_threads=args.num_dataset_builder_threads,
        path_to_cache=args.data_cache_path,
        mmap_bin_files=args.mmap_bin_files,
        tokenizer=get_tokenizer(),
        reset_position_ids=args.reset_position_ids,
        reset_attention_mask=args.reset_attention_mask,
        eod_mask_loss=args.eod_mask_loss,
        create_attention_mask=args.create_attention_mask_in_dataloader,
        object_storage_cache_path=args.object_storage_cache_path,
        mid_level_dataset_surplus=args.mid_level_dataset_surplus,
        allow_ambiguous_pad_tokens=args.allow_ambiguous_pad_tokens,
        fast_cache_load=args.dataloader_fast_cache_load,
        defer_npy_index_mmap=args.dataloader_defer_npy_index_mmap,
    )


def train_valid_test_datasets_provider(train_val_test_num_samples: list[int], vp_stage: int | None = None):
    """Mock data with ``--mock-data``, else the indexed datasets named by ``--data-path`` (or the
    per-split paths)."""
    args = get_args()
    dataset_type = MockGPTDataset if args.mock_data else GPTDataset
    print_rank_0(f"> building train, validation and test datasets ({dataset_type.__name__}) ...")
    return BlendedMegatronDatasetBuilder(
        dataset_type,
        train_val_test_num_samples,
        partial(is_dataset_built_on_rank, vp_stage=vp_stage),
        dataset_config(args),
    ).build()


# Every rank calls the provider; BlendedMegatronDatasetBuilder decides which ranks build.
train_valid_test_datasets_provider.is_distributed = True  # type: ignore[attr-defined]  # a marker upstream reads


# -- entry ---------------------------------------------------------------------------------------
def default_single_process_env(environ: MutableMapping[str, str] = os.environ) -> None:
    """Let ``python pretrain_gpt.py ...`` run without torchrun: the rendezvous variables torchrun would
    set, for a world of one, where they are unset. Port 0: the store binds a free port itself, in one step (a port
    found free and bound later can be taken in between by another process starting at the same time)."""
    defaults = (
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", "0"),
        ("RANK", "0"),
        ("WORLD_SIZE", "1"),
        ("LOCAL_RANK", "0"),
    )
    for key, value in defaults:
        environ.setdefault(key, value)


def main(program_start: float | None = None) -> None:
    """Upstream's GPT pretraining on this process's command line (upstream's arguments)."""
    set_startup_timestamps(program_start=program_start or time.time(), main_entry=time.time())
    default_single_process_env()
    try:
        pretrain_gpt(
            pretrain,
            datasets_provider=train_valid_test_datasets_provider,
            model_provider=model_provider,
            model_type=ModelType.encoder_or_decoder,
            forward_step=forward_step,
            args_defaults={"tokenizer_type": "GPT2BPETokenizer"},
        )
    except SettingsError as e:  # refused in upstream's validate_args, before training: the message is the fix
        sys.exit(f"primus: {e}")
    # After pretrain: upstream sets the log level (--logging-level) while it initialises.
    for record in REGISTRY.records():
        log.debug("primus patch %s: %s %s", record.id, record.status, record.reason)
