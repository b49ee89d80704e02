"""benchmarks/_cpu_accounting: the benchmarks' count of the thread CPU our entry points take from their callers,
wrapped from outside (its sitecustomize, on PYTHONPATH of a measured run) around code that holds no accounting."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import _measure  # noqa: E402
import cpu_accounted  # noqa: E402  # on sys.path through _measure, as in the benchmarks
import cpu_accounting  # noqa: E402

from primus.launch.job import interpreter  # noqa: E402

BUSY = textwrap.dedent("""
    import sys, time
    import cpu_accounting, wrapt

    def spin(seconds):
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            pass

    def upstream(seconds):  # upstream's code that our wrapper calls: not ours
        spin(seconds)

    def upstream_gather(seconds):  # upstream's, called by upstream and by our hook: never ours
        spin(seconds)

    gather = wrapt.FunctionWrapper(upstream_gather, cpu_accounting.theirs)

    def hook(seconds):  # ours, called from within upstream: counted inside the wrapper's entry
        spin(seconds)
        gather(0.1)

    cpu_accounting.start(sys.argv[1])
    hook = cpu_accounting.ours(hook, "hook")

    def wrapper(wrapped, instance, args, kwargs):
        spin(0.05)
        wrapped(*args, **kwargs)
        hook(0.05)
        return "result"

    patched = cpu_accounting.wrapper(wrapper, "patch:method")
    for _ in range(2):
        assert patched(lambda s: (upstream(s), hook(0.02)), None, (0.3,), {}) == "result"
    hook(0.1)
    gather(0.2)  # upstream's own call: no entry point of ours

    import threading
    other = threading.Thread(target=lambda: (gather(0.05), hook(0.03)), name="other")  # a thread of its own figures
    other.start()
    other.join()
""")


def python(code: str, env: dict[str, str], *args: str, executable: str = sys.executable) -> str:
    done = subprocess.run([executable, "-c", code, *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def accounting_off() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != cpu_accounting.ENV}


def test_our_cpu_is_counted_per_entry_point_and_upstreams_is_not(tmp_path):
    python(BUSY, {**accounting_off(), "PYTHONPATH": str(_measure.ACCOUNTING_SITE)}, str(tmp_path))
    [dump] = cpu_accounting.read(tmp_path)
    entries = dump["threads"]["MainThread"]["entries"]
    assert set(entries) == {"patch:method", "hook"}  # the outermost entry points only
    calls, ns = entries["patch:method"]
    # 2 x (0.05 + 0.02 + 0.05) s of ours; the 2 x 0.3 s of upstream's and 4 x 0.1 s of its gather are not counted
    assert calls == 2 and 0.24e9 <= ns < 0.5e9
    each = dump["threads"]["MainThread"]["each"]["patch:method"]  # per call, in order
    assert len(each) == 2 and sum(each) == ns and min(each) >= 0.11e9
    assert entries["hook"][0] == 1 and 0.1e9 <= entries["hook"][1] < 0.2e9
    assert dump["threads"]["MainThread"]["ns"] == ns + entries["hook"][1]
    # another thread: its own figures, not the main thread's again
    assert list(dump["threads"]["other"]["entries"]) == ["hook"]
    hook_calls, hook_ns = dump["threads"]["other"]["entries"]["hook"]
    assert hook_calls == 1 and 0.03e9 <= hook_ns < 0.1e9
    assert dump["process_cpu_s"] >= 1.4 and dump["peak_rss_mib"] > 1
    assert dump["interval_cost_ns"] > 0  # subtracted from every interval charged: the measuring is not ours


RUN = textwrap.dedent("""
    import importlib, sys
    from pathlib import Path
    from primus.patches import Patch
    from primus.patches.registry import PatchRegistry
    from primus.tracking import TrackingConfig, start_run

    root = Path(sys.argv[1])
    (root / "fake_upstream.py").write_text("def greet(who):\\n    return 'hello ' + who\\n\\n"
                                           "def explode(who):\\n    return who\\n")
    sys.path.insert(0, str(root))
    registry = PatchRegistry()
    shout = lambda wrapped, instance, args, kwargs: wrapped(*args, **kwargs).upper()
    registry.register(Patch("core.tracking.greet", "fake_upstream", None, "",
                            lambda module, handle: handle.wrap(module, "greet", shout)))
    registry.register(Patch("core.other.explode", "fake_upstream", None, "",
                            lambda module, handle: handle.wrap(module, "explode", shout)))
    registry.activate()
    module = importlib.import_module("fake_upstream")
    assert [module.greet("t"), module.explode("e")] == ["HELLO T", "E"]
    registry.deactivate()
    run = start_run(TrackingConfig(run_dir=root / "run"))
    for step in range(3):
        run.log(step, {"loss": 1.0})
    run.log_text("note", "text")
    run.finish()
    print("wrapped" if hasattr(type(run).log, "__wrapped__") else "plain", "cpu_accounted" in sys.modules)
