"""What the TorchTitan end-to-end tests share: the CPU config, the keys upstream computes, and a run's
captured output (fixtures that launch runs are in conftest.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from support.launch import FinishedRun

CPU_CONFIG = ["--module", "primus.backends.torchtitan", "--config", "llama3_debugmodel_cpu"]
STEPS = 3
# Every key upstream's MetricsProcessor.log computes (torchtitan 0.3.0, no quantization, one AdamW group).
UPSTREAM_KEYS = frozenset({
    "loss_metrics/global_avg_loss", "loss_metrics/global_max_loss", "grad_norm", "throughput(tps)", "tflops",
    "mfu(%)", "time_metrics/end_to_end(s)", "time_metrics/data_loading(s)", "time_metrics/data_loading(%)",
    "memory/max_active(GiB)", "memory/max_active(%)", "memory/max_reserved(GiB)", "memory/max_reserved(%)",
    "memory/num_alloc_retries", "memory/num_ooms", "n_tokens_seen", "lr/AdamW",
})
# What the trackers get of them on a CPU: upstream's mfu(%) is against a made-up peak (upstream_mfu.py).
TRACKED_ON_CPU = UPSTREAM_KEYS - {"mfu(%)"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CONSOLE_STEP = re.compile(r"step:\s+(\d+)\s+loss:\s+([0-9.]+)\s+grad_norm:\s+([0-9.]+)")


@dataclass(frozen=True)
class TitanRun(FinishedRun):
    dump: Path  # upstream's dump folder

    def console_steps(self) -> dict[int, tuple[str, str]]:
        """{step: (loss, grad_norm)} as upstream printed them (rounded to 5 and 4 decimals)."""
        return {int(m.group(1)): (m.group(2), m.group(3)) for m in _CONSOLE_STEP.finditer(_ANSI.sub("", self.output))}

    def assert_trained(self) -> None:
        assert self.returncode == 0, self.explain()
        assert sorted(self.console_steps()) == list(range(1, STEPS + 1)), self.explain()


