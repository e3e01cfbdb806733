"""The project file at the level of SQLite: recognising a studio project without writing to it,
and opening the engine every reader and writer of the file shares.

Both :mod:`studio.store.project` and :mod:`studio.store.jobs` build on this module, so neither
has to import the other to reach the file (the job queue runs in worker processes that never
load a :class:`~studio.store.project.Project`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, ExceptionContext, create_engine, event

from studio.core.errors import ProjectError

APPLICATION_ID = "analogy-studio"
NOT_SQLITE = "is not an Analogy Studio project (not an SQLite database)"
DAMAGED = "It was not changed; restore it from a backup or re-import its annotations."


@contextmanager
def read_only_connection(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only sqlite3 connection to an existing file; nothing is created beside it."""
    # With no WAL left behind, read it as immutable: nothing (not even -wal/-shm) is created.
    # A WAL left by a crash holds committed edits, so then it is read normally, read-only.
    flags = "mode=ro" if Path(f"{path}-wal").exists() else "mode=ro&immutable=1"
    try:
        con = sqlite3.connect(f"file:{path}?{flags}", uri=True)
    except sqlite3.Error as e:
        raise ProjectError(f"cannot be opened: {e}", path) from None
    # damaged text must not stop the checks from reporting it (quick_check quotes bad cells)
    con.text_factory = lambda b: bytes(b).decode("utf-8", "replace")
    try:
        yield con
    finally:
        con.close()


def read_project_meta(path: Path, *, quick_check: bool) -> dict[str, str]:
    """The ``meta`` table of a studio project, read-only (not a byte written, not even
    -wal/-shm); refuses anything that is not a studio project with a message naming the file.
    ``quick_check`` also verifies the whole file (a full read: on open, not on every use)."""
    if not path.exists():
        raise ProjectError("project file not found", path)
    if path.is_dir():
        raise ProjectError("is a folder, not a project file", path)
    # No Python open() of the file: this process may already hold SQLite connections to it
    # (the studio while a worker checks it, or the other way round), and closing any other
    # descriptor of the file drops the process's POSIX locks on it — a worker's connection
    # would then see the file unused and delete the WAL under the studio's feet. SQLite's own
    # connections share one lock record per file, so the checks below go through sqlite3.
    if path.stat().st_size < 100:
        raise ProjectError(NOT_SQLITE, path)
    with read_only_connection(path) as con:
        return _meta_of(con, path, quick_check=quick_check)


def _meta_of(con: sqlite3.Connection, path: Path, *, quick_check: bool) -> dict[str, str]:
    try:
        try:
            con.execute("PRAGMA schema_version").fetchone()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            if "not a database" in str(e):
                raise ProjectError(NOT_SQLITE, path) from None
            raise
        check = con.execute("PRAGMA quick_check").fetchall() if quick_check else [("ok",)]
        if check != [("ok",)]:
            detail = "; ".join(str(r[0]) for r in check[:3])
            raise ProjectError(f"the project file is damaged ({detail}). {DAMAGED}", path)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables:
            raise ProjectError("is an SQLite database but not an Analogy Studio project", path)
        meta = {str(k): str(v) for k, v in con.execute("SELECT key, value FROM meta")}
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        raise ProjectError(
            f"the project file is damaged ({e}). It was not changed; restore it from a backup.",
            path,
        ) from None
    if meta.get("application") != APPLICATION_ID:
        raise ProjectError("is an SQLite database but not an Analogy Studio project", path)
    return meta


def _damaged_file_error(path: Path) -> Any:
    """An engine ``handle_error`` hook: SQLite's "database disk image is malformed", "file is
    not a database" and text that is not UTF-8 (damage quick_check could not see, met while
    reading) become a ProjectError naming the file. Busy, locked and constraint errors pass
    unchanged."""

    def hook(context: ExceptionContext) -> None:
        orig = context.original_exception
        undecodable = isinstance(orig, sqlite3.OperationalError) and "decode" in str(orig)
        if type(orig) is sqlite3.DatabaseError or undecodable:
            raise ProjectError(
                f"the project file is damaged ({orig}). Restore it from a backup.", path
            ) from orig

    return hook


def open_engine(path: Path) -> Engine:
    """A SQLAlchemy engine on the project file at ``path``, every connection of it in WAL mode
    with ``synchronous=FULL``, foreign keys on and a 5 s busy timeout: the settings that let
    the studio, the worker host and its children share the file. Creates the file if absent;
    check it first with :func:`read_project_meta`. Dispose of the engine when done."""
    engine = create_engine(f"sqlite:///{path}", future=True)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_con: Any, _record: Any) -> None:
        cur = dbapi_con.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=5000")
        cur.close()

    event.listen(engine, "handle_error", _damaged_file_error(path))
    return engine
