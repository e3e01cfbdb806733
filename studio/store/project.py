"""A project is one database: the schema (versioned), fonts, glyphs and tags, and the puzzle
sets under curation (with an append-only log of every curation edit). It lives in an SQLite file
or in a PostgreSQL database (a lab's shared server): one code path, the same SQL text for both
(see :mod:`studio.store.dialect` for the DDL).

Every public method that changes data runs in its own transaction and commits before it returns,
so killing the process loses at most the edit in flight. A file is in WAL mode with
``synchronous=FULL``. Opening checks the project before anything is written to it: a damaged or
foreign file or database raises ProjectError and stays as it was.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

from studio import __version__
from studio.core.annotations import HAND, TagRow, source_problem
from studio.core.errors import ProjectError, SchemaError, StudioError
from studio.core.keys import GlyphKey
from studio.core.schema import Schema, schema_from_text
from studio.store import lab
from studio.store.dbfile import (
    APPLICATION_ID,
    is_database_url,
    location_dialect,
    open_engine,
    read_only_connection,
    safe_location,
)
from studio.store.dialect import fix_identity, is_postgres, require_empty, translate
from studio.store.filecheck import check_database, check_project_file
from studio.store.jobs import JobQueue
from studio.store.labproject import LabProjectMixin
from studio.store.migrations import FORMAT_VERSION, MIGRATIONS, PUZZLE_STATUSES, create_current
from studio.store.pilots import (
    StoredAnswer,
    add_pilot_results,
    human_accuracy,
    human_choices,
    pilots,
)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class GlyphRecord:
    id: int
    key: GlyphKey
    render_font: str | None
    status: str  # pending | ok | missing | uncovered
    reason: str | None

    @property
    def substituted(self) -> bool:
        return self.render_font is not None and self.render_font != self.key.font


@dataclass(frozen=True, slots=True)
class TagRecord:
    key: GlyphKey
    concept: str
    value: str
    author: str
    created_at: str | None
    #: how the tag came to be: ``hand`` or ``suggestion`` (issue 30; TAG_SOURCES)
    source: str = HAND


@dataclass(frozen=True, slots=True)
class FontRecord:
    id: str
    family: str
    style: str
    path: str
    face_index: int
    sha256: str
    source: str
    num_codepoints: int
    has_data: bool


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    version: int
    created_at: str
    author: str
    note: str


@dataclass(frozen=True)
class TagChange:
    """A schema edit that must carry the project's tags along (renames) or drop them (removals)."""

    kind: str  # rename_concept | remove_concept | rename_value | remove_value
    concept: str
    value: str | None = None
    new_name: str | None = None


@dataclass(frozen=True, slots=True)
class PuzzleSetRecord:
    """A stored puzzle set: a generated split (one fold) imported for curation."""

    id: int
    name: str
    params: dict[str, Any]
    summary: dict[str, Any]
    created_at: str
    author: str
    count: int


@dataclass(frozen=True)
class NewPuzzle:
    """A puzzle to store: its record (``Puzzle.to_json()``) and its curation state.
    ``record_text`` may hold the record already serialised (by a worker thread, say)."""

    record: Mapping[str, Any]
    status: str = "draft"
    comment: str = ""
    findings: Sequence[Mapping[str, Any]] = ()
    warnings: Sequence[Mapping[str, Any]] = ()
    record_text: str | None = None
    #: what the list shows (layout, rule, concept, split) when the record does not carry it
    #: under those names (a stimulus item's: its family reads them); None: the record's own
    columns: tuple[str, str, str, str] | None = None

    def listed(self) -> tuple[str, str, str, str]:
        if self.columns is not None:
            return self.columns
        r = self.record
        return (
            str(r.get("layout", "")),
            str(r.get("rule", "")),
            str(r.get("concept", "")),
            str(r.get("split", "")),
        )


@dataclass(frozen=True, slots=True)
class PuzzleSummary:
    """What a list of puzzles shows, read without parsing any record (fast for big sets)."""

    set_id: int
    puzzle_id: str
    position: int
    layout: str
    rule: str
    concept: str
    split: str
    status: str
    comment: str
    errors: int
    warnings: int
    updated_at: str
    author: str

    @property
    def id(self) -> str:
        return self.puzzle_id


@dataclass(frozen=True, slots=True)
class StoredPuzzle:
    """A puzzle as stored: ``record`` is the JSON object ``Puzzle.from_json`` reads."""

    set_id: int
    puzzle_id: str
    position: int
    record: dict[str, Any]
    status: str
    comment: str
    findings: list[dict[str, Any]]
    warnings: list[dict[str, Any]]
    updated_at: str
    author: str

    @property
    def rule(self) -> str:
        return str(self.record.get("rule", ""))

    @property
    def concept(self) -> str:
        return str(self.record.get("concept", ""))


@dataclass(frozen=True)
class PuzzleChange:
    """One curation edit of one puzzle, and the log entry that records it.

    Fields left ``None`` keep their stored value. ``kind`` and ``detail`` go to
    ``puzzle_events`` (e.g. ``status`` with ``{"old": "draft", "new": "approved"}``,
    ``replace-foil`` with the answer index and the old and new glyph)."""

    puzzle_id: str
    kind: str
    detail: Mapping[str, Any] = field(default_factory=dict)
    record: Mapping[str, Any] | None = None
    status: str | None = None
    comment: str | None = None
    findings: Sequence[Mapping[str, Any]] | None = None
    warnings: Sequence[Mapping[str, Any]] | None = None
    #: with ``record``: what the list shows (layout, rule, concept, split) when the record
    #: does not carry it under those names (a stimulus item's; see :class:`NewPuzzle`)
    columns: tuple[str, str, str, str] | None = None


@dataclass(frozen=True, slots=True)
class PuzzleEvent:
    """One entry of the append-only curation log."""

    id: int
    set_id: int
    puzzle_id: str  # empty for an event about the whole set (import, removal)
    at: str
    author: str
    kind: str
    detail: dict[str, Any]


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _check_status(status: str) -> None:
    if status not in PUZZLE_STATUSES:
        raise ValueError(f"puzzle status {status!r} is not one of {', '.join(PUZZLE_STATUSES)}")


def _precheck(path: Path) -> int:
    """Refuse a file that is not an intact studio project, without writing a byte to it
    (see :func:`~studio.store.filecheck.check_project_file`); returns its format version."""
    return check_project_file(path).format_version


def _sidecars(path: Path) -> tuple[Path, Path]:
    return Path(f"{path}-wal"), Path(f"{path}-shm")


def _remove(*paths: Path) -> None:
    for f in paths:
        f.unlink(missing_ok=True)


def _sqlite_copy(source: Path, target: Path) -> None:
    """A complete copy of the project at ``source`` (committed WAL content included) written
    to ``target`` with SQLite's backup API: read-only, and no Python open() of ``source``
    (which would drop this process's locks on it; see :mod:`studio.store.dbfile`)."""
    _remove(target, *_sidecars(target))
    with read_only_connection(source) as src:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()


