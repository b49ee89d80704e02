"""The patch registry: declare a patch once, install it lazily, apply it at most once, undo it.

A patch names the upstream module it targets and the distribution versions it was written for.
``activate()`` registers a wrapt post-import hook per patch, so nothing upstream is imported
before the user's code imports it (the hook fires at once if the module is already loaded).
When the hook fires the registry checks the installed version, evaluates the condition, and calls
the patch's ``install(module, handle)``; the handle records every change so it can be undone.

Errors: a failure inside patch code is logged and disables that patch (unless ``required``);
errors raised by upstream code inside a wrapped call propagate unchanged.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import wrapt
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

log = logging.getLogger("primus.patches")

Undo = Callable[[], None]


class PatchError(RuntimeError):
    """A required patch could not be applied; training must not start without it."""


class DuplicatePatchError(ValueError):
    pass


@dataclass(frozen=True)
class PatchContext:
    """What a patch condition may look at: the resolved Primus config and the platform."""

    config: Mapping[str, Any] = field(default_factory=dict)
    platform: Callable[[], str] = field(default=lambda: detect_platform())


def detect_platform() -> str:
    """'cpu' when forced by PRIMUS_PLATFORM=cpu or when torch sees no accelerator, else 'cuda'."""
    forced = os.environ.get("PRIMUS_PLATFORM", "").strip().lower()
    if forced:
        return forced
    import torch  # only called from hooks on modules that already imported torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass(frozen=True)
class Patch:
    id: str
    target: str  # upstream module whose import triggers the patch
    distribution: str | None  # PyPI distribution whose version is checked; None: no check
    versions: str  # packaging specifier, e.g. ">=0.19,<0.20"
    install: Callable[[Any, PatchHandle], None]
    backend: str = "core"
    condition: Callable[[PatchContext], bool] | None = None
    required: bool = False
    description: str = ""

    def __post_init__(self):
        try:
            SpecifierSet(self.versions)
        except InvalidSpecifier as e:
            raise ValueError(f"patch {self.id!r}: invalid version specifier {self.versions!r}: {e}") from e


@dataclass(frozen=True)
class PatchRecord:
    """One outcome of a patch: applied, skipped (with why), or failed (with the error)."""

    id: str
    target: str
    distribution: str | None
    version: str | None
    status: str  # "applied" | "skipped" | "failed" | "undone"
    reason: str = ""


class PatchHandle:
    """Given to ``Patch.install``: makes changes that the registry can undo and guard."""

    def __init__(self, patch: Patch, context: PatchContext,
                 on_failure: Callable[[PatchHandle, BaseException], None] = lambda h, e: None):
        self.patch = patch
        self.context = context
        self.disabled = False
        self._on_failure = on_failure
        self._undo: list[Undo] = []

    # -- changes -------------------------------------------------------------------------
    def wrap(self, owner: Any, name: str, wrapper: Callable) -> None:
        """Wrap ``owner.<name>`` (``"Class.method"`` allowed) with a wrapt wrapper
        ``wrapper(wrapped, instance, args, kwargs)``, guarded so that patch-code errors fall back
        to the original call."""
        parent, attribute, original = wrapt.resolve_path(owner, name)
        wrapt.apply_patch(parent, attribute, wrapt.FunctionWrapper(original, self._guard(wrapper)))
        self._undo.append(lambda: wrapt.apply_patch(parent, attribute, original))

    def replace(self, owner: Any, name: str, value: Any) -> None:
        """Set ``owner.<name> = value``, remembering the original for undo."""
        missing = object()
        original = owner.__dict__.get(name, missing) if hasattr(owner, "__dict__") else getattr(owner, name)
        setattr(owner, name, value)

        def restore():
            if original is missing:
                delattr(owner, name)
            else:
                setattr(owner, name, original)

        self._undo.append(restore)

    def on_undo(self, fn: Undo) -> None:
        self._undo.append(fn)

    # -- guard ---------------------------------------------------------------------------
    def _guard(self, wrapper: Callable) -> Callable:
        handle = self

        def guarded(wrapped, instance, args, kwargs):
            if handle.disabled:
                return wrapped(*args, **kwargs)
            state: dict[str, Any] = {}

            def tracked(*a, **k):
                state["called"] = True
                try:
                    state["result"] = wrapped(*a, **k)
                except BaseException as e:
                    state["upstream_error"] = e
                    raise
                return state["result"]

            try:
                return wrapper(tracked, instance, args, kwargs)
            except BaseException as e:
                upstream = state.get("upstream_error")
                if upstream is not None:
                    if e is not upstream:
                        handle.fail(e)
                    raise upstream
                if isinstance(e, (KeyboardInterrupt, SystemExit)) or handle.patch.required:
                    raise
                handle.fail(e)
                if state.get("called"):
                    return state["result"]
                return wrapped(*args, **kwargs)

        return guarded

    def fail(self, error: BaseException) -> None:
        if not self.disabled:
            self.disabled = True
            log.warning("primus patch %s failed and is now disabled: %r", self.patch.id, error)
            self._on_failure(self, error)

    def undo(self) -> None:
        while self._undo:
            self._undo.pop()()


class PatchRegistry:
    def __init__(self):
        self._patches: dict[str, Patch] = {}
        self._handles: dict[str, PatchHandle] = {}
        self._records: dict[str, PatchRecord] = {}
        self._active = False
        self._generation = 0
        self._lock = threading.RLock()

    # -- declaration ---------------------------------------------------------------------
    def register(self, patch: Patch) -> Patch:
        with self._lock:
            if patch.id in self._patches:
                raise DuplicatePatchError(f"patch id {patch.id!r} is already registered (target {patch.target})")
            self._patches[patch.id] = patch
            if self._active:
                self._hook(patch)
        return patch

    def patch(self, id: str, *, target: str, distribution: str | None, versions: str, **kw) -> Callable:
        """Decorator form: ``@registry.patch("x", target=..., distribution=..., versions=...)``."""

        def decorate(install):
            self.register(Patch(id=id, target=target, distribution=distribution, versions=versions, install=install, **kw))
            return install

        return decorate

    def patches(self) -> list[Patch]:
        return list(self._patches.values())

    # -- activation ----------------------------------------------------------------------
    def activate(self, context: PatchContext | None = None, only: Iterable[str] | None = None) -> None:
        """Install post-import hooks for every selected patch. ``only``/``PRIMUS_PATCHES`` select ids
        (``all``, ``none`` or a comma list); ``PRIMUS_DISABLE_PATCHES`` removes ids."""
        with self._lock:
            if self._active:
                log.warning("primus patches are already active; activate() ignored")
                return
            self._context = context or PatchContext()
            self._selected = _selection(self._patches, only)
            self._active = True
            self._generation += 1
            for patch in self._patches.values():
                self._hook(patch)

    def _hook(self, patch: Patch) -> None:
        if patch.id not in self._selected and not (self._selected is ALL):
            self._records[patch.id] = PatchRecord(patch.id, patch.target, patch.distribution, None, "skipped",
                                                  "not selected (PRIMUS_PATCHES / PRIMUS_DISABLE_PATCHES)")
            return
        generation = self._generation
        wrapt.register_post_import_hook(lambda module: self._on_import(patch, module, generation), patch.target)

    def _on_import(self, patch: Patch, module: Any, generation: int) -> None:
        with self._lock:
            if not self._active or generation != self._generation or patch.id in self._handles:
                return  # stale hook from an earlier activation, or already applied once
            version = _installed_version(patch.distribution)
            problem = _version_problem(patch, version)
            if problem is None and patch.condition is not None:
                try:
                    if not patch.condition(self._context):
                        self._records[patch.id] = PatchRecord(patch.id, patch.target, patch.distribution, version,
                                                              "skipped", "condition false")
                        return
                except Exception as e:  # a broken condition is patch code failing
                    problem = f"condition raised {e!r}"
            if problem is not None:
                self._skip_or_raise(patch, version, problem)
                return
            handle = PatchHandle(patch, self._context, self._on_failure)
            try:
                patch.install(module, handle)
            except Exception as e:
                handle.undo()
                if patch.required:
                    raise PatchError(f"required patch {patch.id} failed to install on {patch.target} "
                                     f"{patch.distribution}=={version}: {e!r}") from e
                log.warning("primus patch %s failed to install and is skipped: %r", patch.id, e)
                self._records[patch.id] = PatchRecord(patch.id, patch.target, patch.distribution, version, "failed", repr(e))
                return
            self._handles[patch.id] = handle
            self._records[patch.id] = PatchRecord(patch.id, patch.target, patch.distribution, version, "applied")
            log.debug("primus patch %s applied to %s (%s %s)", patch.id, patch.target, patch.distribution, version)

    def _skip_or_raise(self, patch: Patch, version: str | None, problem: str) -> None:
        if patch.required:
            raise PatchError(f"required patch {patch.id} cannot be applied: {problem}. "
                             f"Install a supported version ({patch.distribution}{patch.versions}) "
                             f"or update the patch.")
        log.warning("primus patch %s skipped: %s", patch.id, problem)
        self._records[patch.id] = PatchRecord(patch.id, patch.target, patch.distribution, version, "skipped", problem)

    def _on_failure(self, handle: PatchHandle, error: BaseException) -> None:
        p = handle.patch
        old = self._records.get(p.id)
        self._records[p.id] = PatchRecord(p.id, p.target, p.distribution, old.version if old else None, "failed",
                                          f"disabled at run time: {error!r}")

    # -- undo and reporting --------------------------------------------------------------
    def deactivate(self) -> None:
        """Undo every applied patch and make pending hooks inert."""
        with self._lock:
            for pid, handle in reversed(list(self._handles.items())):
                handle.undo()
                r = self._records[pid]
                self._records[pid] = PatchRecord(r.id, r.target, r.distribution, r.version, "undone")
            self._handles.clear()
            self._active = False

    def records(self) -> list[PatchRecord]:
        return list(self._records.values())

    def applied(self) -> list[PatchRecord]:
        return [r for r in self._records.values() if r.status == "applied"]

    def reset(self) -> None:
        """Forget records (tests); patches stay registered."""
        self.deactivate()
        self._records.clear()


class _All:
    def __contains__(self, item):
        return True


ALL = _All()


def _selection(patches: Mapping[str, Patch], only: Iterable[str] | None):
    raw = ",".join(only) if only is not None else os.environ.get("PRIMUS_PATCHES", "all")
    raw = raw.strip().lower()
    disabled = {s.strip() for s in os.environ.get("PRIMUS_DISABLE_PATCHES", "").split(",") if s.strip()}
    if raw in ("", "all"):
        selected = ALL if not disabled else set(patches) - disabled
    elif raw == "none":
        selected = set()
    else:
        wanted = {s.strip() for s in raw.split(",") if s.strip()}
        unknown = wanted - set(patches)
        if unknown:
            raise ValueError(f"PRIMUS_PATCHES names unknown patch ids {sorted(unknown)}; known: {sorted(patches)}")
        selected = wanted - disabled
    return selected


def _installed_version(distribution: str | None) -> str | None:
    if distribution is None:
        return None
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _version_problem(patch: Patch, version: str | None) -> str | None:
    if patch.distribution is None:
        return None
    if version is None:
        return f"distribution {patch.distribution} is not installed"
    try:
        ok = SpecifierSet(patch.versions).contains(Version(version), prereleases=True)
    except InvalidVersion:
        ok = False
    if not ok:
        return f"{patch.distribution} {version} is outside the supported range {patch.versions!r}"
    return None


REGISTRY = PatchRegistry()
