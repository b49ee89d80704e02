"""Read back what the real trackers wrote: TensorBoard event files, W&B offline ``.wandb`` files,
MLflow metric history. Tests assert on these, never on the calls that produced them."""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def read_tb_scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of every event file under ``logdir``: {tag: [(step, value), ...]} in file order.
    ``size_guidance={"scalars": 0}``: the default keeps a 10 000-point sample per tag, silently."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


# -- W&B offline transaction log (wandb 0.31: LevelDB-style log of protobuf Records) ---------
_WANDB_MAGIC = b":W&B"
_HEADER = 7
_BLOCK = 32768
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _wandb_payloads(path: Path) -> Iterator[bytes]:
    data = path.read_bytes()
    if data[:4] != _WANDB_MAGIC:
        raise ValueError(f"{path} is not a .wandb file")
    pos, buf = _HEADER, None
    while pos + 7 <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < 7:
            pos += left
            continue
        crc, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 0 and length == 0:  # block padding
            pos += left
            continue
        start, end = pos + 7, pos + 7 + length
        if end > len(data) or zlib.crc32(bytes([kind]) + data[start:end]) & 0xFFFFFFFF != crc:
            return  # a torn tail
        payload, pos = data[start:end], end
        if kind == _FULL:
            yield payload
        elif kind == _FIRST:
            buf = bytearray(payload)
        elif kind in (_MIDDLE, _LAST) and buf is not None:
            buf += payload
            if kind == _LAST:
                yield bytes(buf)
                buf = None


def wandb_files(root: Path) -> list[Path]:
    """The ``run-*.wandb`` files under ``root`` (one per process that logged to the run)."""
    return sorted({p.resolve() for p in Path(root).rglob("run-*.wandb")}, key=lambda p: p.stat().st_mtime)


def wandb_records(path: Path) -> Iterator[Any]:
    from wandb.proto import wandb_internal_pb2

    for payload in _wandb_payloads(path):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(payload)
        yield record


def wandb_metric_definitions(root: Path) -> dict[str, dict[str, Any]]:
    """``define_metric`` calls in the offline run files under ``root``: {name or glob: {step_metric, summary}}
    (the summaries asked for, by name), the latest definition of each."""
    out: dict[str, dict[str, Any]] = {}
    for path in wandb_files(root):
        for record in wandb_records(path):
            if record.WhichOneof("record_type") == "metric" and not record.metric.expanded_from_glob:
                metric = record.metric
                summary = {f.name for f, value in metric.summary.ListFields() if value}
                out[metric.name or metric.glob_name] = {"step_metric": metric.step_metric, "summary": summary}
    return out


