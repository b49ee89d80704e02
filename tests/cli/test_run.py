"""`primus-run CMD...` activates patches in every Python the command starts (bootstrap
sitecustomize on PYTHONPATH), chains the user's own sitecustomize, and costs nothing without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from primus.activation import BOOTSTRAP_DIR, activation_env

BIN = Path(sys.executable).parent
HEAVY = ("torch", "wandb", "mlflow", "megatron")

TARGET = '''
def greet(name):
    return f"hello {name}"
'''
DECLARATIONS = '''
from primus.patches import REGISTRY, Patch

def install(module, handle):
    handle.wrap(module, "greet", lambda wrapped, instance, args, kwargs: wrapped(*args, **kwargs).upper())

REGISTRY.register(Patch("demo.shout", "demo_target", None, "", install, backend="demo"))
'''
# Prints what the child saw: heavy modules loaded at start-up, the patch before/after the import.
PROBE = f'''
import json, os, sys
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})
from primus.patches import REGISTRY
pending = [r.status for r in REGISTRY.records() if r.id == "demo.shout"]
import demo_target
# one write per line: torchrun's two workers share this pipe, and unbuffered, print's text and its newline are two
sys.stdout.write(json.dumps({{"heavy": heavy, "pending": pending, "greet": demo_target.greet("x"),
                             "rank": os.environ.get("RANK"), "config": os.environ.get("PRIMUS_CONFIG")}}) + "\\n")
'''


@pytest.fixture
def project(tmp_path):
    """A directory with a target module, a module declaring a patch on it, and the probe script; and
    the environment that makes them importable and loads the declarations."""
    (tmp_path / "demo_target.py").write_text(TARGET)
    (tmp_path / "demo_declarations.py").write_text(DECLARATIONS)
    (tmp_path / "probe.py").write_text(PROBE)
    env = os.environ | {"PYTHONPATH": str(tmp_path), "PRIMUS_EXTRA_PATCH_MODULES": "demo_declarations",
                        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "OMP_NUM_THREADS": "1"}
    for name in ("PRIMUS_ACTIVATE", "PRIMUS_CONFIG", "PRIMUS_PATCHES", "PRIMUS_DISABLE_PATCHES"):
        env.pop(name, None)
    return tmp_path, env


def run(args: list[str], env: dict[str, str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def probe_output(done: subprocess.CompletedProcess) -> list[dict]:
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_patch_applies_in_the_child_when_the_target_is_imported(project):
    cwd, env = project
    config = cwd / "exp.yaml"
    config.write_text("{}\n")
    done = run(["primus-run", "--config", "exp.yaml", "python", "probe.py"], env, cwd)
    [seen] = probe_output(done)
    assert seen == {"heavy": [], "pending": ["pending"], "greet": "HELLO X", "rank": None, "config": str(config)}


def test_patch_applies_in_every_torchrun_worker(project):
    cwd, env = project
    done = run(["primus-run", "torchrun", "--standalone", "--nproc_per_node", "2", "probe.py"], env, cwd, timeout=120)
    seen = probe_output(done)
    assert sorted((s["rank"], s["greet"]) for s in seen) == [("0", "HELLO X"), ("1", "HELLO X")]


def test_without_activation_nothing_of_primus_is_imported(project):
    cwd, env = project
    env = activation_env(env)
    del env["PRIMUS_ACTIVATE"]
    code = "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] == 'primus'))"
    done = run([sys.executable, "-c", code], env, cwd)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_import_primus_loads_no_heavy_module(project):
    cwd, env = project
    code = f"import primus.activation, sys; print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"
    done = run([sys.executable, "-c", code], env, cwd)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


@pytest.mark.parametrize("activate", [True, False])
def test_the_users_own_sitecustomize_still_runs(project, activate):
    cwd, env = project
    user_site = cwd / "user_site"
    user_site.mkdir()
    (user_site / "sitecustomize.py").write_text(textwrap.dedent('''
        import sys
        PRIMUS_ACTIVE_BEFORE_ME = "primus.activation" in sys.modules
    '''))
    env = env | {"PYTHONPATH": f"{user_site}{os.pathsep}{env['PYTHONPATH']}"}
    env = activation_env(env) if activate else env | {"PYTHONPATH": f"{BOOTSTRAP_DIR}{os.pathsep}{env['PYTHONPATH']}"}
    code = "import sitecustomize as s; print(s.__file__, s.PRIMUS_ACTIVE_BEFORE_ME)"
    done = run([sys.executable, "-c", code], env, cwd)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(user_site / "sitecustomize.py"), str(activate)]


def test_bad_selection_is_refused_before_the_command_runs(project):
    cwd, env = project
    done = run(["primus-run", "python", "-c", "print('ran')"], env | {"PRIMUS_PATCHES": "demo.shuot"}, cwd)
    assert done.returncode == 2 and "ran" not in done.stdout
    assert "PRIMUS_PATCHES='demo.shuot' names unknown patch ids ['demo.shuot']" in done.stderr


def test_activation_failure_inside_a_child_stops_it_with_a_message(project):
    cwd, env = project
    env = activation_env(env) | {"PRIMUS_PATCHES": "demo.shuot"}
    done = run([sys.executable, "-c", "print('ran')"], env, cwd)
    assert done.returncode == 2 and "ran" not in done.stdout
    assert done.stderr.startswith("primus: cannot activate patches: PRIMUS_PATCHES='demo.shuot'")


@pytest.mark.parametrize("args,code,message", [
    ([], 2, "no command given"),
    (["--config", "missing.yaml", "python"], 2, "--config 'missing.yaml': no such file"),
    (["primus-no-such-command"], 127, "command not found: 'primus-no-such-command'"),
])
def test_usage_errors(project, args, code, message):
    cwd, env = project
    done = run(["primus-run", *args], env, cwd)
    assert done.returncode == code and message in done.stderr


def test_activation_env_puts_the_bootstrap_first_once():
    env = activation_env({"PYTHONPATH": f"/a{os.pathsep}{BOOTSTRAP_DIR}{os.pathsep}"}, config="exp.yaml")
    assert env["PYTHONPATH"] == os.pathsep.join([str(BOOTSTRAP_DIR), "/a", ""])
    assert env["PRIMUS_ACTIVATE"] == "1" and env["PRIMUS_CONFIG"] == str(Path("exp.yaml").resolve())
    assert activation_env({})["PYTHONPATH"] == str(BOOTSTRAP_DIR)


def test_a_command_beside_primus_runs_interpreter_is_found_without_the_venv_on_path(project):
    """`.venv/bin/primus-run torchrun ...` with the environment not activated: torchrun is .venv/bin's."""
    cwd, env = project
    env = env | {"PATH": "/usr/bin:/bin"}
    done = run([str(BIN / "primus-run"), "torchrun", "--help"], env, cwd)
    assert done.returncode == 0, done.stderr
    assert "usage: torchrun" in done.stdout
    assert f"primus-run: torchrun is not on PATH; running {BIN / 'torchrun'} (beside primus-run's interpreter)" \
        in done.stderr
