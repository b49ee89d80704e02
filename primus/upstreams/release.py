"""Which upstream code is imported, and which release it is (``Upstream``: one per backend).

The version is read from the package's own version file as an import would find it now, not from the installed
distribution's metadata: a source checkout first on PYTHONPATH over an installed wheel is judged as what it is
(metadata is the fallback for a wheel whose files carry no version). Nothing upstream is imported or executed.

A release outside the supported range is refused (``PRIMUS_UPSTREAM_CHECK=strict``, the default: a silent wrong
metric is worse than a clear stop) or tried (``warn``): then each patch is judged against the nearest end of the
range it was written for, and still installs only if its hold on upstream (targets, signatures) holds."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

WHEEL = "wheel"
SOURCE_TREE = "source tree"
UPSTREAM_CHECK_ENV = "PRIMUS_UPSTREAM_CHECK"
STRICT, WARN = "strict", "warn"
_UPPER, _LOWER = ("<", "<="), (">", ">=")


def upstream_check(environ: Mapping[str, str] = os.environ) -> str:
    """``strict`` (unset too) or ``warn``; anything else is refused, naming the variable and the choices."""
    raw = environ.get(UPSTREAM_CHECK_ENV, "")
    mode = raw.strip().lower() or STRICT
    if mode not in (STRICT, WARN):
        raise ValueError(
            f"{UPSTREAM_CHECK_ENV}={raw!r} is not a mode: use strict (refuse an upstream release outside the "
            f"supported range; the default) or warn (try it, say so once, and tag the run)"
        )
    return mode


@dataclass(frozen=True)
class Upstream:
    name: str  # what users call it: "Megatron", "TorchTitan", "MaxText"
    distribution: str  # PyPI distribution, e.g. "megatron-core"
    package: str  # import package whose code is judged, e.g. "megatron.core"
    supported: str  # packaging specifier of the releases Primus supports
    # Where the version is written, relative to the package directory, first found wins: a Python file with
    # ``__version__`` (or Megatron's MAJOR/MINOR/PATCH), or a text file holding the version alone.
    version_files: tuple[str, ...] = ("__init__.py",)
    # For docs/compatibility.md: how users start it, and what differs between the supported releases as
    # (releases, difference) pairs, where the patches had to follow upstream.
    entry_points: tuple[str, ...] = ()
    differences: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        SpecifierSet(self.supported)  # InvalidSpecifier at declaration, not at a user's import

    def supports(self, version: str) -> bool:
        return in_range(version, self.supported)


@dataclass(frozen=True)
class Found:
    """The upstream code Python would import: its version (None when it cannot be told), whether it is an
    installed wheel's files or a source tree, and its directory (None when the package is not importable)."""

    upstream: Upstream
    version: str | None
    origin: str | None  # WHEEL | SOURCE_TREE | None (not importable)
    path: str | None

    @property
    def where(self) -> str:
        return f"{self.origin} {self.path}" if self.path else "not importable"

    def describe(self) -> str:
        """'megatron-core 0.19.2 (wheel /.../megatron/core)' — what messages name."""
        return f"{self.upstream.distribution} {self.version or 'of unknown version'} ({self.where})"

    def problem(self) -> str | None:
        """Why Primus must not patch this code, or None."""
        up = self.upstream
        if self.path is None:
            return f"{up.package} is not importable ({up.distribution} is not installed)"
        if self.version is None:
            return (
                f"cannot tell which {up.name} release the {self.where} is: no version in "
                f"{' or '.join(up.version_files)}"
            )
        if self.untested and upstream_check() == STRICT:
            return f"{self.describe()} is outside the supported range {up.supported!r}"
        return None

    @property
    def untested(self) -> bool:
        """A release of known version outside the supported range (tried only with PRIMUS_UPSTREAM_CHECK=warn)."""
        return self.version is not None and not self.upstream.supports(self.version)

    def serves(self, versions: str) -> bool:
        """Whether a patch written for ``versions`` (within the supported range) is the one for this release. An
        untested release takes the patches that reach the end of the range it lies beyond: above the range,
        those without an upper bound of their own (the newest variant); below it, likewise for lower bounds."""
        assert self.version is not None
        if not self.untested:
            return in_range(self.version, versions)
        supported = SpecifierSet(self.upstream.supported)
        above = any(s.operator in _UPPER and not s.contains(self.version, prereleases=True) for s in supported)
        ends = _UPPER if above else _LOWER
        range_ends = {s for s in supported if s.operator in ends}
        return all(s in range_ends for s in SpecifierSet(versions) if s.operator in ends)


def locate(upstream: Upstream) -> Found:
    directory = _package_directory(upstream.package)
    if directory is None:
        return Found(upstream, None, None, None)
    dist_version = _wheel_version(upstream, directory)
    origin = WHEEL if dist_version is not None else SOURCE_TREE
    written = (read_version(directory / name) for name in upstream.version_files)
    version = next(filter(None, written), None) or dist_version
    return Found(upstream, version, origin, str(directory))


def read_version(path: Path) -> str | None:
    """The version a file holds. A Python file is parsed, not run: ``__version__`` as a string literal, or
    Megatron's ``package_info`` form built from MAJOR, MINOR, PATCH and PRE_RELEASE. Any other file holds
    the version alone (TorchTitan's ``assets/version.txt``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if path.suffix != ".py":
        return _valid(text.strip())
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    constants: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    version = constants.get("__version__")
    if isinstance(version, str):
        return _valid(version)
    parts = [constants.get(name) for name in ("MAJOR", "MINOR", "PATCH")]
    if all(isinstance(p, int) for p in parts):
        pre = constants.get("PRE_RELEASE") or ""
        return _valid(".".join(map(str, parts)) + (pre if isinstance(pre, str) else ""))
    return None


def _valid(text: str) -> str | None:
    try:
        Version(text)
    except InvalidVersion:
        return None
    return text


def _package_directory(package: str) -> Path | None:
    """Where ``package`` is, as imported (``sys.modules``) or as an import would find it now, without
    importing it or its parents (``find_spec`` would import ``megatron`` to find ``megatron.core``)."""
    locations: list[str] | None = None
    name = ""
    for part in package.split("."):
        name = f"{name}.{part}" if name else part
        module = sys.modules.get(name)
        spec = getattr(module, "__spec__", None) if module is not None else PathFinder.find_spec(name, locations)
        if spec is None or not spec.submodule_search_locations:
            return None
        locations = list(spec.submodule_search_locations)
    assert locations is not None  # a package name has at least one part
    return Path(locations[0]).resolve()


def _wheel_version(upstream: Upstream, directory: Path) -> str | None:
    """The distribution's version when ``directory`` is that installed distribution's own files."""
    try:
        dist = importlib.metadata.distribution(upstream.distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    relative = Path(*upstream.package.split("."), "__init__.py")
    if Path(str(dist.locate_file(relative))).resolve().parent != directory:
        return None
    return dist.version


def in_range(version: str, specifier: str) -> bool:
    """Whether ``version`` is in ``specifier``, pre-releases included (a source checkout is often one)."""
    try:
        return SpecifierSet(specifier).contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False
