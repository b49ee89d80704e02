"""Layers import one way (docs/design: config, patches, tracking, then backends, then the commands). Read from the
source with `ast`, so a lazy import inside a function counts as much as one at the top of a module:

* nothing outside ``primus/backends`` imports a backend: the patch catalog finds the backends' declaring modules
  through entry points, and the launcher dispatches to a backend by running its entry module by name;
* ``primus/upstreams`` (each upstream's declaration, how its imported release is found, and the backends found
  through their entry points) sits at the bottom: it imports nothing of Primus but itself, the package's name and
  ``primus.plugins`` (which imports nothing of Primus), so every layer can read the supported ranges;
* no circle of imports between modules of ``primus/``, nor between the rooms of ``primus/tracking/`` (its
  sub-packages and its top modules; ``scripts/import-graph`` draws them), and the tracking features (health,
  goodput, checkpoints, measure, tags) sit side by side above the journal: none imports another feature or the
  transport (the delivery, the hub, the run), and the trackers read events from ``journal/records``;
* a backend imports no other backend: what Megatron and Megatron-Bridge share (both megatron-core's training loop)
  is the one package ``primus/backends/megatron_core``, which imports neither;
* each backend's session (what one process holds for its run) is one class in ``primus/backends/<name>/session.py``,
  named by its ``Backend``: that module holds no other state than the one instance upstream's hooks reach."""

from __future__ import annotations

import ast
import runpy
from pathlib import Path

import pytest

from primus.upstreams.backends import backends

