"""The patch registry: declare a patch once, install it lazily, apply it at most once, undo it.

A patch names the upstream module it targets, its ``Upstream`` (``primus/upstreams/``: which releases the
backend supports, read from the code imported) and the releases it was written for (``versions``,
within the upstream's range; empty: all of it). Where upstream changed between releases, a backend
declares one patch per range and the registry installs the one that matches: a supported release
outside a patch's own range skips that patch quietly; a release outside the upstream's range is a
problem (an error for a required patch), named with the version found and where it was imported from —
unless ``PRIMUS_UPSTREAM_CHECK=warn`` lets such a release be tried (``Found.serves`` picks the patches for it),
which is said once per upstream and recorded on the patch records (``untested``) for the run's tags.
``activate()`` registers a wrapt post-import hook per patch, so nothing upstream is imported
before the user's code imports it (the hook fires at once if the module is already loaded).
When the hook fires the registry checks the version, evaluates the condition, and calls
the patch's ``install(module, handle)`` (``handle.py``: its changes, guarded and undoable).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import wrapt
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from primus.patches.handle import PatchHandle
from primus.upstreams.release import UPSTREAM_CHECK_ENV, Found, Upstream, locate, upstream_check

log = logging.getLogger("primus.patches")

SELECT_ENV = "PRIMUS_PATCHES"  # all | none | comma-separated patch ids
DISABLE_ENV = "PRIMUS_DISABLE_PATCHES"  # comma-separated patch ids removed from the selection
PLATFORM_ENV = "PRIMUS_PLATFORM"
PLATFORMS = ("cpu", "cuda")


_TRY_IT = f", or set {UPSTREAM_CHECK_ENV}=warn to try this release"


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
    forced = os.environ.get(PLATFORM_ENV, "").strip().lower()
    if forced:
        if forced not in PLATFORMS:
            raise ValueError(
                f"{PLATFORM_ENV}={forced!r} is not a platform; use one of {', '.join(PLATFORMS)} "
                f"or unset it to detect the accelerator"
            )
        return forced
    import torch  # only called from hooks on modules that already imported torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass(frozen=True)
class Patch:
    id: str
    target: str  # upstream module whose import triggers the patch
    upstream: Upstream | None  # whose version is checked; None: no check
    versions: str  # packaging specifier within upstream.supported, e.g. ">=0.19,<0.20"; "": all of it
    install: Callable[[Any, PatchHandle], None]
    backend: str = "core"
    condition: Callable[[PatchContext], bool] | None = None
    required: bool = False
    description: str = ""

    def __post_init__(self):
        if not self.id or any(c in self.id for c in ", \t\n"):
            raise ValueError(
                f"patch id {self.id!r} must be non-empty without commas or spaces "
                f"(ids are listed comma-separated in {SELECT_ENV})"
            )
        try:
            SpecifierSet(self.versions)
        except InvalidSpecifier as e:
            raise ValueError(f"patch {self.id!r}: invalid version specifier {self.versions!r}: {e}") from e


@dataclass(frozen=True)
class PatchRecord:
    """One outcome of a patch: pending (hooked, target not imported yet), applied, skipped (with
    why), failed (with the error) or undone."""

    id: str
    target: str
    distribution: str | None
    version: str | None
    status: str  # "pending" | "applied" | "skipped" | "failed" | "undone"
    reason: str = ""
    where: str = ""  # "wheel <dir>" or "source tree <dir>" of the upstream code judged
    untested: bool = False  # that code is a release outside the supported range, tried (PRIMUS_UPSTREAM_CHECK=warn)


@dataclass(frozen=True)
class Eligibility:
    """Whether a patch may be installed now. ``problem``: it cannot (unsupported or unknown upstream
    version, upstream not importable, broken condition; an error for a required patch). ``skip``: it need
    not (condition false, or another patch serves this supported release)."""

    found: Found | None
    problem: str | None = None
    skip: str | None = None

    @property
    def version(self) -> str | None:
        return self.found.version if self.found else None

    @property
    def where(self) -> str:
        return self.found.where if self.found else ""

    @property
    def ok(self) -> bool:
        return self.problem is None and self.skip is None


@dataclass(frozen=True)
class Selection:
    """Which patch ids may apply: ``only`` (None = all) minus ``disabled``."""

    only: frozenset[str] | None = None
    disabled: frozenset[str] = frozenset()

    def __contains__(self, patch_id: str) -> bool:
        return (self.only is None or patch_id in self.only) and patch_id not in self.disabled


class PatchRegistry:
    def __init__(self):
        self._patches: dict[str, Patch] = {}
        self._handles: dict[str, PatchHandle] = {}
        self._records: dict[str, PatchRecord] = {}
        self._active = False
        self._generation = 0
        self._context = PatchContext()
        self._selected = Selection()
        self._untested_said: set[str] = set()  # distributions whose untested release was announced
        self._lock = threading.RLock()

    # -- declaration ---------------------------------------------------------------------
    def register(self, patch: Patch) -> Patch:
        with self._lock:
            if patch.id in self._patches:
                raise DuplicatePatchError(
                    f"patch id {patch.id!r} is already registered (target "
                    f"{self._patches[patch.id].target}); patch ids must be unique"
                )
            self._patches[patch.id] = patch
            if self._active:
                self._hook(patch)
        return patch

    def patch(self, id: str, *, target: str, upstream: Upstream | None, versions: str = "", **kw) -> Callable:
        """Decorator form: ``@registry.patch("x", target=..., upstream=..., versions=...)``."""

        def decorate(install):
            self.register(Patch(id=id, target=target, upstream=upstream, versions=versions, install=install, **kw))
            return install

        return decorate

    def patches(self) -> list[Patch]:
        return list(self._patches.values())

    def selection(self, only: Iterable[str] | None = None) -> Selection:
        """The ids selected by ``only`` (a list of ids; empty: none) or else by ``PRIMUS_PATCHES`` (all,
        none or a comma list), minus ``PRIMUS_DISABLE_PATCHES``. An unknown id is an error: a typo must
        not silently keep a patch on or off."""
        disabled = self._known_ids(DISABLE_ENV, os.environ.get(DISABLE_ENV, ""))
        if only is not None:
            return Selection(self._known_ids("only", ",".join(only)), disabled)
        raw = os.environ.get(SELECT_ENV, "all")
        keyword = raw.strip().lower()
        if keyword in ("", "all"):
            return Selection(None, disabled)
        if keyword == "none":
            return Selection(frozenset(), disabled)
        return Selection(self._known_ids(SELECT_ENV, raw), disabled)

    def _known_ids(self, source: str, raw: str) -> frozenset[str]:
        ids = frozenset(s.strip() for s in raw.split(",") if s.strip())
        unknown = ids - set(self._patches)
        if unknown:
            raise ValueError(
                f"{source}={raw!r} names unknown patch ids {sorted(unknown)}; "
                f"use ids listed by `primus patches` (known: {sorted(self._patches)})"
            )
        return ids

    # -- activation ----------------------------------------------------------------------
    def activate(self, context: PatchContext | None = None, only: Iterable[str] | None = None) -> None:
        """Install post-import hooks for every selected patch (see ``selection``)."""
        with self._lock:
            if self._active:
                log.warning("primus patches are already active; activate() ignored")
                return
            selected = self.selection(only)  # validated before anything changes
            upstream_check()  # a bad PRIMUS_UPSTREAM_CHECK is refused at start, not at the first import
            self._context = context or PatchContext()
            self._selected = selected
            self._active = True
            self._generation += 1
            for patch in self._patches.values():
                self._hook(patch)

    def _hook(self, patch: Patch) -> None:
        if patch.id not in self._selected:
            self._record(patch, None, "skipped", f"not selected ({SELECT_ENV} / {DISABLE_ENV})")
            return
        self._record(patch, None, "pending", f"waiting for `import {patch.target}`")
        generation = self._generation
        wrapt.register_post_import_hook(lambda module: self._on_import(patch, module, generation), patch.target)

    def eligibility(self, patch: Patch, context: PatchContext | None = None) -> Eligibility:
        """Check the upstream version and the condition, without installing anything."""
        found = locate(patch.upstream) if patch.upstream is not None else None
        problem = found.problem() if found is not None else None
        if problem is not None:
            return Eligibility(found, problem)
        if found is not None and found.version and patch.versions and not found.serves(patch.versions):
            return Eligibility(
                found, skip=f"written for {found.upstream.distribution}{patch.versions}, not {found.version}"
            )
        if patch.condition is None:
            return Eligibility(found)
        try:
            if not patch.condition(context or self._context):
                return Eligibility(found, skip="condition false")
        except Exception as e:  # a broken condition is patch code failing
            return Eligibility(found, problem=f"condition raised {e!r}")
        return Eligibility(found)

    def _on_import(self, patch: Patch, module: Any, generation: int) -> None:
        with self._lock:
            if not self._active or generation != self._generation or patch.id in self._handles:
                return  # stale hook from an earlier activation, or already applied once
            verdict = self.eligibility(patch)
            if verdict.skip is not None:
                self._record(patch, verdict, "skipped", verdict.skip)
                return
            if verdict.problem is not None:
                self._skip_or_raise(patch, verdict)
                return
            handle = PatchHandle(patch, self._context, self._on_failure)
            try:
                patch.install(module, handle)
            except Exception as e:
                handle.undo()
                self._record(patch, verdict, "failed", f"install raised {e!r}")
                if patch.required:
                    found = f" of {verdict.found.describe()}" if verdict.found else ""
                    raise PatchError(
                        f"required patch {patch.id} failed to install on {patch.target}{found}: {e!r}"
                    ) from e
                log.warning("primus patch %s failed to install and is skipped: %r", patch.id, e)
                return
            self._handles[patch.id] = handle
            self._record(patch, verdict, "applied")
            if verdict.found is not None and verdict.found.untested:
                self._say_untested(verdict.found)
            log.debug(
                "primus patch %s applied to %s (%s)",
                patch.id,
                patch.target,
                verdict.found.describe() if verdict.found else "no version check",
            )

    def _skip_or_raise(self, patch: Patch, verdict: Eligibility) -> None:
        if patch.required:
            self._record(patch, verdict, "failed", verdict.problem or "")
            fix = (
                f" Use a supported release ({patch.upstream.distribution}{patch.upstream.supported}) "
                f"or update the patch{_TRY_IT if verdict.found and verdict.found.untested else ''}."
                if patch.upstream
                else ""
            )
            raise PatchError(f"required patch {patch.id} cannot be applied: {verdict.problem}.{fix}")
        log.warning("primus patch %s skipped: %s", patch.id, verdict.problem)
        self._record(patch, verdict, "skipped", verdict.problem or "")

    def _say_untested(self, found: Found) -> None:
        """Once per upstream: which release is tried, and the ranges its patches were written for."""
        up = found.upstream
        if up.distribution in self._untested_said:
            return
        self._untested_said.add(up.distribution)
        written = ", ".join(f"{p.id} ({p.versions or 'all'})" for p in self._patches.values() if p.upstream == up)
        log.warning(
            "primus: %s is outside the supported range %r and is tried (%s=warn): its patches were written for "
            "%s%s: %s. Metrics may be wrong where upstream changed; a patch whose hold on upstream broke stops "
            "the job.",
            found.describe(),
            up.supported,
            UPSTREAM_CHECK_ENV,
            up.distribution,
            up.supported,
            written,
        )

    def _on_failure(self, handle: PatchHandle, error: BaseException) -> None:
        with self._lock:
            applied = self._records[handle.patch.id]
            self._records[applied.id] = replace(applied, status="failed", reason=f"disabled at run time: {error!r}")

    def _record(self, patch: Patch, verdict: Eligibility | None, status: str, reason: str = "") -> None:
        distribution = patch.upstream.distribution if patch.upstream else None
        self._records[patch.id] = PatchRecord(
            patch.id,
            patch.target,
            distribution,
            verdict.version if verdict else None,
            status,
            reason,
            verdict.where if verdict else "",
            bool(verdict and verdict.found and verdict.found.untested),
        )

    # -- undo and reporting --------------------------------------------------------------
    def deactivate(self) -> None:
        """Undo every applied patch and make pending hooks inert."""
        with self._lock:
            for handle in reversed(list(self._handles.values())):
                handle.undo()
                r = self._records[handle.patch.id]
                self._records[r.id] = replace(r, status="undone", reason="")
            self._handles.clear()
            for r in self._records.values():
                if r.status == "pending":
                    self._record(self._patches[r.id], None, "undone", "deactivated before its target was imported")
            self._active = False

    @property
    def active(self) -> bool:
        return self._active

    def records(self) -> list[PatchRecord]:
        return list(self._records.values())

    def applied(self) -> list[PatchRecord]:
        return [r for r in self._records.values() if r.status == "applied"]

    def reset(self) -> None:
        """Forget records and which untested releases were announced (tests); patches stay registered."""
        self.deactivate()
        self._records.clear()
        self._untested_said.clear()


REGISTRY = PatchRegistry()
