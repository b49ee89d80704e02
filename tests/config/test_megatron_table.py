import subprocess
import sys

import pytest

from primus.config import yaml12
from primus.config.schemas.megatron import PRIMUS_PARAMS
from primus.config.schemas.megatron_table import TABLE_PATH


def test_primus_parameters_are_not_upstream_arguments():
    """If upstream adopts one of our names, the two definitions must be reconciled by hand."""
    upstream = yaml12.load_file(TABLE_PATH)["args"]
    assert {p.name for p in PRIMUS_PARAMS} & set(upstream) == set()
    assert yaml12.load_file(TABLE_PATH)["megatron_core"] == "0.19.2"


@pytest.mark.slow
def test_checked_in_table_matches_the_installed_megatron_core():
    """Regenerate the table from upstream's own parser: fails when upstream changed under us."""
    result = subprocess.run(
        [sys.executable, "-m", "primus.config.schemas.megatron_table", "--check"],
        capture_output=True, text=True, timeout=300, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
