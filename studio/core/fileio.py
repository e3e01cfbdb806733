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
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def current_umask() -> int:
    """The process's umask, read without changing it where the system says it
    (``/proc/self/status``; setting and restoring it would race with other threads)."""
    with (
        contextlib.suppress(OSError, ValueError),
        open("/proc/self/status", encoding="ascii", errors="replace") as f,
    ):
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _file_mode(path: Path) -> int:
    """The mode a file written at ``path`` should have: that of the file it replaces, else
    what ``open()`` would give a new one (0666 less the umask). ``mkstemp`` makes 0600 files,
    which a colleague could not read (issue 25)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~current_umask()


def staging_dir(parent: Path, prefix: str, suffix: str) -> Path:
    """A fresh folder in ``parent`` to build output in before it is renamed into place, with
    the mode ``mkdir`` would give it (``mkdtemp`` makes it 0700, and the rename would keep
    that for the published folder)."""
    staging = Path(tempfile.mkdtemp(prefix=prefix, suffix=suffix, dir=parent))
    os.chmod(staging, 0o777 & ~current_umask())
    return staging


_LOCK = ".lock"


def _held(lock: Path) -> bool:
    """Does a live process hold ``lock`` (an exclusive ``flock``)? Locks die with their
    process, however it ends, so an unheld lock marks a killed run's leftovers."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDONLY)  # flock needs no write access
    except FileNotFoundError:
        return False
    except OSError:
        return True  # another user's lock we cannot open: theirs to clean up, never ours
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True  # someone holds it (or it cannot be locked: leave it be)
    finally:
        os.close(fd)  # closing drops a lock this probe took
    return False


def sweep_stale_staging(parent: Path, prefix: str, suffix: str) -> list[Path]:
    """Remove the staging folders (and their locks) of runs on the same target that were
    killed (:func:`staging_area`); a folder whose run is alive is left alone. Returns what
    was removed."""
    import shutil

    removed = []
    for lock in sorted(parent.glob(f"{glob_escape(prefix)}*{glob_escape(suffix)}{_LOCK}")):
        if _held(lock):
            continue
        folder = lock.with_name(lock.name[: -len(_LOCK)])
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):  # a sticky folder: another user's stays theirs
            lock.unlink()
        removed.append(folder)
    return removed


def glob_escape(text: str) -> str:
    """``text`` as a literal inside a glob pattern."""
    import glob

    return glob.escape(text)


@contextlib.contextmanager
def staging_area(parent: Path, prefix: str, suffix: str) -> Iterator[Path]:
    """A staging folder (:func:`staging_dir`'s mode) held by this run: a lock file beside it
    (``<folder>.lock``, never inside: the folder is renamed into place whole) stays locked
    while the run lives, so the next run on the same target removes the leftovers of one
    that was killed (:func:`sweep_stale_staging`) and never those of one still writing. The
    lock goes on the way out; the folder is the caller's (renamed, or removed on failure).
    Without ``fcntl`` (Windows) no leftovers are swept."""
    parent = Path(parent)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield staging_dir(parent, prefix, suffix)
        return
    sweep_stale_staging(parent, prefix, suffix)
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix + _LOCK, dir=parent)
    lock = Path(name)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())  # colleagues' runs can probe it
        fcntl.flock(fd, fcntl.LOCK_EX)
        folder = lock.with_name(lock.name[: -len(_LOCK)])
        folder.mkdir()  # the name is ours: mkstemp made the lock's name unique
        yield folder
    finally:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves either the old file or the new one;
    the file gets the mode of the one it replaces, or the umask's (:func:`_file_mode`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _file_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):  # POSIX; Windows has no modes to set
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def json_text(value: object, indent: int = 1) -> str:
    """``value`` as JSON a person can read and json's C encoder writes fast: an object's
    members one per line, indented; a member that is short (or a list of plain values, as a
    report's per-puzzle choices) on its line; a list's items one per line, each on one line
    unless very long. ``json.dumps(value, indent=...)`` puts every number of a list on a line
    of its own (a 10,000-puzzle baseline report: 940,000 lines) and, given an indent, runs
    json's Python encoder (0.6 s for that report)."""
    import json

    compact = json.JSONEncoder(ensure_ascii=False).encode
    parts: list[str] = []

    def nested(v: object) -> bool:
        if isinstance(v, dict):
            return bool(v)
        return isinstance(v, list | tuple) and any(isinstance(x, dict | list | tuple) for x in v)

    def put(v: Any, depth: int, width: int) -> None:
        if not nested(v):
            parts.append(compact(v))
            return
        if 2 * len(v) <= width:  # each item takes two characters at least: it may fit
            text = compact(v)
            if len(text) <= width:
                parts.append(text)
                return
        pad = "\n" + " " * (indent * (depth + 1))
        if isinstance(v, dict):
            parts.append("{")
            for k, (key, item) in enumerate(v.items()):
                # the key as json writes it (True as "true", 1.5 as "1.5"; a tuple refused)
                parts.append(("," if k else "") + pad + compact({key: 0})[1:-4] + ": ")
                put(item, depth + 1, _MEMBER_WIDTH)
            parts.append("\n" + " " * (indent * depth) + "}")
        else:
            parts.append("[")
            for k, item in enumerate(v):
                parts.append(("," if k else "") + pad)
                put(item, depth + 1, _ITEM_WIDTH)
            parts.append("\n" + " " * (indent * depth) + "]")

    put(value, 0, 0)
    return "".join(parts)


#: :func:`json_text`: an object's member fits on its line up to this many characters; a
#: list's item (a report's puzzle, with every model's answers) up to this many
_MEMBER_WIDTH, _ITEM_WIDTH = 100, 4000


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


__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "current_umask",
    "fsync_dir",
    "json_text",
    "staging_area",
    "staging_dir",
    "sweep_stale_staging",
    "sync_tree",
    "write_file",
]
