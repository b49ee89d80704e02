"""On a CUDA or ROCm host: does tracking cost the GPU step anything? One command, a few minutes.

    .venv/bin/python benchmarks/gpu_check.py [--pairs 5] [--steps 30]

Trains upstream Megatron's tiny GPT (configs/megatron/tiny_cpu.yaml, on the GPU) and TorchTitan's llama3 debug
model with every tracker on (TensorBoard, W&B offline, MLflow on a local store, the perf metric set) and off, as
interleaved pairs (off, on, off, on, ...), and prints:
  * the device synchronisations our code adds: torch's sync debug mode ("warn") is on in every trainer
    (_sync_probe/sitecustomize.py), and each synchronising call whose innermost Python frame is in primus/ is
    counted, by file and line. The goal is none on steps that are not logged; this counts every step.
  * the step-time ratio on/off per pair, its median and bootstrap 90 % interval (_measure.pair_ratios).
  * first, the device's power figures as the trackers get them (gpu/power_w, gpu/energy_j, gpu/temperature_c,
    gpu/sm_clock_mhz: primus/tracking/measure/gpu_power.py through NVML or amdsmi), two readings a second apart
    and whether each is plausible; `--power-only` stops there.
On a host without a GPU it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _measure import pair_ratios, run_measured

REPO = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).resolve().parent / "_sync_probe"
PRIMUS = str(Path(sys.executable).with_name("primus"))
PRIMUS_RUN = str(Path(sys.executable).with_name("primus-run"))


def gpu() -> str | None:
    """The device's name, or None without a usable CUDA/ROCm device."""
    try:
        import torch
    except ImportError:
        return None
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def power_figures(seconds: float = 1.0) -> bool:
    """Print device 0's gpu/* figures, read twice ``seconds`` apart as the sampling thread reads them; True when
    every figure is there and plausible (energy not decreasing)."""
    from primus.tracking.measure.devices import amdsmi_handle, nvml_handle
    from primus.tracking.measure.gpu_power import ENERGY, POWER, SM_CLOCK, TEMPERATURE, GpuPower

    nvml = nvml_handle(0)
    handles = (nvml, None if nvml is not None else amdsmi_handle(0))
    power = GpuPower()
    first = power.sample(*handles)
    time.sleep(seconds)
    second = power.sample(*handles)
    library = "NVML" if nvml is not None else "amdsmi" if handles[1] is not None else "neither library"
    print(f"gpu_check: power figures via {library}: {first} then, {seconds} s later, {second}")
    plausible = {
        POWER: 0 < second.get(POWER, -1) < 5000,
        TEMPERATURE: 0 < second.get(TEMPERATURE, -1) < 150,
        SM_CLOCK: 0 < second.get(SM_CLOCK, -1) < 10000,
        ENERGY: first.get(ENERGY) == 0.0 and second.get(ENERGY, -1) >= 0,
    }
    print(f"gpu_check: power figures plausible: {plausible}")
    return all(plausible.values())


def megatron(on: bool, steps: int, workdir: Path) -> list[str]:
    import megatron_tracking

    overrides = megatron_tracking.ALL_ON if on else megatron_tracking.ALL_OFF
    return [PRIMUS, "train", "--config", megatron_tracking.CONFIG, f"train_iters={steps}", "log_interval=1",
             f"workspace={workdir}", f"wandb_save_dir={workdir}", "use_cpu_initialization=false",
             *overrides, *(["mlflow_upload_performance_metrics=true"] if on else [])]


def megatron_step_s(output: str) -> float:
    import megatron_tracking

    return statistics.median(megatron_tracking.iteration_ms(output)) / 1e3


def torchtitan(on: bool, steps: int, workdir: Path) -> list[str]:
    import torchtitan_tracking

    args = torchtitan_tracking.VARIANTS["primus-all" if on else "off"][0]
    return [PRIMUS_RUN, sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1",
            "-m", "torchtitan.train", "--module", "primus.backends.torchtitan", "--config", "llama3_debugmodel",
            "--training.steps", str(steps), "--metrics.log-freq", "1", "--dump-folder", str(workdir), *args]


def torchtitan_step_s(output: str) -> float:
    import torchtitan_tracking

    return statistics.median(s for _, s in torchtitan_tracking.step_gaps(output))


BACKENDS = {
    "megatron": (megatron, megatron_step_s),
    "torchtitan": (torchtitan, torchtitan_step_s),
}


def run_once(backend: str, on: bool, steps: int, workdir: Path) -> tuple[float, Counter]:
    command_of, step_s = BACKENDS[backend]
    out = Path(tempfile.mkdtemp(prefix=f"{backend}-{'on' if on else 'off'}-", dir=workdir))
    probe_out = out / "sync"
    probe_out.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "WANDB_SILENT": "true",
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PROBE), os.environ.get("PYTHONPATH")])),
           "PRIMUS_SYNC_PROBE_OUT": str(probe_out), "PRIMUS_SYNC_PROBE_PACKAGE": str(REPO / "primus") + os.sep}
    env.pop("MLFLOW_TRACKING_URI", None)
    done = run_measured(command_of(on, steps, out), env, cwd=out)
    if done.returncode != 0:
        sys.exit(f"{backend} ({'on' if on else 'off'}) failed ({done.returncode}):\n{done.output[-4000:]}")
    syncs: Counter = Counter()
    for report in probe_out.glob("sync-*.json"):
        syncs.update(json.loads(report.read_text()))
    return step_s(done.output), syncs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--backends", nargs="*", choices=list(BACKENDS), default=list(BACKENDS))
    parser.add_argument("--power-only", action="store_true", help="read the power figures only, no trainings")
    args = parser.parse_args()
    device = gpu()
    if device is None:
        print("gpu_check: no CUDA or ROCm device on this host; nothing to check (run it on a GPU host)")
        return 0
    powered = power_figures()
    if args.power_only:
        return 0 if powered else 1
    started = time.monotonic()
    print(f"gpu_check on {device}: {args.pairs} interleaved pairs (off, all trackers on) of {args.steps} steps")
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        for backend in args.backends:
            pairs, ours, total = [], Counter(), 0
            for _ in range(args.pairs):
                off, off_syncs = run_once(backend, False, args.steps, Path(tmp))
                on, on_syncs = run_once(backend, True, args.steps, Path(tmp))
                pairs.append((off, on))
                total += on_syncs.pop("total", 0) - off_syncs.pop("total", 0)
                ours.update(on_syncs)
            print(f"{backend}: device synchronisations from primus/ frames: {sum(ours.values())} over "
                  f"{args.pairs * args.steps} steps" + (f" ({dict(ours.most_common(10))})" if ours else ""))
            print(f"{backend}: synchronising calls on minus off, every frame: {total}")
            print(f"{backend}: " + pair_ratios("step time on / off", pairs))
    print(f"gpu_check took {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
