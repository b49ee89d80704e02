"""The file-by-file table of docs/how-a-metric-travels.md is measured, not written by hand: one Megatron-shaped step
(upstream's ``training_log`` writing ``lm loss`` through the writer the patch installs, thread delivery, MLflow's
REST sink against a stand-in server) runs under ``sys.setprofile``/``threading.setprofile``, and the ``primus/``
files entered on the training thread, the hub's thread and the MLflow sink's worker thread, from upstream's call
of ``training_log`` until the MLflow request that carries the value leaves, must be the table's rows, in order,
with the threads the table names. The third step is the one measured: the first two also start goodput's
accounting and have the MLflow sink keep new metric names (progress and goodput figures appear over them)."""

from __future__ import annotations

import json
import re
import sys
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.one_patch import installed

import primus
from primus.backends.megatron.session import TRACKING
from primus.backends.megatron_core.tracking_summary_writer import TrackingSummaryWriter
from primus.tracking import TrackingConfig, start_run
from primus.tracking.settings.config import MlflowConfig

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "how-a-metric-travels.md"
TABLE = "## Megatron's `lm loss`, file by file"
PRIMUS = str(Path(primus.__file__).parent) + "/"
TRAINING, HUB, MLFLOW = "training thread", "hub thread", "MLflow worker thread"
LOSS = "lm loss"
WARM_UP = (1, 2)


def documented_path(text: str) -> list[tuple[str, str]]:
    """The table's rows: (file under primus/, the threads of the 'on' column)."""
    section = text.split(TABLE, 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| \d+ \| `([\w/]+\.py)` \|.*\| ([\w, ]+) \|$", section, re.MULTILINE)
    assert rows, f"no table under {TABLE!r} in {DOC.name}"
    return rows


class MlflowStandIn(BaseHTTPRequestHandler):
    """The MLflow REST calls the sink makes, answered as a server would (one experiment, one run)."""

    protocol_version = "HTTP/1.1"
    replies = {
        "/experiments/get-by-name": {"experiment": {"experiment_id": "1"}},
        "/runs/create": {"run": {"info": {"run_id": "r1", "status": "RUNNING", "artifact_uri": ""}}},
    }

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        endpoint = "/" + self.path.split("?")[0].split("/mlflow/", 1)[-1]
        data = json.dumps(self.replies.get(endpoint, {})).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST

    def log_message(self, *args):
        pass


@pytest.fixture
def mlflow_stand_in():
    server = ThreadingHTTPServer(("127.0.0.1", 0), MlflowStandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def upstream_training_module(writer):
    """``megatron.training.training`` as the patch sees it: ``training_log`` writes each loss with the writer."""

    def training_log(loss_dict, total_loss_dict, learning_rate, iteration, *rest):
        for key, value in loss_dict.items():
            writer().add_scalar(key, value, iteration)

    def num_floating_point_operations(args, batch_size):
        return 6.0 * batch_size

    def untouched(*args, **kwargs): ...

    return types.SimpleNamespace(
        training_log=training_log,
        num_floating_point_operations=num_floating_point_operations,
        get_num_microbatches=lambda: 1,
        evaluate_and_print_results=untouched,
        setup_model_and_optimizer=untouched,
    )


def megatron_args():
    """The upstream arguments the writer reads: a log step every step, no console line, no perf set."""
    return types.SimpleNamespace(
        log_learning_rate_to_tensorboard=True, log_batch_size_to_tensorboard=True, log_interval=1,
        tensorboard_log_interval=1, consumed_train_samples=0, log_avg_skip_iterations=0, log_avg_reset_interval=10,
        log_throughput=False, log_progress=False, bf16=True, fp16=False, peak_tflops=None, micro_batch_size=2,
        data_parallel_size=1, seq_length=8, world_size=1, train_iters=10,
    )  # fmt: skip


class PathRecorder:
    """A profile function for every thread: while armed, the primus/ file of each call on the threads it is given
    (ident: role); it disarms when the MLflow worker's thread makes the request carrying ``lm loss``."""

    def __init__(self):
        self.armed = False
        self.roles: dict[int | None, str] = {}
        self.calls: list[tuple[str, str]] = []  # (role, file under primus/)
        self.sent = threading.Event()

    def __call__(self, frame, event, arg):
        if not self.armed or event != "call" or (role := self.roles.get(threading.get_ident())) is None:
            return
        code = frame.f_code
        if code.co_filename.startswith(PRIMUS):
            self.calls.append((role, code.co_filename[len(PRIMUS) :]))
        elif role == MLFLOW and code.co_name == "request" and code.co_filename.endswith("http/client.py"):
            if LOSS.encode() in (frame.f_locals.get("body") or b""):
                self.armed = False
                self.sent.set()

    def path(self) -> list[tuple[str, str]]:
        """Each file once, in the order the step reached it (the training thread's, then the hub's, then the
        worker's), with the threads it ran on."""
        ordered: dict[str, list[str]] = {}
        for role in (TRAINING, HUB, MLFLOW):
            for on, file in self.calls:
                if on == role and role not in ordered.setdefault(file, []):
                    ordered[file].append(role)
        return [(file, ", ".join(threads)) for file, threads in ordered.items()]


def test_the_doc_lists_the_files_a_megatron_loss_enters(tmp_path, mlflow_stand_in, monkeypatch):
    recorder = PathRecorder()
    monkeypatch.setattr(TRACKING, "step_functions", None)  # bound by the patch's install, put back after
    monkeypatch.setattr(TRACKING, "iteration_of", None)
    module = upstream_training_module(lambda: TRACKING.writer)
    threading.setprofile(recorder)  # the hub's thread and the sink's worker start with it
    try:
        with installed("megatron.tracking.training_log", module):
            config = TrackingConfig(
                run_dir=tmp_path / "run", mlflow=MlflowConfig(tracking_uri=mlflow_stand_in), delivery="thread"
            )
            run = start_run(config)
            writer = TrackingSummaryWriter(run, megatron_args(), TRACKING.step_functions, perf_metrics=False)
            monkeypatch.setattr(TRACKING, "writer", writer)
            try:
                for step in WARM_UP:
                    module.training_log({LOSS: 6.5}, {}, 1e-4, step)
                assert run.flush(10)
                hub = run._hub  # its thread, and the MLflow sink's worker's
                [mlflow] = [worker for worker in hub.workers if worker.name == "mlflow"]
                recorder.roles = {threading.get_ident(): TRAINING, hub._thread.ident: HUB, mlflow._thread.ident: MLFLOW}
                sys.setprofile(recorder)
                recorder.armed = True
                module.training_log({LOSS: 6.25}, {}, 1e-4, len(WARM_UP) + 1)
                assert recorder.sent.wait(10), "the MLflow sink never sent lm loss"
            finally:
                recorder.armed = False
                sys.setprofile(None)
                run.finish()
    finally:
        threading.setprofile(None)
    measured = recorder.path()
    documented = documented_path(DOC.read_text(encoding="utf-8"))
    assert measured == documented, (
        f"{DOC.name}'s table is not the path measured.\nmeasured:\n"
        + "\n".join(f"  {file} ({threads})" for file, threads in measured)
        + f"\nnot in the table: {[row for row in measured if row not in documented]}"
        + f"\nin the table, not measured: {[row for row in documented if row not in measured]}"
    )
