"""Project format 7: the tables of a lab's shared project, and on PostgreSQL the server-side
rules that make its rights real.

Every project gets the tables (a SQLite file is a lab of one): ``people`` (who works on the
project and in which role), ``assignments`` and ``assignment_items`` (batches of glyphs per
annotator; a glyph given to two or more people is in the *overlap* that agreement is measured
on), ``annotator_tags`` (each person's own tags), ``adjudications`` (a curator settling a
glyph's tags) and ``audit_log``; ``jobs`` gains ``worker`` and ``claimed_at`` (which machine ran
a job). ``tags`` keeps its meaning for every reader: it is the *consensus*, what puzzles,
exports and counts use, derived from ``annotator_tags`` by :data:`CONSENSUS_RULE`.

On PostgreSQL the step also installs what the server enforces, so a client that bypasses the
studio (psql, a script) is held to the same rules:

- group roles ``studio_annotator`` < ``studio_curator`` < ``studio_admin`` (each a member of
  the next's rights) and ``studio_worker``, with grants per table: an annotator reads
  everything and writes only its own ``annotator_tags`` and its own ``assignment_items.done_at``;
  puzzles, the schema and the consensus are out of its reach;
- row-level security on ``annotator_tags`` and ``assignment_items`` (a person's rows are those
  whose ``annotator`` is the login role; admins may write anyone's, for imports);
- ``studio_refresh_consensus(ids)``, ``SECURITY DEFINER``: the only way an annotator's write
  reaches ``tags``; it locks the glyphs' rows first, so two people tagging one glyph at once
  are serialised and neither's tag is lost from the consensus;
- statement-level triggers that write ``audit_log`` (who — the login role — did what to which
  table, with the rows) and ``pg_notify('studio_changes', …)`` so other clients refresh within
  a second; ``audit_log`` and ``adjudications`` are append-only.
"""

from __future__ import annotations

import hashlib
import json
import re

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from studio.store.dialect import add_column, create_missing, is_postgres

#: Roles of people on a project, least to most rights.
ROLES = ("annotator", "curator", "admin")
#: The server-wide group roles of rules versions 1 and 2 (shared by every studio database of
#: a server, so a person's role in one lab held in all: issue 25). Version 3 takes every right
#: from them in a database it upgrades; :func:`group_roles` names the roles that replace them.
LEGACY_GROUP_ROLES = {
    "annotator": "studio_annotator",
    "curator": "studio_curator",
    "admin": "studio_admin",
    "worker": "studio_worker",
}
#: Every group role the studio makes starts so; no person's login may.
GROUP_ROLE_PREFIX = "studio_"


def group_roles(database: str) -> dict[str, str]:
    """The group roles of one lab database: ``studio_<name>_<hash>_<role>`` for annotator,
    curator, admin and worker. Roles are server-wide in PostgreSQL, so each database has its
    own and its grants, policies and functions name only them: a curator of one lab is nobody
    in the next. The hash of the full name keeps two databases apart whose names differ only
    past the 24 characters kept or in characters a role name does without."""
    slug = re.sub(r"[^a-z0-9_]+", "_", database.lower()).strip("_")[:24] or "db"
    tag = hashlib.sha1(database.encode()).hexdigest()[:8]
    return {r: f"{GROUP_ROLE_PREFIX}{slug}_{tag}_{r}" for r in (*ROLES, "worker")}


#: The channel other clients LISTEN on; payload: {"table", "op", "who", "glyphs"}.
NOTIFY_CHANNEL = "studio_changes"
#: The server rules' version (``meta.server_rules``): a lab database whose rules are older is
#: brought up to date when its owner opens it (:func:`refresh_server_rules`), with no change
#: of format. 2: the project's schema closed to others, owner-run code calling pg_catalog's
#: functions, trigger functions the owner's alone. 3: group roles of this database alone
#: (:func:`group_roles`), CONNECT for the project's people only, tags tied to the schema,
#: bounded consensus calls and audit entries, annotators' idle transactions ended after a
#: minute (issue 25). 4: the consensus refreshed in one statement (:data:`CONSENSUS_PG`).
#: 5: a pilot's tables (format 8, issue 29): curators insert them, everyone reads them,
#: their changes are audited. 6: the consensus carries each tag's source (format 9, issue 30:
#: ``suggestion`` when any person's tag of it came from a suggestion).
SERVER_RULES_VERSION = 6
#: Format 8's tables: granted and audited once they exist (the format-7 step installs the
#: rules before the format-8 step creates them)
PILOT_TABLES = ("pilots", "pilot_participants", "pilot_responses")
#: Server-side limits set on every person's login (issue 25): a session left idle inside a
#: transaction holds its locks for everyone, so the server ends it; an annotator's statement
#: never needs long.
IDLE_TIMEOUT = "15min"
#: An annotator's client never waits inside a transaction (each tag is one short one), so a
#: session that does is ended soon: it may be holding glyphs' locks against everyone.
ANNOTATOR_IDLE_TIMEOUT = "1min"
ANNOTATOR_STATEMENT_TIMEOUT = "2min"
#: Most glyphs one call of ``studio_refresh_consensus`` takes (the client sends chunks of
#: this many); and how long it waits for another session's locks on them.
MAX_CONSENSUS_IDS = 20_000
CONSENSUS_LOCK_TIMEOUT = "5s"
#: Largest audit entry detail (bytes of JSON): a bigger sample is left out, its size said.
AUDIT_MAX_BYTES = 65_536
#: Most glyph ids one notification carries (PostgreSQL's payload limit is 8000 bytes).
NOTIFY_MAX_IDS = 400
#: Most rows one audit entry quotes (a bulk import is one entry with its count).
AUDIT_MAX_ROWS = 50

CONSENSUS_RULE = (
    "A glyph's consensus tags: the curator's settled tags when it was adjudicated; else, when "
    "fewer than two people are assigned it, every tag anyone gave it; else the tags every "
    "person who tagged it (or marked it done) agrees on, where an annotator's tags count only "
    "on the glyphs assigned to them: nobody outside the overlap vetoes its agreement. A "
    "consensus tag came from a suggestion when any person's tag of it did."
)

