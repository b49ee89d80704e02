"""Are the installed upstream files the ones the wheel shipped? Patches are written against the
pristine upstream source, so an edited site-packages file is reported, not silently patched over.

Each file listed in the distribution's RECORD with a hash is hashed again and compared
(``sha256=<urlsafe base64, no padding>``, PEP 376 / the wheel spec).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
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


def verify_distribution(name: str) -> IntegrityReport:
    """Hash every file the RECORD of distribution ``name`` lists. Raises PackageNotFoundError when
    ``name`` is not installed."""
    dist = importlib.metadata.distribution(name)
    version = dist.version
    if dist.files is None:
        return IntegrityReport(name, version, unverifiable="no RECORD file (not installed from a wheel?)")
    checked, modified, missing = 0, [], []
    for entry in dist.files:
        if entry.hash is None:  # RECORD itself and signature files carry no hash
            continue
        checked += 1
        try:
            with open(dist.locate_file(entry), "rb") as f:
                digest = hashlib.file_digest(f, entry.hash.mode).digest()
        except FileNotFoundError:
            missing.append(str(entry))
            continue
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != entry.hash.value:
            modified.append(str(entry))
    return IntegrityReport(name, version, checked, modified, missing)
