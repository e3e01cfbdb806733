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

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from studio.store.dialect import add_column, create_missing, is_postgres

#: Roles of people on a project, least to most rights.
ROLES = ("annotator", "curator", "admin")
#: PostgreSQL group role of each studio role (and of the job workers).
GROUP_ROLES = {
    "annotator": "studio_annotator",
    "curator": "studio_curator",
    "admin": "studio_admin",
    "worker": "studio_worker",
}
#: The channel other clients LISTEN on; payload: {"table", "op", "who", "glyphs"}.
NOTIFY_CHANNEL = "studio_changes"
#: The server rules' version (``meta.server_rules``): a lab database whose rules are older is
#: brought up to date when its owner opens it (:func:`refresh_server_rules`), with no change
#: of format. 2: the project's schema closed to others, owner-run code calling pg_catalog's
#: functions, trigger functions the owner's alone (issue 25).
SERVER_RULES_VERSION = 2
#: Server-side limits set on every person's login (issue 25): a session left idle inside a
#: transaction holds its locks for everyone, so the server ends it; an annotator's statement
#: never needs long.
IDLE_TIMEOUT = "15min"
ANNOTATOR_STATEMENT_TIMEOUT = "2min"
#: Most glyph ids one notification carries (PostgreSQL's payload limit is 8000 bytes).
NOTIFY_MAX_IDS = 400
#: Most rows one audit entry quotes (a bulk import is one entry with its count).
AUDIT_MAX_ROWS = 50

