"""The one error config loading raises: every problem found, not just the first."""

from __future__ import annotations

from primus.errors import SettingsError


class ConfigError(SettingsError):
    """A config that cannot be used. ``problems`` holds one line per problem (key, value, fix)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        count = len(self.problems)
        header = f"{count} config problem{'s' if count != 1 else ''}:"
        return "\n".join([header, *(f"  - {p}" for p in self.problems)])


class _AlreadyReported:
    """Stands in for a value whose problem is already on the list (an unset ``${VAR}``, a refused
    secret), so later checks do not report it a second time under another name."""

    def __repr__(self) -> str:
        return "<already reported>"


ALREADY_REPORTED = _AlreadyReported()