""")


def test_from_outside_the_run_log_calls_and_the_tracking_patches_wrappers_are_ours(tmp_path):
    accounts = tmp_path / "accounts"
    out = python(RUN, _measure.accounting_env(accounting_off(), str(accounts)), str(tmp_path))
    assert out.split() == ["wrapped", "True"]
    [dump] = cpu_accounting.read(accounts)  # the one process that imported Primus
    entries = dump["threads"]["MainThread"]["entries"]
    assert {entry: calls for entry, (calls, _) in entries.items()} == {
        "core.tracking.greet:greet": 1,  # a tracking patch's wrapper, by <id>:<name>; the other patch's is not ours
        "Run.log": 3,
        "Run.log_text": 2,  # the note, and the goodput breakdown the run's end writes (tracking/goodput/feed.py)
    }


def test_off_nothing_is_wrapped_and_nothing_written(tmp_path):
    env = {**accounting_off(), "PYTHONPATH": str(_measure.ACCOUNTING_SITE)}
    assert python(RUN, env, str(tmp_path)).split() == ["plain", "False"]
    # what the run left: its directory only (the fake upstream's bytecode cache is Python's, written or not)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == ["fake_upstream.py", "run"]


def test_the_next_sitecustomize_on_the_path_still_runs(tmp_path):
    user_site = tmp_path / "site"
    user_site.mkdir()
    (user_site / "sitecustomize.py").write_text("MINE = True\n")
    env = _measure.accounting_env({**accounting_off(), "PYTHONPATH": str(user_site)}, str(tmp_path / "accounts"))
    code = "import sitecustomize as s, sys; print(s.MINE, 'cpu_accounted' in sys.modules)"
    assert python(code, env).split() == ["True", "True"]


DELIVERY = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from primus.tracking import TensorBoardConfig, TrackingConfig, start_run
    root, shared = Path(sys.argv[1]), sys.argv[2] == "shared"
    run = start_run(TrackingConfig(run_dir=root / "run", tensorboard=TensorBoardConfig(root / "tb"),
                                   delivery_group=root / "job" if shared else None))
    for step in range(5):
        run.log(step, {"loss": 1.0})
    run.finish()
    print(os.getpid())
""")


@pytest.mark.parametrize("delivery", ["own", "shared"])  # the run's own delivery process, the node's shared one
def test_the_delivery_process_notes_its_startup_and_dumps_as_it_leaves(tmp_path, delivery):
    # through run_measured, in a Python of its own (it makes its process a child subreaper for good), which
    # waits for the shared process, no child of the trainer, to leave
    measure = (f"import json, sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import _measure; "
               f"d = _measure.run_measured([sys.executable, '-c', {DELIVERY!r}, {str(tmp_path)!r}, {delivery!r}], "
               "dict(__import__('os').environ)); print(json.dumps([d.returncode, d.output, d.accounts, d.delivery]))")
    code, output, accounts, [startup] = json.loads(python(measure, accounting_off()))
    assert code == 0, output
    trainer = int(output.split()[-1])
    by_pid = {dump["pid"]: dump for dump in accounts}
    assert len(by_pid) == 2 and startup["pid"] != trainer
    # once TensorBoard's writer opened, after the interpreter and its imports; the whole process's figures after it
    # (VmHWM read on two threads may differ by the RSS counts a thread has not yet folded in: a few pages)
    assert 0.05 < startup["startup_cpu_s"] <= startup["process_cpu_s"]
    assert 10 < startup["startup_rss_mib"] < startup["peak_rss_mib"] + 1
    assert by_pid[trainer]["threads"]["MainThread"]["entries"]["Run.log"][0] == 5


