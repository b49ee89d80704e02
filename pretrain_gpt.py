"""Drop-in for Megatron-LM's pretrain_gpt.py: the same arguments, with Primus's patches active.

    python pretrain_gpt.py <megatron args>            (one process)
    torchrun --nproc_per_node N pretrain_gpt.py <megatron args>
"""

import time

PROGRAM_START = time.time()

import primus.activation  # noqa: E402

primus.activation.activate()  # before Megatron is imported: its patches install on import

from primus.backends.megatron.gpt import main  # noqa: E402

if __name__ == "__main__":
    main(program_start=PROGRAM_START)
