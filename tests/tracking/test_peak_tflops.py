"""Peak FLOP/s per device (the MFU denominator): datasheet dense figures, the device names torch and JAX
report, and the run's own peak_tflops over the table."""

import pytest

from primus.tracking.measure import perf


@pytest.mark.parametrize(("device", "dtype", "peak"), [
    # torch sees each of an MI250X's two GCDs as a device: half the module's 383 TF
    ("AMD Instinct MI250X", "bf16", 191.5), ("AMD Instinct MI250X / MI250", "fp16", 191.5),
    # the NVL (PCIe) parts are not the SXM ones
    ("NVIDIA H100 NVL", "bf16", 835.5), ("NVIDIA H200 NVL", "bfloat16", 835.5), ("NVIDIA H200", "bf16", 989.4),
    ("NVIDIA H100 80GB HBM3", "bf16", 989.4), ("NVIDIA GH200 480GB", "bf16", 989.4),
    ("NVIDIA B200", "bf16", 2250.0), ("NVIDIA GB200", "bf16", 2500.0), ("NVIDIA GB200", "fp8", 5000.0),
    ("AMD Instinct MI325X", "bf16", 1307.4), ("AMD Instinct MI355X", "bf16", 2516.6),
    ("AMD Instinct MI355X", "fp8", 5033.2),
])
def test_dense_datasheet_peaks(device, dtype, peak):
    assert perf.peak_tflops(device, dtype) == peak


def test_no_tf32_peak_where_the_device_has_no_tf32_unit():
    assert perf.peak_tflops("AMD Instinct MI355X", "tf32") is None


def test_a_more_specific_key_always_comes_before_a_key_it_contains():
    keys = [k.upper() for k, _ in perf.PEAK_TFLOPS]
    for i, key in enumerate(keys):
        assert not any(earlier in key for earlier in keys[:i]), f"{key} is shadowed by an earlier row"


def test_sparse_figures_never_slip_in():
    """Dense bf16 is below half of any datasheet's 'with sparsity' headline; a doubled row would exceed it."""
    sparse_bf16 = {"GB200": 5000, "B200": 4500, "H200": 1979, "H100": 1979, "MI355X": 5033.2, "MI325X": 2614.9}
    for key, headline in sparse_bf16.items():
        assert dict(perf.PEAK_TFLOPS)[key]["bf16"] <= headline / 2 + 0.1, key


def test_the_runs_peak_overrides_the_table_and_gives_mfu_where_the_table_has_none():
    table = perf.throughput_metrics(tokens=1, seconds=1.0, world_size=2, flops=1000e12, device_name="NVIDIA H100 NVL")
    assert table["perf/mfu"] == pytest.approx(500 / 835.5)
    given = perf.throughput_metrics(tokens=1, seconds=1.0, world_size=2, flops=1000e12,
                                    device_name="NVIDIA H100 NVL", given_peak=1000.0)
    assert given["perf/mfu"] == pytest.approx(0.5)
    cpu = perf.throughput_metrics(tokens=1, seconds=1.0, world_size=1, flops=2e12, device_name="cpu", given_peak=4.0)
    assert cpu["perf/mfu"] == pytest.approx(0.5)
    assert "perf/mfu" not in perf.throughput_metrics(tokens=1, seconds=1.0, world_size=1, flops=2e12, device_name="cpu")
