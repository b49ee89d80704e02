"""Small real filesystems for disk-full tests: a tmpfs mounted for one test (root only; the ``tmpfs``
fixture in conftest.py), and ``fill`` to use up its space."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def mount_tmpfs(target: Path, options: str) -> Path:
    target.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], capture_output=True, text=True)
    assert done.returncode == 0, f"mount -t tmpfs -o {options} needs root: {done.stderr}"
    return target


def unmount(target: Path) -> None:
    subprocess.run(["umount", "-l", str(target)], check=False)


def fill(root: Path, leave: int = 0, name: str = "filler") -> Path:
    """Write zeros to ``root/name`` until the filesystem has at most ``leave`` bytes free; returns the file
    (delete it to free the space)."""
    path = root / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            free = os.statvfs(root).f_bavail * os.statvfs(root).f_frsize
            if free <= leave or not os.write(fd, b"\0" * min(4096, free - leave)):
                break
    except OSError:  # ENOSPC: the disk is full
        pass
    finally:
        os.close(fd)
    return path
