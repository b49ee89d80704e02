"""Metric names: the schema every backend feeds the hub with (``SCHEMA``: ``<group>/<what>[_<unit>]``, beside
upstream's own names, passed through unchanged), and how each sink spells them: MLflow accepts only some characters,
so ``mlflow_key`` rewrites a name readably and ``MlflowKeys`` keeps a run's map one-to-one.
docs/tracking-internals.md#metric-names says more.
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import re
from collections.abc import Mapping

# Primus's own metrics (perf.py and the backends' perf sessions produce them); losses, learning rates and the
# like keep upstream's names.
SCHEMA: dict[str, str] = {
    "perf/iteration_time_ms": "wall time per iteration over the log interval",
    "perf/tokens_per_sec": "tokens per second, whole job",
    "perf/tokens_per_sec_per_gpu": "tokens per second per device: the job's tokens over its devices",
    "perf/tflops_per_gpu": "model TFLOP/s per device: the job's model FLOPs over its devices",
    "perf/mfu": "model FLOPs utilisation: perf/tflops_per_gpu over one device's dense peak (the run's peak_tflops, "
    "else the built-in datasheet table); absent when neither gives a peak",
    "perf/iteration_time_ms_avg": "iteration time over the running window "
    "(log_avg_skip_iterations, log_avg_reset_interval)",
    "perf/tokens_per_sec_per_gpu_avg": "tokens per second per device over the running window (ratio of sums)",
    "perf/tflops_per_gpu_avg": "model TFLOP/s per device over the running window (ratio of sums)",
    "mem/allocated_gib": "device memory allocated by the framework's allocator",
    "mem/reserved_gib": "device memory reserved by the allocator",
    "mem/peak_allocated_gib": "peak device memory allocated",
    "mem/host_rss_gib": "resident memory of this process",
    "mem/host_peak_rss_gib": "peak resident memory of this process",
    "sys/cpu_util_pct": "host CPU utilisation",
    "sys/host_mem_used_pct": "host memory in use",
    "sys/gpu_util_pct": "utilisation of this rank's own device (NVML / amdsmi; the local rank's visible device)",
    # gpu_power.py, sampled every second off the training thread; absent where neither NVML nor amdsmi answers
    "gpu/power_w": "power drawn by this rank's own device, W (NVML: averaged over 1 s on Ampere and later; amdsmi: "
    "socket power)",
    "gpu/energy_j": "energy this rank's device used since the process's first reading, J: the device's own energy "
    "counter where it has one (NVML from Volta, amdsmi), else gpu/power_w integrated over the samples",
    "gpu/temperature_c": "temperature of this rank's device, °C (NVML: the GPU sensor; amdsmi: the hotspot)",
    "gpu/sm_clock_mhz": "current SM clock of this rank's device, MHz (amdsmi: the GFX clock)",
    "perf/joules_per_token": "gpu/energy_j over the log interval over this device's share of the job's tokens (the "
    "job's tokens over its devices): the job's energy per token when every device draws alike; with the gpu/* "
    "figures, from the second log step",
    "straggler/busy_s_min": "the least busy time of any rank since the last log step (seconds not waiting in a "
    "collective)",
    "straggler/busy_s_median": "the median over ranks of their busy time since the last log step",
    "straggler/busy_s_max": "the most busy time of any rank since the last log step: the slowest rank's",
    "straggler/slowest_rank": "the rank with the most busy time since the last log step (its global rank number)",
    "straggler/slowest_over_median": "the slowest rank's busy time over the median (1.0: no straggler)",
    "straggler/slowest_data_wait_s": "the part of the slowest rank's busy time it spent waiting for batches, where "
    "upstream times each rank's (TorchTitan's data loading); over half of busy_s_max: the data loader is the cause",
    "progress/consumed_samples": "samples the job has trained on since the run's first step, resumes included",
    "progress/consumed_tokens": "tokens the job has trained on: progress/consumed_samples times the sequence length",
    "progress/elapsed_s": "wall seconds since this process's tracking started (a resumed job counts from its restart)",
    "progress/eta_s": "seconds left: the steps left times the recent step time (Progress, below)",
    "perf/samples_per_s": "samples per second, whole job, over the log interval",
    # goodput.py: the run directory's wall time, every attempt together, cumulative at each log step and the end
    "goodput/productive_s": "time of steps whose results were kept: between log steps, less data wait and any "
    "save, evaluation or load in between; steps a restart computed again move to badput/lost_progress_s",
    "goodput/productive_fraction": "goodput/productive_s over the wall time so far, from the first attempt's start "
    "(SLURM_JOB_START_TIME when set)",
    "goodput/disruptions": "restarts of the run so far: each relaunch of its run directory (a requeue, torchrun's "
    "restart, a user's) counts one",
    "badput/startup_s": "from each attempt's start (its process's, or its Slurm job's) to its first log step, less "
    "a checkpoint load and, where the record gives the iteration time, the first interval's steps",
    "badput/checkpoint_save_s": "checkpoint saves: from a save's start mark to its record (an asynchronous save: "
    "until the next log step at most)",
    "badput/checkpoint_load_s": "checkpoint loads, where the backend's hook times them (Megatron, Megatron-Bridge, TorchTitan)",
    "badput/eval_s": "evaluations (the backends' busy marks: Megatron's and Megatron-Bridge's evaluate_and_print_results, "
    "TorchTitan's Validator.validate, MaxText's evaluation loop from MetricLogger.reset_eval_metrics to the next "
    "training step's log)",
    "badput/data_wait_s": "waiting for batches where upstream times it (Megatron's batch-generator timer with "
    "--log-timers-to-tensorboard, TorchTitan's time_metrics/data_loading); 0 elsewhere",
    "badput/lost_progress_s": "productive time of steps computed again after a restart (past the checkpoint it "
    "loaded), and what an attempt that did not end normally computed after its last log step",
    "badput/restart_gap_s": "from an attempt's last journal record to the next attempt's start",
    "badput/other_s": "the rest: after an attempt's last log step until its end (teardown), other busy marks",
    # goodput/recent.py: the recent past, at every log step
    "goodput/productive_fraction_60s": "productive share of the last 60 s (of the run, when shorter); one such "
    "figure per window of primus_goodput_windows (default 60, 300, 900 s): goodput/productive_fraction_<W>s",
    "goodput/productive_fraction_300s": "productive share of the last 300 s (primus_goodput_windows)",
    "goodput/productive_fraction_900s": "productive share of the last 900 s (primus_goodput_windows)",
    "perf/step_time_deviation": "the log interval's time per step (less saves, evaluations and loads) over the ideal "
    "step time, median + 3 MAD of the latest 100 intervals' (this one included); absent where not measured (an "
    "attempt's first log step, unless the record gives the iteration time)",
    "badput/slow_steps_s": "time steps spent above the ideal step time, cumulative; part of goodput/productive_s and "
    "badput/data_wait_s, not one more share of the wall time",
}

MLFLOW_MAX_KEY = 250
_NOT_MLFLOW = re.compile(r"[^A-Za-z0-9_\-./ ]")
READABLE = (
    ("%", "_pct_"),
    ("(", "_"),
    (")", "_"),
    ("[", "_"),
    ("]", "_"),
    ("@", "_at_"),
    ("+", "_plus_"),
    ("=", "_eq_"),
)
_HASH_LEN = 8


def is_valid_mlflow_key(name: str) -> bool:
    return (
        0 < len(name) <= MLFLOW_MAX_KEY
        and not _NOT_MLFLOW.search(name)
        and posixpath.normpath(name) == name
        and not name.startswith(("/", ".."))
        and name != "."
    )


def _mlflow_key(name: str) -> str:
    """The readable MLflow key of a metric, param or tag name (identity when MLflow accepts the name).
    Not one-to-one on its own: a run's keys come from ``MlflowKeys``."""
    if is_valid_mlflow_key(name):
        return name
    readable = name
    for bad, good in READABLE:
        readable = readable.replace(bad, good)
    readable = _path_parts_cleaned(_NOT_MLFLOW.sub("_", readable))
    # cleaned again after the cut, which can leave a last part of "." or "_" (e.g. "x"*248 + "/.a" -> ".../.")
    return _path_parts_cleaned(readable[:MLFLOW_MAX_KEY]) or "metric"


