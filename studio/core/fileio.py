"""File writes that survive a crash.

Two ways, for two sizes of job:

- one file: :func:`atomic_write_bytes` — a temp file in the same folder, fsync, then rename over
  the target, so a crash leaves either the old file or the new one;
- many files (a split's thousands of sheets): write them plainly (:func:`write_file`) into a
  folder nobody reads yet, make the whole folder durable once (:func:`sync_tree`), then move it
  into place with renames (:func:`fsync_dir` after them). One sync of the file system costs about
  what one fsync does, where an fsync per file costs a disk flush each.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import sys
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old file or the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_file(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` plainly: no temp file, no fsync. Only for files in a folder
    that is made durable as a whole (:func:`sync_tree`) before anything points at it."""
    with open(path, "wb") as f:
        f.write(data)


def fsync_dir(path: Path) -> None:
    """Make the entries of folder ``path`` (files created, renamed or removed in it) durable.
    A no-op where folders cannot be opened (Windows, which orders these itself)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some file systems refuse fsync on a folder
            os.fsync(fd)
    finally:
        os.close(fd)


def _syncfs(path: Path) -> bool:
    """Linux: ``syncfs(2)`` on the file system holding ``path`` (every dirty page and inode of
    it written and flushed). False where there is no ``syncfs`` or it fails."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError):
        return False
    syncfs.argtypes = [ctypes.c_int]
    syncfs.restype = ctypes.c_int
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        return bool(syncfs(fd) == 0)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    # read-write: Windows commits only a file opened for writing
    fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_tree(root: Path, *, syncfs: bool = True) -> None:
    """Make everything below folder ``root`` durable: its files' contents and every folder's
    entries. On Linux one ``syncfs`` of the file system does the files (``syncfs=False``, or
    where it is missing, fsyncs each file instead); then every folder below ``root``, and
    ``root`` itself, is fsynced, deepest first."""
    root = Path(root)
    walk = list(os.walk(root))
    if not (syncfs and _syncfs(root)):
        for dirpath, _dirnames, filenames in walk:
            for name in filenames:
                _fsync_file(Path(dirpath) / name)
    for dirpath, _dirnames, _filenames in reversed(walk):
        fsync_dir(Path(dirpath))


__all__ = ["atomic_write_bytes", "atomic_write_text", "fsync_dir", "sync_tree", "write_file"]
