"""When TorchTitan's save is on disk (patches/checkpoint_patches.py): at once for a synchronous save (upstream
returns the checkpoint's metadata), when the future is done for an asynchronous one, never for one that failed.
The saves themselves, end to end: test_resume_end_to_end.py."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

from primus.backends.torchtitan.patches.checkpoint_patches import _step_of, _when_written


def test_a_synchronous_save_is_written_when_upstream_returns():
    done = []
    _when_written(object(), lambda: done.append(1))
    assert done == [1]


def test_an_asynchronous_save_is_written_when_its_upload_is_done_and_not_if_it_failed():
    done, upload, failed = [], Future(), Future()
    _when_written(SimpleNamespace(upload_completion=upload), lambda: done.append("upload"))
    _when_written(failed, lambda: done.append("failed"))
    assert done == []
    upload.set_result(None)
    failed.set_exception(OSError("disk full"))
    assert done == ["upload"]


def test_the_step_is_read_from_upstream_s_folder_name():
    assert _step_of("/ws/checkpoint/step-40") == 40 and _step_of("s3://b/checkpoint/step-7/") == 7
