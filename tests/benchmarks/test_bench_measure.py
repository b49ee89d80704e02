"""benchmarks/_measure.py (the benchmarks' shared measurements) and gpu_check.py's answer on a host without a GPU."""

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import _measure  # noqa: E402


def test_pair_ratios_says_not_distinguishable_when_the_interval_holds_one():
    noisy = [(1.0, r) for r in (0.9, 1.1, 1.05, 0.95, 1.02)]
    line = _measure.pair_ratios("on / off", noisy)
    assert line.startswith("ratio on / off: not distinguishable from 1 (median 1.020, bootstrap 90 % interval ")
    assert "5 pairs: 0.900, 1.100, 1.050, 0.950, 1.020" in line


def test_pair_ratios_gives_the_ratio_when_the_interval_excludes_one():
    slower = [(2.0, 2.0 * r) for r in (1.30, 1.32, 1.29, 1.35, 1.31)]
    line = _measure.pair_ratios("on / off", slower)
    assert line.startswith("ratio on / off: 1.310 (median 1.310, bootstrap 90 % interval 1.29")
    low, high = _measure.median_interval([1.30, 1.32, 1.29, 1.35, 1.31])
    assert 1.29 <= low <= 1.31 <= high <= 1.35


def test_pair_ratios_gives_no_interval_under_five_pairs():
    assert _measure.pair_ratios("b / a", [(1.0, 1.5), (1.0, 1.6)]) == \
        "ratio b / a: median 1.550 of 2 pairs (1.500, 1.600); no interval under 5 pairs"


def test_run_measured_counts_the_cpu_of_orphaned_grandchildren():
    # the child starts a grandchild that burns ~0.5 s CPU after the child has exited (as wandb's service does);
    # in a Python of its own: run_measured makes its process a child subreaper for good
    burn = "import time; e = time.process_time() + 0.5\nwhile time.process_time() < e: pass"
    child = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {burn!r}]); print('started')"
    measure = (f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import _measure; "
               f"d = _measure.run_measured([sys.executable, '-c', {child!r}], {{}}); "
               "print(d.returncode, d.output.strip(), d.tree_cpu_s, len(d.accounts))")
    done = subprocess.run([sys.executable, "-c", measure], capture_output=True, text=True, check=True)
    code, output, tree_cpu_s, accounts = done.stdout.split()
    assert (code, output, accounts) == ("0", "started", "0")  # no primus imported there: no accounting dumps
    assert float(tree_cpu_s) >= 0.5


def test_gpu_check_without_a_gpu_says_so_and_exits_0():
    done = subprocess.run([sys.executable, str(BENCHMARKS / "gpu_check.py")], capture_output=True, text=True,
                          env={"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "gpu_check: no CUDA or ROCm device on this host; nothing to check (run it on a GPU host)"
