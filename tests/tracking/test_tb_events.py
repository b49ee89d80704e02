"""The torch-free TensorBoard writer writes what torch's SummaryWriter writes: the same scalars (tag, step,
wall time, value) and texts (tag, plugin, content), read back from both event files."""

import subprocess
import sys
import textwrap

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from primus.tracking.trackers.tb_events import EventWriter

POINTS = [("lm loss", 1, 1700000000.5, 7.25), ("lm loss", 2, 1700000001.5, 6.5), ("perf/tflops", 2, 1700000001.6, 0.1)]
TEXTS = [("config", 0, 1700000000.0, "lr: 0.001\nseed: 1234")]


def write(writer) -> None:
    for tag, step, walltime, value in POINTS:
        writer.add_scalar(tag, value, step, walltime=walltime)
    for tag, step, walltime, text in TEXTS:
        writer.add_text(tag, text, step, walltime=walltime)
    writer.close()


def read(logdir) -> tuple[dict, dict]:
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    scalars = {tag: [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    texts = {tag: [(e.step, e.wall_time, e.tensor_proto.string_val) for e in acc.Tensors(tag)]
             for tag in acc.Tags()["tensors"]}
    plugins = {tag: acc.SummaryMetadata(tag).plugin_data.plugin_name for tag in texts}
    return scalars, texts | {"plugins": plugins}


def test_same_events_as_torchs_summary_writer(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    write(EventWriter(tmp_path / "ours", max_queue=10))
    write(SummaryWriter(log_dir=str(tmp_path / "torch"), max_queue=10))
    ours, torchs = read(tmp_path / "ours"), read(tmp_path / "torch")
    assert ours == torchs
    assert ours[0]["lm loss"] == [(1, 1700000000.5, 7.25), (2, 1700000001.5, 6.5)]
    assert ours[1]["config/text_summary"] == [(0, 1700000000.0, [b"lr: 0.001\nseed: 1234"])]


def test_a_steps_scalars_in_one_event_read_back_as_torchs_one_per_scalar(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    step_values = {"lm loss": 7.25, "perf/tflops": 0.1, "grad-norm": 2.5}
    ours = EventWriter(tmp_path / "ours", max_queue=10)
    ours.add_step_scalars(step_values, 3, walltime=1700000000.5)
    ours.close()
    torchs = SummaryWriter(log_dir=str(tmp_path / "torch"), max_queue=10)
    for tag, value in step_values.items():
        torchs.add_scalar(tag, value, 3, walltime=1700000000.5)
    torchs.close()
    assert read(tmp_path / "ours") == read(tmp_path / "torch")
    assert read(tmp_path / "ours")[0]["grad-norm"] == [(3, 1700000000.5, 2.5)]


def test_writing_events_imports_no_torch(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from primus.tracking.trackers.tb_events import EventWriter
        w = EventWriter(Path({str(tmp_path)!r}), max_queue=10)
        w.add_scalar("loss", 1.0, 1, walltime=1.0)
        w.add_text("config", "x", 0, walltime=1.0)
        w.close()
        assert "torch" not in sys.modules
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
