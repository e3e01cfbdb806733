"""A project is one SQLite database file: the schema (versioned), fonts, glyphs and tags.

Every public method that changes data runs in its own transaction and commits before it returns,
so killing the process loses at most the edit in flight. The file is in WAL mode with
``synchronous=FULL``. Opening checks the file before anything is written to it: a damaged or
foreign file raises ProjectError and stays as it was.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text

from studio import __version__
from studio.core.annotations import TagRow
from studio.core.errors import ProjectError, SchemaError
from studio.core.keys import GlyphKey
from studio.core.schema import Schema, schema_from_text
from studio.store.migrations import FORMAT_VERSION, MIGRATIONS, create_current

APPLICATION_ID = "analogy-studio"
_SQLITE_MAGIC = b"SQLite format 3\x00"


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


def _precheck(path: Path) -> None:
    """Refuse a file that is not an intact studio project, without writing a byte to it."""
    if not path.exists():
        raise ProjectError("project file not found", path)
    if path.is_dir():
        raise ProjectError("is a folder, not a project file", path)
    with open(path, "rb") as f:
        head = f.read(100)
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        raise ProjectError("is not an Analogy Studio project (not an SQLite database)", path)
    # With no WAL left behind, read it as immutable: nothing (not even -wal/-shm) is created.
    # A WAL left by a crash holds committed edits, so then it is read normally, read-only.
    flags = "mode=ro" if Path(f"{path}-wal").exists() else "mode=ro&immutable=1"
    try:
        con = sqlite3.connect(f"file:{path}?{flags}", uri=True)
    except sqlite3.Error as e:
        raise ProjectError(f"cannot be opened: {e}", path) from None
    try:
        check = con.execute("PRAGMA quick_check").fetchall()
        if check != [("ok",)]:
            detail = "; ".join(str(r[0]) for r in check[:3])
            raise ProjectError(
                f"the project file is damaged ({detail}). It was not changed; restore it from a "
                "backup or re-import its annotations.",
                path,
            )
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables:
            raise ProjectError("is an SQLite database but not an Analogy Studio project", path)
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as e:
        raise ProjectError(
            f"the project file is damaged ({e}). It was not changed; restore it from a backup.",
            path,
        ) from None
    finally:
        con.close()
    if meta.get("application") != APPLICATION_ID:
        raise ProjectError("is an SQLite database but not an Analogy Studio project", path)
    version = int(meta.get("format_version", "0"))
    if version > FORMAT_VERSION:
        raise ProjectError(
            f"was written by a newer Analogy Studio (project format {version}; this version "
            f"reads up to {FORMAT_VERSION}). Update the studio to open it.",
            path,
        )
    if version < 1:
        raise ProjectError(f"has an unknown project format {version!r}", path)


def _engine(path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{path}", future=True)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_con: Any, _record: Any) -> None:
        cur = dbapi_con.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=5000")
        cur.close()

    return engine


class Project:
    """Open with :meth:`open` or :meth:`create`; close when done (or use as a context manager)."""

    def __init__(self, path: Path, engine: Engine) -> None:
        self.path = path
        self._engine = engine
        self._schema: Schema | None = None
        self._schema_version = 0

    # ---- lifecycle -------------------------------------------------------------------------
    @classmethod
    def create(
        cls, path: str | Path, schema: Schema, *, author: str = "", overwrite: bool = False
    ) -> Project:
        p = Path(path)
        if p.exists() and not overwrite:
            raise ProjectError("already exists; choose another name or open it", p)
        tmp = p.with_name(f".{p.name}.creating")
        for f in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            f.unlink(missing_ok=True)
        p.parent.mkdir(parents=True, exist_ok=True)
        engine = _engine(tmp)
        with engine.begin() as conn:
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
        p = Path(path)
        _precheck(p)
        with sqlite3.connect(p) as raw:
            version = int(
                raw.execute("SELECT value FROM meta WHERE key='format_version'").fetchone()[0]
            )
        if version < FORMAT_VERSION:
            backup = p.with_name(f"{p.name}.bak-format{version}")
            shutil.copy2(p, backup)
        project = cls(p, _engine(p))
        try:
            project._migrate(version)
            project._load_schema()
        except BaseException:
            project.close()
            raise
        return project

    def _migrate(self, version: int) -> None:
        while version < FORMAT_VERSION:
            with self._engine.begin() as conn:
                MIGRATIONS[version](conn)
                version += 1
                _set_meta(conn, "format_version", str(version))

    def close(self) -> None:
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
            raise ProjectError("holds no concept schema", self.path)
        try:
            self._schema = schema_from_text(row[1], f"{self.path} (schema version {row[0]})")
        except SchemaError as e:
            raise ProjectError(f"its stored schema is invalid: {e}", self.path) from None
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
        with self._tx() as conn:
            for ch in tag_changes:
                _apply_tag_change(conn, ch)
            orphans = _orphan_tags(conn, schema)
            if orphans:
                listing = ", ".join(f"{c}={v!r} ({n})" for (c, v), n in list(orphans.items())[:8])
                raise SchemaError(
                    None,
                    "$",
                    f"{sum(orphans.values())} tags use concepts or values the new schema lacks: "
                    f"{listing}",
                )
            version = self._schema_version + 1
            conn.execute(
                text(
                    "INSERT INTO schema_versions (version, json, created_at, author, note)"
                    " VALUES (:v, :j, :t, :a, :n)"
                ),
                {"v": version, "j": schema.dumps(), "t": now_iso(), "a": author, "n": note},
            )
        self._schema = schema
        self._schema_version = version
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
            before = conn.execute(text("SELECT COUNT(*) FROM glyphs")).scalar_one()
            _insert_glyphs(conn, glyphs)
            after = conn.execute(text("SELECT COUNT(*) FROM glyphs")).scalar_one()
        return int(after - before)

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

    def add_tags(
        self, keys: Iterable[GlyphKey], concept: str, value: str, author: str
    ) -> list[GlyphKey]:
        """Tag glyphs (adding unknown glyphs as pending). Returns the keys that were newly tagged,
        which is exactly what an undo must remove."""
        self._check_tag(concept, value)
        keys = list(dict.fromkeys(keys))
        t = now_iso()
        added: list[GlyphKey] = []
        with self._tx() as conn:
            for k in keys:
                conn.execute(
                    text("INSERT OR IGNORE INTO glyphs (codepoint, font) VALUES (:cp, :f)"),
                    {"cp": k.codepoint, "f": k.font},
                )
                res = conn.execute(
                    text(
                        "INSERT OR IGNORE INTO tags (glyph_id, concept, value, author, created_at)"
                        " SELECT id, :c, :v, :a, :t FROM glyphs WHERE codepoint=:cp AND font=:f"
                    ),
                    {"c": concept, "v": value, "a": author, "t": t, "cp": k.codepoint, "f": k.font},
                )
                if res.rowcount:
                    added.append(k)
        return added

    def remove_tags(self, keys: Iterable[GlyphKey], concept: str, value: str) -> list[TagRecord]:
        """Remove a tag from glyphs. Returns the removed records (with author and time) so that
        an undo can put them back exactly."""
        removed: list[TagRecord] = []
        with self._tx() as conn:
            for k in dict.fromkeys(keys):
                row = conn.execute(
                    text(
                        "SELECT t.id, t.author, t.created_at FROM tags t JOIN glyphs g"
                        " ON g.id=t.glyph_id WHERE g.codepoint=:cp AND g.font=:f AND"
                        " t.concept=:c AND t.value=:v"
                    ),
                    {"cp": k.codepoint, "f": k.font, "c": concept, "v": value},
                ).first()
                if row is None:
                    continue
                conn.execute(text("DELETE FROM tags WHERE id=:i"), {"i": row[0]})
                removed.append(TagRecord(k, concept, value, row[1], row[2]))
        return removed

    def restore_tags(self, records: Iterable[TagRecord]) -> None:
        """Put back tags removed earlier, keeping their author and time."""
        with self._tx() as conn:
            for r in records:
                conn.execute(
                    text("INSERT OR IGNORE INTO glyphs (codepoint, font) VALUES (:cp, :f)"),
                    {"cp": r.key.codepoint, "f": r.key.font},
                )
                conn.execute(
                    text(
                        "INSERT OR IGNORE INTO tags (glyph_id, concept, value, author, created_at)"
                        " SELECT id, :c, :v, :a, :t FROM glyphs WHERE codepoint=:cp AND font=:f"
                    ),
                    {
                        "c": r.concept,
                        "v": r.value,
                        "a": r.author,
                        "t": r.created_at,
                        "cp": r.key.codepoint,
                        "f": r.key.font,
                    },
                )

    def import_rows(
        self,
        rows: Sequence[TagRow],
        author: str,
        glyphs: Iterable[tuple[GlyphKey, str | None, str, str | None]] = (),
    ) -> int:
        """Insert tags, and the glyphs they need (``glyphs`` as for :meth:`add_glyphs`), in one
        transaction: all or nothing. Returns how many tags were new."""
        for r in rows:
            self._check_tag(r.concept, r.value)
        t = now_iso()
        with self._tx() as conn:
            before = conn.execute(text("SELECT COUNT(*) FROM tags")).scalar_one()
            _insert_glyphs(conn, glyphs)
            conn.execute(
                text("INSERT OR IGNORE INTO glyphs (codepoint, font) VALUES (:cp, :f)"),
                [{"cp": int(r.codepoint_hex, 16), "f": r.font} for r in rows],
            )
            conn.execute(
                text(
                    "INSERT OR IGNORE INTO tags (glyph_id, concept, value, author, created_at)"
                    " SELECT id, :c, :v, :a, :t FROM glyphs WHERE codepoint=:cp AND font=:f"
                ),
                [
                    {
                        "c": r.concept,
                        "v": r.value,
                        "a": author,
                        "t": t,
                        "cp": int(r.codepoint_hex, 16),
                        "f": r.font,
                    }
                    for r in rows
                ],
            )
            after = conn.execute(text("SELECT COUNT(*) FROM tags")).scalar_one()
        return int(after - before)

    def tags_of(self, key: GlyphKey) -> list[TagRecord]:
        with self._engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT t.concept, t.value, t.author, t.created_at FROM tags t JOIN glyphs g"
                    " ON g.id=t.glyph_id WHERE g.codepoint=:cp AND g.font=:f"
                    " ORDER BY t.concept, t.value"
                ),
                {"cp": key.codepoint, "f": key.font},
            ).all()
        return [TagRecord(key, r[0], r[1], r[2], r[3]) for r in rows]

    def all_tags(self) -> list[TagRecord]:
        with self._engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT g.codepoint, g.font, t.concept, t.value, t.author, t.created_at"
                    " FROM tags t JOIN glyphs g ON g.id=t.glyph_id"
                )
            ).all()
        return [TagRecord(GlyphKey(r[0], r[1]), r[2], r[3], r[4], r[5]) for r in rows]

    def tag_rows(self) -> list[TagRow]:
        """Every tag in exchange form, in exchange order."""
        return sorted(TagRow.of(t.concept, t.value, t.key) for t in self.all_tags())

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

    def tag_map(self) -> dict[int, list[tuple[str, str]]]:
        """glyph id → [(concept, value), …] for every tagged glyph (one query, for views)."""
        out: dict[int, list[tuple[str, str]]] = {}
        with self._engine.connect() as conn:
            for gid, c, v in conn.execute(text("SELECT glyph_id, concept, value FROM tags")):
                out.setdefault(int(gid), []).append((c, v))
        return out


def _insert_glyphs(
    conn: Connection, glyphs: Iterable[tuple[GlyphKey, str | None, str, str | None]]
) -> None:
    rows = [
        {"cp": k.codepoint, "f": k.font, "rf": rf, "s": st, "r": rs} for k, rf, st, rs in glyphs
    ]
    if rows:
        conn.execute(
            text(
                "INSERT OR IGNORE INTO glyphs (codepoint, font, render_font, status, reason)"
                " VALUES (:cp, :f, :rf, :s, :r)"
            ),
            rows,
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
    if ch.kind == "rename_concept":
        conn.execute(
            text("UPDATE tags SET concept=:n WHERE concept=:c"), {"n": ch.new_name, "c": ch.concept}
        )
    elif ch.kind == "remove_concept":
        conn.execute(text("DELETE FROM tags WHERE concept=:c"), {"c": ch.concept})
    elif ch.kind == "rename_value":
        conn.execute(
            text("UPDATE tags SET value=:n WHERE concept=:c AND value=:v"),
            {"n": ch.new_name, "c": ch.concept, "v": ch.value},
        )
    elif ch.kind == "remove_value":
        conn.execute(
            text("DELETE FROM tags WHERE concept=:c AND value=:v"), {"c": ch.concept, "v": ch.value}
        )
    else:
        raise ValueError(f"unknown tag change {ch.kind!r}")


def _orphan_tags(conn: Connection, schema: Schema) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for c, v, n in conn.execute(
        text("SELECT concept, value, COUNT(*) FROM tags GROUP BY concept, value")
    ):
        if not schema.has_tag(c, v):
            out[(c, v)] = int(n)
    return out
