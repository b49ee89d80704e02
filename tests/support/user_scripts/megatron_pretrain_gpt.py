"""Stands in for a user's own ``pretrain_gpt.py`` from their Megatron-LM checkout, which no package index carries
(megatron-core's wheel ships the library, not the repository's scripts; 0.19.2 has no sdist). Like upstream's, it
imports Megatron's training and calls ``pretrain`` with GPT providers: the installed primus's, modelled on
upstream's. It activates nothing itself: under ``primus-run`` the patches install as Megatron is imported."""

import megatron.training  # noqa: F401  # upstream first, as Megatron-LM's script does: the patches install here

from primus.backends.megatron.gpt import main

if __name__ == "__main__":
    main()
