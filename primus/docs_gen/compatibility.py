"""docs/compatibility.md: per backend, the upstream releases Primus supports and where their version is read
from, the releases CI trains end to end, how users start it, which patch applies on which release (from the
patch declarations), and what differs between releases."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from primus.docs_gen.markdown import code, table
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
    parts = [
        "# Upstream compatibility",
        "Primus judges an upstream trainer by the code Python imports: its version is read from that "
        "package's own files (a source checkout first on `PYTHONPATH` is judged by its own version, not by "
        "a wheel installed beneath it). A release outside the supported range stops the job before "
        "training, naming the version and the path; `primus doctor` and `primus patches` show what was "
        "found. Where upstream changed between releases, each patch declares the releases it was written "
        "for and the registry installs the one that matches.",
        "## A release Primus does not support yet\n\n"
        "`PRIMUS_UPSTREAM_CHECK=warn` (or the experiment's `launch.upstream_check: warn`) tries a release outside "
        "the supported range instead of refusing it (`strict`, the default: a silent wrong metric is worse than a "
        "clear stop). Each patch is then the one written for the end of the range the release lies beyond (above "
        "it: the newest variant), and still installs only if its hold on upstream holds: a patched function that "
        "was renamed or changed its arguments stops the job at start-up as it would in `strict`, naming the patch "
        "and the function. The run says once on the console which release it tries and which ranges the patches "
        "were written for, and is tagged `primus.upstream.untested` (distribution and version) on every tracker; "
        "`primus doctor` shows the release as `untested, allowed`.",
        "`make canary` installs the newest release of each upstream on the package index (pre-releases too) into "
        "the `upstreams/` folder of the environment that runs it "
        f"({', '.join(code(f) for f in ('.venv', *(b.environment.folder for b in backends() if b.environment)))}) and "
        "trains each backend's tiny CPU job on it in `warn` mode, printing backend × release × entry point → "
        "`trained`, or the patch that failed and why. When a row fails: read the patch and the upstream function "
        "it names, write a variant of the patch for the new release (declared by `versions`, as the others), and "
        "widen the upstream's supported range once CI trains it.",
        "A source checkout is judged by the version its own files declare. TorchTitan's main branch has kept its "
        "last release's number in `assets/version.txt` while its code moved on (0.2.2 there, after 0.3.0 shipped): "
        "such a checkout gets that release's patches and is refused at the first one that no longer fits. To try a "
        "development head in `warn` mode, write the next version into that file of your checkout.",
    ]
    for upstream in sorted(upstreams(), key=lambda u: u.name):  # declaration order depends on import order
        parts.append(_section(upstream))
    return "\n\n".join(parts) + "\n"


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
