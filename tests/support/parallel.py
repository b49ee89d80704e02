"""`make test` runs the suite in two pytest-xdist workers (``-n 2``): half the time of one process is spent waiting
on trainings, servers and subprocesses, and the box has two cores. ``GroupScheduling`` hands the workers whole
groups of tests (xdist's own ``loadgroup`` marks do not reach its scheduler under pytest 9):

* What one worker starts for many tests stays with one worker: each test file is one group, and files whose tests
  read one shared training are one group with every file that reads it, so no training runs twice and a module's
  fixtures run once. Shared trainings are the session fixtures in ``SHARED_TRAININGS`` (the other session fixtures
  are factories, folders and clients, cheap to make in each worker) and the runs of a module-level ``RunPool``
  (support/run_pool.py) that helpers the test file imports start.
* The groups costing most go first (their files' measured weight, ``WEIGHTS``), so the last group to start is a
  short one and both workers end near together. Only the order of groups changes; tests must not depend on it.
* One MLflow server for the whole session: started by the controlling process, its address handed to each worker
  in its ``workerinput`` (not the environment: a pytest a test starts in a subprocess has a session of its own);
  a plain ``pytest`` starts its own.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import types
from collections.abc import Iterable
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

from support.run_pool import RunPool

SHARED_SERVER = "primus_mlflow_server"  # workerinput: "<port> <root>" of the session's server
GROUPS_FILE = "primus_groups_file"  # workerinput: where the workers write each test file's group for the controller
# Session fixtures that train, read by tests in several files (a new one belongs here, or it trains once per worker)
SHARED_TRAININGS = frozenset({"stopped_then_resumed", "tracked", "resumed", "megatron_run_dir"})
# Seconds each file took in one serial run (its tests of 3 s or more; 2026-12-03, 1606 tests in 35 min under load):
# its group starts earlier the more its files weigh. A file not listed weighs a second.
WEIGHTS = {
    "tests/launch/test_slurm_cluster.py": 146,  # 2026-12-05, alone under a load of 6 (230 under 17)
    "tests/reliability/test_reliability_faults.py": 187,
    "tests/backends/megatron_bridge/test_bridge_checkpoints.py": 141,
    "tests/backends/megatron_bridge/test_bridge_entry_points.py": 129,
    "tests/backends/megatron/test_upstream_releases.py": 88,
    "tests/backends/megatron_bridge/test_bridge_reliability.py": 82,
    "tests/backends/megatron/test_cpu_training.py": 81,
    "tests/test_dependency_floors.py": 73,
    "tests/backends/megatron/test_checkpoint_patches.py": 73,
    "tests/backends/torchtitan/test_tracking_end_to_end.py": 71,
    "tests/reliability/test_bad_inputs.py": 62,
    "tests/reliability/test_goodput_restart.py": 61,
    "tests/backends/maxtext/test_maxtext_checkpointing_patches.py": 52,
    "tests/config/test_upstream_tables.py": 44,
    "tests/test_installed_package.py": 64,
    "tests/reliability/test_maxtext_reliability.py": 43,
    "tests/backends/torchtitan/test_titan_stragglers.py": 41,
    "tests/test_extras_resolve.py": 30,
    "tests/backends/torchtitan/test_resume_end_to_end.py": 41,
    "tests/backends/maxtext/test_maxtext_tracking_end_to_end.py": 41,
    "tests/backends/torchtitan/test_titan_stall_drill.py": 40,
    "tests/tracking/test_mlflow_faults.py": 34,
    "tests/backends/megatron/test_tracking_primus_train.py": 30,
    "tests/backends/megatron/test_megatron_prometheus.py": 60,  # measured 48-66 s alone (one held 2-rank job)
    "tests/config/test_megatron_table.py": 28,
    "tests/backends/megatron/test_spec_parameters.py": 26,
    "tests/backends/maxtext/test_maxtext_upstream_releases.py": 24,
    "tests/test_distribution.py": 16,
}


def is_controller(config: pytest.Config) -> bool:
    """The process that hands tests to xdist workers (not a worker, not a plain run)."""
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


class GroupScheduling(LoadScopeScheduling):
    """xdist's scheduling by scope, a scope being a test file's group: read from the file the workers wrote as they
    collected (each writes the same), once collection is complete and the first test is placed."""

    def __init__(self, config: pytest.Config, groups_file: Path, log=None) -> None:
        super().__init__(config, log)
        self._groups_file = groups_file
        self._groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:
            self._groups = json.loads(self._groups_file.read_text())
        path = nodeid.split("::", 1)[0]
        return self._groups.get(path, path)


def group_tests(items: list[pytest.Item], root: Path, groups_file: str) -> None:
    """In a worker: order ``items`` by group weight and write each file's group where the controller reads it."""
    groups = file_groups(items, root)
    order_by_weight(items, groups, root)
    target = Path(groups_file)
    partial = target.with_name(f"{target.name}.{os.getpid()}")
    partial.write_text(json.dumps(groups))
    partial.replace(target)  # whole, whichever worker writes last


def file_groups(items: Iterable[pytest.Item], root: Path) -> dict[str, str]:
    """Each test file's group: the files joined by the shared trainings their tests read (union-find)."""
    parent: dict[str, str] = {}

    def find(node: str) -> str:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    files = set()
    for item in items:
        path = relative(item, root)
        files.add(path)
        find(path)
        for training in [*_shared_trainings(item), *_shared_pools(item.module)]:  # type: ignore[attr-defined]
            parent[find(path)] = find(training)
    return {path: find(path) for path in files}


def order_by_weight(items: list[pytest.Item], groups: dict[str, str], root: Path) -> None:
    """Heaviest group first, each group's files in their collected order, tests within a file unchanged."""
    group_of = {item: groups[relative(item, root)] for item in items}
    weight = {group: 0.0 for group in groups.values()}
    for path, group in groups.items():
        weight[group] += WEIGHTS.get(path, 1.0)
    first_seen: dict[str, int] = {}
    for i, item in enumerate(items):
        first_seen.setdefault(group_of[item], i)
    items.sort(key=lambda item: (-weight[group_of[item]], first_seen[group_of[item]]))


def relative(item: pytest.Item, root: Path) -> str:
    return Path(item.path).resolve().relative_to(root).as_posix()


def _shared_trainings(item: pytest.Item) -> list[str]:
    """The shared trainings ``item`` reads, each as where its fixture is defined (a test's own fixture of the same
    name is another one)."""
    definitions = item._fixtureinfo.name2fixturedefs  # type: ignore[attr-defined]
    found = []
    for name in SHARED_TRAININGS.intersection(item.fixturenames):
        definition = definitions[name][-1]
        if definition.scope == "session":
            found.append(f"{definition.baseid or '.'}::{name}")
    return found


@functools.cache
def _shared_pools(module: types.ModuleType) -> tuple[str, ...]:
    """The modules holding a ``RunPool`` whose functions this test module imported (their runs are once per
    process, read by every file that imports them)."""
    homes = {sys.modules.get(getattr(value, "__module__", "") or "") for value in vars(module).values()}
    return tuple(sorted(f"pool:{home.__name__}" for home in homes - {None, module}
                        if any(isinstance(value, RunPool) for value in vars(home).values())))


def shared_server_address(config: pytest.Config) -> tuple[Path, int] | None:
    """The root and port of the session's server the controlling process started, if this is one of its workers."""
    value = getattr(config, "workerinput", {}).get(SHARED_SERVER)
    if not value:
        return None
    port, root = value.split(" ", 1)
    return Path(root), int(port)
