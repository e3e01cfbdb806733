"""Benchmark `labsec`: issue 25's attacks on a lab database, replayed as an annotator with
psql would make them, each reported as ``refused`` or ``allowed`` (aim: all refused).

A throwaway PostgreSQL server (``tests.pgserver.running_server``) holds two studio databases,
``lab_a`` and ``lab_b``, made by the studio (``create_current``), each with its own people:
``ann`` is an annotator of ``lab_a`` only, ``bob`` an annotator of ``lab_b``. Schema
``public`` is first made writable by everyone, as PostgreSQL 14 made it and as a database
upgraded from it keeps it. Then, as ``ann``:

- ``public-function``: create ``public.unnest(bigint[])`` that grants ``lab_a``'s admin role to
  herself, then tag a glyph (the owner-run consensus function must not call it);
- ``forged-audit``: attach the studio's owner-run ``studio_audit`` trigger to a temporary
  table of her own (a forged audit entry written with the owner's rights);
- ``set-role`` / ``grant``: ``SET ROLE`` to, and ``GRANT ... TO ann``, ``lab_a``'s admin role;
- ``approve``: approve a puzzle of her own database;
- ``other-database``: put a tag into ``lab_b``, a database she is no person of (until rules
  3 the ``studio_*`` group roles were server-wide and CONNECT was PUBLIC's);
- ``hostile-concept``: a tag whose concept is ``../../../escape_rel`` (until rules 3 the
  server did not check tags against the schema);
- ``lock-blockade``: lock every glyph with one call of the consensus function (then wait);
- ``unassigned-veto``: tag a glyph she was not given, against the tag its two assigned
  annotators agreed on (allowed when that tag leaves the consensus);
- ``audit-flood``: as a curator, a 2 MB puzzle record (allowed when the audit entry keeps it);
- ``demote-owner``: as an admin, ``UPDATE people`` to make the owner an annotator;
- ``take-over-login``: as an admin, set the password of ``bob``, a person of ``lab_b``.

Prints one JSON object: per attack ``refused`` or ``allowed`` with the server's words, and
the counts. ``allowed`` rows are what is still to do (issue 25), not a failure of the run.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import DBAPIError


def _as(url: str, user: str) -> Engine:
    return create_engine(url.replace("//postgres@", f"//{user}:pw-of-{user}@"))


def _try(engine: Engine, sql: str, params: dict[str, Any] | None = None) -> str | None:
    """None when the statements went through; else the server's first line."""
    try:
        with engine.begin() as conn:
            for stmt in sql.split(";\n"):
                conn.execute(text(stmt), params or {})
    except DBAPIError as e:
        return str(e.orig).strip().splitlines()[0]
    return None


_SHAPE = {"id": "shape", "values": [{"id": "round"}, {"id": "square"}]}


def _make(url: str, person: str) -> None:
    from studio.store import lab
    from studio.store.migrations import create_current

    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("GRANT CREATE ON SCHEMA public TO PUBLIC"))  # PostgreSQL 14
        create_current(conn)
        schema = {"categories": [{"id": "c", "concepts": [_SHAPE]}]}
        conn.execute(
            text("INSERT INTO schema_versions (version, json, created_at) VALUES (1, :j, 't')"),
            {"j": json.dumps(schema)},
        )
        conn.execute(text("INSERT INTO glyphs (codepoint, font) VALUES (19968, 'f')"))
        conn.execute(text("INSERT INTO puzzle_sets (name, created_at) VALUES ('s', 't')"))
        conn.execute(
            text(
                "INSERT INTO puzzles (set_id, puzzle_id, position, record, layout, rule,"
                " concept, split, updated_at) VALUES (1, 'p1', 0, '{}', 'l', 'r', 'c', 'test', 't')"
            )
        )
        lab.add_person(conn, person, "annotator", "t", password=f"pw-of-{person}")
    engine.dispose()


