"""Format 7's lab tables on both databases: assignments, each person's tags, the consensus
rule, adjudication; and on PostgreSQL what the server enforces (roles, row-level security,
the append-only audit trail), change notifications and concurrent tagging without loss."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import defaultdict
from collections.abc import Iterator

import pytest
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.exc import DBAPIError

from studio.core.errors import ProjectError, StudioError
from studio.store import lab
from studio.store.labschema import MAX_CONSENSUS_IDS, group_roles, install_server_rules
from studio.store.migrations import create_current
from tests.pgserver import PgServer

N_GLYPHS = 40


#: The schema of the databases made here from ``create_current`` alone: on a lab server every
#: tag must be one of the newest schema's (a foreign key to ``schema_tags``).
TEST_SCHEMA = json.dumps(
    {
        "categories": [
            {
                "id": "test",
                "concepts": [
                    {"id": "shape", "values": [{"id": "round"}, {"id": "square"}]},
                    {"id": "count", "values": [{"id": str(i)} for i in range(10)]},
                ],
            }
        ]
    }
)


def _with_schema(conn: Connection) -> None:
    conn.execute(
        text("INSERT INTO schema_versions (version, json, created_at) VALUES (1, :j, 't')"),
        {"j": TEST_SCHEMA},
    )


def _engine(kind: str, request: pytest.FixtureRequest) -> tuple[Engine, str]:
    if kind == "sqlite":
        path = request.getfixturevalue("tmp_path") / "lab.db"
        return create_engine(f"sqlite:///{path}"), f"sqlite:///{path}"
    server: PgServer = request.getfixturevalue("pg_server")
    url = server.fresh_database("lab")
    return create_engine(url), url


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest) -> Iterator[tuple[Engine, str]]:
    engine, url = _engine(request.param, request)
    with engine.begin() as conn:
        create_current(conn)
        _with_schema(conn)
        conn.execute(
            text("INSERT INTO glyphs (codepoint, font) VALUES (:cp, 'f')"),
            [{"cp": 0x4E00 + i} for i in range(N_GLYPHS)],
        )
    yield engine, url
    engine.dispose()


def _ids(conn: Connection) -> list[int]:
    return [int(r[0]) for r in conn.execute(text("SELECT id FROM glyphs ORDER BY id"))]


def _consensus(conn: Connection) -> set[tuple[int, str, str]]:
    return {
        (int(r[0]), str(r[1]), str(r[2]))
        for r in conn.execute(text("SELECT glyph_id, concept, value FROM tags"))
    }


def _reference_consensus(conn: Connection) -> set[tuple[int, str, str]]:
    """The rule of labschema.CONSENSUS_RULE, written plainly in Python from the tables."""
    own: dict[int, dict[str, set[tuple[str, str]]]] = defaultdict(lambda: defaultdict(set))
    for g, a, c, v in conn.execute(
        text("SELECT glyph_id, annotator, concept, value FROM annotator_tags")
    ):
        own[int(g)][str(a)].add((str(c), str(v)))
    assigned: dict[int, set[str]] = defaultdict(set)
    done: dict[int, set[str]] = defaultdict(set)
    for g, a, d in conn.execute(text("SELECT glyph_id, annotator, done_at FROM assignment_items")):
        assigned[int(g)].add(str(a))
        if d is not None:
            done[int(g)].add(str(a))
    annotators = {
        str(r[0]) for r in conn.execute(text("SELECT name FROM people WHERE role = 'annotator'"))
    }
    adjudicated = lab.adjudicated_glyphs(conn)
    settled = {
        (int(r[0]), str(r[1]), str(r[2]))
        for r in conn.execute(text("SELECT glyph_id, concept, value FROM tags"))
        if int(r[0]) in adjudicated
    }
    out = set(settled)
    for g, by_person in own.items():
        if g in adjudicated:
            continue
        if len(assigned[g]) < 2:
            out |= {(g, c, v) for tags in by_person.values() for c, v in tags}
        else:  # an annotator counts only where assigned (curators, importers: always)
            participants = {p for p in by_person if p not in annotators or p in assigned[g]}
            participants |= done[g]
            if participants:
                agreed = set.intersection(*(by_person.get(p, set()) for p in participants))
                out |= {(g, c, v) for c, v in agreed}
    return out


def test_assign_balances_loads_and_overlap(db: tuple[Engine, str]) -> None:
    engine, _ = db
    with engine.begin() as conn:
        ids = _ids(conn)
        summary = lab.assign(
            conn, ids, ["ann", "bea", "cyd"], "2026-11-24T00:00:00", overlap=0.25, seed=3
        )
        rows = conn.execute(text("SELECT glyph_id, annotator FROM assignment_items")).all()
    people: dict[int, set[str]] = defaultdict(set)
    for g, a in rows:
        people[int(g)].add(str(a))
    assert set(people) == set(ids)
    assert sum(len(p) >= 2 for p in people.values()) == summary.overlap == 10
    assert all(len(p) in (1, 2) for p in people.values())
    assert sum(summary.per_person.values()) == len(rows) == N_GLYPHS + 10
    assert max(summary.per_person.values()) - min(summary.per_person.values()) <= 1
    with engine.begin() as conn:  # the same seed gives the same division
        again = lab.assign(conn, ids, ["ann", "bea", "cyd"], "t", overlap=0.25, seed=3)
        first = conn.execute(
            text(
                "SELECT glyph_id, annotator FROM assignment_items WHERE assignment_id = :a"
                " ORDER BY 1, 2"
            ),
            {"a": summary.id},
        ).all()
        second = conn.execute(
            text(
                "SELECT glyph_id, annotator FROM assignment_items WHERE assignment_id = :a"
                " ORDER BY 1, 2"
            ),
            {"a": again.id},
        ).all()
    assert first == second


def test_assign_refuses_impossible_overlap(db: tuple[Engine, str]) -> None:
    engine, _ = db
    with engine.begin() as conn, pytest.raises(StudioError, match="only 1 annotators"):
        lab.assign(conn, _ids(conn), ["solo"], "t", overlap=0.5)


def test_consensus_follows_the_rule_under_random_edits(db: tuple[Engine, str]) -> None:
    """Random adds, removals, done marks and adjudications: after each, ``tags`` equals the
    rule computed from scratch in Python."""
    engine, _ = db
    rng = random.Random(17)
    people = ["ann", "bea", "cyd"]
    values = [("shape", "round"), ("shape", "square"), ("count", "1"), ("count", "2")]
    with engine.begin() as conn:
        ids = _ids(conn)
        lab.assign(conn, ids, people, "t0", overlap=0.5, seed=1)
        for name in (*people, "dan"):
            lab.add_person(conn, name, "annotator", "t")
    for step in range(60):
        with engine.begin() as conn:
            op = rng.random()
            g = rng.sample(ids, rng.randint(1, 4))
            who = rng.choice([*people, "dan"])  # dan is assigned nothing
            c, v = rng.choice(values)
            if op < 0.55:
                lab.add_own_tags(conn, who, g, c, v, f"t{step}")
            elif op < 0.75:
                lab.remove_own_tags(conn, who, g, c, v)
            elif op < 0.9:
                lab.mark_done(conn, who, g, f"t{step}")
            else:
                lab.adjudicate(conn, g[0], "cur", rng.sample(values, 2), f"t{step}")
            assert _consensus(conn) == _reference_consensus(conn), f"step {step}"
    with engine.begin() as conn:
        assert _consensus(conn)  # the scenario did produce a consensus to compare


def test_someone_not_assigned_an_overlap_glyph_cannot_veto_its_agreement(
    db: tuple[Engine, str],
) -> None:
    """Issue 25, point 6: dan, not given the glyph, tagged it otherwise, and the tag both
    assigned annotators agreed on vanished from the consensus. Only the assigned count."""
    engine, _ = db
    with engine.begin() as conn:
        g = _ids(conn)[0]
        lab.add_person(conn, "dan", "annotator", "t")
        lab.assign(conn, [g], ["ann", "bea"], "t", overlap=1.0)
        lab.add_own_tags(conn, "ann", [g], "shape", "round", "t1")
        lab.add_own_tags(conn, "bea", [g], "shape", "round", "t2")
        lab.add_own_tags(conn, "dan", [g], "shape", "square", "t3")
        lab.mark_done(conn, "dan", [g], "t4")  # no assignment of dan's to mark
        assert _consensus(conn) == {(g, "shape", "round")}
        lab.add_own_tags(conn, "bea", [g], "count", "2", "t5")  # an assigned one still does
        assert _consensus(conn) == {(g, "shape", "round")}
        assert _consensus(conn) == _reference_consensus(conn)


def test_overlap_glyph_keeps_only_agreed_tags_until_adjudicated(db: tuple[Engine, str]) -> None:
    engine, _ = db
    with engine.begin() as conn:
        g = _ids(conn)[0]
        lab.assign(conn, [g], ["ann", "bea"], "t", overlap=1.0)
        lab.add_own_tags(conn, "ann", [g], "shape", "round", "t1")
        assert _consensus(conn) == {(g, "shape", "round")}  # one person so far
        lab.mark_done(conn, "bea", [g], "t2")  # bea: nothing of the kind
        assert _consensus(conn) == set()
        lab.add_own_tags(conn, "bea", [g], "shape", "round", "t3")
        assert _consensus(conn) == {(g, "shape", "round")}
        lab.add_own_tags(conn, "bea", [g], "count", "2", "t4")
        assert _consensus(conn) == {(g, "shape", "round")}
        lab.adjudicate(conn, g, "cur", [("count", "2"), ("shape", "round")], "t5", "bea is right")
        assert _consensus(conn) == {(g, "count", "2"), (g, "shape", "round")}
        lab.remove_own_tags(conn, "bea", [g], "count", "2")  # a settled glyph stays settled
        assert _consensus(conn) == {(g, "count", "2"), (g, "shape", "round")}
        authors = {str(r[0]) for r in conn.execute(text("SELECT author FROM tags"))}
        assert authors == {"cur"}
        assert lab.adjudicated_glyphs(conn) == {g: ("cur", "t5")}


def test_ratings_include_done_marks(db: tuple[Engine, str]) -> None:
    engine, _ = db
    with engine.begin() as conn:
        a, b = _ids(conn)[:2]
        lab.assign(conn, [a, b], ["ann", "bea"], "t", overlap=1.0)
        lab.add_own_tags(conn, "ann", [a], "shape", "round", "t1")
        lab.mark_done(conn, "bea", [a, b], "t2")
        tags, annotated = lab.ratings(conn)
    assert tags == [(a, "ann", "shape", "round")]
    assert annotated == {(a, "ann"), (a, "bea"), (b, "bea")}


# ---- PostgreSQL: what the server enforces -------------------------------------------------
@pytest.fixture
def lab_pg(pg_server: PgServer) -> Iterator[tuple[Engine, str]]:
    url = pg_server.fresh_database("labpg")
    engine = create_engine(url)
    with engine.begin() as conn:
        create_current(conn)
        _with_schema(conn)
        conn.execute(
            text("INSERT INTO glyphs (codepoint, font) VALUES (:cp, 'f')"),
            [{"cp": 0x4E00 + i} for i in range(N_GLYPHS)],
        )
        conn.execute(
            text(
                "INSERT INTO puzzle_sets (name, created_at) VALUES ('s', 't');"
                " INSERT INTO puzzles (set_id, puzzle_id, position, record, layout, rule,"
                " concept, split, updated_at) VALUES (1, 'p1', 0, '{}', 'l', 'r', 'c', 'test', 't')"
            )
        )
        people = (("ann", "annotator"), ("bea", "annotator"), ("cur", "curator"))
        for name, role in (*people, ("cur2", "curator")):
            lab.add_person(conn, name, role, "t", password=f"pw-of-{name}")
    yield engine, url
    engine.dispose()


def _as(url: str, user: str) -> Engine:
    return create_engine(url.replace("//postgres@", f"//{user}@"))


def _refused(engine: Engine, sql: str) -> str:
    with pytest.raises(DBAPIError) as info, engine.begin() as conn:
        conn.execute(text(sql))
    return str(info.value.orig)


def test_annotator_rights_are_enforced_by_the_server(lab_pg: tuple[Engine, str]) -> None:
    _, url = lab_pg
    ann = _as(url, "ann")
    try:
        assert "permission denied" in _refused(ann, "UPDATE puzzles SET status = 'approved'")
        assert "permission denied" in _refused(
            ann, "INSERT INTO schema_versions (version, json, created_at) VALUES (9, '{}', 't')"
        )
        assert "permission denied" in _refused(
            ann, "INSERT INTO tags (glyph_id, concept, value) VALUES (1, 'shape', 'round')"
        )
        assert "row-level security" in _refused(
            ann,
            "INSERT INTO annotator_tags (glyph_id, concept, value, annotator)"
            " VALUES (1, 'shape', 'round', 'bea')",
        )
        assert "permission denied" in _refused(ann, "DELETE FROM audit_log")
        assert "permission denied" in _refused(
            ann, "INSERT INTO people VALUES ('x', 'admin', '', 't')"
        )
        with ann.begin() as conn:  # its own tags: yes, and the consensus follows
            assert lab.add_own_tags(conn, "ann", [1, 2], "shape", "round", "t") == [1, 2]
            assert _consensus(conn) == {(1, "shape", "round"), (2, "shape", "round")}
        bea = _as(url, "bea")
        with bea.begin() as conn:  # another's rows are invisible to DELETE
            assert lab.remove_own_tags(conn, None, [1, 2], "shape", "round") == []
        bea.dispose()
        with pytest.raises(lab.RightsError, match="ann is an annotator"), ann.begin() as conn:
            lab.require_role(conn, "ann", "curator", "approve puzzles")
    finally:
        ann.dispose()
    cur = _as(url, "cur")
    try:
        with cur.begin() as conn:  # a curator approves and adjudicates
            conn.execute(text("UPDATE puzzles SET status = 'approved'"))
            lab.adjudicate(conn, 1, "cur", [("shape", "square")], "t")
        assert "permission denied" in _refused(cur, "DELETE FROM adjudications")
        assert "permission denied" in _refused(
            cur, "INSERT INTO schema_versions (version, json, created_at) VALUES (9, '{}', 't')"
        )
    finally:
        cur.dispose()
    owner, _ = lab_pg  # not even the owner rewrites the record
    assert "append-only" in _refused(owner, "DELETE FROM adjudications")
    assert "append-only" in _refused(owner, "UPDATE audit_log SET who = 'someone else'")


def test_audit_names_the_login_and_passwords_are_hashed(lab_pg: tuple[Engine, str]) -> None:
    engine, url = lab_pg
    ann = _as(url, "ann")
    with ann.begin() as conn:
        lab.add_own_tags(conn, "ann", [3], "shape", "round", "t")
    ann.dispose()
    with engine.begin() as conn:
        entries = lab.audit_entries(conn)
        stored = conn.execute(
            text("SELECT rolpassword FROM pg_authid WHERE rolname = 'ann'")
        ).scalar_one()
        everything = " ".join(
            str(r)
            for t in ("people", "audit_log", "meta")
            for r in conn.execute(text(f"SELECT * FROM {t}"))
        )
    mine = [e for e in entries if e.who == "ann" and e.target == "annotator_tags"]
    assert mine and mine[0].action == "insert" and mine[0].detail["rows"] == 1
    assert mine[0].detail["sample"][0]["annotator"] == "ann"
    assert str(stored).startswith("SCRAM-SHA-256$")
    assert "pw-of-ann" not in everything and "pw-of-ann" not in str(stored)


def test_role_change_moves_between_groups(lab_pg: tuple[Engine, str]) -> None:
    engine, url = lab_pg
    with engine.begin() as conn:
        lab.add_person(conn, "ann", "curator", "t")
        assert lab.role_of(conn, "ann") == "curator"
        assert lab.role_of(conn, "postgres") == "admin"  # the database owner
        assert lab.role_of(conn, "nobody") is None
    ann = _as(url, "ann")
    try:
        with ann.begin() as conn:
            conn.execute(text("UPDATE puzzles SET status = 'approved'"))
    finally:
        ann.dispose()
    with engine.begin() as conn, pytest.raises(StudioError, match="cannot be a login name"):
        lab.add_person(conn, 'x"; DROP TABLE tags; --', "admin", "t")


def test_other_clients_hear_of_changes(lab_pg: tuple[Engine, str]) -> None:
    from studio.store.listen import listener_for

    _, url = lab_pg
    heard: list[dict[str, object]] = []
    arrived = threading.Event()

    def on_change(change: dict[str, object]) -> None:
        heard.append(change)
        arrived.set()

    listener = listener_for(url, on_change)
    assert listener is not None
    try:
        assert listener.wait_listening(20)
        bea = _as(url, "bea")
        with bea.begin() as conn:
            lab.add_own_tags(conn, "bea", [5], "count", "2", "t")
        bea.dispose()
        assert arrived.wait(20)
    finally:
        listener.stop()
    assert {"table": "annotator_tags", "op": "insert", "who": "bea", "glyphs": [5]} in heard
    assert listener_for("/tmp/a-file.studio", on_change) is None


def test_concurrent_tagging_loses_nothing(lab_pg: tuple[Engine, str]) -> None:
    """Six people tag the same overlap glyphs at once, each from its own connection: every
    tag is stored and the consensus is exactly the rule's, whatever the interleaving."""
    engine, url = lab_pg
    people = [f"p{i}" for i in range(6)]
    with engine.begin() as conn:
        for p in people:
            lab.add_person(conn, p, "annotator", "t")
        ids = _ids(conn)[:8]
        lab.assign(conn, ids, people, "t", overlap=1.0, per_overlap_glyph=6)
    errors: list[BaseException] = []
    start = threading.Barrier(len(people))

    def work(person: str) -> None:
        eng = _as(url, person)
        rng = random.Random(person)
        try:
            start.wait()
            for i in range(30):
                with eng.begin() as conn:
                    c, v = rng.choice([("shape", "round"), ("count", "1"), ("count", str(i % 3))])
                    lab.add_own_tags(conn, person, rng.sample(ids, 3), c, v, f"{time.time()}")
        except BaseException as e:
            errors.append(e)
        finally:
            eng.dispose()

    threads = [threading.Thread(target=work, args=(p,)) for p in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with engine.begin() as conn:
        assert _consensus(conn) == _reference_consensus(conn)
        n = conn.execute(text("SELECT COUNT(DISTINCT annotator) FROM annotator_tags")).scalar()
    assert n == len(people)


# ---- the same through Project, as two people signed in to one lab database -----------------
def test_project_tags_as_logins(pg_server: PgServer, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from studio.core.keys import GlyphKey
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.project import Project

    url = pg_server.fresh_database("labproj")
    k1, k2 = GlyphKey(0x25CC, "symbola"), GlyphKey(0x25CB, "symbola")
    with Project.create(url, load_schema(bundled_schema_path()), author="admin") as admin:
        assert admin.user == "postgres" and admin.role() == "admin"
        admin.add_person("ann", "annotator")
        admin.add_person("bob", "annotator")
        admin.add_tags([k1, k2], "aspect", "tall", "ignored: the login is the author")
        admin.assign([k1, k2], ["ann", "bob"], overlap=1.0)
    ann = Project.open(url.replace("//postgres@", "//ann@"))
    bob = Project.open(url.replace("//postgres@", "//bob@"))
    try:
        assert ann.user == "ann" and ann.role() == "annotator"
        assert ann.add_tags([k1], "aspect", "tall", "bob") == [k1]  # written as ann
        assert [t.annotator for t in ann.own_tags_of(k1)] == ["ann", "postgres"]
        assert bob.add_tags([k1], "closure", "circle", "x") == [k1]
        # k1 is in the overlap: only what everyone who tagged it agrees on
        assert [(t.concept, t.value) for t in bob.tags_of(k1)] == []
        assert bob.add_tags([k1], "aspect", "tall", "x") == [k1]
        assert [(t.concept, t.value) for t in ann.tags_of(k1)] == [("aspect", "tall")]
        queue = ann.disagreement_queue()
        assert [(k, d.concepts) for k, d in queue] == [(k1, ("closure",))]
        with pytest.raises(lab.RightsError, match="ann is an annotator"):
            ann.adjudicate(k1, [("closure", "circle")], "ann")
        assert ann.remove_tags([k1], "aspect", "tall")[0].author == "ann"  # only ann's own
        assert [t.annotator for t in bob.own_tags_of(k1) if t.concept == "aspect"] == [
            "bob",
            "postgres",
        ]
    finally:
        ann.close()
        bob.close()
    with Project.open(url) as admin:
        admin.adjudicate(k1, [("closure", "circle")], "ignored")
        assert admin.disagreement_queue() == []
        assert [(t.concept, t.author) for t in admin.tags_of(k1)] == [("closure", "postgres")]
        report = admin.agreement(n_boot=50)
        assert set(report.annotators) == {"bob", "postgres"}  # ann took hers back


def test_an_import_gives_the_rule_s_consensus(project_location: str) -> None:
    """An import adds the importer's own tags; overlap and settled glyphs keep the rule (the
    fast union insert on a file must agree with the rule computed from scratch)."""
    from studio.core.annotations import TagRow
    from studio.core.keys import GlyphKey
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.project import Project

    keys = [GlyphKey(0x4E00 + i, "symbola") for i in range(10)]
    with Project.create(project_location, load_schema(bundled_schema_path())) as p:
        p.add_glyphs([(k, None, "pending", None) for k in keys])
        for name in ("ann", "bea"):
            p.add_person(name, "annotator")
        p.assign(keys[:6], ["ann", "bea"], overlap=1.0)
        p.add_tags(keys[:2], "closed", "full", "ann")  # an overlap glyph's first tagger
        p.adjudicate(keys[5], [("aspect", "wide")], "cur")
        rows = [TagRow.of("closed", "empty", k) for k in keys] + [
            TagRow.of("closed", "full", k) for k in keys[::2]
        ]
        counts = p.import_tags(rows, "ua")
        with p._engine.connect() as conn:
            assert _consensus(conn) == _reference_consensus(conn)
            consensus = _consensus(conn)
        ids = {k: g for g, k in enumerate(keys, start=1)}
        assert (ids[keys[5]], "aspect", "wide") in consensus  # settled: untouched
        assert (ids[keys[5]], "closed", "empty") not in consensus
        assert (ids[keys[8]], "closed", "empty") in consensus  # no overlap: union
        if not p.is_database:  # on a lab database both writes are the login's own
            assert (ids[keys[1]], "closed", "empty") not in consensus  # ann and ua disagree
        assert counts.new_tags == len(consensus) - 3  # what the project gained
        assert p.import_tags(rows, "ua").new_tags == 0


def test_a_bulk_edit_is_one_audit_entry(lab_pg: tuple[Engine, str]) -> None:
    """An assignment of 40 glyphs, or one tag given to 40 glyphs, is one statement: one audit
    entry with its row count (and one notification), not forty."""
    engine, url = lab_pg
    with engine.begin() as conn:
        ids = _ids(conn)
        lab.assign(conn, ids, ["ann", "bea"], "t", overlap=0.0)
    ann = _as(url, "ann")
    with ann.begin() as conn:
        mine = [g for g, _ in lab.assigned_glyphs(conn, "ann")]
        assert lab.add_own_tags(conn, "ann", mine, "shape", "round", "t") == mine
    ann.dispose()
    with engine.begin() as conn:
        entries = lab.audit_entries(conn, 500)
    items = [e for e in entries if e.target == "assignment_items"]
    own = [e for e in entries if e.target == "annotator_tags"]
    assert [e.detail["rows"] for e in items] == [N_GLYPHS]
    assert [(e.who, e.detail["rows"]) for e in own] == [("ann", len(mine))]


def test_an_assignment_to_someone_unknown_is_refused(pg_server: PgServer) -> None:
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.project import Project

    url = pg_server.fresh_database("labtypo")
    with Project.create(url, load_schema(bundled_schema_path())) as p:
        p.add_person("ann", "annotator")
        with pytest.raises(StudioError, match=r"anne is not people of this project .*known: ann"):
            p.assign(None, ["anne"])


def test_an_annotator_cannot_run_code_as_the_owner(pg_server: PgServer) -> None:
    """Issue 25's first attack, replayed. Where schema ``public`` is writable by everyone
    (PostgreSQL 14's default, kept by upgraded databases) an annotator created
    ``public.unnest(bigint[])``; the owner-run consensus function called ``unnest(ids)``
    unqualified, ran it with the owner's rights, and the annotator became admin."""
    url = pg_server.fresh_database("labsec")
    owner = create_engine(url)
    with owner.begin() as conn:
        conn.execute(text("GRANT CREATE ON SCHEMA public TO PUBLIC"))  # as on PostgreSQL 14
        create_current(conn)
        _with_schema(conn)
        conn.execute(text("INSERT INTO glyphs (codepoint, font) VALUES (19968, 'f')"))
        lab.add_person(conn, "ann", "annotator", "t", password="pw-of-ann")
    ann = _as(url, "ann")
    admin = group_roles(url.rsplit("/", 1)[1])["admin"]
    evil = (
        "CREATE FUNCTION public.unnest(bigint[]) RETURNS SETOF bigint LANGUAGE plpgsql AS"
        f" $$ BEGIN EXECUTE 'GRANT {admin} TO ann'; RETURN QUERY SELECT 1::bigint; END $$"
    )
    try:
        # the schema is closed to everyone but the owner now
        assert "permission denied for schema public" in _refused(ann, evil)
        # and were such a function there already (made before the upgrade closed the
        # schema), the owner-run code calls pg_catalog's, not it
        with owner.begin() as conn:
            conn.execute(text(evil))
            conn.execute(text("ALTER FUNCTION public.unnest(bigint[]) OWNER TO ann"))
            conn.execute(
                text(
                    "CREATE FUNCTION public.count(text) RETURNS bigint LANGUAGE plpgsql AS"
                    f" $$ BEGIN EXECUTE 'GRANT {admin} TO ann'; RETURN 1; END $$"
                )
            )
        with ann.begin() as conn:
            assert lab.add_own_tags(conn, "ann", [1], "shape", "round", "t") == [1]
            assert _consensus(conn) == {(1, "shape", "round")}
        with owner.connect() as conn:
            member = f"SELECT pg_has_role('ann', '{admin}', 'MEMBER')"
            assert conn.execute(text(member)).scalar_one() is False
        # the studio's trigger functions are the owner's: nobody attaches them elsewhere
        assert "permission denied for function public.studio_audit" in _refused(
            ann,
            "CREATE TEMP TABLE forged (glyph_id bigint);"
            " CREATE TRIGGER forge AFTER INSERT ON forged REFERENCING NEW TABLE AS new_rows"
            " FOR EACH STATEMENT EXECUTE FUNCTION public.studio_audit()",
        )
    finally:
        ann.dispose()
        owner.dispose()


def test_a_lab_database_of_an_older_build_is_hardened_when_its_owner_opens_it(
    pg_server: PgServer,
) -> None:
    """A format-7 database made before these rules (schema ``public`` open to all, as on
    PostgreSQL 14) keeps its format; the owner's next open installs the rules, an
    annotator's open leaves them be and still works."""
    from studio.store.labschema import SERVER_RULES_VERSION
    from studio.store.project import Project

    url = pg_server.fresh_database("labold")
    owner = create_engine(url)
    with owner.begin() as conn:
        create_current(conn)
        conn.execute(text("DROP TABLE pilot_responses, pilot_participants, pilots"))  # format 7
        conn.execute(
            text(
                "INSERT INTO meta (key, value) VALUES ('application', 'analogy-studio'),"
                " ('format_version', '7'), ('created_at', 't'), ('created_by', 'test')"
                " ON CONFLICT (key) DO NOTHING"
            )
        )
        conn.execute(
            text(
                "INSERT INTO schema_versions (version, json, created_at, author, note)"
                " VALUES (1, :j, 't', 'a', 'created')"
            ),
            {"j": _ua_schema_json()},
        )
        lab.add_person(conn, "ann", "annotator", "t", password="pw-of-ann")
        # as the previous build left it
        database = conn.execute(text("SELECT current_database()")).scalar_one()
        conn.execute(text(f'ALTER ROLE ann IN DATABASE "{database}" RESET ALL'))
        conn.execute(text("UPDATE meta SET value = '1' WHERE key = 'server_rules'"))
        conn.execute(text("GRANT CREATE ON SCHEMA public TO PUBLIC"))
        conn.execute(text("GRANT EXECUTE ON FUNCTION studio_audit() TO PUBLIC"))
    may_create = "SELECT has_schema_privilege('ann', 'public', 'CREATE')"
    rules = "SELECT value FROM meta WHERE key = 'server_rules'"
    ann_url = url.replace("//postgres@", "//ann:pw-of-ann@")
    # an annotator cannot migrate it (format 8's tables would be theirs) nor install the
    # rules: refused, nothing changed
    with pytest.raises(ProjectError, match="only the database's owner may migrate it"):
        Project.open(ann_url)
    with owner.connect() as conn:
        assert conn.execute(text(may_create)).scalar_one() is True
        assert conn.execute(text(rules)).scalar_one() == "1"
        assert conn.execute(text("SELECT to_regclass('pilots')")).scalar() is None
    with Project.open(url):
        pass
    with Project.open(ann_url):
        pass  # migrated and hardened by the owner: the annotator's open works
    with owner.connect() as conn:
        assert conn.execute(text(may_create)).scalar_one() is False
        assert conn.execute(text(rules)).scalar_one() == str(SERVER_RULES_VERSION)
        # a person added before gets the login limits too
        [configs] = _login_settings(conn, "ann")
        assert "statement_timeout=2min" in configs
        execute = "SELECT has_function_privilege('ann', 'studio_audit()', 'EXECUTE')"
        assert conn.execute(text(execute)).scalar_one() is False
    owner.dispose()


def _login_settings(conn: Connection, name: str, here: bool = True) -> list[list[str]]:
    """The settings rows (``setconfig``) of login ``name``: for this database (``here``), or
    the server-wide ones."""
    where = (
        "s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())"
        if here
        else "s.setdatabase = 0"
    )
    rows = conn.execute(
        text(
            "SELECT s.setconfig FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole"
            f" WHERE r.rolname = :n AND {where}"
        ),
        {"n": name},
    ).all()
    return [list(r[0]) for r in rows]


def _ua_schema_json() -> str:
    from studio.core.schema import bundled_schema_path, load_schema

    return load_schema(bundled_schema_path()).dumps()


def test_who_may_be_a_person_and_the_limits_their_logins_get(pg_server: PgServer) -> None:
    """Issue 25: the superuser and the server's own roles refused as people, the owner never
    demoted, empty or NUL passwords refused; every person's login gets an idle-in-transaction
    timeout, an annotator's also a statement timeout."""
    url = pg_server.fresh_database("people")
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            create_current(conn)
            conn.execute(text("CREATE ROLE poweruser LOGIN CREATEROLE"))
        refusals = [
            ("postgres", "annotator", None, "postgres is a login with superuser"),
            ("poweruser", "annotator", None, "poweruser is a login with CREATEROLE"),
            ("studio_admin", "admin", None, "studio_admin is a role of the server"),
            ("pg_monitor", "admin", None, "pg_monitor is a role of the server"),
            ("ann", "annotator", "", "the password for ann is empty"),
            ("ann", "annotator", "a\0b", "the password for ann is holding a NUL"),
        ]
        for name, role, password, message in refusals:
            with pytest.raises(StudioError, match=message), engine.begin() as conn:
                lab.add_person(conn, name, role, "t", password=password)
        with engine.begin() as conn:
            lab.add_person(conn, "ann", "annotator", "t", password="pw-of-ann")
            lab.add_person(conn, "cur", "curator", "t", password="pw-of-cur")
            settings = {name: _login_settings(conn, name)[0] for name in ("ann", "cur")}
        assert "idle_in_transaction_session_timeout=1min" in settings["ann"]
        # in this database only: the same login may have another role elsewhere
        with engine.connect() as check:
            global_ = len(_login_settings(check, "ann", here=False))
            conn_count = len(_login_settings(check, "ann"))
        assert (global_, conn_count) == (0, 1)
        assert "statement_timeout=2min" in settings["ann"]
        assert "idle_in_transaction_session_timeout=15min" in settings["cur"]
        assert not any(s.startswith("statement_timeout") for s in settings["cur"])
        ann = _as(url, "ann")
        with ann.connect() as conn:  # the server applies them at login
            assert conn.execute(text("SHOW statement_timeout")).scalar_one() == "2min"
        ann.dispose()
    finally:
        engine.dispose()


def test_the_owner_stays_an_admin(pg_server: PgServer) -> None:
    url = pg_server.fresh_database("owner")
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            create_current(conn)
            conn.execute(text("CREATE ROLE labowner LOGIN PASSWORD 'pw-of-labowner'"))
            conn.execute(text("ALTER DATABASE " + url.rsplit("/", 1)[1] + " OWNER TO labowner"))
            lab.add_person(conn, "labowner", "admin", "t")
        with pytest.raises(StudioError, match="labowner owns the database"), engine.begin() as c:
            lab.add_person(c, "labowner", "annotator", "t")
    finally:
        engine.dispose()


def _lab_database(pg_server: PgServer, prefix: str, people: dict[str, str]) -> str:
    url = pg_server.fresh_database(prefix)
    engine = create_engine(url)
    with engine.begin() as conn:
        create_current(conn)
        _with_schema(conn)
        conn.execute(text("INSERT INTO glyphs (codepoint, font) VALUES (19968, 'f')"))
        conn.execute(text("INSERT INTO puzzle_sets (name, created_at) VALUES ('s', 't')"))
        conn.execute(
            text(
                "INSERT INTO puzzles (set_id, puzzle_id, position, record, layout, rule,"
                " concept, split, updated_at) VALUES (1, 'p1', 0, '{}', 'l', 'r', 'c', 'test', 't')"
            )
        )
        for name, role in people.items():
            lab.add_person(conn, name, role, "t", password=f"pw-of-{name}")
    engine.dispose()
    return url


def test_a_role_in_one_lab_database_gives_nothing_in_another(pg_server: PgServer) -> None:
    """Issue 25, point 2: the group roles were server-wide and CONNECT was PUBLIC's, so a
    person of one lab had the same role in every studio database of the server. Now each
    database has its own roles, and only its people may connect to it."""
    url_a = _lab_database(pg_server, "lab_a", {"ann": "annotator", "cy": "curator"})
    url_b = _lab_database(pg_server, "lab_b", {"bob": "annotator", "cy": "annotator"})
    ann_b, cy_b, cy_a = _as(url_b, "ann"), _as(url_b, "cy"), _as(url_a, "cy")
    try:
        # not a person of lab_b: not even a connection
        assert "permission denied for database" in _refused(ann_b, "SELECT 1")
        # a curator of lab_a is an annotator in lab_b, and only that
        assert "permission denied for table puzzles" in _refused(
            cy_b, "UPDATE puzzles SET status = 'approved'"
        )
        assert "permission denied for table tags" in _refused(
            cy_b, "INSERT INTO tags (glyph_id, concept, value) VALUES (1, 'shape', 'round')"
        )
        with cy_a.begin() as conn:  # where cy is a curator, cy curates
            conn.execute(text("UPDATE puzzles SET status = 'approved'"))
        owner_b = create_engine(url_b)
        with owner_b.connect() as conn:
            roles = json.loads(
                conn.execute(text("SELECT value FROM meta WHERE key = 'group_roles'")).scalar_one()
            )
        owner_b.dispose()
        db_b = url_b.rsplit("/", 1)[1]
        assert roles == group_roles(db_b) and roles != group_roles(url_a.rsplit("/", 1)[1])
    finally:
        for engine in (ann_b, cy_b, cy_a):
            engine.dispose()


def test_upgraded_rules_take_every_right_from_the_server_wide_roles(pg_server: PgServer) -> None:
    """A database made under rules 1–2 granted its rights to ``studio_curator`` & co., roles
    shared by the server's databases. Installing today's rules leaves those roles nothing in
    it: a login holding the old curator role (for another database's sake) is here only the
    annotator it is listed as; a worker login of the old role keeps its worker rights here."""
    url = _lab_database(pg_server, "legacy", {"old": "annotator"})
    engine = create_engine(url)
    old = _as(url, "old")
    try:
        with engine.begin() as conn:
            for legacy in ("studio_curator", "studio_worker"):
                conn.execute(
                    text(
                        f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname ="
                        f" '{legacy}') THEN CREATE ROLE {legacy} NOLOGIN; END IF; END $$"
                    )
                )
            conn.execute(text("GRANT UPDATE ON puzzles TO studio_curator"))  # as rules 2 did
            conn.execute(text("GRANT studio_curator TO old"))
            conn.execute(text("CREATE ROLE oldgpu LOGIN"))
            conn.execute(text("GRANT studio_worker TO oldgpu"))
        with old.begin() as conn:  # the leak, as a database of rules 2 has it
            conn.execute(text("UPDATE puzzles SET status = 'approved'"))
        with engine.begin() as conn:
            install_server_rules(conn)
            worker = group_roles(url.rsplit("/", 1)[1])["worker"]
            member = f"SELECT pg_has_role('oldgpu', '{worker}', 'MEMBER')"
            assert conn.execute(text(member)).scalar_one() is True
        assert "permission denied for table puzzles" in _refused(
            old, "UPDATE puzzles SET status = 'rejected'"
        )
    finally:
        old.dispose()
        engine.dispose()


def test_the_server_accepts_only_tags_of_the_schema(lab_pg: tuple[Engine, str]) -> None:
    """Issue 25, point 3: an annotator with psql put a tag whose concept was
    ``../../../escape_rel``; exports built folders from it. The server now refuses any tag
    not in the newest schema, for annotators' own tags and curators' consensus alike, and
    follows a new schema version the moment it is written."""
    engine, url = lab_pg
    ann, cur = _as(url, "ann"), _as(url, "cur")
    hostile = (
        "INSERT INTO annotator_tags (glyph_id, concept, value, annotator)"
        " VALUES (1, '../../../escape_rel', 'x', 'ann')"
    )
    try:
        assert "schema_tags" in _refused(ann, hostile)
        assert "schema_tags" in _refused(
            ann,
            "INSERT INTO annotator_tags (glyph_id, concept, value, annotator)"
            " VALUES (1, 'shape', 'oval', 'ann')",
        )
        assert "schema_tags" in _refused(
            cur, "INSERT INTO tags (glyph_id, concept, value) VALUES (1, 'shape', 'x\ty')"
        )
        assert "permission denied" in _refused(
            ann, "INSERT INTO schema_tags (concept, value) VALUES ('../../../escape_rel', 'x')"
        )
        with ann.begin() as conn:  # a tag of the schema goes through
            assert lab.add_own_tags(conn, "ann", [1], "shape", "round", "t") == [1]
        with engine.begin() as conn:  # a new version with an oval shape: oval is a tag now
            newer = json.loads(TEST_SCHEMA)
            newer["categories"][0]["concepts"][0]["values"].append({"id": "oval"})
            conn.execute(
                text("INSERT INTO schema_versions (version, json, created_at) VALUES (2, :j, 't')"),
                {"j": json.dumps(newer)},
            )
        with ann.begin() as conn:
            assert lab.add_own_tags(conn, "ann", [2], "shape", "oval", "t") == [2]
    finally:
        ann.dispose()
        cur.dispose()


def test_audit_entries_are_bounded_and_print_as_one_line_each(
    lab_pg: tuple[Engine, str],
) -> None:
    """Issue 25, point 4: one audit entry could be 50 MB (a huge puzzle record in its row
    sample), and a field holding a tab and a newline forged a line of ``lab audit``."""
    engine, url = lab_pg
    cur = _as(url, "cur")
    try:
        with cur.begin() as conn:
            conn.execute(
                text("UPDATE puzzles SET record = :r WHERE puzzle_id = 'p1'"),
                {"r": json.dumps({"junk": "x" * 200_000})},
            )
    finally:
        cur.dispose()
    with engine.begin() as conn:
        [entry] = [e for e in lab.audit_entries(conn) if e.target == "puzzles"][:1]
        size = conn.execute(text("SELECT max(length(detail)) FROM audit_log")).scalar_one()
    assert entry.detail["rows"] == 1 and "sample" not in entry.detail
    assert entry.detail["sample_left_out_bytes"] > 200_000 and size < 70_000
    forged = lab.plain_field("cy\tapproved\n2026-01-01\tcy")
    assert "\t" not in forged and "\n" not in forged and forged.count("\\t") == 2
    assert lab.plain_field("Zoë") == "Zoë"


def test_one_consensus_call_takes_a_bounded_number_of_glyphs(lab_pg: tuple[Engine, str]) -> None:
    """Issue 25, point 5: an annotator locked every glyph with one call inside an open
    transaction and waited. A call now takes at most MAX_CONSENSUS_IDS glyphs, waits at most
    a few seconds for others' locks, and an annotator's idle transaction ends in a minute."""
    _, url = lab_pg
    ann = _as(url, "ann")
    try:
        refused = _refused(
            ann,
            "SELECT studio_refresh_consensus(ARRAY(SELECT pg_catalog.generate_series(1,"
            f" {MAX_CONSENSUS_IDS + 1}))::bigint[])",
        )
        assert f"takes at most {MAX_CONSENSUS_IDS} glyphs" in refused
        with ann.connect() as conn:
            idle = conn.execute(text("SHOW idle_in_transaction_session_timeout")).scalar_one()
        assert idle == "1min"
    finally:
        ann.dispose()


def test_an_import_on_a_lab_database_is_the_login_s(pg_server: PgServer) -> None:
    """Issue 25, point 7: an import by the owner went in under the OS user (``root``), who
    then counted as an annotator in ``lab agreement``. The login is the author, as for tags."""
    from studio.core.annotations import TagRow
    from studio.core.keys import GlyphKey
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.project import Project

    url = pg_server.fresh_database("labimport")
    key = GlyphKey(0x25CB, "symbola")
    with Project.create(url, load_schema(bundled_schema_path())) as p:
        assert p.import_tags([TagRow.of("closure", "circle", key)], "root").new_tags == 1
        with p._engine.connect() as conn:
            who = conn.execute(text("SELECT DISTINCT annotator FROM annotator_tags")).all()
    assert who == [("postgres",)]


def test_an_admin_adds_people_through_the_owner_s_function_only(pg_server: PgServer) -> None:
    """Issue 25, point 7: a non-owner admin could not add anyone ("permission denied to create
    role", an internal error), while an admin's ``UPDATE people`` could demote the owner. Now
    ``studio_add_person`` (owner-run, checking the caller is an admin here) does it all, and
    nobody writes ``people`` around it."""
    url = _lab_database(pg_server, "labpeople", {"adm": "admin", "ann": "annotator"})
    adm, ann = _as(url, "adm"), _as(url, "ann")
    try:
        with adm.begin() as conn:  # an admin who cannot create roles adds a person
            lab.add_person(conn, "newbie", "curator", "t", password="pw-of-newbie")
            assert lab.role_of(conn, "newbie") == "curator"
        new = _as(url, "newbie")
        with new.begin() as conn:  # and the person is a curator of this database
            conn.execute(text("UPDATE puzzles SET status = 'approved'"))
        new.dispose()
        assert "permission denied" in _refused(
            ann, "SELECT studio_add_person('ann', 'admin', '', NULL, 't')"
        )
        assert "permission denied for table people" in _refused(
            adm, "UPDATE people SET role = 'annotator' WHERE name = 'postgres'"
        )
        assert "owner stays an admin" in _refused(
            adm, "SELECT studio_add_person('postgres', 'annotator', '', NULL, 't')"
        )
        assert "cannot be a person" in _refused(
            adm, "SELECT studio_add_person('pg_monitor', 'annotator', '', NULL, 't')"
        )
        owner = create_engine(url)
        with owner.begin() as conn:
            conn.execute(text("CREATE ROLE dbauser LOGIN"))  # a login of the server's own
            conn.execute(text("CREATE ROLE strong LOGIN CREATEROLE"))
        owner.dispose()
        assert "powers beyond a person" in _refused(
            adm, "SELECT studio_add_person('strong', 'annotator', '', NULL, 't')"
        )
        assert "add them without a password" in _refused(
            adm,
            "SELECT studio_add_person('dbauser', 'annotator', '',"
            " 'SCRAM-SHA-256$4096:c2FsdA==$a2V5:c2VydmVy', 't')",
        )
    finally:
        adm.dispose()
        ann.dispose()


def test_an_admin_cannot_take_over_a_login_in_two_steps(pg_server: PgServer) -> None:
    """Review of issue 25: an admin added an existing server login without a password (which
    is allowed), then again with one, and set the password of another database's owner or of
    a member of pg_execute_server_program. Only logins this project made, holding nothing but
    its roles, may have their password set by an admin."""
    url = _lab_database(pg_server, "labtakeover", {"adm2": "admin"})
    adm = _as(url, "adm2")
    scram = "'SCRAM-SHA-256$4096:c2FsdA==$a2V5:c2VydmVy'"
    try:
        owner = create_engine(url)
        with owner.begin() as conn:
            conn.execute(text("CREATE ROLE shelly LOGIN"))
            conn.execute(text("GRANT pg_execute_server_program TO shelly"))
        owner.dispose()
        with adm.begin() as conn:  # step one: a person without a password, allowed
            conn.execute(text("SELECT studio_add_person('shelly', 'annotator', '', NULL, 't')"))
        assert "did not make" in _refused(
            adm, f"SELECT studio_add_person('shelly', 'annotator', '', {scram}, 't')"
        )
        with adm.begin() as conn:  # a login the project made: its admin may reset it
            lab.add_person(conn, "fresh", "annotator", "t", password="pw-1")
            lab.add_person(conn, "fresh", "annotator", "t", password="pw-2")
    finally:
        adm.dispose()


def test_a_same_named_constraint_elsewhere_does_not_stand_in_for_the_tag_keys(
    pg_server: PgServer,
) -> None:
    """Review of issue 25: an annotator's temporary table with constraints named like the tag
    keys, open while the owner installed the rules, made the install skip the real keys."""
    url = _lab_database(pg_server, "labkeys", {"ann": "annotator"})
    owner = create_engine(url)
    ann = _as(url, "ann")
    try:
        with owner.begin() as conn:
            for table in ("annotator_tags", "tags"):
                conn.execute(text(f"ALTER TABLE {table} DROP CONSTRAINT {table}_in_schema"))
        with ann.connect() as held:  # the decoys stay while the owner installs
            held.execute(
                text(
                    "CREATE TEMP TABLE x (a int CONSTRAINT annotator_tags_in_schema CHECK (true),"
                    " b int CONSTRAINT tags_in_schema CHECK (true))"
                )
            )
            held.commit()
            with owner.begin() as conn:
                install_server_rules(conn)
        assert "schema_tags" in _refused(
            ann,
            "INSERT INTO annotator_tags (glyph_id, concept, value, annotator)"
            " VALUES (1, '../../escape', 'x', 'ann')",
        )
    finally:
        ann.dispose()
        owner.dispose()


def test_a_crafted_database_name_is_quoted_in_every_statement(pg_server: PgServer) -> None:
    """Review of issue 25: ``ALTER ROLE … IN DATABASE "<name>"`` was built unquoted, so a
    database named ``postgres" RESET ALL; ALTER ROLE evil SUPERUSER; --`` ran that as the superuser
    who installed its rules."""
    from psycopg import sql

    crafted = 'postgres" RESET ALL; ALTER ROLE evil SUPERUSER; --'
    admin_url = pg_server.fresh_database("labname")
    owner = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with owner.connect() as conn:
            conn.execute(text("CREATE ROLE evil LOGIN"))
            ident = sql.Identifier(crafted).as_string(conn.connection.dbapi_connection)
            conn.execute(text(f"CREATE DATABASE {ident}"))
        url = admin_url.rsplit("/", 1)[0] + "/" + crafted.replace("%", "%25").replace(
            '"', "%22").replace(" ", "%20").replace(";", "%3B")  # fmt: skip
        engine = create_engine(url)
        with engine.begin() as conn:
            create_current(conn)
            _with_schema(conn)
            lab.add_person(conn, "evil", "annotator", "t")
            install_server_rules(conn)  # as a superuser opening it would
        engine.dispose()
        with owner.connect() as conn:
            is_super = "SELECT rolsuper FROM pg_roles WHERE rolname = 'evil'"
            assert conn.execute(text(is_super)).scalar_one() is False
    finally:
        owner.dispose()


def test_a_schema_version_keeping_a_pair_leaves_its_row_alone(lab_pg: tuple[Engine, str]) -> None:
    """Review of issue 25: rebuilding ``schema_tags`` by delete-all-then-insert made a tag
    written during a schema edit fail its key though its value never changed. The rows the
    new version keeps are not touched (same row version)."""
    engine, _ = lab_pg
    row = "SELECT xmin::text FROM schema_tags WHERE concept = 'shape' AND value = 'round'"
    with engine.begin() as conn:
        before = conn.execute(text(row)).scalar_one()
        newer = json.loads(TEST_SCHEMA)
        newer["categories"][0]["concepts"][0]["values"].append({"id": "oval"})
        conn.execute(
            text("INSERT INTO schema_versions (version, json, created_at) VALUES (2, :j, 't')"),
            {"j": json.dumps(newer)},
        )
    with engine.begin() as conn:
        assert conn.execute(text(row)).scalar_one() == before
        oval = "SELECT count(*) FROM schema_tags WHERE value = 'oval'"
        assert conn.execute(text(oval)).scalar_one() == 1


def test_adding_people_to_a_database_with_older_rules_says_what_to_do(
    lab_pg: tuple[Engine, str],
) -> None:
    engine, _ = lab_pg
    with engine.begin() as conn:
        conn.execute(text("DROP FUNCTION studio_add_person(text, text, text, text, text)"))
    with pytest.raises(StudioError, match="its owner opens it once"), engine.begin() as conn:
        lab.add_person(conn, "late", "annotator", "t")


def test_a_pilot_s_results_are_the_curators_to_import(lab_pg: tuple[Engine, str]) -> None:
    """Issue 29 (format 8): an annotator with psql can read a pilot's results but not add,
    change or remove a person's answers; a curator imports them, and the import is audited."""
    from studio.store.pilots import StoredAnswer, add_pilot_results, human_accuracy

    _, url = lab_pg
    pilot = {"pilot_id": "abc123", "family": "glyph-pmp", "source": "/x"}
    answers = [StoredAnswer("P1", "test", "p1", 0, True, 2100.0)]
    ann = _as(url, "ann")
    try:
        with pytest.raises(DBAPIError, match="permission denied"), ann.begin() as conn:
            add_pilot_results(conn, pilot, 1, {"P1": ("", "f.csv")}, answers, "ann")
        assert "permission denied" in _refused(
            ann,
            "INSERT INTO pilots (id, source, family, plan, created_at) VALUES"
            " ('x', '', '', '{}', 't')",
        )
    finally:
        ann.dispose()
    cur = _as(url, "cur")
    try:
        with cur.begin() as conn:
            assert add_pilot_results(conn, pilot, 1, {"P1": ("", "f.csv")}, answers, "cur") == 1
            assert human_accuracy(conn, 1) == {"p1": (1, 1)}
        assert "permission denied" in _refused(cur, "UPDATE pilot_responses SET correct = 0")
    finally:
        cur.dispose()
    cur2 = _as(url, "cur2")  # another curator neither adds to nor removes cur's import
    try:
        assert "row-level security" in _refused(
            cur2,
            "INSERT INTO pilot_participants (pilot_id, participant, imported_at, imported_by)"
            " VALUES ('abc123', 'p-forged', 't', 'cur')",
        )
        assert "row-level security" in _refused(
            cur2,
            "INSERT INTO pilot_responses (pilot_id, participant, kind, puzzle_id, correct)"
            " SELECT pilot_id, participant, 'test', 'p1', 0 FROM pilot_participants",
        )
        with cur2.begin() as conn:  # their DELETE sees none of cur's rows
            gone = conn.execute(text("DELETE FROM pilot_participants")).rowcount
        assert gone == 0
    finally:
        cur2.dispose()
    ann = _as(url, "ann")
    try:
        with ann.connect() as conn:  # everyone reads them
            assert conn.execute(text("SELECT COUNT(*) FROM pilot_responses")).scalar_one() == 1
        assert "permission denied" in _refused(ann, "DELETE FROM pilot_responses")
    finally:
        ann.dispose()
    owner, _ = lab_pg
    with owner.connect() as conn:
        audited = conn.execute(
            text("SELECT who, target FROM audit_log WHERE target LIKE 'pilot%' ORDER BY id")
        ).all()
    assert ("cur", "pilot_responses") in [tuple(r) for r in audited]