_TABLES = (
    "CREATE TABLE people (name TEXT PRIMARY KEY, role TEXT NOT NULL"
    " CHECK (role IN ('annotator', 'curator', 'admin')),"
    " full_name TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL)",
    "CREATE TABLE assignments (id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " created_at TEXT NOT NULL,"
    " created_by TEXT NOT NULL DEFAULT '', params TEXT NOT NULL DEFAULT '{}')",
    "CREATE TABLE assignment_items ("
    " assignment_id INTEGER NOT NULL REFERENCES assignments(id) ON DELETE CASCADE,"
    " glyph_id INTEGER NOT NULL REFERENCES glyphs(id) ON DELETE CASCADE,"
    " annotator TEXT NOT NULL, done_at TEXT, PRIMARY KEY (assignment_id, glyph_id, annotator))",
    "CREATE INDEX ix_assignment_items_glyph ON assignment_items (glyph_id, annotator)",
    "CREATE INDEX ix_assignment_items_annotator ON assignment_items (annotator, glyph_id)",
    "CREATE TABLE annotator_tags (id INTEGER PRIMARY KEY,"
    " glyph_id INTEGER NOT NULL REFERENCES glyphs(id) ON DELETE CASCADE,"
    " concept TEXT NOT NULL, value TEXT NOT NULL, annotator TEXT NOT NULL, created_at TEXT,"
    " UNIQUE (glyph_id, concept, value, annotator))",
    "CREATE INDEX ix_annotator_tags_annotator ON annotator_tags (annotator, glyph_id)",
    # no foreign key to glyphs: the record of a settled dispute outlives an edit of the glyphs
    "CREATE TABLE adjudications (id INTEGER PRIMARY KEY, glyph_id INTEGER NOT NULL,"
    " curator TEXT NOT NULL,"
    " at TEXT NOT NULL, tags TEXT NOT NULL DEFAULT '[]', note TEXT NOT NULL DEFAULT '')",
    "CREATE INDEX ix_adjudications_glyph ON adjudications (glyph_id, id)",
    "CREATE TABLE audit_log (id INTEGER PRIMARY KEY, at TEXT NOT NULL, who TEXT NOT NULL,"
    " action TEXT NOT NULL, target TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '{}')",
)

#: Does the tag row ``{t}`` count toward its glyph's agreement? An annotator's only on the
#: glyphs assigned to them; anyone else's (curators, admins, an importer) always.
_COUNTS = (
    "(NOT EXISTS (SELECT 1 FROM people r WHERE r.name = {t}.annotator AND r.role = 'annotator')"
    " OR EXISTS (SELECT 1 FROM assignment_items g WHERE g.glyph_id = {t}.glyph_id"
    " AND g.annotator = {t}.annotator))"
)

#: The consensus of the glyphs in ``{todo}`` (a subquery of glyph ids), as rows
#: (glyph_id, concept, value, author, created_at, source). One text for both dialects: SQLite
#: runs it from Python, PostgreSQL inside ``studio_refresh_consensus``. ``source`` is
#: ``suggestion`` when any person's tag of it came from a suggestion ('suggestion' > 'hand'):
#: a tag that an assisted person helped make is kept apart from purely unassisted data.
CONSENSUS_SELECT = """
SELECT a.glyph_id AS glyph_id, a.concept AS concept, a.value AS value,
       (SELECT f.annotator FROM annotator_tags f WHERE f.glyph_id = a.glyph_id
          AND f.concept = a.concept AND f.value = a.value
          ORDER BY COALESCE(f.created_at, ''), f.id LIMIT 1) AS author,
       MIN(a.created_at) AS created_at, MAX(a.source) AS source
FROM annotator_tags a
WHERE a.glyph_id IN ({todo})
  AND NOT EXISTS (SELECT 1 FROM adjudications j WHERE j.glyph_id = a.glyph_id)
GROUP BY a.glyph_id, a.concept, a.value
HAVING (SELECT COUNT(DISTINCT s.annotator) FROM assignment_items s
          WHERE s.glyph_id = a.glyph_id) < 2
    OR (COUNT(DISTINCT CASE WHEN {counts_a} THEN a.annotator END) > 0
        AND COUNT(DISTINCT CASE WHEN {counts_a} THEN a.annotator END) = (
         SELECT COUNT(*) FROM (
           SELECT p.annotator FROM annotator_tags p
             WHERE p.glyph_id = a.glyph_id AND {counts_p}
           UNION
           SELECT d.annotator FROM assignment_items d
             WHERE d.glyph_id = a.glyph_id AND d.done_at IS NOT NULL) AS participants))
"""

#: Remove the consensus rows of ``{todo}`` that the rule no longer gives (adjudicated glyphs
#: keep theirs: a curator's decision is changed only by another adjudication).
CONSENSUS_DELETE = """
DELETE FROM tags WHERE glyph_id IN ({todo})
  AND NOT EXISTS (SELECT 1 FROM adjudications j WHERE j.glyph_id = tags.glyph_id)
  AND NOT EXISTS (SELECT 1 FROM ({select}) AS c
                  WHERE c.glyph_id = tags.glyph_id AND c.concept = tags.concept
                    AND c.value = tags.value)
"""

#: Add what the rule gives and ``tags`` lacks, and bring the source of what it has to the
#: rule's (a second person's tag accepted from a suggestion makes an agreed tag assisted).
#: ``WHERE true`` lets SQLite parse ON CONFLICT after a SELECT.
CONSENSUS_INSERT = """
INSERT INTO tags (glyph_id, concept, value, author, created_at, source)
SELECT c.glyph_id, c.concept, c.value, c.author, c.created_at, c.source
FROM ({select}) AS c WHERE true
ON CONFLICT (glyph_id, concept, value) DO UPDATE SET source = excluded.source
  WHERE tags.source <> excluded.source
"""


