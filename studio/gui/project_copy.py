"""File ▸ Save a copy…: a consistent copy of the open project's file, the project staying open.

The project is an SQLite database in WAL mode that the studio, the worker host and its children
may all be writing. Copying the file's bytes could catch a page half-written, or miss the edits
still in the write-ahead log; SQLite's online backup API copies a consistent snapshot of the
committed state instead (WAL included), page by page, while the others go on. The copy is
written next to its destination under a temporary name, made self-contained (journal mode
DELETE: no -wal file to carry along) and renamed into place, so a failure never leaves half
a project under the chosen name.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from studio.core.errors import StudioError

__all__ = ["save_project_copy"]


def save_project_copy(source: str | os.PathLike[str], dest: str | os.PathLike[str]) -> Path:
    """Copy the project file ``source`` to ``dest`` (replacing a file there) and return the
    destination. Raises StudioError naming the file when it cannot be read or written, or when
    ``dest`` is the project itself."""
    src, out = Path(source).absolute(), Path(dest).expanduser().absolute()
    if out == src or (out.exists() and out.samefile(src)):
        raise StudioError("is the open project itself; choose another name for the copy", out)
    if out.is_dir():
        raise StudioError("is a folder; choose a file name for the copy", out)
    tmp = out.with_name(f".{out.name}.copying")
    _remove_with_journal(tmp)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        reader = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
        try:
            writer = sqlite3.connect(tmp)
            try:
                reader.backup(writer)
                writer.execute("PRAGMA journal_mode=DELETE")
                writer.commit()
            finally:
                writer.close()
        finally:
            reader.close()
        os.replace(tmp, out)
    except (sqlite3.Error, OSError) as e:
        _remove_with_journal(tmp)
        raise StudioError(f"the copy could not be written: {e}", out) from None
    return out


def _remove_with_journal(path: Path) -> None:
    for f in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        f.unlink(missing_ok=True)
