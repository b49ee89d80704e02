"""How far a run has got, at a log step: ``progress/consumed_samples``, ``progress/consumed_tokens``,
``progress/elapsed_s``, ``progress/eta_s`` and ``perf/samples_per_s``, one computation for every backend (each maps
upstream's counters onto it) and for Megatron's console line.

Consumed counts come from what the backend restores on a resume (Megatron's consumed samples, TorchTitan's and
MaxText's step times the global batch), so they continue across restarts; tokens are samples times the sequence
length. Elapsed time is this process's, from its tracking's start. The ETA is the steps left times the recent step
time: the wall time over the last ``window`` log intervals of this process (a few intervals, so one slow step,
a checkpoint save or an evaluation, does not swing it), absent at the first log step and when the run's length is
unknown. Samples per second are the last interval's, as the other ``perf/*`` rates."""

from __future__ import annotations

import time
from collections import deque

PROGRESS_GROUP = "progress/*"
CONSUMED_SAMPLES = "progress/consumed_samples"
CONSUMED_TOKENS = "progress/consumed_tokens"
ELAPSED = "progress/elapsed_s"
ETA = "progress/eta_s"
SAMPLES_PER_S = "perf/samples_per_s"
AT_EVERY_LOG_STEP = (CONSUMED_SAMPLES, CONSUMED_TOKENS, ELAPSED)
FROM_THE_SECOND_LOG_STEP = (ETA, SAMPLES_PER_S)  # they need an interval of this process
ETA_WINDOW = 5  # log intervals


class Progress:
    """``started``: when elapsed time starts (``time.perf_counter()``; default: now)."""

    def __init__(self, *, window: int = ETA_WINDOW, started: float | None = None):
        self._started = time.perf_counter() if started is None else started
        self._recent: deque[tuple[int, float, float]] = deque(maxlen=window + 1)  # (step, samples, perf_counter)

    def at(
        self, step: int, consumed_samples: float, now: float, *, seq_length: int, total_steps: int | None
    ) -> dict[str, float]:
        """The figures of log step ``step`` (steps done), read at ``now`` (``time.perf_counter()`` at the step);
        ``seq_length``: tokens per sample; ``total_steps``: the run's length in steps (None: no ETA)."""
        recent = self._recent
        if recent and step <= recent[-1][0]:
            recent.clear()  # the steps went back (an in-process re-run): the old intervals say nothing of these
        recent.append((step, float(consumed_samples), now))
        out = {
            CONSUMED_SAMPLES: float(consumed_samples),
            CONSUMED_TOKENS: float(consumed_samples) * seq_length,
            ELAPSED: now - self._started,
        }
        if len(recent) < 2:
            return out
        _, last_samples, last_now = recent[-2]
        if now > last_now:
            out[SAMPLES_PER_S] = (consumed_samples - last_samples) / (now - last_now)
        first_step, _, first_now = recent[0]
        if total_steps is not None:
            step_s = (now - first_now) / (step - first_step)
            out[ETA] = max(total_steps - step, 0) * step_s
        return out
