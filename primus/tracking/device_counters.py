"""The device's memory counters as a log step reads them on the training thread: a device without them (no
accelerator, JAX's CPU device) has none at any later step either, so after one empty reading it is not asked
again (each ask walks torch's or JAX's allocator API, microseconds of the training thread per logged step)."""

from __future__ import annotations

from collections.abc import Callable, Mapping


class DeviceCounters:
    def __init__(self, read: Callable[[], Mapping[str, float]]):
        self._read = read  # e.g. StepPerf.device_now
        self._none = False

    def __call__(self) -> Mapping[str, float]:
        if self._none:
            return {}
        counters = self._read()
        self._none = not counters
        return counters
