"""Launch tiny real Megatron trainings through the repository's ``pretrain_gpt.py``: one process, or
torchrun with two, on CPU (gloo), with the whole output captured to a file a failing test shows."""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

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

# Not inherited from the test's environment: rendezvous variables (a run picks its own) and Primus's
# patch selection (a test that wants one passes it in ``env``).
_NOT_INHERITED = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                  "PRIMUS_PATCHES", "PRIMUS_DISABLE_PATCHES", "PRIMUS_PLATFORM", "PRIMUS_ACTIVATE")

_ITERATION_LINE = re.compile(r"iteration\s+(\d+)/\s*\d+ \| consumed samples.*")  # upstream's, not [primus]'s
_LOSS = re.compile(r"lm loss: ([^ |]+)")
_ITERATION_MS = re.compile(r"elapsed time per iteration \(ms\): ([0-9.]+)")


@dataclass(frozen=True)
class MegatronRun:
    returncode: int
    log_path: Path
    seconds: float

    @property
    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def iteration_lines(self) -> list[str]:
        return [m.group(0) for m in _ITERATION_LINE.finditer(self.output)]

    def losses(self) -> list[float]:
        """``lm loss`` per logged iteration, as upstream printed it."""
        return [float(_LOSS.search(line).group(1)) for line in self.iteration_lines()]

    def iteration_ms(self) -> list[float]:
        return [float(_ITERATION_MS.search(line).group(1)) for line in self.iteration_lines()]

    def explain(self) -> str:
        """For assertion messages: where the log is and how it ends."""
        tail = "\n".join(self.output.splitlines()[-60:])
        return f"exit code {self.returncode} after {self.seconds:.1f} s; log {self.log_path}; last lines:\n{tail}"

    def assert_trained(self, iterations: int = 3) -> list[float]:
        """Exit 0, the last iteration logged, every loss finite. Returns the losses."""
        assert self.returncode == 0, self.explain()
        assert f"iteration        {iterations}/" in self.output, self.explain()
        losses = self.losses()
        assert len(losses) == iterations and all(math.isfinite(loss) for loss in losses), self.explain()
        return losses


def launch(log_path: Path, *args: str, nproc: int = 1, env: dict[str, str] | None = None,
           timeout: float = 150) -> MegatronRun:
    """Run ``pretrain_gpt.py`` with the tiny GPT plus ``args``; ``nproc`` > 1 runs it under torchrun
    (standalone rendezvous: a free port). The process group is killed at ``timeout``."""
    run_env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    run_env.update(OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1", **(env or {}))
    launcher = [sys.executable, str(PRETRAIN_GPT)] if nproc == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", str(PRETRAIN_GPT)]
    started = time.monotonic()
    with open(log_path, "w") as log:
        process = subprocess.Popen([*launcher, *TINY_GPT_ARGS, *args], cwd=log_path.parent, env=run_env,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            returncode = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            run = MegatronRun(-signal.SIGKILL, log_path, time.monotonic() - started)
            pytest.fail(f"Megatron run timed out after {timeout} s: {run.explain()}")
    return MegatronRun(returncode, log_path, time.monotonic() - started)


@pytest.fixture(scope="session")
def megatron_run(tmp_path_factory):
    """``megatron_run(name, *args, nproc=1, env=None) -> MegatronRun``, each in its own directory."""

    def run(name: str, *args: str, nproc: int = 1, env: dict[str, str] | None = None) -> MegatronRun:
        return launch(tmp_path_factory.mktemp(name) / "run.log", *args, nproc=nproc, env=env)

    return run