def _migrate_file(path: Path, version: int) -> None:
    """Bring a format-``version`` project to ``FORMAT_VERSION``.

    The steps run on a copy; the result must pass :func:`check_project_file` as a current
    project. Only then is the original kept as ``<name>.bak-format<version>`` (byte for byte,
    or a complete copy when it has a WAL) and the migrated copy moved into its place. A step
    that fails raises ProjectError naming the file and the step; the file is then unchanged
    and no backup is left."""
    work = path.with_name(f".{path.name}.migrating")
    backup = path.with_name(f"{path.name}.bak-format{version}")
    staged = path.with_name(f".{backup.name}.writing")
    step = version
    try:
        _sqlite_copy(path, work)
        engine = open_engine(work)
        try:
            while step < FORMAT_VERSION:
                with engine.begin() as conn:
                    MIGRATIONS[step](conn)
                    _set_meta(conn, "format_version", str(step + 1))
                step += 1
            with engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            engine.dispose()
        _remove(*_sidecars(work))
        check_project_file(work)
        if _sidecars(path)[0].exists():
            _sqlite_copy(path, staged)
        else:
            shutil.copy2(path, staged)
        staged.replace(backup)
    except (ProjectError, sqlite3.Error, SQLAlchemyError, OSError) as e:
        _remove(work, *_sidecars(work), staged, *_sidecars(staged))
        problem = e.problem if isinstance(e, ProjectError) else str(getattr(e, "orig", e))
        raise ProjectError(
            f"cannot be migrated from project format {version} to {FORMAT_VERSION} (at the step "
            f"to format {min(step + 1, FORMAT_VERSION)}: {problem}). It was not changed.",
            path,
        ) from e
    except BaseException:
        _remove(work, *_sidecars(work), staged, *_sidecars(staged))
        raise
    # The old WAL's edits are in the copy and the backup; it must not meet the new file.
    _remove(*_sidecars(path))
    work.replace(path)


#: ``pg_advisory_xact_lock`` key of a migration or creation: two clients never run one at once
MIGRATION_LOCK = 0x616E616C6F677931  # "analogy1"
#: how long a migration waits for other clients' open transactions on the tables it alters
MIGRATION_LOCK_TIMEOUT = "60s"
PG_DUMP_HINT = (
    "Back the database up with pg_dump before a newer studio migrates it (docs/lab-server.md)."
)


def _database_error(e: SQLAlchemyError) -> str:
    """The first line of a driver error's message (no SQL, no parameters)."""
    orig = getattr(e, "orig", None) or e
    lines = str(orig).strip().splitlines()
    return lines[0] if lines else type(orig).__name__


def _check_database(engine: Engine, location: str) -> int:
    """:func:`~studio.store.filecheck.check_database` in a read-only transaction; the format."""
    with engine.connect() as conn:
        conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        version = check_database(conn, location).format_version
        conn.rollback()
    return version


def _migrate_database(engine: Engine, location: str) -> None:
    """Bring a lab database to ``FORMAT_VERSION`` in place, in one transaction under an
    advisory lock (another client that opens it meanwhile waits, then finds it current). Its
    DDL is transactional: a failed step leaves the database exactly as it was. No backup file
    is made: that is pg_dump's job (:data:`PG_DUMP_HINT`)."""
    from studio.store.labschema import may_install_rules

    step = 0
    version = 0
    try:
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{MIGRATION_LOCK_TIMEOUT}'")
            version = step = check_database(conn, location).format_version
            if step < FORMAT_VERSION and not may_install_rules(conn):
                # a step creates tables: made by another login they would be that login's,
                # with every right over them (an annotator could rewrite people's answers)
                raise ProjectError(
                    "only the database's owner may migrate it: ask them to open it once "
                    "with this build"
                )
            while step < FORMAT_VERSION:
                MIGRATIONS[step](conn)
                _set_meta(conn, "format_version", str(step + 1))
                step += 1
            check_database(conn, location)
    except (ProjectError, SQLAlchemyError) as e:
        problem = e.problem if isinstance(e, ProjectError) else _database_error(e)
        raise ProjectError(
            f"cannot be migrated from project format {version} to {FORMAT_VERSION} (at the step "
            f"to format {min(step + 1, FORMAT_VERSION)}: {problem}). It was not changed "
            f"(the migration is one transaction). {PG_DUMP_HINT}",
            location,
        ) from e


def _refresh_rules(engine: Engine) -> None:
    """A lab database's server rules brought to this build's, when its owner opens it
    (:func:`studio.store.labschema.refresh_server_rules`), in one transaction under the
    migration lock."""
    from studio.store.labschema import (
        SERVER_RULES_VERSION,
        may_install_rules,
        refresh_server_rules,
        server_rules_version,
    )

    try:
        with engine.connect() as conn:
            current = server_rules_version(conn) >= SERVER_RULES_VERSION
            if current or not may_install_rules(conn):
                return  # anyone but the owner opens with the rules there (and takes no lock)
        with engine.begin() as conn:
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{MIGRATION_LOCK_TIMEOUT}'")
            refresh_server_rules(conn)
    except SQLAlchemyError:
        # best effort: the transaction rolled back and the database keeps the rules it has
        # (an owner who does not own the tables, say); the project opens as it did before
        return


def _create_database(engine: Engine, location: str, schema: Schema, author: str) -> None:
    """A new project in an EMPTY PostgreSQL database (its default schema), in one transaction;
    a database that has tables is refused, naming them (the studio never drops a lab's data)."""
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
        require_empty(
            conn,
            location,
            "a new project needs an empty database. Create one (createdb) or open this one if "
            "it is a studio project",
        )
        _create_layout(conn, schema, author)


def _create_layout(conn: Connection, schema: Schema, author: str) -> None:
    create_current(conn)
    _set_meta(conn, "application", APPLICATION_ID)
    _set_meta(conn, "format_version", str(FORMAT_VERSION))
    _set_meta(conn, "created_at", now_iso())
    _set_meta(conn, "created_by", f"analogy-studio {__version__}")
    conn.execute(
        text(
            "INSERT INTO schema_versions (version, json, created_at, author, note)"
            " VALUES (1, :j, :t, :a, 'created')"
        ),
        {"j": schema.dumps(), "t": now_iso(), "a": author},
    )


