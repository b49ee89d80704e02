"""docs/how-a-metric-travels.md names a file for every hop a metric takes: each must exist, and every module
that carries a metric from upstream to a tracker must be named, so the page cannot fall behind a rename (its
file-by-file table is measured by test_metric_path.py). Every ``primus/`` path and ``primus.`` module the README and
the pages under docs/ name exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "how-a-metric-travels.md"
# a copy of the specification the option schema is tested against: its paths are those of the project it came from
SPEC_COPY = "spec-logging-and-experiment-tracking.md"
PAGES = [ROOT / "README.md", *(page for page in sorted((ROOT / "docs").glob("*.md")) if page.name != SPEC_COPY)]
HOPS = (
    "patches/arguments.py",
    "patches/registry.py",
    "patches/handle.py",
    "tracking/plan.py",
    "tracking/run.py",
    "tracking/hub.py",
    "tracking/journal/reader.py",
    "tracking/journal/writer.py",
    "tracking/delivery/worker.py",
    "tracking/delivery/process.py",
    "tracking/delivery/child.py",
    "tracking/trackers/mlflow.py",
    "tracking/delivery/replay.py",
)


def named_paths(text: str) -> set[str]:
    """The paths under primus/ the page names (`folder/module.py`)."""
    return set(re.findall(r"`(\w[\w/]*/\w+\.py)`", text))


def test_every_file_the_page_names_exists():
    named = named_paths(DOC.read_text())
    missing = sorted(p for p in named if not (ROOT / ("" if p.startswith("tests/") else "primus") / p).is_file())
    assert named and missing == [], f"{DOC.name} names files that do not exist under primus/: {missing}"


def test_the_page_names_every_hop():
    named = named_paths(DOC.read_text())
    assert [hop for hop in HOPS if hop not in named] == []
    for backend in ("megatron", "torchtitan", "maxtext"):
        assert any(p.startswith(f"backends/{backend}/patches/") for p in named), backend


def test_every_primus_path_and_module_the_pages_name_exists():
    missing = {}
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        paths = {p for p in re.findall(r"(?<![\w./])(primus/[\w/.]*\w)", text) if _a_path(p)}
        modules = {m.replace(".", "/") for m in re.findall(r"(?<![\w./])(primus(?:\.\w+)+)", text)}
        modules = {m for m in modules if _is_module(ROOT / "/".join(m.split("/")[:2]))}  # not a tag
        gone = sorted(p for p in paths if not (ROOT / p).exists())
        gone += sorted(m for m in modules if not (_is_module(ROOT / m) or _names(ROOT / m)))
        if gone:
            missing[page.name] = gone
    assert missing == {}


def _a_path(name: str) -> bool:
    """A file (it has a suffix) or a folder of the package, not a tag or metric name (``primus/upstream/untested``)."""
    return Path(name).suffix != "" or (ROOT / "/".join(name.split("/")[:2])).is_dir()


def _is_module(path: Path) -> bool:
    """``primus.a.b`` as a path: a module or a package."""
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _names(path: Path) -> bool:
    """``primus.a.b`` as a path: ``b`` is a name the module or package ``primus.a`` has."""
    module = path.parent.with_suffix(".py") if path.parent.with_suffix(".py").is_file() else path.parent / "__init__.py"
    return module.is_file() and re.search(rf"\b{path.name}\b", module.read_text(encoding="utf-8")) is not None
