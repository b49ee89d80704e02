"""Collects what argument validation has to say, so every problem is reported at once."""

from __future__ import annotations

from primus.log import get_logger

log = get_logger("primus.megatron")


class PrimusArgumentError(ValueError):
    """Invalid Primus arguments; raised before training starts, listing every problem."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("invalid Primus arguments:\n" + "\n".join(f"  - {p}" for p in problems))


class Notices:
    def __init__(self):
        self.infos: list[str] = []
        self.warnings: list[str] = []
        self.errors: list[str] = []

    def info(self, text: str) -> None:
        self.infos.append(text)

    def warn(self, text: str) -> None:
        self.warnings.append(text)

    def error(self, text: str) -> None:
        self.errors.append(text)

    def raise_if_errors(self) -> None:
        if self.errors:
            raise PrimusArgumentError(self.errors)

    def emit(self) -> None:
        for text in self.infos:
            log.info("%s", text)
        for text in self.warnings:
            log.warning("%s", text)