def read_wandb_history(root: Path) -> list[dict[str, Any]]:
    """History rows (``_step`` included) of every offline run file under ``root``, oldest file first."""
    rows = []
    for path in wandb_files(root):
        for record in wandb_records(path):
            if record.WhichOneof("record_type") != "history":
                continue
            row = {item.key or ".".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            if record.history.HasField("step"):
                row.setdefault("_step", record.history.step.num)
            rows.append(row)
    return rows


def wandb_run_ids(root: Path) -> set[str]:
    ids = set()
    for path in wandb_files(root):
        for record in wandb_records(path):
            if record.WhichOneof("record_type") == "run":
                ids.add(record.run.run_id)
    return ids


def wandb_artifacts(root: Path) -> list[dict[str, Any]]:
    """The artifacts logged in every offline run file under ``root``, oldest file first: name, type, metadata,
    aliases, and per manifest entry its reference (``file://...``) or, for a file added, its size."""
    found = []
    for path in wandb_files(root):
        for record in wandb_records(path):
            if record.WhichOneof("record_type") != "artifact":
                continue
            a = record.artifact
            found.append(
                {
                    "name": a.name,
                    "type": a.type,
                    "metadata": json.loads(a.metadata),
                    "aliases": sorted(a.aliases),
                    "entries": {e.path: e.ref or e.size for e in a.manifest.contents},
                }
            )
    return found


def artifact_relative_to(artifact: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``artifact`` (as ``wandb_artifacts`` reads it) with its references relative to ``folder``, to compare runs
    that save to different folders."""
    prefix = f"file://{folder}/"
    entries = {path: ref.removeprefix(prefix) if isinstance(ref, str) else ref for path, ref in artifact["entries"].items()}
    assert all(not isinstance(ref, str) or not ref.startswith("file://") for ref in entries.values()), artifact
    return artifact | {"entries": entries}


def wandb_config(root: Path) -> dict[str, Any]:
    """The run config of every offline run file under ``root``, the later updates winning."""
    config: dict[str, Any] = {}
    for path in wandb_files(root):
        for record in wandb_records(path):
            if record.WhichOneof("record_type") == "config":
                config.update({item.key: json.loads(item.value_json) for item in record.config.update})
    return config


def read_tb_texts(logdir: Path) -> dict[str, list[tuple[int, str]]]:
    """Every text entry under ``logdir``: {tag: [(step, text), ...]}."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util.tensor_util import make_ndarray

    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    return {
        tag: [(e.step, make_ndarray(e.tensor_proto).item().decode()) for e in acc.Tensors(tag)]
        for tag in acc.Tags()["tensors"]
    }


def read_wandb_alerts(root: Path) -> list[tuple[str, str, str]]:
    """(title, text, level) of every ``run.alert`` kept in the offline run files under ``root``."""
    return [
        (r.alert.title, r.alert.text, r.alert.level)
        for path in wandb_files(root)
        for r in wandb_records(path)
        if r.WhichOneof("record_type") == "alert"
    ]


def read_wandb_summary(root: Path) -> dict[str, Any]:
    """The summary values the offline run files under ``root`` set, the latest of each key."""
    summary: dict[str, Any] = {}
    for path in wandb_files(root):
        for record in wandb_records(path):
            if record.WhichOneof("record_type") == "summary":
                for item in record.summary.update:
                    summary[item.key or ".".join(item.nested_key)] = json.loads(item.value_json)
    return summary


def mlflow_history(client: Any, run_id: str, key: str) -> list[tuple[int, float]]:
    """[(step, value)] of one MLflow metric, sorted by step (duplicates kept, so tests can see them)."""
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def comet_archive(root: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The one offline archive comet_ml wrote under ``root``: its ``experiment.json`` and ``messages.json`` (one
    JSON message a line, ``{"type": ..., "payload": ...}``), as ``comet upload`` reads them."""
    [path] = root.glob("*.zip")
    return read_comet_zip(path)


def comet_archives(root: Path) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Every offline archive under ``root`` by file name (an experiment continued offline has one per process that
    ended it: ``<key>.zip``, then ``<key>-<suffix>.zip``)."""
    return {path.name: read_comet_zip(path) for path in sorted(root.glob("*.zip"))}


def read_comet_zip(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with zipfile.ZipFile(path) as archive:
        experiment = json.loads(archive.read("experiment.json"))
        lines = archive.read("messages.json").decode().splitlines()
    return experiment, [json.loads(line) for line in lines if line.strip()]


def comet_metrics(messages: list[dict[str, Any]]) -> dict[str, list[tuple[int, float]]]:
    """Each metric's (step, value) pairs, in the order they were logged."""
    metrics: dict[str, list[tuple[int, float]]] = {}
    for m in messages:
        if m["type"] == "metric_msg":
            metric = m["payload"]["metric"]
            metrics.setdefault(metric["metricName"], []).append((metric["step"], metric["metricValue"]))
    return metrics


def comet_others(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The experiment's "other" values (its name, its tags, the end status), the last of each key."""
    return {m["payload"]["key"]: m["payload"]["value"] for m in messages if m["type"] == "log_other"}