#: PostgreSQL's refresh (inside ``studio_refresh_consensus``, ``ids`` its argument) in one
#: statement: the rule computed once for both halves (MATERIALIZED), the stale rows deleted
#: and the missing ones inserted from it. The two statements SQLite runs compute the rule
#: twice; counting only assigned annotators (rules 3) made that cost a lab's tagging a third
#: more time per tag (bench/run.py lab, p50 15 → 22 ms under ten annotators). The sub-
#: statements see the same snapshot and touch disjoint rows: the DELETE only rows the rule no
#: longer gives, the INSERT only rows it gives.
CONSENSUS_PG = """
WITH c AS MATERIALIZED ({select}),
stale AS (
  DELETE FROM tags WHERE glyph_id = ANY(ids)
    AND NOT EXISTS (SELECT 1 FROM adjudications j WHERE j.glyph_id = tags.glyph_id)
    AND NOT EXISTS (SELECT 1 FROM c WHERE c.glyph_id = tags.glyph_id
                    AND c.concept = tags.concept AND c.value = tags.value))
INSERT INTO tags (glyph_id, concept, value, author, created_at, source)
SELECT c.glyph_id, c.concept, c.value, c.author, c.created_at, c.source FROM c
ON CONFLICT (glyph_id, concept, value) DO UPDATE SET source = excluded.source
  WHERE tags.source <> excluded.source
"""


def consensus_pg() -> str:
    """:data:`CONSENSUS_PG` over the glyphs of the array ``ids``."""
    return CONSENSUS_PG.format(
        select=CONSENSUS_SELECT.format(
            todo="SELECT pg_catalog.unnest(ids)",
            counts_a=_COUNTS.format(t="a"),
            counts_p=_COUNTS.format(t="p"),
        ).replace(
            "WHERE a.glyph_id IN (SELECT pg_catalog.unnest(ids))", "WHERE a.glyph_id = ANY(ids)"
        )
    )


def consensus_statements(todo: str) -> tuple[str, str]:
    """The DELETE and INSERT that bring ``tags`` of the glyphs ``todo`` (an SQL subquery or
    list of ids) to their consensus."""
    select = CONSENSUS_SELECT.format(
        todo=todo, counts_a=_COUNTS.format(t="a"), counts_p=_COUNTS.format(t="p")
    )
    return (
        CONSENSUS_DELETE.format(todo=todo, select=select),
        CONSENSUS_INSERT.format(select=select),
    )


def upgrade(conn: Connection) -> None:
    """The step from format 6 to 7 (idempotent: it creates only what is missing). Existing
    tags become their authors' own tags, so the consensus of a migrated project is exactly
    its tags of before."""
    create_missing(conn, _TABLES)
    add_column(conn, "jobs", "worker", "TEXT NOT NULL DEFAULT ''")
    add_column(conn, "jobs", "claimed_at", "TEXT")
    conn.execute(
        text(
            "INSERT INTO annotator_tags (glyph_id, concept, value, annotator, created_at)"
            " SELECT glyph_id, concept, value, author, created_at FROM tags WHERE true"
            " ORDER BY id ON CONFLICT DO NOTHING"
        )
    )
    if is_postgres(conn):
        install_server_rules(conn)


# ---- PostgreSQL: roles, grants, row-level security, functions, triggers -----------------------


def _create_groups(roles: dict[str, str]) -> str:
    names = ", ".join(f"'{n}'" for n in roles.values())  # [a-z0-9_] only (group_roles)
    return f"""
DO $$
DECLARE r text;
BEGIN
  FOREACH r IN ARRAY ARRAY[{names}]
  LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
      EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
    END IF;
  END LOOP;
END $$
"""


def _group_ladder(roles: dict[str, str]) -> tuple[str, ...]:
    return (
        f"GRANT {roles['annotator']} TO {roles['curator']}",
        f"GRANT {roles['curator']} TO {roles['admin']}",
    )


def _grants(schema: str, roles: dict[str, str]) -> tuple[str, ...]:
    s = f'"{schema}"'
    all_roles = ", ".join(roles.values())
    ann, cur, adm, wrk = (roles[r] for r in ("annotator", "curator", "admin", "worker"))
    return (
        f"REVOKE ALL ON ALL TABLES IN SCHEMA {s} FROM PUBLIC",
        f"GRANT USAGE ON SCHEMA {s} TO {all_roles}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {s} TO {all_roles}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {all_roles}",
        # annotator: its own tags and its own done marks (row-level security says whose)
        f"GRANT INSERT, DELETE ON annotator_tags TO {ann}",
        f"GRANT UPDATE (done_at) ON assignment_items TO {ann}",
        # curator: curation, the consensus, adjudication, assignments, baseline jobs
        "GRANT INSERT, UPDATE, DELETE ON tags, puzzles, puzzle_sets, assignments,"
        f" assignment_items, baseline_flags, job_logs TO {cur}",
        f"GRANT INSERT ON puzzle_events, adjudications TO {cur}",
        f"GRANT INSERT, UPDATE, DELETE ON jobs TO {cur}",
        f"GRANT INSERT, UPDATE ON glyphs TO {cur}",
        # admin: the schema, fonts, glyphs, people, settings
        # (people through studio_add_person only: its checks are the server's)
        f"GRANT INSERT, UPDATE, DELETE ON schema_versions, fonts, glyphs, meta TO {adm}",
        f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON people FROM {all_roles}",
        # workers: the queue, logs and flags
        f"GRANT UPDATE ON jobs TO {wrk}",
        f"GRANT INSERT, DELETE ON job_logs, baseline_flags TO {wrk}",
        f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON audit_log FROM {all_roles}",
    )


