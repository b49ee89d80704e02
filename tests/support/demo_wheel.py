"""A throwaway distribution laid out as pip installs a wheel: its files plus a dist-info whose RECORD lists
each file's sha256 (urlsafe base64, unpadded) and size. Tests that need a real installed distribution they
can modify, or shadow with a source tree, put its folder on sys.path."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from pathlib import Path


def install_demo_wheel(site: Path, files: Mapping[str, str], name: str = "demo-upstream",
                       version: str = "1.0", entry_points: Mapping[str, Mapping[str, str]] | None = None) -> Path:
    """``entry_points``: group -> {name: value}, written to the dist-info's entry_points.txt."""
    lines = []
    for rel, text in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        lines.append(f"{rel},sha256={digest},{len(text)}")
    info_name = f"{name.replace('-', '_')}-{version}.dist-info"
    info = site / info_name
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines += [f"{info_name}/METADATA,,", f"{info_name}/RECORD,,"]
    if entry_points:
        (info / "entry_points.txt").write_text("".join(
            f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in named.items())
            for group, named in entry_points.items()))
        lines.append(f"{info_name}/entry_points.txt,,")
    (info / "RECORD").write_text("\n".join(lines) + "\n")
    return site