def attacks(url_a: str, url_b: str) -> dict[str, dict[str, str]]:
    from studio.store import lab
    from studio.store.labschema import group_roles

    admin = group_roles(url_a.rsplit("/", 1)[1])["admin"]  # lab_a's admin role
    owner = create_engine(url_a)
    ann = _as(url_a, "ann")
    ann_b = _as(url_b, "ann")
    out: dict[str, dict[str, str]] = {}

    def record(name: str, why: str | None, allowed_when: Callable[[], bool] | None = None) -> None:
        allowed = why is None if allowed_when is None else allowed_when()
        out[name] = {"result": "allowed" if allowed else "refused", "server": why or ""}

    def is_admin() -> bool:
        with owner.connect() as conn:
            q = f"SELECT pg_has_role('ann', '{admin}', 'MEMBER')"
            return bool(conn.execute(text(q)).scalar_one())

    why = _try(
        ann,
        "CREATE FUNCTION public.unnest(bigint[]) RETURNS SETOF bigint LANGUAGE plpgsql AS"
        f" $$ BEGIN EXECUTE 'GRANT {admin} TO ann'; RETURN QUERY SELECT 1::bigint; END $$",
    )
    if why is None:  # created: does the owner's code run it?
        try:
            with ann.begin() as conn:
                lab.add_own_tags(conn, "ann", [1], "shape", "round", "t")
        except DBAPIError as e:
            why = str(e.orig).strip().splitlines()[0]
    record("public-function", why, is_admin)
    record(
        "forged-audit",
        _try(
            ann,
            "CREATE TEMP TABLE forged (glyph_id bigint);\n"
            "CREATE TRIGGER forge AFTER INSERT ON forged REFERENCING NEW TABLE AS new_rows"
            " FOR EACH STATEMENT EXECUTE FUNCTION public.studio_audit();\n"
            "INSERT INTO forged VALUES (1)",
        ),
    )
    record("set-role", _try(ann, f"SET ROLE {admin}"))
    record("grant", _try(ann, f"GRANT {admin} TO ann"))
    record("approve", _try(ann, "UPDATE puzzles SET status = 'approved'"))
    record(
        "other-database",
        _try(
            ann_b,
            "INSERT INTO annotator_tags (glyph_id, concept, value, annotator)"
            " VALUES (1, 'shape', 'round', 'ann')",
        ),
    )
    record(
        "hostile-concept",
        _try(
            ann,
            "INSERT INTO annotator_tags (glyph_id, concept, value, annotator)"
            " VALUES (1, '../../../escape_rel', 'x', 'ann')",
        ),
    )
    # more of the attacks, with a curator and an admin of lab_a
    with owner.begin() as conn:
        for name, role in (("cy", "curator"), ("adm", "admin"), ("bea", "annotator"),
                           ("cyd", "annotator")):  # fmt: skip
            lab.add_person(conn, name, role, "t", password=f"pw-of-{name}")
        lab.assign(conn, [1], ["bea", "cyd"], "t", overlap=1.0)
        lab.add_own_tags(conn, "bea", [1], "shape", "square", "t")
        lab.add_own_tags(conn, "cyd", [1], "shape", "square", "t")
    cy, adm = _as(url_a, "cy"), _as(url_a, "adm")
    record(
        "lock-blockade",
        _try(
            ann,
            "SELECT studio_refresh_consensus(ARRAY(SELECT pg_catalog.generate_series(1,"
            " 1000000))::bigint[])",
        ),
    )

    def vetoed() -> bool:
        with owner.connect() as conn:
            q = "SELECT count(*) FROM tags WHERE glyph_id = 1 AND value = 'square'"
            return conn.execute(text(q)).scalar_one() == 0

    with ann.begin() as conn:  # ann was not given glyph 1; bea and cyd agree on square
        lab.add_own_tags(conn, "ann", [1], "shape", "round", "t")
    record("unassigned-veto", None if vetoed() else "the assigned annotators' tag stays", vetoed)

    def flooded() -> bool:
        with owner.connect() as conn:
            q = "SELECT max(pg_catalog.octet_length(detail)) FROM audit_log"
            return int(conn.execute(text(q)).scalar_one()) > 1_000_000

    why = _try(cy, "UPDATE puzzles SET record = :r", {"r": json.dumps({"x": "y" * 2_000_000})})
    record("audit-flood", why or "the entry left its 2 MB sample out", flooded)
    demote = "UPDATE people SET role = 'annotator' WHERE name = 'postgres'"
    record("demote-owner", _try(adm, demote))
    record(
        "take-over-login",  # bob is a person of lab_b: lab_a's admin sets his password
        _try(
            adm,
            "SELECT studio_add_person('bob', 'annotator', '',"
            " 'SCRAM-SHA-256$4096:c2FsdA==$a2V5:c2VydmVy', 't')",
        ),
    )
    for engine in (owner, ann, ann_b, cy, adm):
        engine.dispose()
    return out


def main() -> int:
    from tests.pgserver import running_server

    with running_server() as server:
        url_a = server.fresh_database("lab_a")
        url_b = server.fresh_database("lab_b")
        _make(url_a, "ann")
        _make(url_b, "bob")
        found = attacks(url_a, url_b)
    refused = sum(1 for r in found.values() if r["result"] == "refused")
    result = {
        "name": "labsec",
        "aim": "every attack refused",
        "refused": refused,
        "allowed": len(found) - refused,
        "attacks": found,
    }
    for name, r in found.items():
        print(f"{name:<18} {r['result']:<8} {r['server']}", file=sys.stderr)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
