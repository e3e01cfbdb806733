"""Project file formats and the migration from each to the next.

The DDL is written once, in SQLite's flavour; on PostgreSQL :mod:`studio.store.dialect`
translates it (identity ids, BIGINT, BYTEA, DOUBLE PRECISION, ``TEXT COLLATE "C"``, plpgsql
triggers), so both dialects replay the same steps. A lab database is migrated in place in one
transaction (PostgreSQL's DDL is transactional) under an advisory lock, with no backup file:
its administrator backs it up with ``pg_dump`` (see docs/lab-server.md).

``FORMAT_VERSION`` is the layout this build writes. A project file of an older format is
migrated one step at a time on a copy; only when every step succeeded (and the result has the
current layout) is the original kept as ``<name>.bak-format<N>`` and the copy put in its place.
A failed migration leaves the file as it was and no backup. Every step is idempotent
(it creates only what is missing), so a step re-run on a file that already has its tables
changes nothing. A project of a newer format is refused with a message, never touched.

Format history
- 1: first layout: schema versions, fonts, glyphs (with substitution), tags without provenance.
- 2: tags carry who made them and when (``author``, ``created_at``); UA's method needs it to
  compare annotators. Tags migrated from format 1 get author ``unknown`` and no time.
- 3: puzzles. ``puzzle_sets`` (a generated split imported for curation: its parameters and a
  summary with rejection counts and dry tuples), ``puzzles`` (each record as JSON with its
  curation status, comment, findings and warnings) and ``puzzle_events``, an append-only log of
  who changed which puzzle how and when (triggers refuse UPDATE and DELETE on it). A format-2
  project gains the three empty tables.
- 4: background jobs. ``jobs`` (the queue the worker processes run: kind, JSON parameters,
  status, progress, the device used, the result, the failure text and a resumable checkpoint),
  ``job_logs`` (their log lines, bounded per job) and ``baseline_flags`` (puzzles a baseline
  answered from a shortcut: which model, how confidently, over how many seeds). A format-3
  project gains the three empty tables.
- 5: a baseline flag says why (``baseline_flags.reason``): the answers-only probes name the
  features that carried their choice ("no other answer shares the key's value of ..."), so the
  curator's board can show a curator why a puzzle is shortcut-prone, not only that it is. Flags
  migrated from format 4 (and those of models that give no reason) have an empty reason.
- 6: workers that cannot wedge the studio. A job records the peak memory of its process tree
  (``jobs.peak_rss``, bytes), the memory limit it ran under (``jobs.memory_limit``, bytes; the
  host kills a child over it and fails the job "out of memory"), when it last made progress
  (``jobs.progress_at``: a new fraction, message or checkpoint; heartbeats do not count) and
  since when it is stalled (``jobs.stalled_at``: no progress for the job's stall time; shown,
  not ended; progress clears it). Jobs migrated from format 5 have them all NULL. The step adds
  only the columns a file lacks, so running it twice changes nothing.
- 7: a lab's shared project (:mod:`studio.store.labschema`): ``people`` and their roles,
  ``assignments`` / ``assignment_items`` (with an overlap share tagged by two or more people),
  ``annotator_tags`` (each person's own tags; ``tags`` is now their consensus, derived),
  ``adjudications`` (a curator settling a glyph), ``audit_log``; ``jobs.worker`` and
  ``jobs.claimed_at`` (which machine ran a job). Tags migrated from format 6 become their
  authors' own tags, so the consensus equals the tags of before. On PostgreSQL the step also
  installs the roles, grants, row-level security and triggers.
- 8: pilot studies with people (issue 29). ``pilots`` (a pilot's id, source, family, its
  ``pilot.json`` plan and the curated set it piloted, if any), ``pilot_participants`` (each
  participant under a pseudonym, why they were excluded, the file they came from, who
  imported it when) and ``pilot_responses`` (each answer: kind, puzzle, the answer chosen,
  right or not, the response time). A format-7 project gains the three empty tables; on
  PostgreSQL curators may insert them and everyone may read them.
- 9: provenance of tags (issue 30). ``annotator_tags.source`` and ``tags.source`` say whether
  a tag was given by hand (``hand``) or accepted from the tagger's suggestions
  (``suggestion``); a CHECK refuses any other value, on PostgreSQL too (an annotator writing
  with psql is held to it). A consensus tag is ``suggestion`` when any person's tag of it
  came from a suggestion (:data:`~studio.store.labschema.CONSENSUS_SELECT`). Tags migrated
  from format 8 are ``hand``: every tag before this format was. On PostgreSQL the step also
  reinstalls ``studio_refresh_consensus``, which now carries the source.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, text

from studio.core.annotations import TAG_SOURCES
from studio.store.dialect import add_column, create_missing, dialect_of, translate
from studio.store.labschema import install_consensus_rules, install_pilot_rules
from studio.store.labschema import upgrade as _v6_to_v7

FORMAT_VERSION = 9

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


def _add_column(conn: Connection, table: str, column: str, ddl: str) -> None:
    """``ALTER TABLE table ADD COLUMN column ddl`` unless the table has the column already:
    a step re-run on a file that has it (tampered with, or half-migrated) changes nothing.
    Both dialects (see :func:`studio.store.dialect.add_column`)."""
    add_column(conn, table, column, ddl)


def _create_missing(conn: Connection, ddls: tuple[str, ...]) -> None:
    """Run CREATE TABLE / INDEX / TRIGGER statements so that only what is missing is created
    (idempotent), in either dialect (see :func:`studio.store.dialect.create_missing`)."""
    create_missing(conn, ddls)


def _v1_to_v2(conn: Connection) -> None:
    _add_column(conn, "tags", "author", "TEXT NOT NULL DEFAULT 'unknown'")
    _add_column(conn, "tags", "created_at", "TEXT")


#: Curation statuses, in the order the board lists them.
PUZZLE_STATUSES = ("draft", "flagged", "approved", "rejected")

_FORMAT_3_DDL = (
    "CREATE TABLE puzzle_sets (id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " params TEXT NOT NULL DEFAULT '{}', summary TEXT NOT NULL DEFAULT '{}',"
    " created_at TEXT NOT NULL, author TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE puzzles (id INTEGER PRIMARY KEY,"
    " set_id INTEGER NOT NULL REFERENCES puzzle_sets(id) ON DELETE CASCADE,"
    " puzzle_id TEXT NOT NULL, position INTEGER NOT NULL, record TEXT NOT NULL,"
    " layout TEXT NOT NULL, rule TEXT NOT NULL, concept TEXT NOT NULL, split TEXT NOT NULL,"
    " status TEXT NOT NULL DEFAULT 'draft'"
    " CHECK (status IN ('draft', 'flagged', 'approved', 'rejected')),"
    " comment TEXT NOT NULL DEFAULT '', findings TEXT NOT NULL DEFAULT '[]',"
    " warnings TEXT NOT NULL DEFAULT '[]', n_errors INTEGER NOT NULL DEFAULT 0,"
    " n_warnings INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT NULL,"
    " author TEXT NOT NULL DEFAULT '', UNIQUE (set_id, puzzle_id))",
    "CREATE INDEX ix_puzzles_set_position ON puzzles (set_id, position)",
    # no foreign key: the log outlives the sets it talks about (an undone import stays logged)
    "CREATE TABLE puzzle_events (id INTEGER PRIMARY KEY, set_id INTEGER NOT NULL,"
    " puzzle_id TEXT NOT NULL DEFAULT '', at TEXT NOT NULL, author TEXT NOT NULL DEFAULT '',"
    " kind TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '{}')",
    "CREATE INDEX ix_puzzle_events_puzzle ON puzzle_events (set_id, puzzle_id)",
    "CREATE TRIGGER puzzle_events_no_update BEFORE UPDATE ON puzzle_events"
    " BEGIN SELECT RAISE(ABORT, 'puzzle_events is append-only'); END",
    "CREATE TRIGGER puzzle_events_no_delete BEFORE DELETE ON puzzle_events"
    " BEGIN SELECT RAISE(ABORT, 'puzzle_events is append-only'); END",
)


def _v2_to_v3(conn: Connection) -> None:
    _create_missing(conn, _FORMAT_3_DDL)


#: Job statuses: queued -> running -> done | failed | cancelled | interrupted (the studio
#: closed or died while it ran); a queued job can be cancelled before it starts.
JOB_STATES = ("queued", "running", "done", "failed", "cancelled", "interrupted")

_FORMAT_4_DDL = (
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY, kind TEXT NOT NULL,"
    " title TEXT NOT NULL DEFAULT '', params TEXT NOT NULL DEFAULT '{}',"
    " status TEXT NOT NULL DEFAULT 'queued' CHECK (status IN"
    " ('queued', 'running', 'done', 'failed', 'cancelled', 'interrupted')),"
    " progress REAL NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '',"
    " created_at TEXT NOT NULL, started_at TEXT, finished_at TEXT, pid INTEGER,"
    " device TEXT NOT NULL DEFAULT '', cancel_requested INTEGER NOT NULL DEFAULT 0,"
    " result TEXT, error TEXT NOT NULL DEFAULT '', checkpoint TEXT NOT NULL DEFAULT '{}',"
    " attempts INTEGER NOT NULL DEFAULT 0, heartbeat_at TEXT)",
    "CREATE INDEX ix_jobs_status ON jobs (status, id)",
    "CREATE TABLE job_logs (seq INTEGER PRIMARY KEY,"
    " job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE, at TEXT NOT NULL,"
    " level TEXT NOT NULL DEFAULT 'info', line TEXT NOT NULL)",
    "CREATE INDEX ix_job_logs_job ON job_logs (job_id, seq)",
    # no foreign keys: a flag names the job and set it came from, and outlives neither on purpose
    # (an undone set import that is redone keeps its id, and its flags stay meaningful)
    "CREATE TABLE baseline_flags (id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL,"
    " set_id INTEGER NOT NULL, puzzle_id TEXT NOT NULL, model TEXT NOT NULL,"
    " confidence REAL NOT NULL, seeds_correct INTEGER NOT NULL, seeds INTEGER NOT NULL,"
    " created_at TEXT NOT NULL)",
    "CREATE INDEX ix_baseline_flags_puzzle ON baseline_flags (set_id, puzzle_id)",
)


def _v3_to_v4(conn: Connection) -> None:
    _create_missing(conn, _FORMAT_4_DDL)


def _v4_to_v5(conn: Connection) -> None:
    _add_column(conn, "baseline_flags", "reason", "TEXT NOT NULL DEFAULT ''")


#: Format 6's new ``jobs`` columns, in the order they are added.
_FORMAT_6_JOB_COLUMNS = (
    ("peak_rss", "INTEGER"),
    ("memory_limit", "INTEGER"),
    ("progress_at", "TEXT"),
    ("stalled_at", "TEXT"),
)


def _v5_to_v6(conn: Connection) -> None:
    for name, kind in _FORMAT_6_JOB_COLUMNS:
        _add_column(conn, "jobs", name, kind)


#: Format 8: pilot studies (issue 29). Participants are stored under a pseudonym (an HMAC of
#: the id they typed under the pilot's own key, which the project never holds), never the id
#: itself; ``file`` is a fingerprint of the results file, not its name.
_FORMAT_8_DDL = (
    "CREATE TABLE pilots (id TEXT PRIMARY KEY, set_id INTEGER, source TEXT NOT NULL,"
    " family TEXT NOT NULL, plan TEXT NOT NULL, created_at TEXT NOT NULL,"
    " author TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE pilot_participants (pilot_id TEXT NOT NULL REFERENCES pilots(id)"
    " ON DELETE CASCADE, participant TEXT NOT NULL, excluded TEXT NOT NULL DEFAULT '',"
    " file TEXT NOT NULL DEFAULT '', imported_at TEXT NOT NULL,"
    " imported_by TEXT NOT NULL DEFAULT '', PRIMARY KEY (pilot_id, participant))",
    "CREATE TABLE pilot_responses (id INTEGER PRIMARY KEY, pilot_id TEXT NOT NULL,"
    " participant TEXT NOT NULL, kind TEXT NOT NULL, puzzle_id TEXT NOT NULL, chosen INTEGER,"
    " correct INTEGER NOT NULL, rt_ms REAL,"
    " FOREIGN KEY (pilot_id, participant) REFERENCES pilot_participants (pilot_id, participant)"
    " ON DELETE CASCADE)",
    "CREATE INDEX ix_pilot_responses_puzzle ON pilot_responses (pilot_id, puzzle_id)",
)


def _v7_to_v8(conn: Connection) -> None:
    _create_missing(conn, _FORMAT_8_DDL)
    if dialect_of(conn) == "postgresql":
        install_pilot_rules(conn)  # the new tables' grants and audit


#: Format 9's ``source`` column of both tag tables: how a tag came to be, one of
#: :data:`~studio.core.annotations.TAG_SOURCES`; the CHECK holds on either database.
SOURCE_COLUMN = (
    "TEXT NOT NULL DEFAULT 'hand' CHECK (source IN ("
    + ", ".join(f"'{s}'" for s in TAG_SOURCES)
    + "))"
)


def _v8_to_v9(conn: Connection) -> None:
    for table in ("annotator_tags", "tags"):
        _add_column(conn, table, "source", SOURCE_COLUMN)
    if dialect_of(conn) == "postgresql":
        install_consensus_rules(conn)  # the consensus now carries the source


MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _v4_to_v5,
    5: _v5_to_v6,
    6: _v6_to_v7,
    7: _v7_to_v8,
    8: _v8_to_v9,
}


def create_current(conn: Connection) -> None:
    """Create the current layout by replaying format 1 and every migration: one code path
    (and one for both dialects: the DDL is translated for PostgreSQL)."""
    for ddl in FORMAT_1_DDL:
        for statement in translate(ddl, dialect_of(conn)):
            conn.execute(text(statement))
    for version in range(1, FORMAT_VERSION):
        MIGRATIONS[version](conn)
