"""Tiny real Megatron trainings through the repository's ``pretrain_gpt.py``: the tiny GPT, a finished run's
captured output, and ``launch`` (one process, or torchrun with two, on CPU with gloo). The fixture that
starts runs is in conftest.py; the reliability suite starts its own runs with the same GPT."""

from __future__ import annotations

import math
import re
import sys
import time
from pathlib import Path

import pytest
from support.launch import FinishedRun, start, wait_or_kill

REPO = Path(__file__).resolve().parents[3]
PRETRAIN_GPT = REPO / "pretrain_gpt.py"

# A 2-layer GPT that trains in well under a second per iteration on one core. Dropout is off so a
# run's losses do not depend on how the batch is split over ranks.
TINY_GPT_ARGS = (
    "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --ffn-hidden-size 256 "
    "--seq-length 128 --max-position-embeddings 128 --micro-batch-size 2 --global-batch-size 8 "
    "--train-iters 3 --log-interval 1 --eval-iters 0 --eval-interval 1000 "
    "--lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 2 "
    "--mock-data --tokenizer-type NullTokenizer --vocab-size 1024 "
    "--distributed-backend gloo --use-cpu-initialization --no-gradient-accumulation-fusion "
    "--transformer-impl local --no-persist-layer-norm --seed 1234 --hidden-dropout 0 --attention-dropout 0"
).split()

_ITERATION_LINE = re.compile(r"iteration\s+(\d+)/\s*\d+ \| consumed samples.*")  # upstream's, not [primus]'s
_LOSS = re.compile(r"lm loss: ([^ |]+)")
_ITERATION_MS = re.compile(r"elapsed time per iteration \(ms\): ([0-9.]+)")


class MegatronRun(FinishedRun):
    def iteration_lines(self) -> list[str]:
        return [m.group(0) for m in _ITERATION_LINE.finditer(self.output)]

    def losses(self) -> list[float]:
        """``lm loss`` per logged iteration, as upstream printed it."""
        return [float(_LOSS.search(line).group(1)) for line in self.iteration_lines()]

    def iteration_ms(self) -> list[float]:
        return [float(_ITERATION_MS.search(line).group(1)) for line in self.iteration_lines()]

    def assert_trained(self, iterations: int = 3) -> list[float]:
        """Exit 0, the last iteration logged, every loss finite. Returns the losses."""
        assert self.returncode == 0, self.explain()
        assert re.search(rf"iteration\s+{iterations}/", self.output), self.explain()
        losses = self.losses()
        assert len(losses) == iterations and all(math.isfinite(loss) for loss in losses), self.explain()
        return losses


def launch(log_path: Path, *args: str, nproc: int = 1, env: dict[str, str] | None = None,
           timeout: float = 150) -> MegatronRun:
    """Run ``pretrain_gpt.py`` with the tiny GPT plus ``args``; ``nproc`` > 1 runs it under torchrun
    (standalone rendezvous: a free port). The process group is killed at ``timeout``."""
    launcher = [sys.executable, str(PRETRAIN_GPT)] if nproc == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", str(PRETRAIN_GPT)]
    started = time.monotonic()
    process = start([*launcher, *TINY_GPT_ARGS, *args], log_path.parent, log_path, env)
    returncode = wait_or_kill(process, timeout)
    run = MegatronRun(returncode, log_path, time.monotonic() - started)
    if returncode is None:
        pytest.fail(f"Megatron run timed out after {timeout} s: {run.explain()}")
    return run
