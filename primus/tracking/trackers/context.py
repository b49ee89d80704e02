"""What every sink, built-in or plugin, is built with: one ``SinkContext`` (``registry.build_sinks`` makes it)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from primus.tracking.journal.run_state import RunState
from primus.tracking.settings.config import TrackingConfig

log = logging.getLogger("primus.tracking")


@dataclass(frozen=True)
class SinkContext:
    """What a sink is told about its run (from the run directory, so sync can build it later)."""

    name: str  # the sink's name: a built-in's ``SinkName``, a plugin's entry point's
    run_dir: Path
    run_name: str
    experiment_name: str
    params: Mapping[str, Any]  # redacted
    tags: Mapping[str, str]  # redacted, with the system tags (git commit, host, ...)
    _state: RunState = field(repr=False)
    # the run's settings, resolved (in ``primus tracking sync``: as meta.json kept them); a built-in sink reads
    # its own section, a plugin reads its settings from the environment
    config: TrackingConfig = field(repr=False)
    # what a full disk kept ``save`` from writing: written with the next save that finds room
    _unsaved: dict[str, Any] = field(default_factory=dict, repr=False)

    def saved(self) -> dict[str, Any]:
        """What ``save`` stored, in an earlier process of this run (e.g. the tracker's run id, to resume it) or
        in this one."""
        return {**self._state.section(self.name), **self._unsaved}

    def save(self, **values: Any) -> None:
        """Keep JSON values in the run directory for the next process of this run (a restart, a sync).
        Best effort: on a full disk the values wait in memory for the next save, and the sink goes on
        delivering; only a restart before then misses them (it starts a new tracker run, or writes a table again)."""
        pending = {**self._unsaved, **values}
        try:
            self._state.update(self.name, **pending)
        except OSError as e:
            if not self._unsaved:
                log.warning(
                    "primus tracking: could not save %s's state in %s (%s); it is kept in memory and saved with "
                    "the sink's next save (a restart before then does not find it)",
                    self.name,
                    self.saved_in,
                    e.strerror or e,
                )
            self._unsaved.update(pending)
        else:
            self._unsaved.clear()

    @property
    def saved_in(self) -> Path:
        """The file ``save`` writes (for messages)."""
        return self._state.path
