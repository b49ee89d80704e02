"""The Megatron argument tables: one per supported megatron-core minor release, each what that release's own
parser holds (regenerated and compared, for the pinned release and every other release of the matrix), and
the schema built from the table of the release found here."""

import subprocess
import sys

import pytest
from support.upstreams import releases, upstream_env

from primus.config import yaml12
from primus.backends.megatron.schema import PRIMUS_PARAMS, upstream_params
from primus.backends.megatron.upstream_table import MINOR_RELEASES, PINNED_MINOR, installed_minor, minor_of, table_path


@pytest.mark.parametrize("minor", MINOR_RELEASES)
def test_primus_parameters_are_not_upstream_arguments(minor):
    """If upstream adopts one of our names, the two definitions must be reconciled by hand."""
    upstream = yaml12.load_file(table_path(minor))["args"]
    assert {p.name for p in PRIMUS_PARAMS} & set(upstream) == set()
    assert minor_of(yaml12.load_file(table_path(minor))["megatron_core"]) == minor


def test_the_schema_uses_the_table_of_the_installed_release():
    assert installed_minor() == PINNED_MINOR
    assert {p.name for p in upstream_params()} == set(yaml12.load_file(table_path(PINNED_MINOR))["args"])


def test_tables_differ_where_upstream_did():
    """0.19 added arguments 0.17 did not have: a table per release is not one table copied."""
    newer, older = (set(yaml12.load_file(table_path(m))["args"]) for m in ("0.19", "0.17"))
    assert newer - older and older != newer


def megatron_table(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "primus.backends.megatron.upstream_table", *args],
                          capture_output=True, text=True, timeout=300,
                          env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", **(env or {})})


@pytest.mark.slow
@pytest.mark.parametrize("version", [None, *releases("megatron-core")])
def test_checked_in_table_matches_the_release_parser(version):
    """Regenerate each table from its release's own parser: fails when upstream changed under us."""
    result = megatron_table("--check", env=upstream_env("megatron-core", version) if version else None)
    assert result.returncode == 0, result.stderr[-2000:]


def test_config_validate_checks_against_the_release_found(tmp_path):
    """chat_template is a 0.19 argument: valid with the pinned release, unknown on a 0.17 checkout."""
    primus = [sys.executable, "-m", "primus.cli.main", "config", "validate",
              "configs/megatron/tiny_cpu.yaml", "modules.pre_trainer.overrides.chat_template=chatml"]
    pinned = subprocess.run(primus, capture_output=True, text=True, timeout=120)
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    older = subprocess.run(primus, capture_output=True, text=True, timeout=120,
                           env={"PATH": "/usr/bin:/bin", **upstream_env("megatron-core", "0.17.1")})
    assert older.returncode != 0
    assert "chat_template" in older.stdout + older.stderr