class Project(LabProjectMixin):
    """Open with :meth:`open` or :meth:`create`; close when done (or use as a context manager).

    ``location`` is where it lives as it may be shown (a file's path, or a database URL
    without its password); ``dialect`` is ``"sqlite"`` or ``"postgresql"``; ``path`` is the
    file of an SQLite project (a lab database has none: asking for it raises ProjectError)."""

    def __init__(self, location: str | Path, engine: Engine) -> None:
        # the location as given (a URL may carry a password): only ever handed to engines
        self._target: str | Path = str(location) if is_database_url(location) else Path(location)
        self.location = safe_location(location)
        self.dialect = location_dialect(location)
        self._engine = engine
        self._schema: Schema | None = None
        self._schema_version = 0
        self._jobs: JobQueue | None = None

    @property
    def path(self) -> Path:
        """The project file (SQLite). A lab database has no file: ProjectError."""
        if isinstance(self._target, Path):
            return self._target
        raise ProjectError("is a lab database, not a file", self.location)

    @property
    def target(self) -> str | Path:
        """The location as given, for what opens its own connection (the job queue, worker
        processes): a URL may carry a password here, so never show or store it — use
        :attr:`location`."""
        return self._target

    @property
    def is_database(self) -> bool:
        """Whether the project lives on a PostgreSQL server (not in a file)."""
        return self.dialect == "postgresql"

    # ---- lifecycle -------------------------------------------------------------------------
    @classmethod
    def create(
        cls, path: str | Path, schema: Schema, *, author: str = "", overwrite: bool = False
    ) -> Project:
        """A new project at ``path``: a file (``overwrite`` replaces an existing one) or a
        PostgreSQL URL, whose database must be empty (``overwrite`` does not apply: the studio
        never drops a lab's tables); everything is created in one transaction."""
        if is_database_url(path):
            engine = open_engine(path)
            try:
                _create_database(engine, safe_location(path), schema, author)
            finally:
                engine.dispose()
            return cls.open(path)
        p = Path(path)
        if p.exists() and not overwrite:
            raise ProjectError("already exists; choose another name or open it", p)
        tmp = p.with_name(f".{p.name}.creating")
        for f in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            f.unlink(missing_ok=True)
        p.parent.mkdir(parents=True, exist_ok=True)
        engine = open_engine(tmp)
        with engine.begin() as conn:
            _create_layout(conn, schema, author)
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        engine.dispose()
        for f in (Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            f.unlink(missing_ok=True)
        if overwrite:
            for f in (p, Path(f"{p}-wal"), Path(f"{p}-shm")):
                f.unlink(missing_ok=True)
        tmp.replace(p)
        return cls.open(p)

    @classmethod
    def open(cls, path: str | Path) -> Project:
        """Open a project, migrating an older format (see :func:`_migrate_file`). Everything
        the studio relies on is checked first, read-only: a file that is refused with
        ProjectError is left exactly as it was. A PostgreSQL URL: checked in a read-only
        transaction, an older format migrated in place in one transaction
        (:func:`_migrate_database`)."""
        if is_database_url(path):
            return cls._open_database(str(path))
        p = Path(path)
        version = _precheck(p)
        if version < FORMAT_VERSION:
            _migrate_file(p, version)
        project = cls(p, open_engine(p))
        try:
            project._load_schema()
        except BaseException:
            project.close()
            raise
        return project

    @classmethod
    def _open_database(cls, url: str) -> Project:
        location = safe_location(url)
        engine = open_engine(url)
        try:
            try:
                version = _check_database(engine, location)
            except SQLAlchemyError as e:
                raise ProjectError(f"cannot be read: {_database_error(e)}", location) from e
            if version < FORMAT_VERSION:
                _migrate_database(engine, location)
            _refresh_rules(engine)
            project = cls(url, engine)
            project._load_schema()
        except BaseException:
            engine.dispose()
            raise
        return project

    def close(self) -> None:
        """Fold the write-ahead log into the file, then close every pooled connection.

        The checkpoint makes the main file complete on its own even when a connection outside
        the pool is still open (then SQLite would leave the WAL behind, and a caller that moves
        only the main file, or deletes the WAL, would lose the last edits)."""
        if self._jobs is not None:
            self._jobs.close()
            self._jobs = None
        # closing must not fail: should the checkpoint fail, the WAL still holds the edits
        if self.dialect == "sqlite":
            with suppress(Exception), self._engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        self._engine.dispose()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[Connection]:
        with self._engine.begin() as conn:
            yield conn

    @property
    def jobs(self) -> JobQueue:
        """The background jobs' queue, logs and flags in this file (made on first use; the
        worker processes open their own)."""
        if self._jobs is None:
            self._jobs = JobQueue(self._target)
        return self._jobs

    @property
    def format_version(self) -> int:
        return int(self.meta("format_version") or 0)

    def meta(self, key: str) -> str | None:
        with self._engine.connect() as conn:
            row = conn.execute(text("SELECT value FROM meta WHERE key=:k"), {"k": key}).first()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._tx() as conn:
            _set_meta(conn, key, value)

    # ---- schema ----------------------------------------------------------------------------
    def _load_schema(self) -> None:
        with self._engine.connect() as conn:
            row = conn.execute(
                text("SELECT version, json FROM schema_versions ORDER BY version DESC LIMIT 1")
            ).first()
        if row is None:
            raise ProjectError("holds no concept schema", self.location)
        try:
            self._schema = schema_from_text(row[1], f"{self.location} (schema version {row[0]})")
        except SchemaError as e:
            raise ProjectError(f"its stored schema is invalid: {e}", self.location) from None
        self._schema_version = int(row[0])

    @property
    def schema(self) -> Schema:
        assert self._schema is not None
        return self._schema

    @property
    def schema_version(self) -> int:
        return self._schema_version

    def schema_history(self) -> list[SchemaVersion]:
        with self._engine.connect() as conn:
            rows = conn.execute(
                text("SELECT version, created_at, author, note FROM schema_versions ORDER BY 1")
            ).all()
        return [SchemaVersion(int(r[0]), r[1], r[2], r[3]) for r in rows]

    def set_schema(
        self,
        schema: Schema,
        *,
        author: str = "",
        note: str = "",
        tag_changes: Sequence[TagChange] = (),
    ) -> int:
        """Store a new schema version and carry the tags along, in one transaction.

        Tags that would no longer fit the new schema (and are not covered by a removal in
        ``tag_changes``) make the call fail with SchemaError: no tag silently vanishes.
        """
        try:
            version = self._write_schema(schema, author, note, tag_changes)
        except _SchemaRace as race:
            self._load_schema()
            raise ProjectError(
                f"its schema was changed meanwhile by {race.author or 'another client'} "
                f"(now version {race.version}); the new version is loaded: redo the edit on it",
                self.location,
            ) from None
        self._schema = schema
        self._schema_version = version
        return version

    def _write_schema(
        self, schema: Schema, author: str, note: str, tag_changes: Sequence[TagChange]
    ) -> int:
        with self._tx() as conn:
            # one writer of schema versions at a time (PostgreSQL; SQLite has one writer anyway)
            # and the version this edit was made on must still be the newest
            if is_postgres(conn):
                conn.exec_driver_sql("LOCK TABLE schema_versions IN EXCLUSIVE MODE")
            newest = conn.execute(
                text("SELECT version, author FROM schema_versions ORDER BY version DESC LIMIT 1")
            ).first()
            if newest is not None and int(newest[0]) != self._schema_version:
                raise _SchemaRace(int(newest[0]), str(newest[1]))
            # the new version first: on a lab server the renamed tags are checked against it
            version = self._schema_version + 1
            conn.execute(
                text(
                    "INSERT INTO schema_versions (version, json, created_at, author, note)"
                    " VALUES (:v, :j, :t, :a, :n)"
                ),
                {"v": version, "j": schema.dumps(), "t": now_iso(), "a": author, "n": note},
            )
            for ch in tag_changes:
                _apply_tag_change(conn, ch)
            orphans = _orphan_tags(conn, schema)
            if orphans:  # the whole edit, the version with it, is rolled back
                listing = ", ".join(f"{c}={v!r} ({n})" for (c, v), n in list(orphans.items())[:8])
                raise SchemaError(
                    None,
                    "$",
                    f"{sum(orphans.values())} tags use concepts or values the new schema lacks: "
                    f"{listing}",
                )
        return version

    # ---- fonts -----------------------------------------------------------------------------
    def add_font(
        self,
        *,
        id: str,
        family: str,
        style: str,
        path: str,
        face_index: int,
        sha256: str,
        source: str,
        num_codepoints: int,
        data: bytes | None = None,
    ) -> None:
        """Record a font the project uses (``data`` keeps a user-added font inside the project)."""
        with self._tx() as conn:
            conn.execute(
                text(
                    "INSERT INTO fonts (id, family, style, path, face_index, sha256, source,"
                    " num_codepoints, data, added_at) VALUES (:id, :family, :style, :path, :fi,"
                    " :sha, :source, :n, :data, :t) ON CONFLICT(id) DO UPDATE SET"
                    " family=excluded.family, style=excluded.style, path=excluded.path,"
                    " face_index=excluded.face_index, sha256=excluded.sha256,"
                    " source=excluded.source, num_codepoints=excluded.num_codepoints,"
                    " data=COALESCE(excluded.data, fonts.data)"
                ),
                {
                    "id": id,
                    "family": family,
                    "style": style,
                    "path": path,
                    "fi": face_index,
                    "sha": sha256,
                    "source": source,
                    "n": num_codepoints,
                    "data": data,
                    "t": now_iso(),
                },
            )

    def fonts(self) -> list[FontRecord]:
        with self._engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT id, family, style, path, face_index, sha256, source, num_codepoints,"
                    " data IS NOT NULL FROM fonts ORDER BY id"
                )
            ).all()
        return [
            FontRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], bool(r[8])) for r in rows
        ]

    def font_data(self, font_id: str) -> bytes | None:
        with self._engine.connect() as conn:
            row = conn.execute(text("SELECT data FROM fonts WHERE id=:i"), {"i": font_id}).first()
        return row[0] if row else None

    # ---- glyphs ----------------------------------------------------------------------------
    def add_glyphs(
        self,
        glyphs: Iterable[tuple[GlyphKey, str | None, str, str | None]],
    ) -> int:
        """Add (key, render_font, status, reason) glyphs; existing keys are left as they are.
        Returns how many were new."""
        with self._tx() as conn:
            return _insert_glyphs(conn, glyphs)

    def set_glyph_status(self, updates: Iterable[tuple[GlyphKey, str, str | None]]) -> None:
        """Record render verdicts: (key, status, reason) — ``ok`` or ``missing`` with a reason."""
        rows = [{"cp": k.codepoint, "f": k.font, "s": s, "r": r} for k, s, r in updates]
        if rows:
            with self._tx() as conn:
                conn.execute(
                    text("UPDATE glyphs SET status=:s, reason=:r WHERE codepoint=:cp AND font=:f"),
                    rows,
                )

    def glyphs(self) -> list[GlyphRecord]:
        """All glyphs, ordered by font id then code point."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT id, codepoint, font, render_font, status, reason FROM glyphs"
                    " ORDER BY font, codepoint"
                )
            ).all()
        return [GlyphRecord(r[0], GlyphKey(r[1], r[2]), r[3], r[4], r[5]) for r in rows]

    def glyph(self, key: GlyphKey) -> GlyphRecord | None:
        with self._engine.connect() as conn:
            r = conn.execute(
                text(
                    "SELECT id, codepoint, font, render_font, status, reason FROM glyphs"
                    " WHERE codepoint=:cp AND font=:f"
                ),
                {"cp": key.codepoint, "f": key.font},
            ).first()
        return GlyphRecord(r[0], GlyphKey(r[1], r[2]), r[3], r[4], r[5]) if r else None

    def glyph_count(self) -> int:
        with self._engine.connect() as conn:
            return int(conn.execute(text("SELECT COUNT(*) FROM glyphs")).scalar_one())

    # ---- tags ------------------------------------------------------------------------------
    def _check_tag(self, concept: str, value: str) -> None:
        if not self.schema.has_tag(concept, value):
            raise SchemaError(
                None, "$", f"{concept}={value!r} is not a concept value of the project's schema"
            )

    def _glyph_id_of(self, conn: Connection, key: GlyphKey, *, create: bool) -> int | None:
        """The glyph's id; with ``create``, a glyph not in the project is added as pending
        (on a lab database only a curator or admin may add glyphs: an annotator is told so)."""
        find = text("SELECT id FROM glyphs WHERE codepoint=:cp AND font=:f")
        params = {"cp": key.codepoint, "f": key.font}
        row = conn.execute(find, params).first()
        if row is None and create:
            if self.is_database:
                lab.require_role(conn, self.user, "curator", f"add glyph {key} to the project")
            conn.execute(
                text(
                    "INSERT INTO glyphs (codepoint, font) VALUES (:cp, :f) ON CONFLICT DO NOTHING"
                ),
                params,
            )
            row = conn.execute(find, params).first()
        return None if row is None else int(row[0])

    def add_tags(
        self,
        keys: Iterable[GlyphKey],
        concept: str,
        value: str,
        author: str,
        source: str = HAND,
    ) -> list[GlyphKey]:
        """Tag glyphs as ``author`` (adding unknown glyphs as pending): the tag joins the
        author's own tags and the glyphs' consensus follows (see :mod:`studio.store.lab`; on a
        lab database the author is the login, whatever ``author`` says). ``source`` records
        how it came to be (``hand``, or ``suggestion``: accepted from the tagger's
        suggestions); a glyph the author already tagged so keeps its tag as it was. Returns
        the keys the author newly tagged, which is exactly what an undo must remove."""
        self._check_tag(concept, value)
        problem = source_problem(source)
        if problem:
            raise StudioError(problem)
        keys = list(dict.fromkeys(keys))
        who = self.author_for(author)
        t = now_iso()
        with self._tx() as conn:
            ids = {k: self._glyph_id_of(conn, k, create=True) for k in keys}
            by_id = {gid: k for k, gid in ids.items() if gid is not None}
            added = lab.add_own_tags(conn, who, list(by_id), concept, value, t, source)
        return [by_id[g] for g in added]

    def remove_tags(
        self, keys: Iterable[GlyphKey], concept: str, value: str, author: str | None = None
    ) -> list[TagRecord]:
        """Remove a tag from glyphs: ``author``'s own (on a lab database always the login's);
        with no author, on a project file, everyone's — its single user removing the tag
        outright. Returns the removed records (each person's, with author and time) so that
        an undo can put them back exactly."""
        who = self.user or author
        keys = list(dict.fromkeys(keys))
        with self._tx() as conn:
            ids = {k: self._glyph_id_of(conn, k, create=False) for k in keys}
            by_id = {gid: k for k, gid in ids.items() if gid is not None}
            # what the DELETE removed, not what a SELECT saw before: another client may
            # remove the same tag meanwhile, and then this undo record is empty
            rows = lab.remove_own_tags(conn, who, list(by_id), concept, value)
        return [TagRecord(by_id[g], concept, value, a, at, src) for g, a, at, src in rows]

    def restore_tags(self, records: Iterable[TagRecord]) -> None:
        """Put back tags removed earlier, keeping their author, time and source."""
        with self._tx() as conn:
            touched: set[int] = set()
            for r in records:
                gid = self._glyph_id_of(conn, r.key, create=True)
                assert gid is not None
                conn.execute(
                    text(
                        "INSERT INTO annotator_tags (glyph_id, concept, value, annotator,"
                        " created_at, source) VALUES (:g, :c, :v, :a, :t, :s)"
                        " ON CONFLICT DO NOTHING"
                    ),
                    {
                        "g": gid,
                        "c": r.concept,
                        "v": r.value,
                        "a": r.author,
                        "t": r.created_at,
                        "s": r.source,
                    },
                )
                touched.add(gid)
            lab.refresh_consensus(conn, touched)

    def import_rows(
        self,
        rows: Sequence[TagRow],
        author: str,
        glyphs: Iterable[tuple[GlyphKey, str | None, str, str | None]] = (),
    ) -> int:
        """Insert tags, and the glyphs they need (``glyphs`` as for :meth:`add_glyphs`), in one
        transaction: all or nothing. Returns how many tags were new (no rows: 0, nothing
        written). See :meth:`import_tags`."""
        return self.import_tags(rows, author, glyphs).new_tags

    def import_tags(
        self,
        rows: Sequence[TagRow],
        author: str,
        glyphs: Iterable[tuple[GlyphKey, str | None, str, str | None]] = (),
    ) -> ImportCounts:
        """:meth:`import_rows`, returning how many tags and glyphs were new.

        The rows are first staged in a temporary table of this connection, in chunks, with no
        lock on the project; then one short ``BEGIN IMMEDIATE`` transaction copies them in
        and counts what it added. Other processes see the import all at once or not at all,
        and a person tagging meanwhile waits at most for that final copy (a fraction of a
        second for 100,000 rows), never the 5 s busy timeout. The counts are those of the
        writing transaction itself, so edits made by others meanwhile cannot skew them."""
        for r in rows:
            self._check_tag(r.concept, r.value)
        if not rows:
            return ImportCounts(0, 0)
        glyph_rows = [
            {"cp": k.codepoint, "f": k.font, "rf": rf, "s": st, "r": rs} for k, rf, st, rs in glyphs
        ]
        for r in rows:
            problem = source_problem(r.source)
            if problem:
                raise StudioError(problem)
        tag_rows = [
            {
                "cp": int(r.codepoint_hex, 16),
                "f": r.font,
                "c": r.concept,
                "v": r.value,
                "s": r.source,
            }
            for r in rows
        ]
        with self._engine.connect() as conn:
            try:
                for ddl in _STAGING_DDL:
                    for statement in translate(ddl, self.dialect):
                        conn.exec_driver_sql(statement)
                for table, columns, chunk_rows in (
                    ("import_glyphs", "(codepoint, font, render_font, status, reason)"
                     " VALUES (:cp, :f, :rf, :s, :r)", glyph_rows),
                    ("import_tags", "(codepoint, font, concept, value, source)"
                     " VALUES (:cp, :f, :c, :v, :s)", tag_rows),
                ):  # fmt: skip
                    for start in range(0, len(chunk_rows), _STAGING_CHUNK):
                        conn.execute(
                            text(f"INSERT INTO {table} {columns}"),
                            chunk_rows[start : start + _STAGING_CHUNK],
                        )
                        conn.commit()  # temp tables only: the project is not locked
                # on a lab database an import is the login's, whatever ``author`` says (an
                # owner's import once went in as the OS user and counted as an annotator)
                counts = _copy_staged(conn, self.author_for(author), now_iso())
            finally:
                if conn.in_transaction():
                    conn.rollback()
                for table in ("import_glyphs", "import_tags"):
                    conn.exec_driver_sql(f"DROP TABLE IF EXISTS {_TEMP[self.dialect]}{table}")
                conn.commit()
        return counts

    def tags_of(self, key: GlyphKey) -> list[TagRecord]:
        with self._engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT t.concept, t.value, t.author, t.created_at, t.source FROM tags t"
                    " JOIN glyphs g ON g.id=t.glyph_id WHERE g.codepoint=:cp AND g.font=:f"
                    " ORDER BY t.concept, t.value"
                ),
                {"cp": key.codepoint, "f": key.font},
            ).all()
        return [TagRecord(key, r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def all_tags(self) -> list[TagRecord]:
        with self._engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT g.codepoint, g.font, t.concept, t.value, t.author, t.created_at,"
                    " t.source FROM tags t JOIN glyphs g ON g.id=t.glyph_id"
                )
            ).all()
        return [TagRecord(GlyphKey(r[0], r[1]), r[2], r[3], r[4], r[5], r[6]) for r in rows]

    def tag_rows(self) -> list[TagRow]:
        """Every tag (the consensus) in exchange form, with its source, in exchange order."""
        return sorted(TagRow.of(t.concept, t.value, t.key, t.source) for t in self.all_tags())

    def tag_counts(self) -> Counter[tuple[str, str]]:
        with self._engine.connect() as conn:
            rows = conn.execute(
                text("SELECT concept, value, COUNT(*) FROM tags GROUP BY concept, value")
            ).all()
        return Counter({(r[0], r[1]): int(r[2]) for r in rows})

    def tag_count(self) -> int:
        with self._engine.connect() as conn:
            return int(conn.execute(text("SELECT COUNT(*) FROM tags")).scalar_one())

    def glyph_ids_with(self, concept: str, value: str | None = None) -> set[int]:
        """Glyph ids carrying any value of ``concept`` (or exactly ``value``)."""
        q = "SELECT DISTINCT glyph_id FROM tags WHERE concept=:c"
        params: dict[str, Any] = {"c": concept}
        if value is not None:
            q += " AND value=:v"
            params["v"] = value
        with self._engine.connect() as conn:
            return {int(r[0]) for r in conn.execute(text(q), params)}

    # ---- puzzles ---------------------------------------------------------------------------
    def add_puzzle_set(
        self,
        name: str,
        params: Mapping[str, Any],
        summary: Mapping[str, Any],
        puzzles: Sequence[NewPuzzle],
        author: str,
        *,
        set_id: int | None = None,
        event: str = "import",
    ) -> int:
        """Store a puzzle set and its puzzles in one transaction (all or nothing) and log
        ``event``. ``set_id`` re-uses a known id (a redone import). Returns the set's id."""
        for p in puzzles:
            _check_status(p.status)
        t = now_iso()
        with self._tx() as conn:
            if self.is_database:
                lab.require_role(conn, self.user, "curator", f"add the puzzle set “{name}”")
            columns = "name, params, summary, created_at, author"
            values = ":n, :p, :s, :t, :a"
            if set_id is not None:  # a redone import keeps its id
                columns, values = f"id, {columns}", f":id, {values}"
            new_id = int(
                conn.execute(
                    text(f"INSERT INTO puzzle_sets ({columns}) VALUES ({values}) RETURNING id"),
                    {
                        "id": set_id,
                        "n": name,
                        "p": _dumps(dict(params)),
                        "s": _dumps(dict(summary)),
                        "t": t,
                        "a": author,
                    },
                ).scalar_one()
            )
            if set_id is not None:
                fix_identity(conn, "puzzle_sets")
            if puzzles:
                conn.execute(
                    text(
                        "INSERT INTO puzzles (set_id, puzzle_id, position, record, layout, rule,"
                        " concept, split, status, comment, findings, warnings, n_errors,"
                        " n_warnings, updated_at, author) VALUES (:s, :pid, :pos, :rec, :lay,"
                        " :rule, :c, :sp, :st, :com, :f, :w, :ne, :nw, :t, :a)"
                    ),
                    [
                        {
                            "s": new_id,
                            "pid": str(p.record["id"]),
                            "pos": i,
                            "rec": p.record_text or _dumps(dict(p.record)),
                            "lay": p.listed()[0],
                            "rule": p.listed()[1],
                            "c": p.listed()[2],
                            "sp": p.listed()[3],
                            "st": p.status,
                            "com": p.comment,
                            "f": _dumps(list(p.findings)),
                            "w": _dumps(list(p.warnings)),
                            "ne": len(p.findings),
                            "nw": len(p.warnings),
                            "t": t,
                            "a": author,
                        }
                        for i, p in enumerate(puzzles)
                    ],
                )
            _log(conn, new_id, "", t, author, event, {"name": name, "puzzles": len(puzzles)})
        return new_id

    def remove_puzzle_set(self, set_id: int, author: str, *, event: str = "remove-set") -> None:
        """Delete a set and its puzzles (the log keeps what happened to them)."""
        with self._tx() as conn:
            row = conn.execute(
                text("SELECT name FROM puzzle_sets WHERE id=:i"), {"i": set_id}
            ).first()
            if row is None:
                raise ProjectError(f"has no puzzle set {set_id}", self.location)
            conn.execute(text("DELETE FROM puzzles WHERE set_id=:i"), {"i": set_id})
            conn.execute(text("DELETE FROM puzzle_sets WHERE id=:i"), {"i": set_id})
            _log(conn, set_id, "", now_iso(), author, event, {"name": row[0]})

    def puzzle_sets(self) -> list[PuzzleSetRecord]:
        """Every puzzle set, oldest first, with its number of puzzles."""
        with self._engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT s.id, s.name, s.params, s.summary, s.created_at, s.author,"
                    " (SELECT COUNT(*) FROM puzzles p WHERE p.set_id = s.id)"
                    " FROM puzzle_sets s ORDER BY s.id"
                )
            ).all()
        return [
            PuzzleSetRecord(
                int(r[0]), r[1], json.loads(r[2]), json.loads(r[3]), r[4], r[5], int(r[6])
            )
            for r in rows
        ]

    # ---- pilot studies (format 8, issue 29) ------------------------------------------------
    def add_pilot_results(
        self,
        pilot: Mapping[str, Any],
        set_id: int | None,
        participants: Mapping[str, tuple[str, str]],
        answers: Iterable[StoredAnswer],
        author: str,
    ) -> int:
        """Store one import of a pilot's results in one transaction
        (:func:`studio.store.pilots.add_pilot_results`); returns the answers stored."""
        with self._tx() as conn:
            return add_pilot_results(conn, pilot, set_id, participants, answers, author)

    def human_accuracy(self, set_id: int) -> dict[str, tuple[int, int]]:
        """Puzzle id -> (right, answers) of the kept participants, over a set's pilots."""
        with self._engine.connect() as conn:
            return human_accuracy(conn, set_id)

    def human_choices(self, set_id: int) -> dict[str, dict[int, int]]:
        """Puzzle id -> {answer index: kept participants who chose it}, over a set's pilots."""
        with self._engine.connect() as conn:
            return human_choices(conn, set_id)

    def pilots(self) -> list[dict[str, Any]]:
        with self._engine.connect() as conn:
            return pilots(conn)

    def puzzle_set(self, set_id: int) -> PuzzleSetRecord | None:
        return next((s for s in self.puzzle_sets() if s.id == set_id), None)

    _PUZZLE_COLUMNS = (
        "set_id, puzzle_id, position, record, status, comment, findings, warnings, updated_at,"
        " author"
    )

    @staticmethod
    def _stored(r: Any) -> StoredPuzzle:
        return StoredPuzzle(
            int(r[0]),
            r[1],
            int(r[2]),
            json.loads(r[3]),
            r[4],
            r[5],
            json.loads(r[6]),
            json.loads(r[7]),
            r[8],
            r[9],
        )

    @staticmethod
    def _puzzle_where(
        set_id: int,
        rule: str | None,
        concept: str | None,
        status: str | None,
        findings: str | None,
        split: str | None,
    ) -> tuple[str, dict[str, Any]]:
        q = " WHERE set_id=:s"
        params: dict[str, Any] = {"s": set_id}
        for col, val in (
            ("rule", rule),
            ("concept", concept),
            ("status", status),
            ("split", split),
        ):
            if val:
                q += f" AND {col}=:{col}"
                params[col] = val
        if findings:
            q += {
                "errors": " AND n_errors > 0",
                "warnings": " AND n_warnings > 0",
                "none": " AND n_errors = 0 AND n_warnings = 0",
            }[findings]
        return q, params

    def stored_puzzles(
        self,
        set_id: int,
        *,
        rule: str | None = None,
        concept: str | None = None,
        status: str | None = None,
        findings: str | None = None,
        split: str | None = None,
    ) -> list[StoredPuzzle]:
        """The puzzles of a set in generation order, optionally only one rule, concept,
        status or split; ``findings`` is ``errors`` (has errors), ``warnings`` (has warnings)
        or ``none`` (neither)."""
        where, params = self._puzzle_where(set_id, rule, concept, status, findings, split)
        q = f"SELECT {self._PUZZLE_COLUMNS} FROM puzzles{where} ORDER BY position"
        with self._engine.connect() as conn:
            rows = conn.execute(text(q), params).all()
        return [self._stored(r) for r in rows]

    def puzzle_summaries(
        self,
        set_id: int,
        *,
        rule: str | None = None,
        concept: str | None = None,
        status: str | None = None,
        findings: str | None = None,
        split: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> list[PuzzleSummary]:
        """As :meth:`stored_puzzles` but without the records: one query, no JSON parsed
        (10,000 puzzles in a few tens of milliseconds). ``ids`` limits it to those puzzles."""
        where, params = self._puzzle_where(set_id, rule, concept, status, findings, split)
        if ids is not None:
            names = [f"p{i}" for i in range(len(ids))]
            in_list = ", ".join(":" + n for n in names)
            where += f" AND puzzle_id IN ({in_list})" if ids else " AND FALSE"
            params.update(zip(names, ids, strict=True))
        q = (
            "SELECT set_id, puzzle_id, position, layout, rule, concept, split, status, comment,"
            f" n_errors, n_warnings, updated_at, author FROM puzzles{where} ORDER BY position"
        )
        with self._engine.connect() as conn:
            rows = conn.execute(text(q), params).all()
        return [
            PuzzleSummary(
                int(r[0]),
                r[1],
                int(r[2]),
                r[3],
                r[4],
                r[5],
                r[6],
                r[7],
                r[8],
                int(r[9]),
                int(r[10]),
                r[11],
                r[12],
            )
            for r in rows
        ]

    def stored_puzzle(self, set_id: int, puzzle_id: str) -> StoredPuzzle | None:
        with self._engine.connect() as conn:
            r = conn.execute(
                text(
                    f"SELECT {self._PUZZLE_COLUMNS} FROM puzzles WHERE set_id=:s AND puzzle_id=:p"
                ),
                {"s": set_id, "p": puzzle_id},
            ).first()
        return self._stored(r) if r is not None else None

    def change_puzzles(self, set_id: int, changes: Sequence[PuzzleChange], author: str) -> None:
        """Apply curation edits and log each, in one transaction: every change or none (an
        unknown puzzle raises ProjectError and nothing is written)."""
        for ch in changes:
            if ch.status is not None:
                _check_status(ch.status)
        t = now_iso()
        with self._tx() as conn:
            if self.is_database and changes:  # said in words before the server refuses it
                lab.require_role(conn, self.user, "curator", "decide or edit puzzles")
            for ch in changes:
                sets = ["updated_at=:t", "author=:a"]
                params: dict[str, Any] = {"t": t, "a": author, "s": set_id, "p": ch.puzzle_id}
                if ch.record is not None:
                    rec = dict(ch.record)
                    if str(rec.get("id")) != ch.puzzle_id:
                        raise ValueError(
                            f"record id {rec.get('id')!r} differs from puzzle {ch.puzzle_id!r}"
                        )
                    sets += ["record=:rec", "layout=:lay", "rule=:rule", "concept=:c", "split=:sp"]
                    lay, rule, concept, split = NewPuzzle(rec, columns=ch.columns).listed()
                    params.update(rec=_dumps(rec), lay=lay, rule=rule, c=concept, sp=split)
                if ch.status is not None:
                    sets.append("status=:st")
                    params["st"] = ch.status
                if ch.comment is not None:
                    sets.append("comment=:com")
                    params["com"] = ch.comment
                if ch.findings is not None:
                    sets += ["findings=:f", "n_errors=:ne"]
                    params["f"] = _dumps(list(ch.findings))
                    params["ne"] = len(ch.findings)
                if ch.warnings is not None:
                    sets += ["warnings=:w", "n_warnings=:nw"]
                    params["w"] = _dumps(list(ch.warnings))
                    params["nw"] = len(ch.warnings)
                # No lost update between curators: a decision or comment made from what the
                # curator saw ("old") is refused when someone else changed it meanwhile.
                where = "set_id=:s AND puzzle_id=:p"
                guard = _GUARDED.get(ch.kind)
                if guard is not None and "old" in ch.detail:
                    where += f" AND {guard}=:expected"
                    params["expected"] = ch.detail["old"]
                res = conn.execute(
                    text(f"UPDATE puzzles SET {', '.join(sets)} WHERE {where}"), params
                )
                if res.rowcount != 1:
                    now = conn.execute(
                        text(
                            "SELECT status, comment, author, updated_at FROM puzzles"
                            " WHERE set_id=:s AND puzzle_id=:p"
                        ),
                        {"s": set_id, "p": ch.puzzle_id},
                    ).first()
                    if now is None:
                        raise ProjectError(
                            f"has no puzzle {ch.puzzle_id!r} in puzzle set {set_id}",
                            self.location,
                        )
                    current = now[0] if guard == "status" else now[1]
                    raise PuzzleConflict(
                        f"puzzle {ch.puzzle_id} was changed by {now[2] or 'someone'} at "
                        f"{now[3]} meanwhile (its {guard} is now {current!r}, not "
                        f"{ch.detail['old']!r}): nothing was changed; look at it again",
                        self.location,
                    )
                _log(conn, set_id, ch.puzzle_id, t, author, ch.kind, dict(ch.detail))

    def puzzle_events(
        self, set_id: int | None = None, puzzle_id: str | None = None
    ) -> list[PuzzleEvent]:
        """The curation log, oldest first; of one set, or of one puzzle of it."""
        q = "SELECT id, set_id, puzzle_id, at, author, kind, detail FROM puzzle_events WHERE 1=1"
        params: dict[str, Any] = {}
        if set_id is not None:
            q += " AND set_id=:s"
            params["s"] = set_id
        if puzzle_id is not None:
            q += " AND puzzle_id=:p"
            params["p"] = puzzle_id
        with self._engine.connect() as conn:
            rows = conn.execute(text(q + " ORDER BY id"), params).all()
        return [
            PuzzleEvent(int(r[0]), int(r[1]), r[2], r[3], r[4], r[5], json.loads(r[6]))
            for r in rows
        ]

    def tag_map(self) -> dict[int, list[tuple[str, str]]]:
        """glyph id → [(concept, value), …] for every tagged glyph (one query, for views)."""
        out: dict[int, list[tuple[str, str]]] = {}
        with self._engine.connect() as conn:
            for gid, c, v in conn.execute(
                text("SELECT glyph_id, concept, value FROM tags ORDER BY glyph_id, concept, value")
            ):
                out.setdefault(int(gid), []).append((c, v))
        return out


_STAGING_CHUNK = 5000
# ``seq`` keeps staging order (PostgreSQL has no rowid); unqualified names find the temporary
# tables first in both dialects, but DROP names the temporary schema to be sure
_STAGING_DDL = (
    "CREATE TEMP TABLE IF NOT EXISTS import_glyphs (seq INTEGER PRIMARY KEY,"
    " codepoint INTEGER NOT NULL, font TEXT NOT NULL, render_font TEXT, status TEXT NOT NULL,"
    " reason TEXT)",
    "CREATE TEMP TABLE IF NOT EXISTS import_tags (seq INTEGER PRIMARY KEY,"
    " codepoint INTEGER NOT NULL, font TEXT NOT NULL, concept TEXT NOT NULL,"
    " value TEXT NOT NULL, source TEXT NOT NULL)",
    "DELETE FROM import_glyphs",
    "DELETE FROM import_tags",
)
_TEMP = {"sqlite": "temp.", "postgresql": "pg_temp."}


class _SchemaRace(Exception):
    """Another client stored a schema version after the one this edit was made on."""

    def __init__(self, version: int, author: str) -> None:
        super().__init__(version, author)
        self.version = version
        self.author = author


@dataclass(frozen=True, slots=True)
class ImportCounts:
    """What an import added, counted inside the transaction that wrote it."""

    new_tags: int
    new_glyphs: int


def _copy_staged(conn: Connection, author: str, at: str) -> ImportCounts:
    """Copy the staged glyphs and tags into the project in one short write transaction (in
    staging order, as row-by-row inserts would) and commit; returns what was new."""
    if not is_postgres(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")  # take the write lock now: no stale snapshot
    # (PostgreSQL: a plain transaction; the counts are each statement's own rowcount, exact
    # under concurrency.) SQLite needs the WHERE before ON CONFLICT after a SELECT.
    new_glyphs = conn.execute(
        text(
            "INSERT INTO glyphs (codepoint, font, render_font, status, reason)"
            " SELECT codepoint, font, render_font, status, reason FROM import_glyphs"
            " WHERE true ORDER BY seq ON CONFLICT DO NOTHING"
        )
    ).rowcount
    new_glyphs += conn.execute(
        text(
            "INSERT INTO glyphs (codepoint, font)"
            " SELECT codepoint, font FROM import_tags WHERE true ORDER BY seq"
            " ON CONFLICT DO NOTHING"
        )
    ).rowcount
    # the importer's own tags; then the consensus of every glyph they touch. "New tags" are
    # those the project gained: its consensus on those glyphs, before and after.
    conn.execute(
        text(
            "INSERT INTO annotator_tags (glyph_id, concept, value, annotator, created_at,"
            " source) SELECT (SELECT g.id FROM glyphs g WHERE g.codepoint = s.codepoint"
            " AND g.font = s.font), s.concept, s.value, :a, :t, s.source"
            " FROM import_tags s WHERE true ORDER BY s.seq ON CONFLICT DO NOTHING"
        ),
        {"a": author, "t": at},
    )
    if is_postgres(conn):
        return _refresh_imported(conn, new_glyphs)
    # Adding tags to a glyph under the union rule (no overlap, not settled) only adds to
    # its consensus: one set-wise insert, exactly what the rule gives. The other glyphs
    # get the full rule. (100,000 rows: 2.4 s, against 2.9 s refreshing every glyph and 1.7 s
    # before format 7 kept each person's tags apart.)
    new_tags = conn.execute(
        text(
            "INSERT INTO tags (glyph_id, concept, value, author, created_at, source)"
            " SELECT g.id, s.concept, s.value, :a, :t, s.source FROM import_tags s JOIN glyphs g"
            " ON g.codepoint = s.codepoint AND g.font = s.font"
            f" WHERE g.id NOT IN ({lab.RULED_GLYPHS}) ORDER BY s.seq ON CONFLICT DO NOTHING"
        ),
        {"a": author, "t": at},
    ).rowcount
    # the rule's source on these glyphs: a consensus tag they had already becomes
    # 'suggestion' when a person's own tag of it now is (the import's); not counted as new
    conn.execute(
        text(
            "UPDATE tags SET source = 'suggestion' WHERE source <> 'suggestion'"
            " AND glyph_id IN (SELECT g.id FROM import_tags s JOIN glyphs g"
            " ON g.codepoint = s.codepoint AND g.font = s.font WHERE s.source = 'suggestion')"
            f" AND glyph_id NOT IN ({lab.RULED_GLYPHS}) AND EXISTS (SELECT 1 FROM annotator_tags a"
            " WHERE a.glyph_id = tags.glyph_id AND a.concept = tags.concept"
            " AND a.value = tags.value AND a.source = 'suggestion')"
        )
    )
    ruled = conn.execute(
        text(
            "SELECT DISTINCT g.id FROM glyphs g JOIN import_tags s ON g.codepoint ="
            f" s.codepoint AND g.font = s.font WHERE g.id IN ({lab.RULED_GLYPHS})"
        )
    ).all()
    ids = [int(r[0]) for r in ruled]
    before = _consensus_count(conn, ids)
    lab.refresh_consensus(conn, ids)
    new_tags += max(0, _consensus_count(conn, ids) - before)
    conn.commit()
    return ImportCounts(int(new_tags), int(new_glyphs))


def _refresh_imported(conn: Connection, new_glyphs: int) -> ImportCounts:
    """PostgreSQL: the consensus of every glyph the import touched, through the server's
    function (an annotator may import its own tags, not write the consensus); the new tags are
    what the project's consensus gained on them. The own tags are in already; commits."""
    touched = [
        int(r[0])
        for r in conn.execute(
            text(
                "SELECT DISTINCT g.id FROM glyphs g JOIN import_tags s"
                " ON g.codepoint = s.codepoint AND g.font = s.font"
            )
        )
    ]
    before = _consensus_count(conn, touched)
    lab.refresh_consensus(conn, touched)
    new_tags = max(0, _consensus_count(conn, touched) - before)
    conn.commit()
    return ImportCounts(int(new_tags), int(new_glyphs))


#: Curation edits checked against what the curator saw: kind -> the column ``detail["old"]``
#: must still hold.
_GUARDED = {"status": "status", "comment": "comment"}


class PuzzleConflict(ProjectError):
    """Another curator changed the puzzle since this one looked (a lab database's lost
    update, refused)."""


def _consensus_count(conn: Connection, glyph_ids: Sequence[int]) -> int:
    n = 0
    for start in range(0, len(glyph_ids), 500):
        chunk = ",".join(str(i) for i in glyph_ids[start : start + 500])
        n += int(
            conn.execute(
                text(f"SELECT COUNT(*) FROM tags WHERE glyph_id IN ({chunk})")
            ).scalar_one()
        )
    return n


def _insert_glyphs(
    conn: Connection, glyphs: Iterable[tuple[GlyphKey, str | None, str, str | None]]
) -> int:
    """Inserts the glyphs not there yet; returns how many this statement inserted (exact
    under concurrency, unlike a count before and after)."""
    rows = [
        {"cp": k.codepoint, "f": k.font, "rf": rf, "s": st, "r": rs} for k, rf, st, rs in glyphs
    ]
    if not rows:
        return 0
    res = conn.execute(
        text(
            "INSERT INTO glyphs (codepoint, font, render_font, status, reason)"
            " VALUES (:cp, :f, :rf, :s, :r) ON CONFLICT DO NOTHING"
        ),
        rows,
    )
    return int(res.rowcount)


def _log(
    conn: Connection,
    set_id: int,
    puzzle_id: str,
    at: str,
    author: str,
    kind: str,
    detail: Mapping[str, Any],
) -> None:
    conn.execute(
        text(
            "INSERT INTO puzzle_events (set_id, puzzle_id, at, author, kind, detail)"
            " VALUES (:s, :p, :t, :a, :k, :d)"
        ),
        {"s": set_id, "p": puzzle_id, "t": at, "a": author, "k": kind, "d": _dumps(detail)},
    )


def _set_meta(conn: Connection, key: str, value: str) -> None:
    conn.execute(
        text(
            "INSERT INTO meta (key, value) VALUES (:k, :v)"
            " ON CONFLICT(key) DO UPDATE SET value=excluded.value"
        ),
        {"k": key, "v": value},
    )


def _apply_tag_change(conn: Connection, ch: TagChange) -> None:
    """A schema edit carried to the consensus and to every person's own tags alike."""
    if ch.kind not in ("rename_concept", "remove_concept", "rename_value", "remove_value"):
        raise ValueError(f"unknown tag change {ch.kind!r}")
    for table in ("tags", "annotator_tags"):
        if ch.kind == "rename_concept":
            conn.execute(
                text(f"UPDATE {table} SET concept=:n WHERE concept=:c"),
                {"n": ch.new_name, "c": ch.concept},
            )
        elif ch.kind == "remove_concept":
            conn.execute(text(f"DELETE FROM {table} WHERE concept=:c"), {"c": ch.concept})
        elif ch.kind == "rename_value":
            conn.execute(
                text(f"UPDATE {table} SET value=:n WHERE concept=:c AND value=:v"),
                {"n": ch.new_name, "c": ch.concept, "v": ch.value},
            )
        else:
            conn.execute(
                text(f"DELETE FROM {table} WHERE concept=:c AND value=:v"),
                {"c": ch.concept, "v": ch.value},
            )


def _orphan_tags(conn: Connection, schema: Schema) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for c, v, n in conn.execute(
        text("SELECT concept, value, COUNT(*) FROM tags GROUP BY concept, value")
    ):
        if not schema.has_tag(c, v):
            out[(c, v)] = int(n)
    return out
