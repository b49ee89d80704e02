"""`python -m primus.backends.megatron <megatron args>`: the drop-in pretrain_gpt.py as a module, so
`primus train` and torchrun can start it from an installed package."""

import time

PROGRAM_START = time.time()

import primus.activation  # noqa: E402

primus.activation.activate()  # before Megatron is imported: its patches install on import

from primus.backends.megatron.gpt import main  # noqa: E402

main(program_start=PROGRAM_START)
