"""Project file formats and the migration from each to the next.

``FORMAT_VERSION`` is the layout this build writes. A project of an older format is backed up
(``<name>.bak-format<N>``) and migrated one step at a time, each step in one transaction; a
project of a newer format is refused with a message, never touched.

Format history
- 1: first layout: schema versions, fonts, glyphs (with substitution), tags without provenance.
- 2: tags carry who made them and when (``author``, ``created_at``); UA's method needs it to
  compare annotators. Tags migrated from format 1 get author ``unknown`` and no time.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, text

FORMAT_VERSION = 2

# The format-1 layout, kept verbatim so tests can write a real format-1 project and open it.
FORMAT_1_DDL = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE schema_versions (version INTEGER PRIMARY KEY, json TEXT NOT NULL,"
    " created_at TEXT NOT NULL, author TEXT NOT NULL DEFAULT '', note TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE fonts (id TEXT PRIMARY KEY, family TEXT NOT NULL, style TEXT NOT NULL,"
    " path TEXT NOT NULL, face_index INTEGER NOT NULL DEFAULT 0, sha256 TEXT NOT NULL,"
    " source TEXT NOT NULL, num_codepoints INTEGER NOT NULL DEFAULT 0, data BLOB,"
    " added_at TEXT NOT NULL)",
    "CREATE TABLE glyphs (id INTEGER PRIMARY KEY, codepoint INTEGER NOT NULL, font TEXT NOT NULL,"
    " render_font TEXT, status TEXT NOT NULL DEFAULT 'pending', reason TEXT,"
    " UNIQUE (codepoint, font))",
    "CREATE TABLE tags (id INTEGER PRIMARY KEY,"
    " glyph_id INTEGER NOT NULL REFERENCES glyphs(id) ON DELETE CASCADE,"
    " concept TEXT NOT NULL, value TEXT NOT NULL, UNIQUE (glyph_id, concept, value))",
    "CREATE INDEX ix_tags_concept_value ON tags (concept, value)",
    "CREATE INDEX ix_glyphs_font ON glyphs (font, codepoint)",
)


def _v1_to_v2(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE tags ADD COLUMN author TEXT NOT NULL DEFAULT 'unknown'"))
    conn.execute(text("ALTER TABLE tags ADD COLUMN created_at TEXT"))


MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _v1_to_v2}


def create_current(conn: Connection) -> None:
    """Create the current layout by replaying format 1 and every migration: one code path."""
    for ddl in FORMAT_1_DDL:
        conn.execute(text(ddl))
    for version in range(1, FORMAT_VERSION):
        MIGRATIONS[version](conn)