PRIMUS = Path(__file__).resolve().parents[1] / "primus"
IMPORT_GRAPH = runpy.run_path(str(PRIMUS.parent / "scripts" / "import-graph"))
graph_of, circles, rooms_of = IMPORT_GRAPH["graph_of"], IMPORT_GRAPH["circles"], IMPORT_GRAPH["rooms_of"]
FEATURES = tuple(f"primus.tracking.{room}" for room in ("health", "goodput", "checkpoints", "measure", "tags"))
TRANSPORT = ("primus.tracking.delivery", "primus.tracking.hub", "primus.tracking.run")


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved, ``from a import b`` counted as ``a.b``."""
    package = ".".join(path.relative_to(PRIMUS.parent).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def modules_under(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (PRIMUS / folder).rglob("*.py"))


def outside_backends() -> list[Path]:
    return sorted(p for p in PRIMUS.rglob("*.py") if "backends" not in p.relative_to(PRIMUS).parts)


def offenders(paths: list[Path], forbidden) -> dict[str, list[str]]:
    found = {str(p.relative_to(PRIMUS)): sorted(filter(forbidden, imported_modules(p))) for p in paths}
    return {path: names for path, names in found.items() if names}


def is_backend(name: str) -> bool:
    return name == "primus.backends" or name.startswith("primus.backends.")


def test_no_layer_below_the_backends_imports_one():
    assert offenders(outside_backends(), is_backend) == {}


def test_a_backend_imports_no_other_but_megatron_and_bridge_the_megatron_core_they_share():
    def backend_of(name: str) -> str | None:
        return name.split(".")[2] if is_backend(name) and name.count(".") >= 2 else None

    allowed = {"megatron": {"megatron_core"}, "megatron_bridge": {"megatron_core"}}
    crossings = {}
    for folder in sorted(p for p in (PRIMUS / "backends").iterdir() if p.is_dir() and p.name != "__pycache__"):
        others = {backend_of(name) for path in folder.rglob("*.py") for name in imported_modules(path)}
        crossings[folder.name] = others - {None, folder.name, *allowed.get(folder.name, ())}
    assert {"megatron", "megatron_bridge", "megatron_core"} <= set(crossings)
    assert {backend: sorted(names) for backend, names in crossings.items() if names} == {}


def test_the_upstream_declarations_import_nothing_of_primus_but_themselves():
    def primus_outside(name: str) -> bool:
        allowed = ("primus.upstreams", "primus.plugins", "primus.DISTRIBUTION")
        return name.split(".")[0] == "primus" and name != "primus" and not name.startswith(allowed)

    assert modules_under("upstreams"), "primus/upstreams is where the upstream declarations live"
    assert offenders(modules_under("upstreams"), primus_outside) == {}


@pytest.mark.parametrize("source, expected", [
    ("import primus.backends.megatron.patches", {"primus.backends.megatron.patches"}),
    ("from primus.backends.maxtext.upstream_versions import MAXTEXT",
     {"primus.backends.maxtext.upstream_versions", "primus.backends.maxtext.upstream_versions.MAXTEXT"}),
    ("from primus import backends", {"primus", "primus.backends"}),
    ("def f():\n    from ..backends import megatron", {"primus.backends", "primus.backends.megatron"}),
])
def test_every_form_of_import_is_seen(tmp_path, monkeypatch, source, expected):
    """The walk itself: absolute, from-, package and relative imports, inside a function too."""
    fake = tmp_path / "primus"
    (fake / "config").mkdir(parents=True)
    (fake / "config" / "module.py").write_text(source)
    monkeypatch.setattr(f"{__name__}.PRIMUS", fake)
    assert imported_modules(fake / "config" / "module.py") == expected


def in_room(name: str, rooms: tuple[str, ...]) -> str | None:
    return next((room for room in rooms if name == room or name.startswith(room + ".")), None)


def arrows_out(rooms: tuple[str, ...], forbidden) -> dict[str, list[str]]:
    """The arrows ``forbidden(module, target)`` from modules of ``rooms``, by module."""
    found = {name: sorted(t for t in targets if forbidden(name, t))
             for name, targets in graph_of(PRIMUS).items() if in_room(name, rooms)}
    return {name: targets for name, targets in found.items() if targets}


def test_no_circle_of_imports_in_primus():
    assert circles(graph_of(PRIMUS)) == []


def test_the_rooms_of_tracking_import_one_way():
    rooms = rooms_of(graph_of(PRIMUS), PRIMUS)
    assert {"primus.tracking.journal", "primus.tracking.delivery"} <= set(rooms), "tracking's rooms"
    assert circles(rooms) == []


def test_a_tracking_feature_imports_neither_another_feature_nor_the_transport():
    def crossing(name: str, target: str) -> bool:
        other = in_room(target, FEATURES) not in (None, in_room(name, FEATURES))
        return other or in_room(target, TRANSPORT) is not None

    assert arrows_out(FEATURES, crossing) == {}


def test_the_trackers_read_the_journal_not_the_features_that_write_it():
    writers = ("primus.tracking.health", "primus.tracking.goodput", "primus.tracking.checkpoints")
    sinks = ("primus.tracking.trackers", "primus.tracking.sinks")
    assert arrows_out(sinks, lambda name, target: in_room(target, writers) is not None) == {}


def test_a_circle_is_seen_through_a_lazy_import_and_a_type_checking_one(tmp_path):
    """The walk itself: a -> b at the top, b -> c inside a function, c -> a only for the type checker."""
    fake = tmp_path / "primus"
    (fake / "tracking").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "a.py").write_text("from primus.b import thing")
    (fake / "b.py").write_text("def f():\n    from primus import c")
    (fake / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import primus.a")
    (fake / "d.py").write_text("import primus.a")
    assert circles(graph_of(fake)) == [["primus.a", "primus.b", "primus.c"]]


def test_each_backend_keeps_its_session_in_one_class_of_its_session_module():
    own = [b for b in backends() if b.entry_module.startswith("primus.backends.")]
    assert len(own) == 4
    for backend in own:
        module, _, name = backend.session_class.partition(":")
        assert module == f"primus.backends.{backend.name}.session", backend.name
        tree = ast.parse((PRIMUS / "backends" / backend.name / "session.py").read_text(encoding="utf-8"))
        assert name in {node.name for node in tree.body if isinstance(node, ast.ClassDef)}, backend.session_class
        state = [ast.unparse(n.value) for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value]
        assert [value for value in state if not value.startswith("get_logger(")] == [f"{name}()"], backend.name
    assert list(PRIMUS.rglob("global_vars.py")) == []  # upstream's module name, not where a session lives
