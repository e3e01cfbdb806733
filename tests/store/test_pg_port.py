"""The same store on PostgreSQL (issue 17): ``init`` on a URL, ``copy`` between a file and a
database both ways, ``info`` on a URL, migration of an older lab database, messages that never
show a password, and a server that is gone."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import text

from studio.cli import main
from studio.core.annotations import read_annotations
from studio.core.errors import ProjectError
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.store.copy import copy_project
from studio.store.dbfile import open_engine, safe_location
from studio.store.dialect import table_names, translate
from studio.store.labschema import SERVER_META_KEYS, SERVER_TABLES
from studio.store.migrations import FORMAT_1_DDL, FORMAT_VERSION
from studio.store.project import NewPuzzle, Project
from tests.pgserver import PgServer, running_server
from tests.store.records import record

PASSWORD = "s3cret-Pw"


def fill(project: Project, ua_schema: Schema, ua_csv: Path) -> int:
    """Tags, glyphs, a font with its bytes, a puzzle set with edits and log, a job with a log
    line and flags: every kind of row the store holds. Returns the set's id."""
    project.import_rows(read_annotations(ua_csv, ua_schema), "ann")
    project.add_font(
        id="userfont",
        family="User",
        style="Regular",
        path="/nowhere/u.otf",
        face_index=0,
        sha256="ab" * 32,
        source="user",
        num_codepoints=3,
        data=bytes(range(256)) * 4,
    )
    puzzles = [
        NewPuzzle(record(f"train-{i:05d}", "progression", "aspect"), findings=[{"k": i}])
        for i in range(40)
    ]
    set_id = project.add_puzzle_set("s", {"n": 40}, {"kept": 40}, puzzles, "ann")
    project.remove_puzzle_set(set_id, "ann", event="undo-import")
    set_id = project.add_puzzle_set("s", {"n": 40}, {"kept": 40}, puzzles, "ann", set_id=set_id)
    job = project.jobs.submit("baseline", {"set": set_id}, "a baseline")
    project.jobs.set_flags(
        job,
        set_id,
        [{"id": "train-00001", "model": "m", "confidence": 0.1, "seeds_correct": 3, "seeds": 3}],
    )
    return set_id


