"""``analogy-studio copy PROJECT_A PROJECT_B``: a project from one location to another, file to
lab database, database to file, or file to file.

The source is read in one read-only snapshot (a file opened ``mode=ro``; a database in a
``REPEATABLE READ, READ ONLY`` transaction), never written. The target must be new: a file that
does not exist yet, or an EMPTY database (one with tables is refused, naming them). The target
gets the current layout, then every table's rows, in foreign-key order, ids included, then its
identity sequences are moved past the copied ids — all in one transaction (a file is written
beside its final name and renamed into place), so a failed copy leaves no half project. A
source of an older format is refused: open it once with this studio (which migrates it), then
copy it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import (
    Connection,
    Engine,
    MetaData,
    Table,
    column,
    create_engine,
    insert,
    select,
    table,
    text,
)
from sqlalchemy.exc import SQLAlchemyError

from studio.core.errors import ProjectError
from studio.store.dbfile import is_database_url, open_engine, safe_location
from studio.store.dialect import fix_identity, is_postgres, require_empty, table_names
from studio.store.filecheck import check_database, check_project_file
from studio.store.labschema import SERVER_META_KEYS, SERVER_TABLES, refresh_schema_tags
from studio.store.migrations import FORMAT_VERSION, create_current
from studio.store.project import MIGRATION_LOCK, Project

#: rows read and written per batch
CHUNK = 5000


@dataclass
class CopyReport:
    """What :func:`copy_project` copied: rows per table, in the order they were copied."""

    source: str
    target: str
    format_version: int
    rows: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        width = max((len(t) for t in self.rows), default=0)
        return [
            f"copied {self.source} -> {self.target} (project format {self.format_version})",
            *(f"  {table:<{width}}  {n:>9,}" for table, n in self.rows.items()),
            f"  {'total':<{width}}  {sum(self.rows.values()):>9,}",
        ]


def _source_version(location: str | Path) -> int:
    if is_database_url(location):
        engine = open_engine(location)
        try:
            with engine.connect() as conn:
                conn.exec_driver_sql("SET TRANSACTION READ ONLY")
                return check_database(conn, safe_location(location)).format_version
        except SQLAlchemyError as e:
            raise ProjectError(
                f"cannot be read: {getattr(e, 'orig', None) or e}", safe_location(location)
            ) from e
        finally:
            engine.dispose()
    return check_project_file(Path(location)).format_version


@contextmanager
def _read_snapshot(location: str | Path) -> Iterator[Connection]:
    """A read-only connection holding one consistent snapshot of the source."""
    if is_database_url(location):
        engine = open_engine(location)
        try:
            with engine.connect().execution_options(
                isolation_level="REPEATABLE READ", postgresql_readonly=True
            ) as conn:
                yield conn
        finally:
            engine.dispose()
        return
    path = Path(location)
    # mode=ro: not a byte written (a WAL left by a crash holds committed edits and is read)
    flags = "mode=ro" if Path(f"{path}-wal").exists() else "mode=ro&immutable=1"
    file_engine = create_engine(
        "sqlite://", creator=lambda: sqlite3.connect(f"file:{path}?{flags}", uri=True)
    )
    try:
        with file_engine.connect() as conn:
            conn.exec_driver_sql("BEGIN")  # one snapshot for every table
            yield conn
    finally:
        file_engine.dispose()


def _copy_rows(source: Connection, target: Connection, report: CopyReport) -> None:
    meta = MetaData()
    meta.reflect(bind=target)
    src_tables = set(table_names(source))
    postgres = is_postgres(target)
    tables: list[Table] = [
        t for t in meta.sorted_tables if t.name in src_tables and t.name not in SERVER_TABLES
    ]
    if postgres:
        # the copy is the lab's history as it was: the target's own audit/notify triggers
        # must not add to it (foreign keys stay checked: only user triggers are off)
        for t in tables:
            target.exec_driver_sql(f"ALTER TABLE {t.name} DISABLE TRIGGER USER")
    for t in tables:
        columns = [c.name for c in t.columns]
        src = table(t.name, *(column(c) for c in columns))
        keys = [c.name for c in t.primary_key.columns] or columns[:1]
        query = select(*(src.c[c] for c in columns)).order_by(*(src.c[k] for k in keys))
        if t.name == "meta":
            # which server rules a lab database installed (and its group roles) are the
            # database's own, not the project's (the target has its own, or none: a file)
            query = query.where(src.c["key"].not_in(SERVER_META_KEYS))
        n = 0
        result = source.execution_options(stream_results=True).execute(query)
        for chunk in result.partitions(CHUNK):
            target.execute(insert(t), [dict(zip(columns, row, strict=True)) for row in chunk])
            n += len(chunk)
        report.rows[t.name] = n
        fix_identity(target, t.name)
    if postgres:
        # the accepted tags from the schema versions just copied, and the tags' keys checked
        # against them now (a table with checks pending cannot be altered)
        refresh_schema_tags(target)
        target.exec_driver_sql("SET CONSTRAINTS ALL IMMEDIATE")
        for t in tables:
            target.exec_driver_sql(f"ALTER TABLE {t.name} ENABLE TRIGGER USER")


def _copy_into_database(source: str | Path, target: str, version: int, report: CopyReport) -> None:
    location = safe_location(target)
    engine = open_engine(target)
    try:
        with _read_snapshot(source) as src, engine.begin() as dst:
            dst.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
            require_empty(
                dst,
                location,
                "copy into an empty database (createdb NAME) so nothing of the lab's"
                " is overwritten",
            )
            create_current(dst)
            _copy_rows(src, dst, report)
            check_database(dst, location)
    finally:
        engine.dispose()


def _copy_into_file(source: str | Path, target: Path, version: int, report: CopyReport) -> None:
    if target.exists():
        raise ProjectError("already exists; copy into a new file", target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.copying")
    sidecars = [Path(f"{tmp}{s}") for s in ("", "-wal", "-shm")]
    for f in sidecars:
        f.unlink(missing_ok=True)
    engine: Engine = open_engine(tmp)
    try:
        with _read_snapshot(source) as src, engine.begin() as dst:
            create_current(dst)
            _copy_rows(src, dst, report)
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        engine.dispose()
        for f in sidecars[1:]:
            f.unlink(missing_ok=True)
        check_project_file(tmp)
        tmp.replace(target)
    except BaseException:
        engine.dispose()
        for f in sidecars:
            with suppress(OSError):
                f.unlink(missing_ok=True)
        raise


def copy_project(source: str | Path, target: str | Path) -> CopyReport:
    """Copies the project at ``source`` to the new location ``target`` (see the module
    docstring); returns the rows copied per table. Raises ProjectError (naming the location,
    never a password) for a source that is not a current project, a target that exists or is
    not empty, or a database error; nothing is left at ``target`` then."""
    src_name, dst_name = safe_location(source), safe_location(target)
    version = _source_version(source)
    if version < FORMAT_VERSION:
        raise ProjectError(
            f"is of project format {version}; this studio copies format {FORMAT_VERSION}. "
            "Open it once with this studio (which migrates it), then copy it",
            src_name,
        )
    report = CopyReport(src_name, dst_name, version)
    try:
        if is_database_url(target):
            _copy_into_database(source, str(target), version, report)
        else:
            _copy_into_file(source, Path(target), version, report)
    except SQLAlchemyError as e:
        orig = getattr(e, "orig", None) or e
        first = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
        raise ProjectError(
            f"the copy from {src_name} failed ({first}); nothing was written", dst_name
        ) from e
    # the copy opens as the studio opens it
    Project.open(target).close()
    return report