def _rls(roles: dict[str, str]) -> tuple[str, ...]:
    adm, cur = roles["admin"], roles["curator"]
    return (
        "ALTER TABLE annotator_tags ENABLE ROW LEVEL SECURITY",
        "DROP POLICY IF EXISTS read_all ON annotator_tags",
        "CREATE POLICY read_all ON annotator_tags FOR SELECT USING (true)",
        "DROP POLICY IF EXISTS own_insert ON annotator_tags",
        "CREATE POLICY own_insert ON annotator_tags FOR INSERT WITH CHECK (annotator ="
        f" current_user OR pg_catalog.pg_has_role(current_user, '{adm}', 'MEMBER'))",
        "DROP POLICY IF EXISTS own_delete ON annotator_tags",
        "CREATE POLICY own_delete ON annotator_tags FOR DELETE USING (annotator ="
        f" current_user OR pg_catalog.pg_has_role(current_user, '{adm}', 'MEMBER'))",
        "ALTER TABLE assignment_items ENABLE ROW LEVEL SECURITY",
        "DROP POLICY IF EXISTS read_all ON assignment_items",
        "CREATE POLICY read_all ON assignment_items FOR SELECT USING (true)",
        "DROP POLICY IF EXISTS own_done ON assignment_items",
        "CREATE POLICY own_done ON assignment_items FOR UPDATE USING (annotator ="
        f" current_user OR pg_catalog.pg_has_role(current_user, '{cur}', 'MEMBER'))",
        "DROP POLICY IF EXISTS curator_write ON assignment_items",
        "CREATE POLICY curator_write ON assignment_items FOR ALL USING"
        f" (pg_catalog.pg_has_role(current_user, '{cur}', 'MEMBER'))",
    )


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _database_grants(database: str, roles: dict[str, str]) -> tuple[str, ...]:
    """Only the project's people (and its workers) may connect: CONNECT and TEMPORARY were
    PUBLIC's, so any login of the server could open the database and read what its grants
    give every role."""
    db = _quote(database)
    return (
        f"REVOKE CONNECT, TEMPORARY ON DATABASE {db} FROM PUBLIC",
        f"GRANT CONNECT, TEMPORARY ON DATABASE {db} TO {', '.join(roles.values())}",
    )


def _retire_legacy_roles(conn: Connection, schema: str, database: str) -> None:
    """Take from the server-wide roles of rules 1–2 every right they held in this database
    (their members may hold them for another database's sake: the memberships stay, and give
    nothing here). A worker login granted the old ``studio_worker`` keeps working here through
    this database's worker role."""
    existing = [
        str(r)
        for r in conn.execute(
            text("SELECT rolname FROM pg_catalog.pg_roles WHERE rolname = ANY(:names)"),
            {"names": list(LEGACY_GROUP_ROLES.values())},
        ).scalars()
    ]
    if not existing:
        return
    old = ", ".join(existing)
    for stmt in (
        f'REVOKE ALL ON ALL TABLES IN SCHEMA "{schema}" FROM {old}',
        f'REVOKE ALL ON ALL SEQUENCES IN SCHEMA "{schema}" FROM {old}',
        f'REVOKE ALL ON ALL FUNCTIONS IN SCHEMA "{schema}" FROM {old}',
        f'REVOKE ALL ON SCHEMA "{schema}" FROM {old}',
        f"REVOKE ALL ON DATABASE {_quote(database)} FROM {old}",
    ):
        conn.execute(text(stmt))
    if "studio_worker" in existing:
        workers = conn.execute(  # members directly or through another group alike
            text(
                "SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.rolcanlogin"
                " AND pg_catalog.pg_has_role(r.oid, 'studio_worker', 'MEMBER')"
            )
        ).scalars()
        for name in workers:
            conn.execute(text(f"GRANT {group_roles(database)['worker']} TO {_quote(str(name))}"))


def _catalog_calls(sql: str) -> str:
    """The shared consensus SQL with its aggregates named in ``pg_catalog`` for the
    owner-run function: a same-named function that someone else created in a schema on the
    path, with an argument type that fits better (``count(text)`` over ``count("any")``),
    would otherwise run with the owner's rights (issue 25)."""
    for name in ("COUNT", "MIN", "MAX"):
        sql = sql.replace(f"{name}(", f"pg_catalog.{name.lower()}(")
    return sql


#: The (concept, value) pairs of the newest schema version, as the CTE ``newest_tags``.
_NEWEST_TAGS = """newest_tags AS (
    SELECT DISTINCT c.concept ->> 'id' AS concept, v.value ->> 'id' AS value
    FROM (SELECT s.json::jsonb AS j FROM schema_versions s
          ORDER BY s.version DESC LIMIT 1) AS newest,
      pg_catalog.jsonb_array_elements(newest.j -> 'categories') AS cat(category),
      pg_catalog.jsonb_array_elements(cat.category -> 'concepts') AS c(concept),
      pg_catalog.jsonb_array_elements(c.concept -> 'values') AS v(value)
    WHERE c.concept ->> 'id' IS NOT NULL AND v.value ->> 'id' IS NOT NULL)"""


def install_consensus_rules(conn: Connection) -> None:
    """The format-9 step's share of the rules: ``studio_refresh_consensus`` replaced by this
    build's, which carries each tag's source (``CREATE OR REPLACE`` keeps its owner and
    grants; the rest of the rules stand, and a database whose rules are older gets them all
    when its owner opens it)."""
    schema = str(conn.execute(text("SELECT current_schema()")).scalar_one())
    refresh = _functions(schema, group_roles(current_database(conn)))[0]
    assert "FUNCTION studio_refresh_consensus(" in refresh
    conn.execute(text(refresh))