@pytest.mark.slow  # imports Megatron, TorchTitan and MaxText
def test_every_function_the_accounting_wraps_is_there():
    check = ("import importlib, json, sys, wrapt\n"
             "for module, names in json.loads(sys.argv[1]).items():\n"
             "    for name in names:\n"
             "        wrapt.resolve_path(importlib.import_module(module), name)\n"
             "print('ok')")
    targets = {**cpu_accounted.OURS, **cpu_accounted.THEIRS}
    maxtext = {m: n for m, n in targets.items() if m.startswith("maxtext")}
    env = {**accounting_off(), "PYTHONPATH": str(BENCHMARKS.parent)}  # this checkout's primus, in both
    assert python(check, env, json.dumps({m: n for m, n in targets.items() if m not in maxtext})).split() == ["ok"]
    assert python(check, env, json.dumps(maxtext), executable=interpreter("maxtext")).split() == ["ok"]


def test_every_method_upstream_calls_on_megatrons_writer_is_counted():
    from primus.backends.megatron_core.tracking_summary_writer import TrackingSummaryWriter

    public = {f"TrackingSummaryWriter.{name}" for name, value in vars(TrackingSummaryWriter).items()
              if callable(value) and not name.startswith("_")}
    assert set(cpu_accounted.OURS["primus.backends.megatron_core.tracking_summary_writer"]) == public


ONE_LOGGER = textwrap.dedent("""
    from primus.backends.megatron.upstream_one_logger import UpstreamOneLogger

    one_logger = UpstreamOneLogger(lambda step, figures: None, ())
    with one_logger.get_context_manager():  # as upstream's one_logger_utils calls it
        one_logger.store_set("key", 1)
        one_logger.store_get("key")
        one_logger.log_metrics({"train_iterations_end": 1})
        one_logger.log_app_tag("tag")
""")


def test_the_methods_upstreams_one_logger_callbacks_call_are_ours(tmp_path):
    """Upstream's one_logger_utils calls the object Primus gives it a dozen times a logged step: every method its
    class defines is counted as ours (its store and its context are C callables: no code of ours runs)."""
    python(ONE_LOGGER, _measure.accounting_env(accounting_off(), str(tmp_path)))
    [dump] = cpu_accounting.read(tmp_path)
    entries = dump["threads"]["MainThread"]["entries"]
    assert {entry: calls for entry, (calls, _) in entries.items()} == {
        "UpstreamOneLogger.log_metrics": 1, "UpstreamOneLogger.log_app_tag": 1}


def test_make_bench_headline_is_megatrons_step_with_its_defaults_alone():
    """megatron_tracking prints the step's CPU of primus-all (One-Logger on, the default) and of One-Logger off:
    `make bench`'s headline (run_all.HEADLINE) takes the first alone."""
    import megatron_tracking
    import run_all

    measured = _measure.Measured("", 0, 1.0, [{"threads": {"MainThread": {"ns": 0, "entries": {
        megatron_tracking.PER_STEP_HOOK: [10, 400_000]}, "each": {}}}}])
    printed = [_measure.training_thread_lines(label, [measured], megatron_tracking.PER_STEP_HOOK, 10)
               for label in megatron_tracking.STEP_COST_LABELS.values()]
    headline = [line for text in printed for line in text.splitlines() if run_all.HEADLINE.match(line)]
    assert headline == ["megatron: training-thread CPU per logged step 40 µs"]
    assert list(megatron_tracking.STEP_COST_LABELS)[-1] == "primus-all"  # printed last, its lines closing the output