def dump(location: str | Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows, in primary-key order (what a copy must keep exactly). The meta rows
    ``server_rules`` and ``group_roles`` and the table ``schema_tags`` are a lab database's
    own, never the project's, so no copy carries them."""
    engine = open_engine(location)
    out: dict[str, list[tuple[Any, ...]]] = {}
    try:
        with engine.connect() as conn:
            for t in table_names(conn):
                if t in SERVER_TABLES:
                    continue
                rows = conn.execute(text(f"SELECT * FROM {t}")).all()
                rows = [r for r in rows if not (t == "meta" and r[0] in SERVER_META_KEYS)]
                out[t] = sorted((tuple(r) for r in rows), key=repr)
    finally:
        engine.dispose()
    return out


def test_copy_file_to_database_and_back_keeps_every_row(
    tmp_path: Path,
    pg_server: PgServer,
    ua_schema: Schema,
    ua_csv: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = tmp_path / "a.studio"
    with Project.create(source, ua_schema, author="ann") as a:
        set_id = fill(a, ua_schema, ua_csv)
        want_tags, want_puzzles = a.tag_map(), a.stored_puzzles(set_id)
    url = pg_server.fresh_database()
    assert main(["copy", str(source), url]) == 0
    out = capsys.readouterr().out
    assert "tags" in out and "1,512" in out and "puzzles" in out
    back = tmp_path / "b.studio"
    assert main(["copy", url, str(back)]) == 0
    # file -> file too
    again = tmp_path / "c.studio"
    report = copy_project(back, again)
    assert report.rows["tags"] == 1512 and report.rows["puzzles"] == 40
    want = dump(source)
    assert want["tags"] and want["fonts"][0][8] == bytes(range(256)) * 4
    for where in (url, back, again):
        assert dump(where) == want, where
        with Project.open(where) as p:
            assert p.tag_map() == want_tags
            assert p.stored_puzzles(set_id) == want_puzzles
            assert p.format_version == FORMAT_VERSION
    with Project.open(url) as p:
        assert p.dialect == "postgresql" and p.location == url
        # the identities were moved past the copied ids: new rows do not collide
        assert p.add_puzzle_set("t", {}, {}, [], "bob") == set_id + 1
        p.add_tags([GlyphKey(0x2603, "symbola")], "aspect", "tall", "bob")
        assert p.jobs.submit("baseline", {}, "another") == 2


def test_init_on_a_url_and_refusals_of_a_database_with_tables(
    tmp_path: Path, pg_database: str, ua_schema: Schema, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", pg_database]) == 0
    assert f"created {pg_database}" in capsys.readouterr().out
    with Project.open(pg_database) as p:
        assert p.schema == ua_schema and p.tag_count() == 0
    # not empty: init and copy refuse it, naming its tables; nothing is changed
    before = dump(pg_database)
    with pytest.raises(ProjectError, match=r"not empty.*meta") as e:
        Project.create(pg_database, ua_schema)
    assert pg_database in str(e.value)
    source = tmp_path / "a.studio"
    Project.create(source, ua_schema).close()
    with pytest.raises(ProjectError, match=r"not empty.*glyphs"):
        copy_project(source, pg_database)
    assert dump(pg_database) == before
    # a file target that exists is refused too
    with pytest.raises(ProjectError, match="already exists"):
        copy_project(pg_database, source)


def test_a_database_that_is_not_a_project_is_refused(pg_server: PgServer) -> None:
    empty = pg_server.fresh_database()
    with pytest.raises(ProjectError, match="empty database"):
        Project.open(empty)
    foreign = pg_server.fresh_database()
    with psycopg.connect(pg_server.conninfo(foreign.rsplit("/", 1)[1]), autocommit=True) as con:
        con.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(ProjectError, match=r"not an Analogy Studio project.*invoices"):
        Project.open(foreign)
    assert table_names_of(pg_server, foreign) == ["invoices"]


def table_names_of(server: PgServer, url: str) -> list[str]:
    engine = open_engine(url)
    try:
        with engine.connect() as conn:
            return table_names(conn)
    finally:
        engine.dispose()


def test_a_password_never_appears_in_a_message(
    tmp_path: Path, pg_server: PgServer, ua_schema: Schema, capsys: pytest.CaptureFixture[str]
) -> None:
    url = pg_server.fresh_database()
    with psycopg.connect(pg_server.conninfo(), autocommit=True) as con:
        con.execute(f"CREATE ROLE alice LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
    name = url.rsplit("/", 1)[1]
    secret = f"postgresql://alice:{PASSWORD}@{pg_server.host}:{pg_server.port}/{name}"
    assert PASSWORD not in safe_location(secret)
    assert PASSWORD not in safe_location(
        secret.replace(f":{PASSWORD}@", "@") + f"?password={PASSWORD}"
    )
    messages: list[str] = []
    assert main(["init", secret]) == 0
    assert main(["info", secret]) == 0
    assert main(["info", secret, "--json"]) == 0
    with Project.open(secret) as p:
        assert p.location == f"postgresql://alice@{pg_server.host}:{pg_server.port}/{name}"
        messages.append(p.location)
    for attempt in (
        lambda: Project.create(secret, ua_schema),  # not empty
        lambda: copy_project(tmp_path / "missing.studio", secret),
        lambda: Project.open(secret.replace(str(pg_server.port), "1")),  # nobody listens
        lambda: Project.open(secret.rsplit("/", 1)[0] + "/no_such_db"),
    ):
        with pytest.raises(ProjectError) as e:
            attempt()
        messages.append(str(e.value))
    assert main(["copy", secret, secret]) == 2
    captured = capsys.readouterr()
    messages += [captured.out, captured.err]
    assert "alice@" in "".join(messages)
    for m in messages:
        assert PASSWORD not in m


def write_old_database(url: str, schema: Schema) -> None:
    """A real format-1 lab database, as format 1's DDL (translated) made it, with a tag."""
    engine = open_engine(url)
    with engine.begin() as conn:
        for ddl in FORMAT_1_DDL:
            for statement in translate(ddl, "postgresql"):
                conn.execute(text(statement))
        conn.execute(
            text(
                "INSERT INTO meta VALUES ('application', 'analogy-studio'), ('format_version', '1')"
            )
        )
        conn.execute(
            text("INSERT INTO schema_versions VALUES (1, :j, '2026-01-01', '', 'created')"),
            {"j": schema.dumps()},
        )
        conn.execute(text("INSERT INTO glyphs (id, codepoint, font) VALUES (1, 9676, 'symbola')"))
        conn.execute(
            text("INSERT INTO tags (glyph_id, concept, value) VALUES (1, 'aspect', 'tall')")
        )
    engine.dispose()


def test_an_older_lab_database_is_migrated_in_place_once(
    tmp_path: Path, pg_server: PgServer, ua_schema: Schema, capsys: pytest.CaptureFixture[str]
) -> None:
    url = pg_server.fresh_database()
    write_old_database(url, ua_schema)
    # an older source is not copied: it is opened (migrated) first
    with pytest.raises(ProjectError, match=r"format 1.*Open it once"):
        copy_project(url, tmp_path / "x.studio")
    assert not (tmp_path / "x.studio").exists()
    # two clients open it at once: the advisory lock lets one migrate, the other finds it done
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            Project.open(url).close()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=open_it) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Project.open(url) as p:
        assert p.format_version == FORMAT_VERSION
        [t] = p.tags_of(GlyphKey(9676, "symbola"))
        assert (t.concept, t.value, t.author) == ("aspect", "tall", "unknown")
        p.add_tags([GlyphKey(9675, "symbola")], "aspect", "wide", "ann")
    # info on a second, fresh old database reports the in-place migration without a backup
    url2 = pg_server.fresh_database()
    write_old_database(url2, ua_schema)
    assert main(["info", url2]) == 0
    out = capsys.readouterr().out
    assert f"project format 1 -> {FORMAT_VERSION} (migrated in place" in out
    assert "pg_dump" in out


def test_a_server_that_is_gone_is_a_project_error(ua_schema: Schema) -> None:
    """A private server (stopping the session's would break other tests)."""
    try:
        cm = running_server()
        server = cm.__enter__()
    except Exception as e:  # PostgresUnavailable, ImportError
        pytest.skip(f"PostgreSQL test server unavailable: {e}")
    try:
        url = server.fresh_database()
        project = Project.create(url, ua_schema)
        project.add_tags([GlyphKey(0x25CB, "symbola")], "aspect", "tall", "ann")
        server.stop()
        with pytest.raises(ProjectError, match="lab database") as e:
            project.tag_count()
        assert safe_location(url) in str(e.value)
        project.close()
        with pytest.raises(ProjectError, match=r"cannot be reached.*is the server running") as e:
            Project.open(url)
        assert str(e.value).startswith(f"{url}: ")
    finally:
        cm.__exit__(None, None, None)