def _functions(schema: str, roles: dict[str, str]) -> tuple[str, ...]:
    path = f'"{schema}", pg_temp'
    refresh = _catalog_calls(consensus_pg())
    # a trigger function runs as the owner: only on this schema's tables (a temporary table
    # with the studio's trigger would otherwise write the audit trail as the owner)
    own_table = f"""
  IF TG_TABLE_SCHEMA IS DISTINCT FROM '{schema}' THEN
    RAISE EXCEPTION 'studio trigger on %.%, outside the project''s schema',
      TG_TABLE_SCHEMA, TG_TABLE_NAME;
  END IF;"""
    return (
        f"""
CREATE OR REPLACE FUNCTION studio_refresh_consensus(ids bigint[]) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path}
SET lock_timeout = '{CONSENSUS_LOCK_TIMEOUT}' AS $fn$
BEGIN
  IF pg_catalog.cardinality(ids) > {MAX_CONSENSUS_IDS} THEN
    RAISE EXCEPTION 'studio_refresh_consensus takes at most {MAX_CONSENSUS_IDS} glyphs, got %',
      pg_catalog.cardinality(ids) USING ERRCODE = 'program_limit_exceeded';
  END IF;
  -- one glyph's consensus is made by one transaction at a time: the row locks serialise
  -- people tagging the same glyph, and every statement after them sees the others' commits.
  -- NO KEY UPDATE: it does not wait for the key-share locks that inserting a tag takes on
  -- its glyph (foreign key), so two people tagging crossing sets of glyphs cannot deadlock.
  PERFORM 1 FROM glyphs WHERE id = ANY(ids) ORDER BY id FOR NO KEY UPDATE;
  {refresh};
END $fn$""",
        f"""
CREATE OR REPLACE FUNCTION studio_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $fn$
DECLARE n bigint; sample json; detail text;
BEGIN{own_table}
  IF TG_OP = 'DELETE' THEN
    SELECT pg_catalog.count(*), pg_catalog.json_agg(r) FILTER (WHERE rn <= {AUDIT_MAX_ROWS})
      INTO n, sample
      FROM (SELECT o AS r, pg_catalog.row_number() OVER () AS rn FROM old_rows o) x;
  ELSE
    SELECT pg_catalog.count(*), pg_catalog.json_agg(r) FILTER (WHERE rn <= {AUDIT_MAX_ROWS})
      INTO n, sample
      FROM (SELECT o AS r, pg_catalog.row_number() OVER () AS rn FROM new_rows o) x;
  END IF;
  IF n > 0 THEN
    detail := pg_catalog.json_build_object('rows', n, 'sample', sample)::text;
    IF pg_catalog.octet_length(detail) > {AUDIT_MAX_BYTES} THEN
      detail := pg_catalog.json_build_object(
        'rows', n, 'sample_left_out_bytes', pg_catalog.octet_length(detail))::text;
    END IF;
    INSERT INTO audit_log (at, who, action, target, detail) VALUES (
      pg_catalog.to_char(pg_catalog.clock_timestamp() AT TIME ZONE 'UTC',
                         'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"'),
      session_user, pg_catalog.lower(TG_OP), TG_TABLE_NAME, detail);
  END IF;
  RETURN NULL;
END $fn$""",
        f"""
CREATE OR REPLACE FUNCTION studio_notify() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $fn$
DECLARE ids json; n bigint;
BEGIN{own_table}
  IF TG_OP = 'DELETE' THEN
    SELECT pg_catalog.count(*) INTO n FROM old_rows;
  ELSE
    SELECT pg_catalog.count(*) INTO n FROM new_rows;
  END IF;
  IF n = 0 THEN
    RETURN NULL;
  END IF;
  IF TG_TABLE_NAME IN ('tags', 'annotator_tags', 'assignment_items', 'adjudications') THEN
    IF TG_OP = 'DELETE' THEN
      SELECT pg_catalog.json_agg(DISTINCT glyph_id) INTO ids
        FROM (SELECT glyph_id FROM old_rows LIMIT {NOTIFY_MAX_IDS}) x;
    ELSE
      SELECT pg_catalog.json_agg(DISTINCT glyph_id) INTO ids
        FROM (SELECT glyph_id FROM new_rows LIMIT {NOTIFY_MAX_IDS}) x;
    END IF;
  END IF;
  PERFORM pg_catalog.pg_notify('{NOTIFY_CHANNEL}', pg_catalog.json_build_object(
    'table', TG_TABLE_NAME, 'op', pg_catalog.lower(TG_OP), 'who', session_user,
    'glyphs', COALESCE(ids, '[]'::json))::text);
  RETURN NULL;
END $fn$""",
        f"""
CREATE OR REPLACE FUNCTION studio_schema_tags() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $fn$
BEGIN{own_table}
  PERFORM studio_refresh_schema_tags();
  RETURN NULL;
END $fn$""",
        f"""
CREATE OR REPLACE FUNCTION studio_refresh_schema_tags() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $fn$
BEGIN
  -- the (concept, value) pairs of the newest schema: what the tag tables' foreign keys
  -- (checked at commit) accept
  -- by difference: a pair the new version keeps is never deleted, so nobody's tag written
  -- meanwhile waits on, then misses, a row deleted and written again
  WITH {_NEWEST_TAGS}
  DELETE FROM schema_tags t WHERE NOT EXISTS (
    SELECT 1 FROM newest_tags n WHERE n.concept = t.concept AND n.value = t.value);
  WITH {_NEWEST_TAGS}
  INSERT INTO schema_tags (concept, value)
    SELECT n.concept, n.value FROM newest_tags n ON CONFLICT DO NOTHING;
END $fn$""",
        rf"""
CREATE OR REPLACE FUNCTION studio_add_person(person text, person_role text,
  person_full_name text, password_hash text, at text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $fn$
DECLARE
  owner_name text;
  powerful boolean;
  login_exists boolean;
  target text := CASE person_role WHEN 'annotator' THEN '{roles["annotator"]}'
    WHEN 'curator' THEN '{roles["curator"]}' WHEN 'admin' THEN '{roles["admin"]}' END;
  grp text;
BEGIN
  SELECT pg_catalog.pg_get_userbyid(d.datdba) INTO owner_name FROM pg_catalog.pg_database d
    WHERE d.datname = pg_catalog.current_database();
  IF session_user <> owner_name
     AND NOT pg_catalog.pg_has_role(session_user, '{roles["admin"]}', 'MEMBER') THEN
    RAISE EXCEPTION 'permission denied: only an admin of this project adds people'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF target IS NULL THEN
    RAISE EXCEPTION 'role % is not annotator, curator or admin',
      pg_catalog.quote_literal(person_role) USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF person !~ '^[a-z_][a-z0-9_.-]{{0,62}}$' OR person LIKE 'pg\_%' OR person LIKE 'studio\_%'
  THEN
    RAISE EXCEPTION '% cannot be a person of a project', pg_catalog.quote_literal(person)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF person = owner_name AND person_role <> 'admin' THEN
    RAISE EXCEPTION '% owns the database: the owner stays an admin', person
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  SELECT r.rolsuper OR r.rolcreaterole OR r.rolreplication OR r.rolbypassrls INTO powerful
    FROM pg_catalog.pg_roles r WHERE r.rolname = person;
  login_exists := powerful IS NOT NULL;
  IF powerful THEN
    RAISE EXCEPTION 'permission denied: % is a login with powers beyond a person''s', person
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NOT login_exists THEN
    EXECUTE pg_catalog.format('CREATE ROLE %I LOGIN', person);
    INSERT INTO studio_logins (name, created_at) VALUES (person, at) ON CONFLICT DO NOTHING;
  END IF;
  IF password_hash IS NOT NULL AND session_user <> owner_name THEN
    -- an admin sets only the password of a login this project made, that holds nothing but
    -- this database's roles and owns no database: any other login of the server (a person
    -- of another lab, the owner, a member of pg_execute_server_program) is not an admin's
    -- to take over. The owner, who may alter roles anyway, may.
    IF NOT EXISTS (SELECT 1 FROM studio_logins l WHERE l.name = person)
       OR EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members m
                    JOIN pg_catalog.pg_roles g ON g.oid = m.roleid
                    JOIN pg_catalog.pg_roles r ON r.oid = m.member
                  WHERE r.rolname = person AND g.rolname NOT IN
                    ('{roles["annotator"]}', '{roles["curator"]}', '{roles["admin"]}'))
       OR EXISTS (SELECT 1 FROM pg_catalog.pg_database d
                    JOIN pg_catalog.pg_roles r ON r.oid = d.datdba WHERE r.rolname = person)
    THEN
      RAISE EXCEPTION 'permission denied: % is a login this project did not make (or one '
        'with other roles): add them without a password (they keep the one they have)',
        person USING ERRCODE = 'insufficient_privilege';
    END IF;
  END IF;
  IF password_hash IS NOT NULL THEN
    IF password_hash !~ '^SCRAM-SHA-256\$' THEN
      RAISE EXCEPTION 'a password reaches the server hashed (SCRAM-SHA-256) only'
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
    EXECUTE pg_catalog.format('ALTER ROLE %I PASSWORD %L', person, password_hash);
  END IF;
  FOREACH grp IN ARRAY ARRAY['{roles["annotator"]}', '{roles["curator"]}', '{roles["admin"]}']
  LOOP
    IF grp <> target THEN
      EXECUTE pg_catalog.format('REVOKE %I FROM %I', grp, person);
    END IF;
  END LOOP;
  EXECUTE pg_catalog.format('GRANT %I TO %I', target, person);
  BEGIN  -- a login the owner may not alter (made by another) keeps its own settings
    EXECUTE pg_catalog.format(
      'ALTER ROLE %I IN DATABASE %I SET idle_in_transaction_session_timeout = %L', person,
      pg_catalog.current_database(), CASE WHEN person_role = 'annotator'
        THEN '{ANNOTATOR_IDLE_TIMEOUT}' ELSE '{IDLE_TIMEOUT}' END);
    IF person_role = 'annotator' THEN
      EXECUTE pg_catalog.format('ALTER ROLE %I IN DATABASE %I SET statement_timeout = %L',
        person, pg_catalog.current_database(), '{ANNOTATOR_STATEMENT_TIMEOUT}');
    ELSE
      EXECUTE pg_catalog.format('ALTER ROLE %I IN DATABASE %I RESET statement_timeout',
        person, pg_catalog.current_database());
    END IF;
  EXCEPTION WHEN insufficient_privilege THEN
    NULL;
  END;
  INSERT INTO people (name, role, full_name, created_at)
    VALUES (person, person_role, COALESCE(person_full_name, ''), at)
    ON CONFLICT (name) DO UPDATE SET role = excluded.role,
      full_name = CASE WHEN excluded.full_name = '' THEN people.full_name
                       ELSE excluded.full_name END;
END $fn$
""",
        """
CREATE OR REPLACE FUNCTION studio_append_only() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END $fn$""",
    )


