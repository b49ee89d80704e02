"""The device's memory counters as a log step reads them on the training thread: a device without them (no
accelerator, JAX's CPU device) has none at any later step either, so after one empty reading it is not asked
again (each ask walks torch's or JAX's allocator API, microseconds of the training thread per logged step)."""

from __future__ import annotations

from collections.abc import Callable, Mapping


class DeviceCounters:
    def __init__(self, read: Callable[[], Mapping[str, float]]):
        self._read = read  # e.g. StepPerf.device_now

    def now(self) -> Mapping[str, float]:
        """The counters now. After an empty reading, ``now`` is ``dict``: a new empty mapping at each step for the
        cost of a C call, no Python frame on the training thread."""
        counters = self._read()
        if not counters:
            self.now = dict  # type: ignore[method-assign]
        return counters
