"""Which upstream code is imported and which release it is: read from the package Python would import (a
source tree first on sys.path wins over the installed wheel), parsed, never run; the wheel's metadata only
for a wheel's own files that carry no version."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest
from support.demo_wheel import install_demo_wheel

from primus.upstreams.release import (
    SOURCE_TREE,
    UPSTREAM_CHECK_ENV,
    WHEEL,
    Found,
    Upstream,
    locate,
    read_version,
    upstream_check,
)

DEMO = Upstream("Demo", "demo-upstream", "demo_upstream", ">=1,<2")


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on sys.path, like site-packages; demo_upstream forgotten afterwards."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for name in [m for m in sys.modules if m.split(".")[0] == "demo_upstream"]:
        del sys.modules[name]
    importlib.invalidate_caches()


def put_first_on_path(monkeypatch, folder):
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()


@pytest.mark.parametrize("text,version", [
    ('__version__ = "0.3.0"\n', "0.3.0"),
    ("MAJOR = 0\nMINOR = 18\nPATCH = 2\nPRE_RELEASE = 'rc1'\nVERSION = (MAJOR, MINOR, PATCH, PRE_RELEASE)\n"
     "__version__ = '.'.join(map(str, VERSION[:3])) + ''.join(VERSION[3:])\n", "0.18.2rc1"),  # megatron's form
    ("MAJOR = 0\nMINOR = 17\nPATCH = 1\n", "0.17.1"),
    ("from importlib.metadata import version\n__version__ = version('torchtitan')\n", None),  # not a literal
    ('__version__ = "not a version"\n', None),
    ("def broken(:\n", None),
    ("", None),
])
def test_read_version_parses_python_files(tmp_path, text, version):
    path = tmp_path / "package_info.py"
    path.write_text(text)
    assert read_version(path) == version


def test_read_version_takes_a_text_file_holding_the_version_alone(tmp_path):
    (tmp_path / "version.txt").write_text("0.2.2\n")
    (tmp_path / "junk.txt").write_text("hello world\n")
    assert read_version(tmp_path / "version.txt") == "0.2.2"
    assert read_version(tmp_path / "junk.txt") is None
    assert read_version(tmp_path / "missing.txt") is None


def test_read_version_does_not_run_the_file(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "v.py").write_text(f"open({str(marker)!r}, 'w').close()\n__version__ = '1.0'\n")
    assert read_version(tmp_path / "v.py") == "1.0"
    assert not marker.exists()


def test_installed_wheel(site):
    install_demo_wheel(site, {"demo_upstream/__init__.py": '__version__ = "1.4"\n'}, version="1.4")
    found = locate(DEMO)
    assert (found.version, found.origin, found.path) == ("1.4", WHEEL, str(site / "demo_upstream"))
    assert found.problem() is None
    assert found.describe() == f"demo-upstream 1.4 (wheel {site / 'demo_upstream'})"


def test_wheel_without_a_version_in_its_files_falls_back_to_its_metadata(site):
    install_demo_wheel(site, {"demo_upstream/__init__.py": "x = 1\n"}, version="1.2")
    assert (locate(DEMO).version, locate(DEMO).origin) == ("1.2", WHEEL)


def checkout_over_the_wheel(site, tmp_path, monkeypatch, init_text: str):
    """The 1.4 wheel installed, and a checkout whose __init__.py holds ``init_text`` first on the path."""
    install_demo_wheel(site, {"demo_upstream/__init__.py": '__version__ = "1.4"\n'}, version="1.4")
    tree = tmp_path / "checkout"
    (tree / "demo_upstream").mkdir(parents=True)
    (tree / "demo_upstream" / "__init__.py").write_text(init_text)
    put_first_on_path(monkeypatch, tree)
    return tree


def test_source_tree_over_the_wheel_is_judged_by_its_own_version(site, tmp_path, monkeypatch):
    tree = checkout_over_the_wheel(site, tmp_path, monkeypatch, '__version__ = "9.0"\n')
    found = locate(DEMO)
    assert (found.version, found.origin, found.path) == ("9.0", SOURCE_TREE, str(tree / "demo_upstream"))
    assert found.problem() == (f"demo-upstream 9.0 (source tree {tree / 'demo_upstream'}) is outside the supported "
                               f"range '>=1,<2'")


def test_source_tree_without_a_version_is_not_given_the_wheels(site, tmp_path, monkeypatch):
    tree = checkout_over_the_wheel(site, tmp_path, monkeypatch, "")
    found = locate(DEMO)
    assert (found.version, found.origin) == (None, SOURCE_TREE)
    assert found.problem() == (f"cannot tell which Demo release the source tree {tree / 'demo_upstream'} is: "
                               f"no version in __init__.py")


def test_version_files_are_tried_in_order_relative_to_the_package(site):
    """TorchTitan's checkout keeps its version in <repo>/assets/version.txt, beside the package."""
    upstream = Upstream("Demo", "demo-upstream", "demo_upstream", ">=1", version_files=("__init__.py",
                                                                                          "../assets/version.txt"))
    (site / "demo_upstream").mkdir()
    (site / "demo_upstream" / "__init__.py").write_text("from importlib.metadata import version\n")
    (site / "assets").mkdir()
    (site / "assets" / "version.txt").write_text("1.7\n")
    assert (locate(upstream).version, locate(upstream).origin) == ("1.7", SOURCE_TREE)


