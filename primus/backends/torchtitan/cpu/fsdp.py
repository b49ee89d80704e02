"""FSDP on gloo: upstream's ``disable_fsdp_gradient_division`` (0.3: ``distributed/fsdp.py:27``, called at
``:316``; 0.2.2: ``models/llama3/infra/parallelize.py:272``, imported from there by the other models) sets a
divide factor of 1.0; FSDP2 then reduce-scatters with ``ReduceOp.PREMUL_SUM`` and gloo refuses
("Cannot use ReduceOp.PREMUL_SUM with Gloo"). Forcing plain SUM keeps the same arithmetic: the factor
is 1.0 and torchtitan normalises the loss by the global token count itself."""

from __future__ import annotations

from types import ModuleType

from primus.backends.torchtitan.cpu.platform import cpu_patch
from primus.patches import PatchHandle
from primus.patches.arguments import Arguments
from primus.upstreams.torchtitan import CONFIGURABLE, TOML_JOB_CONFIG


def install_sum_reductions(fsdp: ModuleType, handle: PatchHandle) -> None:
    arguments = Arguments(fsdp.disable_fsdp_gradient_division, "model")

    def sum_reductions_after(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        from torch.distributed.fsdp import FSDPModule

        for module in arguments("model", args, kwargs).modules():
            if isinstance(module, FSDPModule):
                module.set_force_sum_reduction_for_comms(True)
        return result

    handle.wrap(fsdp, "disable_fsdp_gradient_division", sum_reductions_after)


PATCHES = (
    cpu_patch(
        "torchtitan.cpu.fsdp_sum_reduction",
        "torchtitan.distributed.fsdp",
        "distributed.fsdp.disable_fsdp_gradient_division: FSDP reduces with SUM, which gloo supports "
        "(fsdp.py:27,316; torch _fsdp_collectives PREMUL_SUM)",
        install_sum_reductions,
        versions=CONFIGURABLE,
    ),
    cpu_patch(
        "torchtitan.cpu.fsdp_sum_reduction_v0_2",
        "torchtitan.models.llama3.infra.parallelize",
        "models.llama3.infra.parallelize.disable_fsdp_gradient_division: FSDP reduces with SUM, which gloo "
        "supports (parallelize.py:272,360; torch _fsdp_collectives PREMUL_SUM)",
        install_sum_reductions,
        versions=TOML_JOB_CONFIG,
    ),
)
