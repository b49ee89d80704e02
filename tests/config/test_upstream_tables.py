"""The generated tables of upstream config fields (TorchTitan per minor release, MaxText): a table per release
chosen by the release installed here, Primus's own keys kept apart from upstream's, and each table regenerated
from the installed upstream (slow: it imports the trainer) so a changed upstream fails here first."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.this_primus import this_primus_folder, with_this_primus

from primus.backends.maxtext import schema as maxtext
from primus.backends.megatron_bridge import schema as megatron_bridge
from primus.backends.torchtitan import schema as torchtitan
from primus.config.schemas import schema_for, upstream_tables
from primus.launch.job import interpreter


def test_the_installed_release_selects_its_table_else_the_newest(tmp_path, monkeypatch):
    for release in ("0.2", "0.3", "0.10"):
        (tmp_path / f"torchtitan_{release}.yaml").write_text("fields: {}\n")
    monkeypatch.setattr(upstream_tables, "SCHEMA_TABLES_DIR", tmp_path)
    assert upstream_tables.select("torchtitan", "0.2.2").name == "torchtitan_0.2.yaml"
    assert upstream_tables.select("torchtitan", "0.3.1.dev4").name == "torchtitan_0.3.yaml"
    assert upstream_tables.select("torchtitan", "0.4.0").name == "torchtitan_0.10.yaml"  # numbers, not text
    assert upstream_tables.select("torchtitan", None).name == "torchtitan_0.10.yaml"  # not installed here


@pytest.mark.parametrize("module, release", [(torchtitan, "0.3.0"), (maxtext, "0.2.5"), (megatron_bridge, "0.6.2")])
def test_tables_of_the_pinned_releases_and_primus_keys_apart(module, release):
    framework = module.__name__.split(".")[-2]  # primus.backends.<framework>.schema
    table = upstream_tables.load(module.table())
    assert table[framework] == release
    primus_keys = {p.name for p in module.PARAMS if p.primus}
    assert primus_keys & set(table["fields"]) == set()  # if upstream adopts a name of ours, reconcile by hand
    schema = schema_for(framework)
    left_out = getattr(module, "CREDENTIALS", frozenset())  # refused in a config file like any credential
    assert all(schema.params[name].annotation
               for name in set(table["fields"]) - {p.name for p in module.PARAMS} - left_out)


@pytest.mark.slow
@pytest.mark.parametrize("generator, python", [
    ("primus.backends.torchtitan.upstream_table", sys.executable),
    ("primus.backends.maxtext.upstream_table", interpreter("maxtext")),
    ("primus.backends.megatron_bridge.upstream_table", interpreter("megatron_bridge")),
])
def test_checked_in_table_matches_the_installed_upstream(generator, python, tmp_path):
    """Regenerate from upstream's own config classes: fails when upstream changed under us. Another environment's
    interpreter runs this checkout's generator (support/this_primus.py)."""
    env = {"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"}
    result = subprocess.run([python, "-m", generator, "--check"], capture_output=True, text=True, timeout=300,
                            env=with_this_primus(this_primus_folder(tmp_path), env))
    assert result.returncode == 0, result.stderr[-2000:]