def test_the_imported_module_is_judged_not_what_the_path_holds_now(site, tmp_path, monkeypatch):
    """At a patch's post-import hook the code is already imported: a tree put on the path later changes nothing."""
    install_demo_wheel(site, {"demo_upstream/__init__.py": '__version__ = "1.4"\n'}, version="1.4")
    importlib.import_module("demo_upstream")
    tree = tmp_path / "late"
    (tree / "demo_upstream").mkdir(parents=True)
    (tree / "demo_upstream" / "__init__.py").write_text('__version__ = "9.0"\n')
    put_first_on_path(monkeypatch, tree)
    assert (locate(DEMO).version, locate(DEMO).origin) == ("1.4", WHEEL)


def test_subpackage_of_a_namespace_parent(site):
    """megatron.core: the parent ``megatron`` has no __init__.py (a namespace package)."""
    upstream = Upstream("Demo", "demo-upstream", "demo_upstream.core", ">=0.17", version_files=("package_info.py",))
    install_demo_wheel(site, {"demo_upstream/core/__init__.py": "",
                              "demo_upstream/core/package_info.py": textwrap.dedent("""\
                                  MAJOR = 0
                                  MINOR = 18
                                  PATCH = 2
                              """)}, version="0.18.2")
    found = locate(upstream)
    assert (found.version, found.origin, found.path) == ("0.18.2", WHEEL, str(site / "demo_upstream" / "core"))


def test_not_importable():
    found = locate(Upstream("Nothing", "primus-no-such-distribution", "primus_no_such.package", ">=1"))
    assert (found.version, found.origin, found.path) == (None, None, None)
    assert found.problem() == "primus_no_such.package is not importable (primus-no-such-distribution is not installed)"


# -- PRIMUS_UPSTREAM_CHECK: a release outside the range, refused (strict) or tried (warn) -------------------------
MEGATRON_LIKE = Upstream("M", "megatron-core", "megatron.core", ">=0.17,<0.20")


@pytest.mark.parametrize("version,untested", [("0.20.0", True), ("0.20.0rc1", True), ("0.16.1", True),
                                              ("0.17.0", False), ("0.19.2", False)])
def test_a_release_outside_the_range_is_a_problem_only_in_strict_mode(monkeypatch, version, untested):
    found = Found(MEGATRON_LIKE, version, WHEEL, "/x")
    assert found.untested is untested
    monkeypatch.delenv(UPSTREAM_CHECK_ENV, raising=False)
    assert (found.problem() is not None) is untested
    monkeypatch.setenv(UPSTREAM_CHECK_ENV, "warn")
    assert found.problem() is None


@pytest.mark.parametrize("version,serving", [
    # above the range: the variants that reach its top (no upper bound, or the range's own)
    ("0.20.0", {"", ">=0.19,<0.20", ">=0.18", "!=0.18.1"}),
    ("1.0.0rc1", {"", ">=0.19,<0.20", ">=0.18", "!=0.18.1"}),
    # below it: those that reach its bottom
    ("0.16.0", {"", "<0.19", ">=0.17,<0.18", "!=0.18.1"}),
    # inside it: plain membership
    ("0.18.2", {"", "<0.19", ">=0.18", "!=0.18.1"}),
])
def test_each_release_is_served_by_the_variant_written_for_it_or_for_the_nearest_end(version, serving):
    variants = ["", ">=0.19,<0.20", "<0.19", ">=0.18", ">=0.17,<0.18", "!=0.18.1"]
    found = Found(MEGATRON_LIKE, version, WHEEL, "/x")
    assert {v for v in variants if found.serves(v)} == serving


@pytest.mark.parametrize("raw,mode", [(None, "strict"), ("", "strict"), ("strict", "strict"), (" WARN ", "warn")])
def test_the_mode_is_strict_unless_warn_is_asked_for(raw, mode):
    assert upstream_check({} if raw is None else {UPSTREAM_CHECK_ENV: raw}) == mode


def test_any_other_mode_is_refused_naming_the_variable_the_value_and_the_choices():
    with pytest.raises(ValueError, match=r"PRIMUS_UPSTREAM_CHECK='off' is not a mode: use strict \(refuse .*\) or "
                                         r"warn \(try it, say so once, and tag the run\)"):
        upstream_check({UPSTREAM_CHECK_ENV: "off"})
