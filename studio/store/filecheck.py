"""What opening a project relies on, checked read-only before a byte of the file is written.

:func:`check_project_file` refuses, with a ProjectError naming the file (and the table and row
of a bad cell), anything the studio would otherwise fail on later with another exception: a
file SQLite's ``integrity_check`` faults, a format version that is not a number or is newer
than this build, a table or column the format has and the file lacks, a cell of the wrong type
or out of range (code points, statuses, JSON shapes), a stored schema that does not validate.
The expected layout of each format comes from replaying the migrations in memory, so it never
drifts from :mod:`studio.store.migrations`.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, create_engine, text

from studio.core.errors import ProjectError, SchemaError
from studio.core.keys import MAX_CODEPOINT, GlyphKey
from studio.core.schema import schema_from_text
from studio.store.dbfile import (
    DAMAGED,
    read_database_meta,
    read_only_connection,
    read_project_meta,
)
from studio.store.dialect import column_names, table_names
from studio.store.migrations import (
    FORMAT_1_DDL,
    FORMAT_VERSION,
    JOB_STATES,
    MIGRATIONS,
    PUZZLE_STATUSES,
)

#: What a glyph's ``status`` may be (see :class:`studio.store.project.GlyphRecord`).
GLYPH_STATUSES = ("pending", "ok", "missing", "uncovered")


@dataclass(frozen=True)
class ProjectFileCheck:
    """What :func:`check_project_file` found: the file's format and its ``meta`` table."""

    format_version: int
    meta: dict[str, str]


def parse_format_version(value: str | None, path: str | Path) -> int:
    """The ``format_version`` meta value as a number; ProjectError for anything but digits."""
    if value is None:
        raise ProjectError(f"has no project format version. {DAMAGED}", path)
    if not re.fullmatch(r"[0-9]{1,9}", value.strip()):
        raise ProjectError(f"has an unreadable project format version {value!r}. {DAMAGED}", path)
    version = int(value)
    if version > FORMAT_VERSION:
        raise ProjectError(
            f"was written by a newer Analogy Studio (project format {version}; this version "
            f"reads up to {FORMAT_VERSION}). Update the studio to open it.",
            path,
        )
    if version < 1:
        raise ProjectError(f"has an unknown project format {version!r}", path)
    return version


@functools.cache
def layout(version: int) -> dict[str, tuple[tuple[str, str, bool], ...]]:
    """The tables of a format-``version`` project: ``{table: ((column, type, not null), ...)}``,
    made by replaying the format-1 layout and the migrations in memory (one source of truth)."""
    con = sqlite3.connect(":memory:")
    engine = create_engine("sqlite://", creator=lambda: con)
    try:
        with engine.begin() as conn:
            for ddl in FORMAT_1_DDL:
                conn.execute(text(ddl))
            for v in range(1, version):
                MIGRATIONS[v](conn)
        return _tables_of(con)
    finally:
        engine.dispose()
        con.close()


def _tables_of(con: sqlite3.Connection) -> dict[str, tuple[tuple[str, str, bool], ...]]:
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {
        str(t): tuple(
            (str(r[1]), str(r[2]).upper(), bool(r[3]))
            for r in con.execute(f"PRAGMA table_info({_quoted(str(t))})")
        )
        for t in names
    }


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _type_test(column: str, kind: str, not_null: bool) -> str | None:
    """An SQL condition true when the cell holds what the code reads from such a column."""
    allowed = {"INTEGER": ("integer",), "REAL": ("real", "integer"), "TEXT": ("text",)}.get(kind)
    if allowed is None:
        return None  # BLOB and untyped columns hold anything
    kinds = (*allowed, *(() if not_null else ("null",)))
    return f"typeof({_quoted(column)}) IN ({', '.join(repr(k) for k in kinds)})"


def _json_is(column: str, kind: str) -> str:
    """An SQL condition: the cell is valid JSON of ``kind`` (``json_type`` alone would raise
    on malformed JSON instead of saying which row holds it)."""
    return f"CASE WHEN json_valid({column}) THEN json_type({column}) = '{kind}' ELSE 0 END"


