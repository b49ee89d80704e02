"""Throwaway plugin distributions, laid out as pip installs them (``demo_wheel``), for a folder put on
PYTHONPATH (or sys.path): one registering a tracker in ``primus.sinks``, one registering a patch module in
``primus.patches``, one adding a whole backend (``primus.backends``) for a toy trainer.

The demo tracker appends what it receives to ``<run dir>/demo_sink.jsonl``: one line per metrics record
(step, timestamp, values, and the pid of the process that delivered it), one at open (the run's context, the
target it resumed, and the names and W&B presence of the run's config it was given) and one at close (status, complete). While ``<run dir>/demo_sink_down`` exists it fails
to open, as a tracker whose server is down."""

from __future__ import annotations

import json
from pathlib import Path

from support.demo_wheel import install_demo_wheel

SINK_NAME = "demo"
SINK_DIST = "primus-demo-tracker"
SINK_MODULE_NAME = "primus_demo_tracker"
SINK_RECORD = "demo_sink.jsonl"
SINK_DOWN = "demo_sink_down"

SINK_MODULE = f'''
import json
import os

from primus.tracking.journal.reader import METRICS
from primus.tracking.sinks.sink import Sink


class DemoSink(Sink):
    name = {SINK_NAME!r}

    def __init__(self, context):
        self.context = context
        self.path = context.run_dir / {SINK_RECORD!r}

    def _append(self, obj):
        with open(self.path, "a") as f:
            f.write(json.dumps(obj) + "\\n")

    def open(self):
        if (self.context.run_dir / {SINK_DOWN!r}).exists():
            raise ConnectionError("the demo tracker is down")
        run_id = self.context.saved().get("run_id") or "demo-" + os.urandom(4).hex()
        self.context.save(run_id=run_id)
        c = self.context
        self._append({{"open": run_id, "run_name": c.run_name, "experiment": c.experiment_name,
                      "params": len(c.params), "tags": sorted(c.tags),
                      "config": [c.config.experiment_name, c.config.run_name, c.config.wandb is not None,
                                 c.config.comet is not None]}})
        return run_id

    def write(self, records):
        for r in records:
            if r.kind == METRICS:
                self._append({{"step": r.step, "ts": r.ts_ms, "metrics": dict(r.data), "pid": os.getpid()}})

    def close(self, status, complete):
        self._append({{"status": status, "complete": complete}})
'''


def install_sink_plugin(site: Path, module: str = SINK_MODULE, value: str = "primus_demo_tracker:DemoSink") -> Path:
    """``site`` with the demo tracker's distribution; ``module``/``value`` replace its code or its entry point."""
    return install_demo_wheel(site, {f"{SINK_MODULE_NAME}.py": module}, name=SINK_DIST, version="0.3",
                              entry_points={"primus.sinks": {SINK_NAME: value}})


def read_sink_record(run_dir: Path) -> list[dict]:
    path = run_dir / SINK_RECORD
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


PATCH_DIST = "primus-demo-patches"
PATCH_ID = "demo_plugin.shout"
PATCH_TARGET = "demo_plugin_target"
PATCH_FILES = {
    f"{PATCH_TARGET}.py": 'def greet(name):\n    return f"hello {name}"\n',
    "primus_demo_patches/__init__.py": "",
    "primus_demo_patches/declarations.py": f'''
from primus.patches import REGISTRY, Patch


def install(module, handle):
    handle.wrap(module, "greet", lambda wrapped, instance, args, kwargs: wrapped(*args, **kwargs).upper())


REGISTRY.register(Patch({PATCH_ID!r}, {PATCH_TARGET!r}, None, "", install, backend="demo"))
''',
}


def install_patch_plugin(site: Path, value: str = "primus_demo_patches.declarations") -> Path:
    """``site`` with a distribution whose patch module makes ``demo_plugin_target.greet`` shout."""
    return install_demo_wheel(site, PATCH_FILES, name=PATCH_DIST, version="0.1",
                              entry_points={"primus.patches": {"demo": value}})


BACKEND_DIST = "primus-toy-backend"
BACKEND_NAME = "toy"
TOY_FILES = {
    # the toy's upstream trainer: logs a loss per step
    "toytrainer/__init__.py": '''__version__ = "1.2.0"


def log(metrics, step):
    pass


def train(steps):
    for step in range(1, steps + 1):
        log({"toy/loss": 1.0 / step}, step)
''',
    "primus_toy_backend/__init__.py": "",
    "primus_toy_backend/backend.py": '''
from primus.upstreams.backends import LOSS, Backend
from primus.upstreams.release import Upstream

TOY = Upstream(name="Toy", distribution="toytrainer", package="toytrainer", supported=">=1.0,<2")
BACKEND = Backend(
    name="toy",
    title="Toy",
    position=10,
    upstream=TOY,
    patch_modules=("primus_toy_backend.patches",),
    entry_module="primus_toy_backend",
    schema_builder="primus_toy_backend.schema:schema",
    upstream_table_finder="primus_toy_backend.schema:table",
    metric_names={LOSS: ("toy/loss",)},
)
''',
    "primus_toy_backend/schema.py": '''
from primus.config.schema import Param, Schema
from primus.config.schemas.tracking import params_for


def schema():
    return Schema("toy key", [Param("steps", "int", default=3, help="steps to train"), *params_for("toy")])


def table():
    return None
''',
    "primus_toy_backend/patches.py": '''
from primus.patches import REGISTRY, Patch
from primus_toy_backend.backend import TOY


def install(module, handle):
    def log(wrapped, instance, args, kwargs):
        metrics, step = args
        print(f"[toy] tracked step {step}: {metrics}", flush=True)
        return wrapped(*args, **kwargs)

    handle.wrap(module, "log", log)


REGISTRY.register(Patch("toy.log", "toytrainer", TOY, ">=1.0,<2", install, backend="toy"))
''',
    "primus_toy_backend/__main__.py": '''
import primus.activation

primus.activation.activate()

import toytrainer  # noqa: E402
from primus.config.environment import module_params_from_env  # noqa: E402

toytrainer.train((module_params_from_env("toy") or {}).get("steps", 3))
''',
}


def install_backend_plugin(site: Path) -> Path:
    """``site`` with a toy upstream trainer and a distribution adding it as a backend (entry point ``toy`` of the
    group ``primus.backends``): its object, a patch on the trainer's ``log``, its schema and its entry module."""
    install_demo_wheel(site, {k: v for k, v in TOY_FILES.items() if k.startswith("toytrainer/")},
                       name="toytrainer", version="1.2.0")
    return install_demo_wheel(site, {k: v for k, v in TOY_FILES.items() if not k.startswith("toytrainer/")},
                              name=BACKEND_DIST, version="0.1",
                              entry_points={"primus.backends": {BACKEND_NAME: "primus_toy_backend.backend:BACKEND"}})
