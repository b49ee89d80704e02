"""Checkpoints announced by upstream's own W&B hooks, as Megatron (``megatron.training``) and Megatron-Bridge do:
after each save and load, upstream's last rank calls ``on_save_checkpoint_success`` / ``on_load_checkpoint_success``
of its ``wandb_utils``, which log a W&B reference artifact (and ``use_artifact`` on a load) only with upstream's own
W&B writer, which Primus leaves unset (W&B is a sink of the hub). A backend's checkpoint patch wraps those hooks and
upstream's save and load functions with the wrappers made here (wrapt's signature), which journal the save and the load
(``checkpoint_journal.py``) carrying what upstream's hook would have logged; the W&B sink logs it. Each backend passes its
process's journal and its upstream's own naming helpers: nothing here knows a trainer."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from primus.patches.arguments import Arguments
from primus.tracking.checkpoints.checkpoint_journal import CheckpointJournal
from primus.tracking.journal.records import CheckpointLoaded, CheckpointSaved

# the folder of one checkpoint: <save>/iter_<7 digits> (upstream's get_checkpoint_name), and /mp_rank_XX/... below it
# in Megatron's legacy format
ITERATION_FOLDER = re.compile(r"(?:^|/)iter_(\d+)(?=/|$)")

Journal = Callable[[], CheckpointJournal | None]  # this process's journal; None: it does not journal checkpoints
Wrapper = Callable[[Callable[..., Any], Any, tuple, dict], Any]


@dataclass(frozen=True)
class SaveFolderArtifacts:
    """A checkpoint as upstream's W&B hooks log it: an artifact named after the save folder, aliased by the
    checkpoint's own folder, and a pointer file in the save folder naming the W&B project a later load asks for it
    in. ``name_and_alias`` and ``pointer_file`` are the hook module's own helpers, so a record carries what upstream's
    hook would have logged."""

    name_and_alias: Callable[[Path, Path], tuple[str, str]]  # (save folder, checkpoint) -> (artifact, alias)
    pointer_file: Callable[[str], Path]  # save folder -> latest_wandb_artifact_path.txt

    def saved(
        self, path: str, save_dir: str, iteration: int, files: Mapping[str, str] | None = None
    ) -> CheckpointSaved:
        name, alias = self.name_and_alias(Path(save_dir), Path(path))
        return CheckpointSaved(
            iteration=iteration,
            path=str(Path(path).resolve()),
            artifact=name,
            alias=alias,
            files=dict(files or {}),
            wandb_pointer=str(self.pointer_file(save_dir)),
        )

    def loaded(self, path: str, load_dir: str) -> CheckpointLoaded:
        """The resume from ``path``: its iteration from the folder's name, and the artifact upstream's load hook
        asks W&B for (``<entity>/<project>/`` from the pointer file when there is one, as upstream reads it)."""
        name, alias = self.name_and_alias(Path(load_dir), Path(path))
        pointer = self.pointer_file(load_dir)
        project = f"{pointer.read_text().strip()}/" if pointer.is_file() else ""
        found = ITERATION_FOLDER.findall(str(path))
        return CheckpointLoaded(
            path=str(Path(path).resolve()),
            iteration=int(found[-1]) if found else None,
            wandb_artifact=f"{project}{name}:{alias}",
        )


def save_start(journal: Journal, iteration: Callable[[tuple, dict], int]) -> Wrapper:
    """For upstream's save function: a start mark (the save's seconds; an expected gap in steps) at the iteration
    ``iteration`` reads from its ``(args, kwargs)``."""

    def save_checkpoint(wrapped, instance, args, kwargs):
        if (checkpoints := journal()) is not None:
            checkpoints.save_started(iteration(args, kwargs))
        return wrapped(*args, **kwargs)

    return save_checkpoint


def load_start(journal: Journal) -> Wrapper:
    """For upstream's load function: a start mark, so the load's record says how long it took."""

    def load_checkpoint(wrapped, instance, args, kwargs):
        if (checkpoints := journal()) is not None:
            checkpoints.load_started()
        return wrapped(*args, **kwargs)

    return load_checkpoint


def on_save_success(
    journal: Journal,
    hook: Callable[..., Any],
    artifacts: SaveFolderArtifacts,
    files: Callable[[tuple, dict, int], Mapping[str, str]] | None = None,
) -> Wrapper:
    """For ``hook``, upstream's ``on_save_checkpoint_success(checkpoint_path, save_dir, iteration, ...)`` (its
    arguments bound now: a renamed one fails the patch's install): after it, the save journaled; ``files``: the small
    files upstream's artifact holds, from the hook's ``(args, kwargs)`` and the iteration."""
    save = Arguments(hook, "checkpoint_path", "save_dir", "iteration")

    def on_save_checkpoint_success(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        if (checkpoints := journal()) is not None:
            path, save_dir, iteration = (save(n, args, kwargs) for n in ("checkpoint_path", "save_dir", "iteration"))
            added = files(args, kwargs, iteration) if files is not None else None
            checkpoints.save_ended(artifacts.saved(path, save_dir, iteration, added))
        return result

    return on_save_checkpoint_success


def on_load_success(journal: Journal, hook: Callable[..., Any], artifacts: SaveFolderArtifacts) -> Wrapper:
    """For ``hook``, upstream's ``on_load_checkpoint_success(checkpoint_path, load_dir, ...)``: after it, the resume
    journaled with the artifact upstream's hook asks W&B for."""
    load = Arguments(hook, "checkpoint_path", "load_dir")

    def on_load_checkpoint_success(wrapped, instance, args, kwargs):
        result = wrapped(*args, **kwargs)
        if (checkpoints := journal()) is not None:
            checkpoints.loaded(artifacts.loaded(load("checkpoint_path", args, kwargs), load("load_dir", args, kwargs)))
        return result

    return on_load_checkpoint_success