#: Tables whose changes are audited (who changed what) and announced to other clients.
AUDITED = (
    "annotator_tags",
    "tags",
    "adjudications",
    "assignments",
    "assignment_items",
    "people",
    "schema_versions",
    "puzzles",
    "puzzle_sets",
    "glyphs",
    "fonts",
)
NOTIFIED = ("annotator_tags", "tags", "puzzles", "jobs", "adjudications", "assignment_items")
#: Tables whose every (concept, value) must be in the project's newest schema: a foreign key
#: to ``schema_tags`` (issue 25: psql put a concept ``../../escape`` where exports build
#: paths from it, and values the CSV export could not re-import).
CHECKED_TAGS = ("annotator_tags", "tags")
#: Meta rows that belong to the database, not the project: no copy carries them.
SERVER_META_KEYS = ("server_rules", "group_roles")
#: Tables only a lab database has (derived from the project's own; no copy carries them).
SERVER_TABLES = ("schema_tags", "studio_logins")

_SCHEMA_TAGS = (
    "CREATE TABLE IF NOT EXISTS schema_tags (concept TEXT NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY (concept, value))"
)
#: The logins ``studio_add_person`` made: the only ones whose password an admin may set.
_LOGINS = (
    "CREATE TABLE IF NOT EXISTS studio_logins (name TEXT PRIMARY KEY, created_at TEXT NOT NULL)"
)


