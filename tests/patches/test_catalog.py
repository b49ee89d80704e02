"""The catalog loads the declaring modules: each backend's (entry-point group primus.backends), those other
distributions register (group primus.patches), then PRIMUS_EXTRA_PATCH_MODULES (test/extension hook). Primus's own
backends come from its installed metadata: without it (a source tree on PYTHONPATH) loading is an error, never a
run with no patch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.demo_wheel import install_demo_wheel
from support.plugin_dists import PATCH_ID, install_patch_plugin

import primus
from primus.patches import REGISTRY
from primus.upstreams.backends import backends
from primus.patches.catalog import EXTRA_MODULES_ENV, backend_modules, declaring_modules, load_all
from primus.patches.registry import PLATFORM_ENV, detect_platform


def test_every_declared_patch_module_loads_and_declares_unique_ids():
    load_all()  # registering twice would raise DuplicatePatchError: a second load must be a no-op
    load_all()
    ids = [p.id for p in REGISTRY.patches()]
    assert len(ids) == len(set(ids))


# In a fresh process, so that each module's own registrations are the ones counted.
_COUNT_REGISTRATIONS = """
import importlib, sys
from primus.patches import REGISTRY
for name in sys.argv[1:]:
    before = len(REGISTRY.patches())
    importlib.import_module(name)
    print(name, len(REGISTRY.patches()) - before)
"""


def patch_modules() -> list[str]:
    """The modules in the backends' patches folders, by name."""
    root = Path(__file__).resolve().parents[2]
    files = sorted(root.glob("primus/backends/*/patches/**/*.py"))
    return [".".join(f.relative_to(root).with_suffix("").parts) for f in files if f.name != "__init__.py"]


def test_a_backends_patches_folder_holds_only_modules_that_register_patches():
    names = patch_modules()
    counted = subprocess.run([sys.executable, "-c", _COUNT_REGISTRATIONS, *names], capture_output=True, text=True,
                             check=True).stdout.split("\n")
    registered = dict(line.split() for line in counted if line)
    assert {name.split(".")[2] for name in names} == {"megatron", "torchtitan", "maxtext", "megatron_bridge"}
    assert set(registered) == set(names)
    assert [name for name in names if registered[name] == "0"] == [], "move helpers beside patches/, not in it"
    assert set(backend_modules()) == set(names), "each is named by its backend (primus/backends/*/backend.py)"
    assert all(m.startswith(f"primus.backends.{b.name}.") for b in backends() for m in b.patch_modules)


def test_the_backends_modules_load_first_by_backend_then_the_plugins_then_the_extra_ones(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(install_patch_plugin(tmp_path / "site")))
    monkeypatch.setenv(EXTRA_MODULES_ENV, "json")
    listed = [(b.position, b.name) for b in backends()]
    assert listed == sorted(listed) and len(backend_modules()) == len(patch_modules()) > 1
    by_backend = tuple(m for b in backends() for m in b.patch_modules)
    assert declaring_modules() == (*by_backend, "primus_demo_patches.declarations", "json")


def test_the_secret_name_check_wraps_validate_args_outside_the_planning():
    """Patches on one function wrap it in load order: the check must refuse a secret before the plan is made."""
    order = [module.rpartition(".")[2] for module in declaring_modules()]
    assert order.index("arguments_patches") < order.index("secret_arguments_patches")


# Primus as a bare source tree on sys.path, with only the packages the catalog imports, and no metadata.
_BARE_TREE = """
import sys
sys.path[:0] = sys.argv[1:]
from primus.patches.catalog import load_all
load_all()
"""


def test_a_source_tree_that_is_not_installed_is_refused_with_the_fix(tmp_path):
    import packaging
    import wrapt

    for package in (primus, wrapt, packaging):
        (tmp_path / package.__name__).symlink_to(Path(package.__file__).parent)
    # isolated (-I: neither the working directory, where a build leaves primus_tracking.egg-info, nor PYTHONPATH),
    # without site-packages (-S)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", _BARE_TREE, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1
    assert ("ValueError: primus's own backends cannot be found: they are entry points (group primus.backends) of "
            "the distribution primus-tracking, which is not installed") in done.stderr
    assert "`pip install -e <source tree>`" in done.stderr


def test_metadata_installed_before_the_entry_points_is_refused(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(install_demo_wheel(tmp_path, {}, name=primus.DISTRIBUTION, version="0.0.1",
                                                       entry_points={"console_scripts": {"primus": "m:f"}})))
    backends.cache_clear()
    try:
        with pytest.raises(ValueError, match="primus-tracking, which 0.0.1 is installed without them.*reinstall it"):
            load_all()
    finally:
        backends.cache_clear()


def test_extra_modules_are_appended(monkeypatch):
    monkeypatch.setenv(EXTRA_MODULES_ENV, " json , csv")
    assert declaring_modules()[-2:] == ("json", "csv")


def test_an_extra_module_that_cannot_be_imported_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(EXTRA_MODULES_ENV, "primus_no_such_declarations")
    with pytest.raises(ValueError, match="'primus_no_such_declarations'.*PRIMUS_EXTRA_PATCH_MODULES.*PYTHONPATH"):
        load_all()


def test_forced_platform_is_validated(monkeypatch):
    monkeypatch.setenv(PLATFORM_ENV, "CPU")
    assert detect_platform() == "cpu"
    monkeypatch.setenv(PLATFORM_ENV, "gpu")
    with pytest.raises(ValueError, match="PRIMUS_PLATFORM='gpu' is not a platform; use one of cpu, cuda"):
        detect_platform()


PROBE = (f"import demo_plugin_target as t; from primus.patches import REGISTRY; "
         f"print(t.greet('x'), [r.status for r in REGISTRY.records() if r.id == {PATCH_ID!r}])")


def _primus_run(site: Path, *command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for name in ("PRIMUS_ACTIVATE", "PRIMUS_PATCHES", "PRIMUS_DISABLE_PATCHES", EXTRA_MODULES_ENV):
        env.pop(name, None)
    return subprocess.run(["primus-run", *command], env=env, capture_output=True, text=True, timeout=120)


def test_an_installed_distribution_adds_its_patch_module(tmp_path):
    site = install_patch_plugin(tmp_path / "site")
    done = _primus_run(site, "python", "-c", PROBE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "HELLO X ['applied']"


@pytest.mark.parametrize("value, expected", [
    ("primus_demo_patches.declarations:install", "entry point `demo = primus_demo_patches.declarations:install` "
     "(group primus.patches) of distribution primus-demo-patches 0.1 names an object; a patch plugin's entry point "
     "names the module that declares its patches: `demo = primus_demo_patches.declarations`"),
    ("primus_demo_patches.gone", "entry point `demo = primus_demo_patches.gone` (group primus.patches) of distribution "
     "primus-demo-patches 0.1 cannot be loaded (ModuleNotFoundError: No module named 'primus_demo_patches.gone'): "
     "fix or reinstall that distribution, or uninstall it"),
])
def test_a_broken_patch_plugin_stops_the_command_before_it_runs(tmp_path, value, expected):
    site = install_patch_plugin(tmp_path / "site", value=value)
    done = _primus_run(site, "python", "-c", "print('ran')")
    assert done.returncode == 2 and "ran" not in done.stdout
    assert expected in done.stderr