def _value_tests(version: int) -> dict[str, list[tuple[str, str]]]:
    """Per table, (SQL condition, what it means) pairs beyond the cells' types: the ranges and
    JSON shapes the studio relies on when it reads the rows."""
    tests: dict[str, list[tuple[str, str]]] = {
        "glyphs": [
            (f"codepoint BETWEEN 0 AND {MAX_CODEPOINT}", "code point outside Unicode"),
            (
                f"status IN ({', '.join(repr(s) for s in GLYPH_STATUSES)})",
                f"status is not one of {', '.join(GLYPH_STATUSES)}",
            ),
        ],
        "schema_versions": [(_json_is("json", "object"), "the schema is not a JSON object")],
    }
    if version >= 3:
        tests["puzzle_sets"] = [
            (_json_is("params", "object"), "params are not a JSON object"),
            (_json_is("summary", "object"), "summary is not a JSON object"),
        ]
        tests["puzzles"] = [
            (
                f"status IN ({', '.join(repr(s) for s in PUZZLE_STATUSES)})",
                f"status is not one of {', '.join(PUZZLE_STATUSES)}",
            ),
            (_json_is("record", "object"), "record is not a JSON object"),
            (_json_is("findings", "array"), "findings not a list"),
            (_json_is("warnings", "array"), "warnings not a list"),
        ]
        tests["puzzle_events"] = [
            (_json_is("detail", "object"), "detail not a JSON object"),
        ]
    if version >= 4:
        tests["jobs"] = [
            (
                f"status IN ({', '.join(repr(s) for s in JOB_STATES)})",
                f"status is not one of {', '.join(JOB_STATES)}",
            ),
            (_json_is("params", "object"), "params are not a JSON object"),
            (_json_is("checkpoint", "object"), "checkpoint is not a JSON object"),
            ("result IS NULL OR json_valid(result)", "result is not JSON"),
        ]
    return tests


def _check_rows(con: sqlite3.Connection, path: Path, version: int) -> None:
    """Refuse (ProjectError naming the table, row and column) a cell of the wrong type or out
    of range: SQLite's quick_check passes such files, and the studio would fail on them later.
    One scan per table."""
    want = layout(version)
    have = _tables_of(con)
    for table, columns in want.items():
        if table not in have:
            raise ProjectError(
                f"has no table {table!r} (format {version} has one). {DAMAGED}", path
            )
        present = {c[0] for c in have[table]}
        for column, _kind, _nn in columns:
            if column not in present:
                raise ProjectError(
                    f"table {table!r} has no column {column!r} (format {version} has one). "
                    f"{DAMAGED}",
                    path,
                )
    values = _value_tests(version)
    for table, columns in want.items():
        tests = [
            (t, f"column {c!r} holds a value of the wrong type")
            for c, kind, nn in columns
            if (t := _type_test(c, kind, nn)) is not None
        ]
        tests += values.get(table, [])
        if not tests:
            continue
        conds = ", ".join(f"coalesce({t}, 0)" for t, _ in tests)
        row = con.execute(
            f"SELECT rowid, {conds} FROM {_quoted(table)} WHERE NOT ("
            + " AND ".join(f"coalesce({t}, 0)" for t, _ in tests)
            + ") LIMIT 1"
        ).fetchone()
        if row is not None:
            problem = next(what for ok, (_, what) in zip(row[1:], tests, strict=True) if not ok)
            raise ProjectError(f"table {table!r}, row {row[0]}: {problem}. {DAMAGED}", path)
    # NOT INDEXED: the rows themselves (quick_check does not compare indexes with tables)
    for (font,) in con.execute("SELECT DISTINCT font FROM glyphs NOT INDEXED"):
        try:
            GlyphKey(0x41, font)
        except (ValueError, TypeError):
            raise ProjectError(
                f"table 'glyphs': font id {font!r} is malformed. {DAMAGED}", path
            ) from None


