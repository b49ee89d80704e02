"""How a run is laid out over its processes, as tags: the world size and each parallel degree (``tp``, ``pp``,
``dp``, ``cp``, ``ep``), under ``primus.parallel.``. Backends read the degrees from upstream's own config and pass
these tags with the run's (``TrackingPlan.run_config``); a degree upstream does not have is left out."""

from __future__ import annotations

DEGREES = ("tp", "pp", "dp", "cp", "ep")


def layout_tags(world_size: int | None, **degrees: int | None) -> dict[str, str]:
    unknown = set(degrees) - set(DEGREES)
    assert not unknown, f"not a parallel degree: {sorted(unknown)}"
    tags = {f"primus.parallel.{name}": str(int(value)) for name in DEGREES if (value := degrees.get(name)) is not None}
    if world_size is not None:
        tags["primus.world_size"] = str(int(world_size))
    return tags