def _statement_triggers(prefix: str, tables: tuple[str, ...], function: str) -> list[str]:
    """``AFTER INSERT / UPDATE / DELETE ... FOR EACH STATEMENT`` triggers calling ``function``
    with the statement's rows as the transition table ``new_rows`` or ``old_rows``."""
    out = []
    for table in tables:
        for op, ref in (
            ("INSERT", "NEW TABLE AS new_rows"),
            ("UPDATE", "NEW TABLE AS new_rows"),
            ("DELETE", "OLD TABLE AS old_rows"),
        ):
            out.append(
                f"CREATE OR REPLACE TRIGGER {prefix}_{op.lower()} AFTER {op} ON {table}"
                f" REFERENCING {ref} FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
            )
    return out


def install_pilot_rules(conn: Connection) -> None:
    """The format-8 step's share of the rules: the pilot tables readable by the project's
    people and the curators', audited (the rest of the rules stand; a database whose rules
    are older gets them all when its owner opens it)."""
    roles = group_roles(current_database(conn))
    conn.execute(text(f"GRANT SELECT ON {', '.join(PILOT_TABLES)} TO {', '.join(roles.values())}"))
    for stmt in _pilot_rules(roles):
        conn.execute(text(stmt))


def _pilot_rules(roles: dict[str, str]) -> tuple[str, ...]:
    """A pilot's results are the curators' to import (an annotator with psql cannot add or
    change a person's answers); nobody updates them in place; every change is audited."""
    tables = ", ".join(PILOT_TABLES)
    all_roles = ", ".join(roles.values())
    adm = roles["admin"]
    mine = f"pg_catalog.pg_has_role(current_user, '{adm}', 'MEMBER')"
    # a curator's import is theirs: another curator neither adds to nor removes it (the
    # review found cur2 inserting under imported_by='cur'); an admin may remove any
    owns_participant = (
        "EXISTS (SELECT 1 FROM pilot_participants q WHERE q.pilot_id ="
        " pilot_responses.pilot_id AND q.participant = pilot_responses.participant"
        " AND q.imported_by = current_user)"
    )
    policies = []
    for table, own in (
        ("pilots", "author = current_user"),
        ("pilot_participants", "imported_by = current_user"),
        ("pilot_responses", owns_participant),
    ):
        policies += [
            f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
            f"DROP POLICY IF EXISTS read_all ON {table}",
            f"CREATE POLICY read_all ON {table} FOR SELECT USING (true)",
            f"DROP POLICY IF EXISTS own_insert ON {table}",
            f"CREATE POLICY own_insert ON {table} FOR INSERT WITH CHECK ({own})",
            f"DROP POLICY IF EXISTS own_delete ON {table}",
            f"CREATE POLICY own_delete ON {table} FOR DELETE USING ({own} OR {mine})",
        ]
    policies += [
        "DROP POLICY IF EXISTS set_once ON pilots",
        "CREATE POLICY set_once ON pilots FOR UPDATE USING (set_id IS NULL)"
        " WITH CHECK (set_id IS NOT NULL)",
    ]
    return (
        f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON {tables} FROM {all_roles}",
        f"GRANT INSERT, DELETE ON {tables} TO {roles['curator']}",
        f"GRANT UPDATE (set_id) ON pilots TO {roles['curator']}",
        *policies,
        *_statement_triggers("audit", PILOT_TABLES, "studio_audit"),
    )


def _triggers() -> tuple[str, ...]:
    out = [
        *_statement_triggers("audit", AUDITED, "studio_audit"),
        *_statement_triggers("notify", NOTIFIED, "studio_notify"),
    ]
    out.append(
        "CREATE OR REPLACE TRIGGER schema_tags AFTER INSERT OR UPDATE OR DELETE ON"
        " schema_versions FOR EACH STATEMENT EXECUTE FUNCTION studio_schema_tags()"
    )
    for table in ("audit_log", "adjudications"):
        out.append(
            f"CREATE OR REPLACE TRIGGER append_only BEFORE UPDATE OR DELETE ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION studio_append_only()"
        )
        out.append(
            f"CREATE OR REPLACE TRIGGER append_only_truncate BEFORE TRUNCATE ON {table}"
            " FOR EACH STATEMENT EXECUTE FUNCTION studio_append_only()"
        )
    return tuple(out)