def _check_schema(con: sqlite3.Connection, path: Path) -> None:
    row = con.execute(
        "SELECT version, json FROM schema_versions ORDER BY version DESC LIMIT 1"
    ).fetchone()
    if row is None:
        raise ProjectError("holds no concept schema", path)
    try:
        schema_from_text(str(row[1]), f"{path} (schema version {row[0]})")
    except SchemaError as e:
        raise ProjectError(f"its stored schema is invalid: {e}", path) from None


def check_project_file(path: Path) -> ProjectFileCheck:
    """Everything :meth:`Project.open <studio.store.project.Project.open>` relies on, checked
    read-only before a byte is written: an SQLite file that passes ``integrity_check``, a studio
    ``meta`` table with a readable format this build can open, every table and column of that
    format, cells of the right types and ranges (code points, statuses, JSON shapes) and a
    valid stored schema. Raises ProjectError naming the file (and table and row); the file is
    never changed. A few milliseconds for a typical project (one scan per table)."""
    meta = read_project_meta(path, quick_check=False)
    version = parse_format_version(meta.get("format_version"), path)
    with read_only_connection(path) as con:
        try:
            # integrity_check, not quick_check: it also compares every index with its table
            # (a flipped byte in an index would otherwise hand the studio a value its table
            # does not hold); about twice quick_check's time, still milliseconds.
            check = con.execute("PRAGMA integrity_check(3)").fetchall()
            if check != [("ok",)]:
                detail = "; ".join(str(r[0]) for r in check[:3])
                raise ProjectError(f"the project file is damaged ({detail}). {DAMAGED}", path)
            _check_rows(con, path, version)
            _check_schema(con, path)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            raise ProjectError(f"the project file is damaged ({e}). {DAMAGED}", path) from None
    return ProjectFileCheck(version, meta)


#: What a lab database with damage is told (no file to restore: the server keeps the data).
DB_DAMAGED = "It was not changed; restore it from a pg_dump backup or ask the lab's administrator."


def check_database(conn: Connection, location: str) -> ProjectFileCheck:
    """:func:`check_project_file` for a PostgreSQL lab database, on an open connection (run it
    in a read-only transaction: nothing is written): a studio ``meta`` table with a format
    this build can open, every table and column of that format, glyph code points and
    statuses and puzzle statuses in range, a valid stored schema. Cell types need no check
    (PostgreSQL's columns are strictly typed) and neither does the storage (the server's job).
    ``location`` is the URL without its password, for messages."""
    meta = read_database_meta(conn, location)
    tables = set(table_names(conn))
    version = parse_format_version(meta.get("format_version"), location)
    for table, columns in layout(version).items():
        if table not in tables:
            raise ProjectError(
                f"has no table {table!r} (format {version} has one). {DB_DAMAGED}", location
            )
        present = set(column_names(conn, table))
        for column, _kind, _nn in columns:
            if column not in present:
                raise ProjectError(
                    f"table {table!r} has no column {column!r} (format {version} has one). "
                    f"{DB_DAMAGED}",
                    location,
                )
    ranges = [
        ("glyphs", "id", f"codepoint BETWEEN 0 AND {MAX_CODEPOINT}", "code point outside Unicode"),
        (
            "glyphs",
            "id",
            f"status IN ({', '.join(repr(s) for s in GLYPH_STATUSES)})",
            f"status is not one of {', '.join(GLYPH_STATUSES)}",
        ),
    ]
    for table, key, test, what in ranges:
        row = conn.execute(
            text(f"SELECT {key} FROM {table} WHERE NOT coalesce({test}, false) LIMIT 1")
        ).first()
        if row is not None:
            raise ProjectError(f"table {table!r}, row {row[0]}: {what}. {DB_DAMAGED}", location)
    row = conn.execute(
        text("SELECT version, json FROM schema_versions ORDER BY version DESC LIMIT 1")
    ).first()
    if row is None:
        raise ProjectError("holds no concept schema", location)
    try:
        schema_from_text(str(row[1]), f"{location} (schema version {row[0]})")
    except SchemaError as e:
        raise ProjectError(f"its stored schema is invalid: {e}", location) from None
    return ProjectFileCheck(version, meta)
