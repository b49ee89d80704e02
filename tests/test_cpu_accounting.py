"""primus.cpu_accounting: the benchmarks' count of the thread CPU our entry points take from their callers."""

import os
import subprocess
import sys
import textwrap

from primus import cpu_accounting

BUSY = textwrap.dedent("""
    import sys, time
    from primus import cpu_accounting

    def spin(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    def upstream(seconds):  # upstream's code that our wrapper calls: not ours
        spin(seconds)

    @cpu_accounting.ours
    def hook(seconds):  # ours, called from within upstream: counted inside the wrapper's entry
        spin(seconds)

    def wrapper(wrapped, instance, args, kwargs):
        spin(0.05)
        wrapped(*args, **kwargs)
        hook(0.05)
        return "result"

    patched = cpu_accounting.wrapper(wrapper, "patch:method")
    for _ in range(2):
        assert patched(lambda s: (upstream(s), hook(0.02)), None, (0.3,), {}) == "result"
    hook(0.1)
""")


def run(tmp_path, accounting: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != cpu_accounting.ENV}
    if accounting:
        env[cpu_accounting.ENV] = str(tmp_path)
    return subprocess.run([sys.executable, "-c", BUSY], env=env, capture_output=True, text=True, check=True)


def test_our_cpu_is_counted_per_entry_point_and_upstreams_is_not(tmp_path):
    run(tmp_path, accounting=True)
    [dump] = cpu_accounting.read(tmp_path)
    entries = dump["threads"]["MainThread"]["entries"]
    assert set(entries) == {"patch:method", "hook"}  # the outermost entry points only
    calls, ns = entries["patch:method"]
    # 2 x (0.05 + 0.02 + 0.05) s of ours; the 2 x 0.3 s of upstream's are not counted
    assert calls == 2 and 0.24e9 <= ns < 0.5e9
    each = dump["threads"]["MainThread"]["each"]["patch:method"]  # per call, in order
    assert len(each) == 2 and sum(each) == ns and min(each) >= 0.11e9
    assert entries["hook"][0] == 1 and 0.1e9 <= entries["hook"][1] < 0.3e9
    assert dump["threads"]["MainThread"]["ns"] == ns + entries["hook"][1]
    assert dump["process_cpu_s"] >= 0.8 and dump["peak_rss_mib"] > 1
    assert dump["clock_cost_ns"] > 0  # subtracted from every interval charged: the reading is not ours


def test_off_it_adds_nothing_and_writes_nothing(tmp_path):
    run(tmp_path, accounting=False)
    assert list(tmp_path.iterdir()) == []
    if not cpu_accounting.enabled():  # this test process: the functions themselves, no wrapper
        def f():
            return 1
        assert cpu_accounting.ours(f) is f and cpu_accounting.theirs(f) is f and cpu_accounting.wrapper(f, "x") is f
