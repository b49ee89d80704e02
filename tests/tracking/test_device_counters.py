"""A device's memory counters read at each log step; a device without them is asked once."""

from primus.tracking.measure.device_counters import DeviceCounters


def test_a_device_with_counters_is_read_at_every_step():
    readings = iter([{"mem/allocated_gib": 1.0}, {"mem/allocated_gib": 2.0}])
    counters = DeviceCounters(lambda: next(readings))
    assert [counters.now(), counters.now()] == [{"mem/allocated_gib": 1.0}, {"mem/allocated_gib": 2.0}]


def test_a_device_without_counters_is_asked_once():
    asked = []
    counters = DeviceCounters(lambda: asked.append(1) or {})
    assert [counters.now(), counters.now(), counters.now()] == [{}, {}, {}] and asked == [1]
