"""Our own arithmetic on a trace: self time of nested ops, kernels charged to the op that launched them
and to its step. A GPU trace cannot be made on this CPU box, so its device events are written out here
(the shapes torch's Kineto export uses); test_trace_report.py runs on real profiler output."""

from __future__ import annotations

import pytest

from primus.profiling.chrome_trace import DEVICE, HOST, summarize


def op(name, ts, dur, ext=None, cat="cpu_op", pid=1, tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": {} if ext is None else {"External id": ext}}


TRACE = {"distributedInfo": {"rank": 3}, "traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
    op("ProfilerStep#4", 0, 100, cat="user_annotation"),
    op("aten::linear", 10, 50, ext=1),
    op("aten::addmm", 20, 30, ext=2),  # inside linear: linear's self time is 50 - 30
    op("aten::addmm", 70, 20, ext=3),
    op("cudaLaunchKernel", 25, 5, ext=2, cat="cuda_runtime"),  # neither an op nor device time
    op("gemm_kernel", 40, 80, ext=2, cat="kernel", pid=0, tid=7),  # runs past the step's end: still step 4's
    op("gemm_kernel", 150, 10, ext=3, cat="kernel", pid=0, tid=7),
    op("Memcpy HtoD", 130, 6, cat="gpu_memcpy", pid=0, tid=8),  # unlinked, after the step
    op("ProfilerStep#5", 100, 60, cat="user_annotation"),
    op("aten::addmm", 110, 10, ext=4, tid=2),  # another thread, step 5
    {"ph": "X", "cat": "cpu_op", "name": "no duration", "pid": 1, "tid": 1, "ts": 5},
]}


def test_self_time_device_time_and_steps():
    s = summarize(TRACE)
    ops = {(o.where, o.name): o for o in s.ops}
    linear, addmm, gemm = ops[(HOST, "aten::linear")], ops[(HOST, "aten::addmm")], ops[(DEVICE, "gemm_kernel")]
    assert (linear.count, linear.total_us, linear.self_us, linear.device_us) == (1, 50, 20, 0)
    assert (addmm.count, addmm.total_us, addmm.self_us, addmm.max_us, addmm.device_us) == (3, 60, 60, 30, 90)
    assert (gemm.count, gemm.total_us, gemm.mean_us) == (2, 90, 45)
    assert set(ops) == {(HOST, "aten::linear"), (HOST, "aten::addmm"), (DEVICE, "gemm_kernel"),
                        (DEVICE, "Memcpy HtoD")}
    assert [o.name for o in s.ops] == ["aten::addmm", "aten::linear", "gemm_kernel", "Memcpy HtoD"]
    assert [(t.step, t.duration_us, t.host_self_us, t.device_us) for t in s.steps] == [
        (4, 100, 20 + 30 + 20, 80 + 10), (5, 60, 10, 6)]
    assert (s.host_self_us, s.device_us, s.profiled_us, s.span_us) == (80, 96, 160, 160)
    assert s.metadata["distributedInfo"] == {"rank": 3}


def test_without_profiler_steps_the_whole_trace_is_profiled():
    s = summarize({"traceEvents": [op("aten::mm", 1000, 40), op("aten::add", 1100, 10)]})
    assert s.steps == [] and s.profiled_us == pytest.approx(110)
