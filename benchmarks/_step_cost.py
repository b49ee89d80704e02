"""By hand, not part of `make bench`: only the training-thread CPU per logged step (the last line of each
*_tracking benchmark), of each backend's primus-all variant, for one Primus tree or two side by side.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/_step_cost.py [--rounds 2] [--backend megatron ...] \
        [--tree /path/to/other/checkout ...]

Each round runs every backend once per tree, the trees alternating (before, after, before, after...) so load on
the machine hits each alike; a tree is a checkout whose ``primus`` the run imports (PYTHONPATH, ahead of the
installed one; default: this checkout). Sizes as `make bench`: Megatron 100 iterations, TorchTitan 30 steps,
MaxText 400 steps. Prints, per backend and tree, the per-round lines of ``_measure.training_thread_lines``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import maxtext_tracking
import megatron_tracking
import torchtitan_tracking
from _measure import Measured, run_measured, training_thread_lines

REPO = Path(__file__).resolve().parents[1]
STEPS = {"megatron": 100, "torchtitan": 30, "maxtext": 400}
HOOKS = {"megatron": megatron_tracking.PER_STEP_HOOK, "torchtitan": torchtitan_tracking.PER_STEP_HOOK,
         "maxtext": maxtext_tracking.PER_STEP_HOOK}


def measure(backend: str, workdir: Path) -> Measured:
    steps = STEPS[backend]
    if backend == "megatron":
        return megatron_tracking.run_variant("primus-all", steps, workdir)[1]
    if backend == "torchtitan":
        return run_measured(*torchtitan_tracking.variant_command("primus-all", steps, workdir))
    command, env, out = maxtext_tracking.variant_command("primus-all", steps, workdir)
    return run_measured(command, env, cwd=out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--backend", action="append", choices=list(STEPS))
    parser.add_argument("--tree", action="append", type=Path, help="a checkout whose primus is measured (repeat)")
    args = parser.parse_args()
    trees = args.tree or [REPO]
    with tempfile.TemporaryDirectory(prefix="step-cost-") as tmp:
        for backend in args.backend or list(STEPS):
            for r in range(args.rounds):
                for tree in trees:
                    os.environ["PYTHONPATH"] = str(tree)  # each variant's environment starts from this one's
                    done = measure(backend, Path(tmp))
                    if done.returncode != 0:
                        raise SystemExit(f"{backend} ({tree}) failed ({done.returncode}):\n{done.output[-4000:]}")
                    line = training_thread_lines(backend, [done], HOOKS[backend], STEPS[backend]).splitlines()[0]
                    print(f"round {r + 1} {tree}: {line.split('; start and end')[0]}", flush=True)


if __name__ == "__main__":
    main()
