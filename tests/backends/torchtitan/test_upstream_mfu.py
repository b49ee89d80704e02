"""Upstream's mfu(%) is tracked only when upstream knew the device's peak: its A100 fallback for
unknown devices (every CPU) is recognised, and a real A100, or a device whose datasheet peak happens to be
the A100's, keeps it. The end-to-end tests check that a CPU run's trackers hold no mfu(%)."""

from __future__ import annotations

import pytest

from primus.backends.torchtitan.upstream_mfu import A100_PEAK_FLOPS, upstream_peak_is_real


@pytest.mark.parametrize(("device", "peak", "real"), [
    ("CPU AMD EPYC 7B13", A100_PEAK_FLOPS, False),  # upstream's fallback
    ("NVIDIA L40S", A100_PEAK_FLOPS, False),  # upstream looks for "l40s" in lower case and falls back
    ("NVIDIA A100-SXM4-80GB", A100_PEAK_FLOPS, True),
    ("NVIDIA A800 80GB PCIe", A100_PEAK_FLOPS, True),  # not in upstream's table; its datasheet peak is the same
    ("NVIDIA H200", 989e12, True),
    ("NVIDIA RTX A6000", 154.85e12, True),  # upstream knows it; Primus's table does not
])
def test_the_a100_fallback_is_told_from_a_real_peak(device, peak, real):
    assert upstream_peak_is_real(device, peak) is real


def test_upstream_still_falls_back_to_the_a100_peak_for_a_cpu():
    from torchtitan.tools.utils import get_peak_flops

    assert get_peak_flops("CPU AMD EPYC 7B13") == A100_PEAK_FLOPS
    assert not upstream_peak_is_real("CPU AMD EPYC 7B13", get_peak_flops("CPU AMD EPYC 7B13"))
