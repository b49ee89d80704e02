"""What the TorchTitan end-to-end tests share: each supported release's CPU command line, the keys upstream
computes, and a run's captured output (fixtures that launch runs are in conftest.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from support.launch import FinishedRun, rank_crashes
from support.upstreams import upstream_path

from primus.backends.torchtitan.assets import TinyAssets

RANK_LOGS = "ranks"  # beside the dump folder: the output of torchrun's ranks but 0
CPU_CONFIG = ["--module", "primus.backends.torchtitan", "--config", "llama3_debugmodel_cpu"]
STEPS = 3
# Upstream's own llama3 debug job file of torchtitan v0.2.2 (torchtitan/models/llama3/train_configs/, not in
# the wheel or the sdist), byte for byte: test_upstream_job_file checks it against upstream's git blob.
DEBUG_MODEL_TOML_V0_2_2 = Path(__file__).resolve().parent / "upstream_v0_2_2" / "debug_model.toml"
# Every key upstream's MetricsProcessor.log computes (no quantization, one AdamW group) but the learning
# rate, whose name is the release's.
_KEYS_BUT_LR = frozenset({
    "loss_metrics/global_avg_loss", "loss_metrics/global_max_loss", "grad_norm", "throughput(tps)", "tflops",
    "mfu(%)", "time_metrics/end_to_end(s)", "time_metrics/data_loading(s)", "time_metrics/data_loading(%)",
    "memory/max_active(GiB)", "memory/max_active(%)", "memory/max_reserved(GiB)", "memory/max_reserved(%)",
    "memory/num_alloc_retries", "memory/num_ooms", "n_tokens_seen",
})


@dataclass(frozen=True)
class Release:
    """How the tests train one supported torchtitan release on CPU."""

    version: str
    alternate: bool  # installed from third_party/upstream-matrix.txt, chosen with PYTHONPATH
    model_args: tuple[str, ...]  # the command line naming the model's config
    model_overrides: str  # the same in an experiment's overrides (YAML flow mapping entries)
    dump_flag: str
    profiler_section: str
    lr_key: str  # upstream's learning-rate metric
    trace_file: str  # rank 0's profiler trace for iteration 2, under the traces folder
    cpu_args: Callable[[TinyAssets], list[str]]  # CPU-sized settings beyond the model's config

    @property
    def upstream_keys(self) -> frozenset[str]:
        return _KEYS_BUT_LR | {self.lr_key}

    @property
    def tracked_on_cpu(self) -> frozenset[str]:
        """What the trackers get of them on a CPU: upstream's mfu(%) is against a made-up peak (upstream_mfu.py)."""
        return self.upstream_keys - {"mfu(%)"}

    def env(self) -> dict[str, str]:
        return {"PYTHONPATH": str(upstream_path("torchtitan", self.version))} if self.alternate else {}


def _no_cpu_args(assets: TinyAssets) -> list[str]:
    return []  # 0.3's llama3_debugmodel_cpu config function sets them, and builds the assets


def _debug_toml_on_cpu(assets: TinyAssets) -> list[str]:
    """0.2.2's debug_model.toml sized for a CPU, on the tiny assets; seeded like llama3_debugmodel_cpu."""
    return ["--model.hf_assets_path", str(assets.tokenizer_dir), "--training.dataset_path", str(assets.dataset_dir),
            "--training.local_batch_size", "2", "--training.seq_len", "256",
            "--training.mixed_precision_param", "float32", "--debug.seed", "0"]


V0_3 = Release("0.3.0", False, tuple(CPU_CONFIG), "model: {module: primus.backends.torchtitan, config: "
               "llama3_debugmodel_cpu}", "--dump-folder", "profiler", "lr/AdamW",
               "iteration_2/rank0_trace.json.gz", _no_cpu_args)
V0_2 = Release("0.2.2", True, ("--job.config_file", str(DEBUG_MODEL_TOML_V0_2_2)),
               f"job: {{config_file: {DEBUG_MODEL_TOML_V0_2_2}}}", "--job.dump_folder", "profiling", "lr",
               "iteration_2/rank0_trace.json", _debug_toml_on_cpu)
RELEASES = {r.version: r for r in (V0_3, V0_2)}
UPSTREAM_KEYS = V0_3.upstream_keys
TRACKED_ON_CPU = V0_3.tracked_on_cpu
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CONSOLE_STEP = re.compile(r"step:\s+(\d+)\s+loss:\s+([0-9.]+)\s+grad_norm:\s+([0-9.]+)")


@dataclass(frozen=True)
class TitanRun(FinishedRun):
    dump: Path  # upstream's dump folder

    def console_steps(self) -> dict[int, tuple[str, str]]:
        """{step: (loss, grad_norm)} as upstream printed them (rounded to 5 and 4 decimals)."""
        return {int(m.group(1)): (m.group(2), m.group(3)) for m in _CONSOLE_STEP.finditer(_ANSI.sub("", self.output))}

    def explain(self, lines: int = 60) -> str:
        """As any run's, with the crash of a rank whose output went to a file (every torchrun rank but 0)."""
        crashes = rank_crashes(self.dump.parent / RANK_LOGS)
        return super().explain(lines) + (f"\nother ranks:\n{crashes}" if crashes else "")

    def assert_trained(self) -> None:
        assert self.returncode == 0, self.explain()
        assert sorted(self.console_steps()) == list(range(1, STEPS + 1)), self.explain()
