"""docs/compatibility.md: per backend, the upstream releases Primus supports and where their version is read
from, the releases CI trains end to end, how users start it, which patch applies on which release (from the
patch declarations), and what differs between releases."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from primus.docs_gen.markdown import code, fill, table
from primus.patches import REGISTRY, Patch
from primus.patches.catalog import upstreams
from primus.upstreams.backends import backends
from primus.upstreams.release import Upstream, in_range

THIRD_PARTY = Path(__file__).resolve().parents[2] / "third_party"
MATRIX_FILE = "upstream-matrix.txt"


def tested_releases(distribution: str) -> tuple[str | None, list[str]]:
    """(the pinned release, the other releases CI trains) of ``distribution``, from third_party/."""
    pin = re.compile(rf"^\S*?\s*{re.escape(distribution)}==(\S+)\s*$", re.MULTILINE)
    pinned = [v for path in sorted(THIRD_PARTY.glob("*requirements.txt")) for v in pin.findall(path.read_text())]
    others = pin.findall((THIRD_PARTY / MATRIX_FILE).read_text())
    return (pinned[0] if pinned else None), others


def render_compatibility() -> str:
    environments = ", ".join(code(f) for f in (".venv", *(b.environment.folder for b in backends() if b.environment)))
    # sorted: declaration order depends on import order
    return fill(
        "compatibility.md",
        environments=environments,
        backends="\n\n".join(_section(u) for u in sorted(upstreams(), key=lambda u: u.name)),
    )


def _section(upstream: Upstream) -> str:
    pinned, others = tested_releases(upstream.distribution)
    releases = sorted({*others, *([pinned] if pinned else [])}, key=_version_key)
    package = upstream.package.replace(".", "/")
    version_files = " or ".join(code(posixpath.normpath(f"{package}/{f}")) for f in upstream.version_files)
    lines = [
        f"## {upstream.name} ({code(upstream.distribution)})",
        f"Supported: {code(upstream.supported)}. Version read from {version_files}; "
        f"the installed distribution's metadata only for a wheel whose files carry none.",
        "CI trains, with every tracker on: " + ", ".join(f"{v} (pinned)" if v == pinned else v for v in releases) + ".",
    ]
    if upstream.entry_points:
        lines.append("Entry points:\n" + "\n".join(f"- `{entry}`" for entry in upstream.entry_points))
    patches = sorted((p for p in REGISTRY.patches() if p.upstream == upstream), key=lambda p: p.id)
    lines.append(
        table(
            ["patch", "target", *releases, "applies when"],
            [[code(p.id), code(p.target), *(_applies(p, v) for v in releases), _when(p)] for p in patches],
        )
    )
    if upstream.differences:
        lines.append(
            "What differs between releases:\n\n"
            + table(["releases", "difference"], [list(row) for row in upstream.differences])
        )
    return "\n\n".join(lines)


def _applies(patch: Patch, version: str) -> str:
    return "yes" if not patch.versions or in_range(version, patch.versions) else "-"


def _when(patch: Patch) -> str:
    required = "required" if patch.required else "optional"
    condition = (patch.condition.__doc__ or "on a condition").strip().splitlines()[0] if patch.condition else "always"
    return f"{required}; {condition}"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))