CONSENSUS_RULE = (
    "A glyph's consensus tags: the curator's settled tags when it was adjudicated; else, when "
    "fewer than two people are assigned it, every tag anyone gave it; else the tags every "
    "person who tagged it (or marked it done) agrees on."
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

#: The consensus of the glyphs in ``{todo}`` (a subquery of glyph ids), as rows
#: (glyph_id, concept, value, author, created_at). One text for both dialects: SQLite runs it
#: from Python, PostgreSQL inside ``studio_refresh_consensus``.
CONSENSUS_SELECT = """
SELECT a.glyph_id AS glyph_id, a.concept AS concept, a.value AS value,
       (SELECT f.annotator FROM annotator_tags f WHERE f.glyph_id = a.glyph_id
          AND f.concept = a.concept AND f.value = a.value
          ORDER BY COALESCE(f.created_at, ''), f.id LIMIT 1) AS author,
       MIN(a.created_at) AS created_at
FROM annotator_tags a
WHERE a.glyph_id IN ({todo})
  AND NOT EXISTS (SELECT 1 FROM adjudications j WHERE j.glyph_id = a.glyph_id)
GROUP BY a.glyph_id, a.concept, a.value
HAVING (SELECT COUNT(DISTINCT s.annotator) FROM assignment_items s
          WHERE s.glyph_id = a.glyph_id) < 2
    OR COUNT(DISTINCT a.annotator) = (
         SELECT COUNT(*) FROM (
           SELECT p.annotator FROM annotator_tags p WHERE p.glyph_id = a.glyph_id
           UNION
           SELECT d.annotator FROM assignment_items d
             WHERE d.glyph_id = a.glyph_id AND d.done_at IS NOT NULL) AS participants)
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

#: Add what the rule gives and ``tags`` lacks. ``WHERE true`` lets SQLite parse ON CONFLICT
#: after a SELECT.
CONSENSUS_INSERT = """
INSERT INTO tags (glyph_id, concept, value, author, created_at)
SELECT c.glyph_id, c.concept, c.value, c.author, c.created_at
FROM ({select}) AS c WHERE true
ON CONFLICT DO NOTHING
"""


def consensus_statements(todo: str) -> tuple[str, str]:
    """The DELETE and INSERT that bring ``tags`` of the glyphs ``todo`` (an SQL subquery or
    list of ids) to their consensus."""
    select = CONSENSUS_SELECT.format(todo=todo)
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

_CREATE_GROUPS = """
DO $$
DECLARE r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['studio_annotator', 'studio_curator', 'studio_admin', 'studio_worker']
  LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
      EXECUTE format('CREATE ROLE %I NOLOGIN', r);
    END IF;
  END LOOP;
END $$
"""

_GROUP_LADDER = (
    "GRANT studio_annotator TO studio_curator",
    "GRANT studio_curator TO studio_admin",
)


def _grants(schema: str) -> tuple[str, ...]:
    s = f'"{schema}"'
    all_roles = "studio_annotator, studio_curator, studio_admin, studio_worker"
    return (
        f"REVOKE ALL ON ALL TABLES IN SCHEMA {s} FROM PUBLIC",
        f"GRANT USAGE ON SCHEMA {s} TO {all_roles}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {s} TO {all_roles}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {all_roles}",
        # annotator: its own tags and its own done marks (row-level security says whose)
        "GRANT INSERT, DELETE ON annotator_tags TO studio_annotator",
        "GRANT UPDATE (done_at) ON assignment_items TO studio_annotator",
        # curator: curation, the consensus, adjudication, assignments, baseline jobs
        "GRANT INSERT, UPDATE, DELETE ON tags, puzzles, puzzle_sets, assignments,"
        " assignment_items, baseline_flags, job_logs TO studio_curator",
        "GRANT INSERT ON puzzle_events, adjudications TO studio_curator",
        "GRANT INSERT, UPDATE, DELETE ON jobs TO studio_curator",
        "GRANT INSERT, UPDATE ON glyphs TO studio_curator",
        # admin: the schema, fonts, glyphs, people, settings
        "GRANT INSERT, UPDATE, DELETE ON schema_versions, fonts, glyphs, people, meta"
        " TO studio_admin",
        # workers: the queue, logs and flags
        "GRANT UPDATE ON jobs TO studio_worker",
        "GRANT INSERT, DELETE ON job_logs, baseline_flags TO studio_worker",
        "REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON audit_log FROM studio_annotator,"
        " studio_curator, studio_admin, studio_worker",
    )


_RLS = (
    "ALTER TABLE annotator_tags ENABLE ROW LEVEL SECURITY",
    "DROP POLICY IF EXISTS read_all ON annotator_tags",
    "CREATE POLICY read_all ON annotator_tags FOR SELECT USING (true)",
    "DROP POLICY IF EXISTS own_insert ON annotator_tags",
    "CREATE POLICY own_insert ON annotator_tags FOR INSERT WITH CHECK"
    " (annotator = current_user OR pg_has_role(current_user, 'studio_admin', 'MEMBER'))",
    "DROP POLICY IF EXISTS own_delete ON annotator_tags",
    "CREATE POLICY own_delete ON annotator_tags FOR DELETE USING"
    " (annotator = current_user OR pg_has_role(current_user, 'studio_admin', 'MEMBER'))",
    "ALTER TABLE assignment_items ENABLE ROW LEVEL SECURITY",
    "DROP POLICY IF EXISTS read_all ON assignment_items",
    "CREATE POLICY read_all ON assignment_items FOR SELECT USING (true)",
    "DROP POLICY IF EXISTS own_done ON assignment_items",
    "CREATE POLICY own_done ON assignment_items FOR UPDATE USING"
    " (annotator = current_user OR pg_has_role(current_user, 'studio_curator', 'MEMBER'))",
    "DROP POLICY IF EXISTS curator_write ON assignment_items",
    "CREATE POLICY curator_write ON assignment_items FOR ALL USING"
    " (pg_has_role(current_user, 'studio_curator', 'MEMBER'))",
)


def _catalog_calls(sql: str) -> str:
    """The shared consensus SQL with its aggregates named in ``pg_catalog`` for the
    owner-run function: a same-named function that someone else created in a schema on the
    path, with an argument type that fits better (``count(text)`` over ``count("any")``),
    would otherwise run with the owner's rights (issue 25)."""
    for name in ("COUNT", "MIN"):
        sql = sql.replace(f"{name}(", f"pg_catalog.{name.lower()}(")
    return sql


def _functions(schema: str) -> tuple[str, ...]:
    path = f'"{schema}", pg_temp'
    delete, insert = (
        _catalog_calls(s) for s in consensus_statements("SELECT pg_catalog.unnest(ids)")
    )
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
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $fn$
BEGIN
  -- one glyph's consensus is made by one transaction at a time: the row locks serialise
  -- people tagging the same glyph, and every statement after them sees the others' commits.
  -- NO KEY UPDATE: it does not wait for the key-share locks that inserting a tag takes on
  -- its glyph (foreign key), so two people tagging crossing sets of glyphs cannot deadlock.
  PERFORM 1 FROM glyphs WHERE id = ANY(ids) ORDER BY id FOR NO KEY UPDATE;
  {delete};
  {insert};
END $fn$""",
        f"""
CREATE OR REPLACE FUNCTION studio_audit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {path} AS $fn$
DECLARE n bigint; sample json;
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
    INSERT INTO audit_log (at, who, action, target, detail) VALUES (
      pg_catalog.to_char(pg_catalog.clock_timestamp() AT TIME ZONE 'UTC',
                         'YYYY-MM-DD"T"HH24:MI:SS.MS"+00:00"'),
      session_user, pg_catalog.lower(TG_OP), TG_TABLE_NAME,
      pg_catalog.json_build_object('rows', n, 'sample', sample)::text);
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


def _triggers() -> tuple[str, ...]:
    out = [
        *_statement_triggers("audit", AUDITED, "studio_audit"),
        *_statement_triggers("notify", NOTIFIED, "studio_notify"),
    ]
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
    # group roles are shared by the server's databases: serialise their creation
    conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('analogy-studio roles'))"))
    conn.execute(text(_CREATE_GROUPS))
    for stmt in (*_GROUP_LADDER, *_functions(schema), *_triggers(), *_RLS, *_grants(schema)):
        conn.execute(text(stmt))
    # nobody but the owner creates objects in the project's schema: an owner-run function
    # resolves unqualified names there, and PostgreSQL up to 14 let everyone create in
    # ``public`` (issue 25: an annotator's public.unnest(bigint[]) ran as the owner)
    conn.execute(text(f'REVOKE CREATE ON SCHEMA "{schema}" FROM PUBLIC'))
    for fn in ("studio_audit()", "studio_notify()", "studio_append_only()"):
        conn.execute(text(f"REVOKE ALL ON FUNCTION {fn} FROM PUBLIC"))
    conn.execute(text("REVOKE ALL ON FUNCTION studio_refresh_consensus(bigint[]) FROM PUBLIC"))
    conn.execute(
        text(
            "GRANT EXECUTE ON FUNCTION studio_refresh_consensus(bigint[]) TO studio_annotator,"
            " studio_curator, studio_admin"
        )
    )
    # the people already there get their logins' limits (a login of another owner's making
    # that this one may not alter is left as it is)
    people = conn.execute(
        text(
            "SELECT p.name, p.role FROM people p JOIN pg_catalog.pg_roles r"
            " ON r.rolname = p.name WHERE NOT r.rolsuper"
        )
    ).all()
    database = current_database(conn)
    for name, role in people:
        try:
            with conn.begin_nested():
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


def login_limits(name: str, role: str, database: str) -> list[str]:
    """The statements that give a person's login the limits of its role in this ``database``
    only (``ALTER ROLE … IN DATABASE``: the same login may have another role, and a DBA's
    settings, in the server's other databases). ``name`` is a checked login name."""
    at = f'ALTER ROLE "{name}" IN DATABASE "{database}"'
    out = [f"{at} SET idle_in_transaction_session_timeout = '{IDLE_TIMEOUT}'"]
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
