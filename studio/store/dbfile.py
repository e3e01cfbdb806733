"""Where a project lives, at the level of the database: a SQLite file (recognised without
writing to it) or a PostgreSQL URL, and the engine every reader and writer of it shares.

A *location* is a file path or a URL ``postgresql://[user@]host[:port]/dbname`` (also
``postgresql+psycopg://…``; ``postgresql:///?service=NAME`` reads a libpq service file).
Messages, titles and recent files show :func:`safe_location`: the URL without its password.

Both :mod:`studio.store.project` and :mod:`studio.store.jobs` build on this module, so neither
has to import the other to reach the file (the job queue runs in worker processes that never
load a :class:`~studio.store.project.Project`).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import (
    URL,
    Connection,
    Engine,
    ExceptionContext,
    create_engine,
    event,
    make_url,
    text,
)
from sqlalchemy.exc import ArgumentError

from studio.core.errors import ProjectError
from studio.store import secrets
from studio.store.dialect import table_names

APPLICATION_ID = "analogy-studio"
NOT_SQLITE = "is not an Analogy Studio project (not an SQLite database)"
DAMAGED = "It was not changed; restore it from a backup or re-import its annotations."
#: how long a statement waits for a row or table lock another client holds (PostgreSQL)
LOCK_TIMEOUT_MS = 5000
#: Seconds to reach a lab server before giving up with a message.
CONNECT_TIMEOUT_S = 10

_URL_SCHEME = re.compile(r"^postgres(?:ql)?(?:\+psycopg)?://", re.IGNORECASE)
# SQLSTATEs of a server that is gone or refuses connections (class 08, admin/crash shutdown,
# starting up); a psycopg error with no SQLSTATE is a client-side connection failure
_CONNECTION_STATES = ("57P01", "57P02", "57P03")


def is_database_url(location: str | Path) -> bool:
    """Whether ``location`` names a PostgreSQL database (``postgresql://``,
    ``postgresql+psycopg://``, ``postgres://``) rather than a project file."""
    return isinstance(location, str) and bool(_URL_SCHEME.match(location.strip()))


def _parse_url(location: str) -> URL:
    try:
        url = make_url(location.strip())
    except (ArgumentError, ValueError):
        raise ProjectError("is not a valid database URL", safe_location(location)) from None
    return url.set(drivername="postgresql+psycopg")


def safe_location(location: str | Path) -> str:
    """``location`` as it may be shown or stored: a file's path, or the URL with any password
    removed (from the user part and from a ``password=`` query parameter)."""
    if not is_database_url(location):
        return str(location)
    raw = str(location).strip()
    try:
        url = make_url(raw)
    except (ArgumentError, ValueError):
        # unparsable: still never show what may be a password (user:secret@ or password=)
        raw = re.sub(r"(://[^:/@]*):[^@/]*@", r"\1@", raw)
        return re.sub(r"(?i)([?&]password=)[^&]*", r"\1", raw)
    query = {k: v for k, v in url.query.items() if k.lower() != "password"}
    # URL.set(password=None) keeps the password: None means "unchanged" there
    url = url._replace(password=None).set(query=query)
    return url.render_as_string(hide_password=False)


def location_dialect(location: str | Path) -> str:
    """``"postgresql"`` for a database URL, else ``"sqlite"``."""
    return "postgresql" if is_database_url(location) else "sqlite"


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


def connection_problem(orig: BaseException) -> str | None:
    """The reason a psycopg error means the server cannot be reached or went away (its first
    line, without libpq's "connection to server at … failed:" preamble), or None for any
    other error (a constraint, a lock timeout, a missing right: those pass unchanged)."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return None
    if not isinstance(orig, psycopg.OperationalError):
        return None
    state = getattr(orig, "sqlstate", None)
    if state is not None and not (state.startswith("08") or state in _CONNECTION_STATES):
        return None
    lines = [ln.strip() for ln in str(orig).splitlines() if ln.strip()]
    reason = lines[0] if lines else type(orig).__name__
    reason = re.sub(r"^connection failed:\s*", "", reason)
    reason = re.sub(r"^connection to server at [^,]+, port \d+ failed:\s*", "", reason)
    reason = re.sub(r'^connection to server on socket "[^"]*" failed:\s*', "", reason)
    # the hint libpq puts on its own line belongs to the reason
    if len(lines) > 1 and lines[1].startswith("Is the server running"):
        reason = f"{reason}; is the server running on that host and accepting connections?"
    if reason.lower().startswith("connection refused") and "server running" not in reason:
        reason = f"{reason}; is the server running?"
    return reason


def _connection_error_hook(location: str) -> Any:
    """An engine ``handle_error`` hook for PostgreSQL: a server that cannot be reached, or
    that went away mid-session, becomes a ProjectError naming the database (no password)."""

    def hook(context: ExceptionContext) -> None:
        orig = context.original_exception
        reason = connection_problem(orig)
        if reason is None:
            return
        if context.connection is None or context.is_pre_ping:
            problem = f"the lab database cannot be reached: {reason}"
        else:
            problem = (
                f"the connection to the lab database was lost ({reason}); what was not "
                "yet saved was not saved. Try again once the server is back"
            )
        raise ProjectError(problem, location) from orig

    return hook


def _open_postgres_engine(location: str) -> Engine:
    url = _parse_url(location)
    safe = safe_location(location)
    username = (
        secrets.keyring_username(url.username, url.host, url.port, url.database)
        if url.password is None and "service" not in url.query
        else None
    )
    options = f"-c lock_timeout={LOCK_TIMEOUT_MS}"
    if "options" in url.query:
        options = f"{url.query['options']} {options}"
        url = url.difference_update_query(["options"])
    engine = create_engine(
        url,
        pool_pre_ping=True,
        connect_args={
            "application_name": APPLICATION_ID,
            "options": options,
            # an unreachable host fails in seconds with a message, not after minutes of TCP
            "connect_timeout": CONNECT_TIMEOUT_S,
        },
    )
    keyring_password: list[str | None] = []

    @event.listens_for(engine, "do_connect")
    def _password(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
        # asked only when the URL has none; looked up once per engine
        if username is None or cparams.get("password"):
            return
        if not keyring_password:
            keyring_password.append(secrets.get_password(username))
        if keyring_password[0] is not None:
            cparams["password"] = keyring_password[0]

    event.listen(engine, "handle_error", _connection_error_hook(safe))
    return engine


def open_engine(location: str | Path) -> Engine:
    """A SQLAlchemy engine on the project at ``location``. Dispose of it when done.

    A file: every connection in WAL mode with ``synchronous=FULL``, foreign keys on and a 5 s
    busy timeout (the settings that let the studio, the worker host and its children share the
    file); creates the file if absent, so check it first with :func:`read_project_meta`.

    A PostgreSQL URL: psycopg 3, ``pool_pre_ping`` (a restarted server costs a reconnect, not
    an error), ``application_name=analogy-studio``, a 5 s ``lock_timeout``; the password from
    the URL, else the OS keyring (:mod:`studio.store.secrets`), else libpq's own sources
    (~/.pgpass, PGPASSFILE, a service file, PGPASSWORD). Connecting happens on first use: a
    server that cannot be reached then raises a ProjectError naming :func:`safe_location`."""
    if is_database_url(location):
        return _open_postgres_engine(str(location))
    path = Path(location)
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


def read_database_meta(conn: Connection, location: str) -> dict[str, str]:
    """The ``meta`` table of a project in a PostgreSQL database (:func:`read_project_meta`'s
    twin; run it in a read-only transaction); refuses, naming ``location`` (without password),
    an empty database or one that is not a studio project."""
    tables = set(table_names(conn))
    if "meta" not in tables:
        if tables:
            listing = ", ".join(sorted(tables)[:8])
            raise ProjectError(
                f"is a PostgreSQL database but not an Analogy Studio project (it has the "
                f"tables {listing} and no studio 'meta' table)",
                location,
            )
        raise ProjectError(
            "is an empty database, not an Analogy Studio project yet; create one in it with "
            "`analogy-studio init URL --schema FILE` or copy a project into it with "
            "`analogy-studio copy PROJECT URL`",
            location,
        )
    meta = {str(k): str(v) for k, v in conn.execute(text("SELECT key, value FROM meta"))}
    if meta.get("application") != APPLICATION_ID:
        raise ProjectError("is a PostgreSQL database but not an Analogy Studio project", location)
    return meta
