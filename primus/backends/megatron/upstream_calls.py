"""The calls of the drop-in ``pretrain_gpt.py`` into upstream whose form changed between the megatron-core
releases Primus supports (0.17–0.19), each made in the one form the imported release takes. Releases are
told apart by what they offer (a signature, a function), not by a version number, so a source checkout
between releases gets what it has. Shared by ``gpt.py`` only; patches choose by declared ranges instead."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
from megatron.core import mpu
from megatron.core.utils import get_batch_on_this_cp_rank


def pretrain_gpt(
    pretrain: Callable,
    *,
    datasets_provider: Callable,
    model_provider: Callable,
    model_type: Any,
    forward_step: Callable,
    args_defaults: dict[str, Any],
) -> None:
    """0.18 on: the arguments are parsed first and ``pretrain`` takes them as a config container;
    0.17: ``pretrain`` parses them itself (with ``args_defaults``)."""
    call = dict(
        train_valid_test_dataset_provider=datasets_provider,
        model_provider=model_provider,
        model_type=model_type,
        forward_step_func=forward_step,
    )
    if "cfg_container" in inspect.signature(pretrain).parameters:
        from megatron.training.argument_utils import pretrain_cfg_container_from_args
        from megatron.training.arguments import parse_and_validate_args

        args = parse_and_validate_args(args_defaults=args_defaults)
        call["cfg_container"] = pretrain_cfg_container_from_args(args, model_cfg=None)
    else:
        call["args_defaults"] = args_defaults
    pretrain(**call)


def broadcast_batch(batch: dict[str, torch.Tensor], args: Any) -> dict[str, torch.Tensor | None]:
    """Tensor-parallel rank 0's micro-batch (``batch``; empty on the other ranks) to every rank of its
    tensor-parallel group. Upstream's helper for this took another signature in each of 0.17, 0.18 and
    0.19; this is the pretraining case of all three (no packed sequences, no multi-token prediction)."""
    shape = (args.micro_batch_size, args.seq_length)
    layout: dict[str, tuple[tuple[int, ...], torch.dtype]] = {
        "tokens": (shape, torch.int64),
        "labels": (shape, torch.int64),
        "loss_mask": (shape, torch.float32),
        "position_ids": (shape, torch.int64),
    }
    if args.create_attention_mask_in_dataloader:
        layout["attention_mask"] = ((args.micro_batch_size, 1, args.seq_length, args.seq_length), torch.bool)
    device = torch.cuda.current_device() if torch.cuda.is_available() else torch.device("cpu")
    source, group = mpu.get_tensor_model_parallel_src_rank(), mpu.get_tensor_model_parallel_group()
    received: dict[str, torch.Tensor | None] = {"attention_mask": None}
    for key, (key_shape, dtype) in layout.items():
        tensor = (
            batch[key].to(device, non_blocking=True)
            if mpu.get_tensor_model_parallel_rank() == 0
            else torch.empty(key_shape, dtype=dtype, device=device)
        )
        torch.distributed.broadcast(tensor, source, group=group)
        received[key] = tensor
    return received


def slice_for_context_parallel(batch: dict[str, Any]) -> dict[str, Any]:
    """This rank's slice of the sequence; 0.18 on also ask whether context parallelism is hybrid."""
    hybrid = (
        {"is_hybrid_cp": False} if "is_hybrid_cp" in inspect.signature(get_batch_on_this_cp_rank).parameters else {}
    )
    return get_batch_on_this_cp_rank(batch, cp_group=mpu.get_context_parallel_group(), **hybrid)
