"""docs/metrics.md's section on the tags every run gets: where it ran (from the launchers' variables, in the order
they are read), its accelerators and layout, and the user's own labels with their variables."""

from __future__ import annotations

from primus.config.schemas.user_tags import MLFLOW_NOTE, RESERVED_PREFIX
from primus.docs_gen.markdown import code
from primus.tracking.journal.records import RANK_TAG
from primus.tracking.tags.launch import CONTAINER_VARIABLES, COPIED
from primus.tracking.tags.parallel import DEGREES
from primus.tracking.tags.run_labels import VARIABLES
from primus.tracking.trackers.tensorboard import TAGS_TAG


def run_tags_section() -> str:
    copied = "; ".join(f"{code(tag)} from {' or '.join(code(v) for v in names)}" for tag, names in COPIED.items())
    labels = ", ".join(f"{code(option)} ({code(variable)})" for option, variable in VARIABLES.items())
    return "\n\n".join(
        [
            "## Run tags",
            "Every run is tagged, on every backend, with where and how it ran: MLflow gets them as run tags (a "
            "restart of the same run sets them again), W&B in its config's `primus_tags`, TensorBoard as one "
            f"markdown table, the text {code(TAGS_TAG)} at step 0 of the run's first start. A tag whose source is "
            f"absent is left out. From the launcher's variables: {copied}; `primus.hosts.count` and "
            "`primus.hosts.first` from `SLURM_JOB_NUM_NODES` and the first host of `SLURM_JOB_NODELIST`, else "
            "torchrun's `GROUP_WORLD_SIZE` and `MASTER_ADDR`, else one host, this one; `primus.container.image` from "
            f"the first of {', '.join(code(v) for v in CONTAINER_VARIABLES)} that is set (`primus.container."
            "image_from` names it: Kubernetes tells a pod nothing of its image, set `PRIMUS_CONTAINER_IMAGE` from "
            "the pod spec; Docker and enroot alone set none); `primus.launch_command`, the process's command line, "
            "redacted. From the process: `primus.accelerator.model`, `.count`, `.driver` (NVML or amdsmi), `.cuda` "
            "or `.rocm` (torch's build), none on a host without an accelerator. From the backend's own config: "
            f"`primus.world_size` and `primus.parallel.<degree>` for {', '.join(code(d) for d in DEGREES)}; "
            f"{code(RANK_TAG)}, the rank, where every rank has its own run (TorchTitan's `save_for_all_ranks`).",
            f"The user's own labels, options of every backend, each with the variable read when it is unset: {labels}"
            " (TorchTitan's W&B settings also read upstream's `WANDB_RUN_TAGS` / `WANDB_RUN_NOTES` when neither is "
            f"set). The MLflow tags and the description ({code(MLFLOW_NOTE)}) join the run's tags, so every tracker "
            f"has them. Keys under {code(RESERVED_PREFIX)} are refused before training (they are Primus's); where a "
            "user's tag has the key of a system tag (`mlflow.source.git.commit`), the system tag wins and a warning "
            "says so.",
        ]
    )