def _path_parts_cleaned(text: str) -> str:
    """No //, ./, .. or leading /: MLflow refuses a key that a path normalisation would change."""
    parts = (re.sub(r"_{2,}", "_", p.replace("..", "_")).strip("_ ") for p in text.split("/"))
    return "/".join(p for p in parts if p not in ("", "."))


mlflow_key = functools.lru_cache(maxsize=65536)(_mlflow_key)  # wrapped here, not decorated: mutmut skips decorated code


class MlflowKeys:
    """One run's name -> key map: readable keys, one-to-one. A name keeps the key it was first given; a name
    whose readable key another name holds gets that key plus 8 hex digits of its own SHA-1 (more digits, then
    a counter, in the unlikely case those are taken too)."""

    def __init__(self, assigned: Mapping[str, str] | None = None):
        self._keys: dict[str, str] = dict(assigned or {})
        self._taken = set(self._keys.values())

    def __call__(self, name: str) -> str:
        key = self._keys.get(name)
        if key is None:
            key = self._free_key(name)
            self._keys[name] = key
            self._taken.add(key)
        return key

    def assigned(self) -> dict[str, str]:
        return dict(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def _free_key(self, name: str) -> str:
        key = mlflow_key(name)
        if key not in self._taken:
            return key
        digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()
        for n in range(_HASH_LEN, len(digest) + 1):
            candidate = f"{key[: MLFLOW_MAX_KEY - n - 1].rstrip('/')}_{digest[:n]}"
            if candidate not in self._taken:
                return candidate
        n = 2
        while f"{key[: MLFLOW_MAX_KEY - 12]}_{digest[:_HASH_LEN]}_{n}" in self._taken:
            n += 1
        return f"{key[: MLFLOW_MAX_KEY - 12]}_{digest[:_HASH_LEN]}_{n}"


def mlflow_keys(names) -> dict[str, str]:
    """Keys for a set of names (params, tags) that do not depend on their order: names MLflow accepts keep
    themselves, the others are given keys in sorted order."""
    keys = MlflowKeys()
    ordered = sorted(names, key=lambda n: (not is_valid_mlflow_key(n), n))
    return {name: keys(name) for name in ordered}
