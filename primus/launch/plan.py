"""A launch plan: the command `primus train` runs, and the exact bash text it prints for it.

Only Primus's own variables (the experiment path and overrides, never secrets) are written as values;
every credential reaches the job by name, so the printed text and any script hold no secret value."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

HEREDOC_END = "PRIMUS_SCRIPT"


class Shell(str):
    """A word the shell expands where the job runs (``--node_rank="$SLURM_NODEID"``): written unquoted."""


def shell_line(words: Sequence[str]) -> str:
    return " ".join(word if isinstance(word, Shell) else shlex.quote(word) for word in words)


def assignments(env: dict[str, str]) -> list[Shell]:
    """``NAME=value`` words, the value quoted (a quoted whole word would be a command name, not an assignment)."""
    return [Shell(f"{name}={shlex.quote(value)}") for name, value in env.items()]


@dataclass(frozen=True)
class LaunchPlan:
    argv: list[str]
    env: dict[str, str]  # the environment the command starts with
    run_dir: Path
    shown_env: dict[str, str] = field(default_factory=dict)  # Primus's variables set for argv, shown before it
    stdin: str | None = None  # a script given on standard input (sbatch)
    make_dirs: tuple[Path, ...] = ()  # created before the command runs
    detached: bool = False  # the command submits the job and returns before training ends

    def shell(self) -> str:
        """The command as bash text that does what running the plan does."""
        text = shell_line([*assignments(self.shown_env), *self.argv])
        if self.make_dirs:
            text = f"{shell_line(['mkdir', '-p', *map(str, self.make_dirs)])} && {text}"
        if self.stdin is not None:
            text = f"{text} <<'{HEREDOC_END}'\n{self.stdin}{HEREDOC_END}"
        return text