def install_server_rules(conn: Connection) -> None:
    """Roles, grants, row-level security, functions and triggers of a lab database (safe to
    run again: everything is created or replaced). Needs the right to create roles (a lab
    admin with CREATEROLE, or the database owner given it) the first time on a server."""
    schema = str(conn.execute(text("SELECT current_schema()")).scalar_one())
    database = current_database(conn)
    roles = group_roles(database)
    # group roles are server-wide objects: serialise their creation
    conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('analogy-studio roles'))"))
    conn.execute(text(_create_groups(roles)))
    conn.execute(text(_SCHEMA_TAGS))
    conn.execute(text(_LOGINS))
    pilots = all(
        conn.execute(text("SELECT to_regclass(:t)"), {"t": t}).scalar() for t in PILOT_TABLES
    )
    for stmt in (
        *_group_ladder(roles),
        *_functions(schema, roles),
        *_triggers(),
        *_rls(roles),
        *_grants(schema, roles),
        *_database_grants(database, roles),
        *(_pilot_rules(roles) if pilots else ()),
    ):
        conn.execute(text(stmt))
    _retire_legacy_roles(conn, schema, database)
    # nobody but the owner creates objects in the project's schema: an owner-run function
    # resolves unqualified names there, and PostgreSQL up to 14 let everyone create in
    # ``public`` (issue 25: an annotator's public.unnest(bigint[]) ran as the owner)
    conn.execute(text(f'REVOKE CREATE ON SCHEMA "{schema}" FROM PUBLIC'))
    for fn in (
        "studio_audit()",
        "studio_notify()",
        "studio_append_only()",
        "studio_schema_tags()",
        "studio_refresh_schema_tags()",
    ):
        conn.execute(text(f"REVOKE ALL ON FUNCTION {fn} FROM PUBLIC"))
    # an admin copying a project in rebuilds the accepted tags from the schema it copied
    conn.execute(
        text(f"GRANT EXECUTE ON FUNCTION studio_refresh_schema_tags() TO {roles['admin']}")
    )
    _check_tags_by_schema(conn, schema)
    conn.execute(text("REVOKE ALL ON FUNCTION studio_refresh_consensus(bigint[]) FROM PUBLIC"))
    add_person = "studio_add_person(text, text, text, text, text)"
    conn.execute(text(f"REVOKE ALL ON FUNCTION {add_person} FROM PUBLIC"))
    conn.execute(text(f"GRANT EXECUTE ON FUNCTION {add_person} TO {roles['admin']}"))
    conn.execute(
        text(
            "GRANT EXECUTE ON FUNCTION studio_refresh_consensus(bigint[]) TO"
            f" {roles['annotator']}, {roles['curator']}, {roles['admin']}"
        )
    )
    conn.execute(
        text(
            "INSERT INTO meta (key, value) VALUES ('group_roles', :v)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ),
        {"v": json.dumps(roles, sort_keys=True)},
    )
    # the people already there get their logins' limits (a login of another owner's making
    # that this one may not alter is left as it is)
    people = conn.execute(
        text(
            "SELECT p.name, p.role FROM people p JOIN pg_catalog.pg_roles r"
            " ON r.rolname = p.name WHERE NOT r.rolsuper"
        )
    ).all()
    for name, role in people:
        try:
            with conn.begin_nested():
                # this database's role (the server-wide ones give nothing here any more)
                conn.execute(text(f"GRANT {roles[str(role)]} TO {_quote(str(name))}"))
                for stmt in login_limits(str(name), str(role), database):
                    conn.execute(text(stmt))
        except DBAPIError:
            continue
    # rules that could not close the schema are not recorded as installed: the next open by
    # the owner or a superuser tries again (docs/lab-server.md says what postgres runs)
    version = 1 if schema_open_to_all(conn, schema) else SERVER_RULES_VERSION
    conn.execute(
        text(
            "INSERT INTO meta (key, value) VALUES ('server_rules', :v)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        ),
        {"v": str(version)},
    )


def _check_tags_by_schema(conn: Connection, schema: str) -> None:
    """Fill ``schema_tags`` from the newest schema and tie both tag tables to it. The keys are
    checked at commit (a schema edit renames tags in steps) and ``NOT VALID``: tags from
    before are left to the client's orphan report rather than stopping the upgrade. A key is
    looked for on the table itself: a same-named constraint on someone's temporary table
    must not pass for it (review of issue 25)."""
    conn.execute(text("SELECT studio_refresh_schema_tags()"))
    for table in CHECKED_TAGS:
        name = f"{table}_in_schema"
        there = conn.execute(
            text(
                "SELECT 1 FROM pg_catalog.pg_constraint WHERE conname = :n"
                " AND conrelid = CAST(:t AS regclass)"
            ),
            {"n": name, "t": f"{_quote(schema)}.{table}"},
        ).first()
        if there is None:
            conn.execute(
                text(
                    f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY (concept, value)"
                    " REFERENCES schema_tags (concept, value) DEFERRABLE INITIALLY DEFERRED"
                    " NOT VALID"
                )
            )


def refresh_schema_tags(conn: Connection) -> None:
    """Rebuild ``schema_tags`` where there is one (a copy into a lab database writes the
    schema versions with the studio's triggers off)."""
    if is_postgres(conn) and conn.execute(text("SELECT to_regclass('schema_tags')")).scalar():
        conn.execute(text("SELECT studio_refresh_schema_tags()"))


def login_limits(name: str, role: str, database: str) -> list[str]:
    """The statements that give a person's login the limits of its role in this ``database``
    only (``ALTER ROLE … IN DATABASE``: the same login may have another role, and a DBA's
    settings, in the server's other databases). ``name`` is a checked login name."""
    at = f"ALTER ROLE {_quote(name)} IN DATABASE {_quote(database)}"
    idle = ANNOTATOR_IDLE_TIMEOUT if role == "annotator" else IDLE_TIMEOUT
    out = [f"{at} SET idle_in_transaction_session_timeout = '{idle}'"]
    if role == "annotator":
        out.append(f"{at} SET statement_timeout = '{ANNOTATOR_STATEMENT_TIMEOUT}'")
    else:
        out.append(f"{at} RESET statement_timeout")
    return out


def current_database(conn: Connection) -> str:
    return str(conn.execute(text("SELECT pg_catalog.current_database()")).scalar_one())


def server_rules_version(conn: Connection) -> int:
    """The version of the rules installed in a lab database (1: before it was recorded)."""
    got = conn.execute(text("SELECT value FROM meta WHERE key = 'server_rules'")).scalar()
    try:
        return int(got) if got is not None else 1
    except ValueError:
        return 1


def refresh_server_rules(conn: Connection) -> bool:
    """Install this build's server rules in a lab database whose rules are older, when the
    login may (it owns the database, or is a superuser); True when it did. Another login
    leaves them for the owner: its rights come from the rules already there."""
    if server_rules_version(conn) >= SERVER_RULES_VERSION or not may_install_rules(conn):
        return False
    install_server_rules(conn)
    return True


def may_install_rules(conn: Connection) -> bool:
    """Does this login own the database (or is it a superuser)? Only then is installing the
    rules tried: anyone else opens with the rules already there."""
    return bool(
        conn.execute(
            text(
                "SELECT pg_catalog.pg_get_userbyid(d.datdba) = current_user OR (SELECT"
                " r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user)"
                " FROM pg_catalog.pg_database d"
                " WHERE d.datname = pg_catalog.current_database()"
            )
        ).scalar()
    )


def schema_open_to_all(conn: Connection, schema: str) -> bool:
    """Does PUBLIC still hold CREATE on the schema? (A REVOKE by a login that does not own
    the schema — ``public`` belongs to ``postgres`` on PostgreSQL 14 — only warns.)"""
    return bool(
        conn.execute(
            text(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace n,"
                " pg_catalog.aclexplode(n.nspacl) a WHERE n.nspname = :s"
                " AND a.grantee = 0 AND a.privilege_type = 'CREATE')"
            ),
            {"s": schema},
        ).scalar()
    )
