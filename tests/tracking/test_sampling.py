"""Background sampling threads (tracking/measure/sampling_threads.py) end at exit before the interpreter finalizes (a daemon thread
waking during finalization can abort the process: python/cpython#127893), and while the process lives they sample
until their owner is gone. Each case runs in a process of its own: ending the sampling is for the whole process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

ENDS_AT_EXIT = """
import atexit, threading
def check():  # registered first, so run last: after every handler registered later, as the sampling's
    alive = [t.name for t in threading.enumerate() if t.name == "primus-utilisation"]
    print("alive at exit:", alive, flush=True)
atexit.register(check)
from primus.tracking.measure.perf import Utilisation
u = Utilisation(interval_s=0.01)
u.read()
assert any(t.name == "primus-utilisation" for t in threading.enumerate())
"""

SAMPLES_UNTIL_ITS_OWNER_IS_GONE = """
import gc, threading, time
from primus.tracking.measure.sampling_threads import sample_every
class Owner:
    samples = 0
owner = Owner()
thread = sample_every(0.01, owner, lambda o: setattr(o, "samples", o.samples + 1), "test-sampler")
deadline = time.monotonic() + 30
while owner.samples < 3 and time.monotonic() < deadline:
    time.sleep(0.01)
print("sampled:", owner.samples >= 3)
del owner
gc.collect()
thread.join(30)
print("ended with its owner:", not thread.is_alive())
"""


def run_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_sampling_thread_has_ended_before_the_interpreter_finalizes():
    assert "alive at exit: []" in run_python(ENDS_AT_EXIT)


def test_a_sampling_thread_samples_until_its_owner_is_gone():
    out = run_python(SAMPLES_UNTIL_ITS_OWNER_IS_GONE)
    assert "sampled: True" in out and "ended with its owner: True" in out
