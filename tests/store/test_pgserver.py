"""The throwaway PostgreSQL server of tests/pgserver.py, through SQLAlchemy and psycopg 3."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from tests.pgserver import PgServer, running_server

ROOT = Path(__file__).resolve().parents[2]


def test_server_runs_postgresql_through_psycopg3(pg_server: PgServer, pg_database: str) -> None:
    assert pg_database.startswith(f"postgresql+psycopg://postgres@127.0.0.1:{pg_server.port}/")
    engine = create_engine(pg_database)
    try:
        with engine.connect() as con:
            assert engine.dialect.driver == "psycopg"
            version = con.execute(text("SHOW server_version_num")).scalar_one()
            assert int(version) >= 150000
            assert con.execute(text("SELECT current_user")).scalar_one() == "postgres"
            address = con.execute(text("SELECT host(inet_server_addr())")).scalar_one()
            assert address == "127.0.0.1"
    finally:
        engine.dispose()


def test_rows_round_trip(pg_database: str) -> None:
    engine = create_engine(pg_database)
    try:
        with engine.begin() as con:
            con.execute(
                text(
                    "CREATE TABLE tag (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                    " codepoint INTEGER NOT NULL, concept TEXT NOT NULL, author TEXT NOT NULL,"
                    " UNIQUE (codepoint, concept))"
                )
            )
            con.execute(
                text("INSERT INTO tag (codepoint, concept, author) VALUES (:cp, :c, :a)"),
                [
                    {"cp": 0x1F600, "c": "face", "a": "ana"},
                    {"cp": 0x2500, "c": "line", "a": "ben"},
                    {"cp": 0x10900, "c": "ᚠ rune ✓", "a": "ana"},
                ],
            )
            # the dialect construct the store's INSERT OR IGNORE becomes on PostgreSQL
            skipped = con.execute(
                text(
                    "INSERT INTO tag (codepoint, concept, author) VALUES (9472, 'line', 'cy')"
                    " ON CONFLICT (codepoint, concept) DO NOTHING"
                )
            )
            assert skipped.rowcount == 0
        with engine.connect() as con:
            rows = con.execute(text("SELECT id, codepoint, concept, author FROM tag ORDER BY id"))
            assert [tuple(r) for r in rows] == [
                (1, 0x1F600, "face", "ana"),
                (2, 0x2500, "line", "ben"),
                (3, 0x10900, "ᚠ rune ✓", "ana"),
            ]
    finally:
        engine.dispose()


def test_two_connections_see_each_others_committed_rows(pg_database: str) -> None:
    first, second = create_engine(pg_database), create_engine(pg_database)
    try:
        with first.begin() as con:
            con.execute(text("CREATE TABLE note (who TEXT, body TEXT)"))
        with first.connect() as a, second.connect() as b:
            a.execute(text("INSERT INTO note VALUES ('a', 'from a')"))
            # not committed yet: invisible to the other connection
            assert b.execute(text("SELECT count(*) FROM note")).scalar_one() == 0
            b.rollback()
            a.commit()
            assert b.execute(text("SELECT body FROM note")).scalars().all() == ["from a"]
            b.execute(text("INSERT INTO note VALUES ('b', 'from b')"))
            b.commit()
            bodies = a.execute(text("SELECT body FROM note ORDER BY body")).scalars().all()
            assert bodies == ["from a", "from b"]
            a.rollback()
    finally:
        first.dispose()
        second.dispose()


def test_databases_are_separate(pg_server: PgServer) -> None:
    one, two = pg_server.fresh_database(), pg_server.fresh_database()
    assert one != two
    e1, e2 = create_engine(one), create_engine(two)
    try:
        with e1.begin() as con:
            con.execute(text("CREATE TABLE only_in_one (x INTEGER)"))
        with e2.connect() as con:
            found = con.execute(text("SELECT to_regclass('only_in_one') IS NOT NULL"))
            assert found.scalar_one() is False
    finally:
        e1.dispose()
        e2.dispose()
        for url in (one, two):
            pg_server.drop_database(url.rsplit("/", 1)[1])


def test_server_is_stopped_and_removed_on_the_way_out() -> None:
    """A second server of its own: after the block, nothing listens and its folder is gone,
    also when the block raised."""
    with pytest.raises(RuntimeError), running_server() as server:
        url, root = server.url(), server.root
        assert (root / "data" / "postmaster.pid").exists()
        raise RuntimeError("a failing test")
    assert not root.exists()
    engine = create_engine(url, connect_args={"connect_timeout": 5})
    try:
        with pytest.raises(OperationalError), engine.connect():
            pass
    finally:
        engine.dispose()


@pytest.mark.skipif(os.environ.get("CI", "").lower() == "true", reason="CI has PostgreSQL")
def test_missing_postgresql_skips_or_fails_under_ci(tmp_path: Path) -> None:
    """With no server programs to be found, the fixture skips, and under CI=true it fails."""
    probe = tmp_path / "test_probe.py"
    probe.write_text("def test_needs_server(pg_server):\n    pass\n", encoding="utf-8")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = {**os.environ, "PG_BINDIR": str(empty), "PYTHONPATH": str(ROOT)}
    outcomes = {}
    for ci in ("false", "true"):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "tests.pgserver",
                "-rsf",
                "--rootdir",
                str(tmp_path),
                str(probe),
            ],
            env={**env, "CI": ci},
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        outcomes[ci] = (done.returncode, done.stdout)
    rc, out = outcomes["false"]
    assert rc == 0 and "1 skipped" in out, out
    assert "PostgreSQL test server unavailable" in out
    rc, out = outcomes["true"]
    assert rc == 1 and "1 error" in out, out  # the fixture fails: the test errors
    assert "CI=true" in out
