"""Test-only training entry for the reliability suite: upstream Megatron (the drop-in pretrain_gpt.py's
``main``), TorchTitan (``python -m primus.backends.torchtitan``'s ``main``) or MaxText (``python -m
primus.backends.maxtext``'s ``main``, run on the MaxText environment's interpreter) with Primus active,
plus what a fault test needs, switched on by environment variables:

* ``RELIABILITY_GATE_DIR`` and ``RELIABILITY_GATES=3,5``: before training step n, each rank writes
  ``<dir>/at-<n>-rank<r>`` and waits for ``<dir>/go-<n>``, so a test kills, hangs or signals something
  at a known step (steps before n are trained and logged; MaxText has logged those before n-1).
* ``RELIABILITY_FAIL_AT=n``: the user's forward step raises at step n.
* ``RELIABILITY_COLLECTIVES=<prefix>``: every ``torch.distributed`` collective is counted by the
  thread that called it, written to ``<prefix>.rank<r>.json`` at exit.

    python reliability_trainer.py megatron|torchtitan|maxtext <upstream arguments>
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import primus.activation

COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_to_all",
               "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "gather", "gather_object",
               "monitored_barrier", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
               "scatter_object_list", "send")
GATE_TIMEOUT_S = 300.0
_seen_steps: set[int] = set()


def rank() -> str:
    return os.environ.get("RANK", "0")


def at_step(step: int) -> None:
    """Called at the start of every forward step; acts once per training step."""
    if step in _seen_steps:
        return
    _seen_steps.add(step)
    if os.environ.get("RELIABILITY_FAIL_AT") == str(step):
        raise RuntimeError(f"reliability test: the user's forward step failed at step {step}")
    gates = os.environ.get("RELIABILITY_GATES", "")
    if str(step) in gates.split(","):
        gate_dir = Path(os.environ["RELIABILITY_GATE_DIR"])
        (gate_dir / f"at-{step}-rank{rank()}").touch()
        deadline = time.monotonic() + GATE_TIMEOUT_S
        while not (gate_dir / f"go-{step}").exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"gate {step} was never opened")
            time.sleep(0.05)


def count_collectives(prefix: str) -> None:
    """Wrap torch.distributed's collectives (before upstream imports them) to count calls per thread."""
    import torch.distributed as dist

    counts: Counter[str] = Counter()

    def counted(name, fn):
        def call(*args, **kwargs):
            thread = threading.current_thread()
            counts[f"{'main' if thread is threading.main_thread() else thread.name}:{name}"] += 1
            return fn(*args, **kwargs)
        return call

    for name in COLLECTIVES:
        if hasattr(dist, name):
            setattr(dist, name, counted(name, getattr(dist, name)))
    atexit.register(lambda: Path(f"{prefix}.rank{rank()}.json").write_text(json.dumps(counts)))


def megatron() -> None:
    from primus.backends.megatron import gpt

    user_forward_step = gpt.forward_step

    def forward_step(data_iterator, model):
        from megatron.training import get_args

        at_step(get_args().curr_iteration + 1)
        return user_forward_step(data_iterator, model)

    gpt.forward_step = forward_step  # main() passes the module's forward_step to upstream's pretrain
    gpt.main()


def torchtitan() -> None:
    from torchtitan.trainer import Trainer

    from primus.backends.torchtitan.entry import main

    forward_backward_step = Trainer.forward_backward_step

    def step_then_forward(self, *args, **kwargs):
        at_step(self.step)
        return forward_backward_step(self, *args, **kwargs)

    Trainer.forward_backward_step = step_then_forward
    main()


def maxtext() -> None:
    from maxtext.trainers.pre_train import train

    from primus.backends.maxtext.entry import main

    iteration = train.training_loop_iteration

    def step_then_iteration(jax_device_state, python_vars, immutable_data):
        at_step(python_vars["step"])
        return iteration(jax_device_state, python_vars, immutable_data)

    train.training_loop_iteration = step_then_iteration  # train_loop looks it up on the module at each step
    main()


if __name__ == "__main__":
    backend = sys.argv.pop(1)
    if os.environ.get("RELIABILITY_COLLECTIVES"):
        count_collectives(os.environ["RELIABILITY_COLLECTIVES"])
    primus.activation.activate()  # before upstream is imported: its patches install on import
    {"megatron": megatron, "torchtitan": torchtitan, "maxtext": maxtext}[backend]()
