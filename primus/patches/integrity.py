"""Are the installed upstream files the ones the wheel shipped? Patches are written against the
pristine upstream source, so an edited site-packages file is reported, not silently patched over.

Each file listed in the distribution's RECORD with a hash is hashed again and compared
(``sha256=<urlsafe base64, no padding>``, PEP 376 / the wheel spec).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class IntegrityReport:
    distribution: str
    version: str
    checked: int = 0
    modified: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unverifiable: str = ""  # why nothing could be checked (no RECORD), else ""

    @property
    def clean(self) -> bool:
        return not (self.modified or self.missing or self.unverifiable)


def verify_distribution(
    name: str, progress: Callable[[int, int], None] | None = None, progress_every_s: float = 2.0
) -> IntegrityReport:
    """Hash every file the RECORD of distribution ``name`` lists. Raises PackageNotFoundError when
    ``name`` is not installed. ``progress(hashed, total)`` is called every ``progress_every_s`` on the way."""
    dist = importlib.metadata.distribution(name)
    # RECORD is read directly: Distribution.files leaves out the files that no longer exist.
    record = dist.read_text("RECORD")
    if record is None:
        return IntegrityReport(name, dist.version, unverifiable="no RECORD file (not installed from a wheel?)")
    checked, modified, missing = 0, [], []
    hashed = [(path, spec) for path, spec, *_ in csv.reader(record.splitlines()) if spec]  # RECORD has no hash
    last_report = time.monotonic()
    for path, hash_spec in hashed:
        if progress is not None and time.monotonic() - last_report >= progress_every_s:
            progress(checked, len(hashed))
            last_report = time.monotonic()
        algorithm, _, expected = hash_spec.partition("=")
        checked += 1
        try:
            with open(str(dist.locate_file(path)), "rb") as f:
                digest = hashlib.file_digest(f, algorithm).digest()
        except FileNotFoundError:
            missing.append(path)
            continue
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != expected:
            modified.append(path)
    return IntegrityReport(name, dist.version, checked, modified, missing)
