from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from studio.core.annotations import format_annotation_csv, read_annotations
from studio.core.errors import ProjectError, SchemaError
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.store.migrations import FORMAT_1_DDL, FORMAT_VERSION
from studio.store.project import Project, TagChange

K1 = GlyphKey(0x25CC, "symbola")
K2 = GlyphKey(0x25CB, "symbola")

#: a test about the SQLite file itself (damage, WAL, backups, a killed writer's file): no
#: PostgreSQL counterpart (the server keeps its own data)
SQLITE_ONLY = pytest.mark.parametrize("project_location", ["sqlite"], indirect=True)


@pytest.fixture
def project(project_location: str, ua_schema: Schema) -> Iterator[Project]:
    """A new project, in a file and in a PostgreSQL database (see tests/store/conftest.py)."""
    p = Project.create(project_location, ua_schema, author="ann")
    yield p
    p.close()


def test_create_open_and_wal(tmp_path: Path, ua_schema: Schema) -> None:
    path = tmp_path / "new.studio"
    Project.create(path, ua_schema).close()
    with Project.open(path) as p:
        assert p.schema == ua_schema
        assert p.format_version == FORMAT_VERSION
        p.add_tags([K1], "aspect", "tall", "ann")
        mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    with pytest.raises(ProjectError, match="already exists"):
        Project.create(path, ua_schema)


def test_tags_are_multi_label_and_keep_provenance(project: Project) -> None:
    if project.is_database:
        pytest.skip("on a lab database the author is the login: test_lab.py's project tests")
    assert project.add_tags([K1, K2], "aspect", "tall", "ann") == [K1, K2]
    assert project.add_tags([K1], "closure", "circle", "bob") == [K1]
    assert project.add_tags([K1], "aspect", "tall", "ann") == []  # already ann's
    # bob's own tag (format 7: each person's tags are kept apart); the consensus keeps the
    # first author
    assert project.add_tags([K1], "aspect", "tall", "bob") == [K1]
    tags = project.tags_of(K1)
    assert [(t.concept, t.value, t.author) for t in tags] == [
        ("aspect", "tall", "ann"),
        ("closure", "circle", "bob"),
    ]
    assert [(t.annotator, t.concept) for t in project.own_tags_of(K1)] == [
        ("ann", "aspect"),
        ("bob", "aspect"),
        ("bob", "closure"),
    ]
    # the single user of a file removes the tag outright: everyone's, each restorable
    removed = project.remove_tags([K1], "aspect", "tall")
    assert sorted(t.author for t in removed) == ["ann", "bob"]
    assert [t.concept for t in project.tags_of(K1)] == ["closure"]
    project.restore_tags(removed)
    assert project.tags_of(K1) == tags
    assert project.remove_tags([K1], "aspect", "tall", "bob")[0].author == "bob"
    assert project.tags_of(K1) == tags  # ann's tag still carries the consensus
    assert project.tag_counts()[("aspect", "tall")] == 2


def test_unknown_tag_refused(project: Project) -> None:
    with pytest.raises(SchemaError, match="sparkle"):
        project.add_tags([K1], "sparkle", "high", "ann")


def test_ua_round_trip(project: Project, ua_schema: Schema, ua_csv: Path) -> None:
    rows = read_annotations(ua_csv, ua_schema)
    assert project.import_rows(rows, "ann") == 1512
    assert project.import_rows(rows, "ann") == 0
    assert format_annotation_csv(project.tag_rows()) == ua_csv.read_text()


def test_schema_versions_and_tag_changes(project: Project, project_location: str) -> None:
    project.add_tags([K1, K2], "aspect", "tall", "ann")
    project.add_tags([K1], "closure", "circle", "ann")
    s = project.schema
    # removing a concept that has tags without saying so is refused: no tag silently vanishes
    with pytest.raises(SchemaError, match="closure"):
        project.set_schema(s.with_concept_removed("closure"))
    assert project.schema_version == 1
    s2 = (
        s.with_concept_renamed("aspect", "aspect-ratio")
        .with_value_renamed("aspect-ratio", "tall", "portrait")
        .with_concept_removed("closure")
    )
    v = project.set_schema(
        s2,
        author="ann",
        note="rename aspect",
        tag_changes=[
            TagChange("rename_concept", "aspect", None, "aspect-ratio"),
            TagChange("rename_value", "aspect-ratio", "tall", "portrait"),
            TagChange("remove_concept", "closure"),
        ],
    )
    assert v == 2 and [h.note for h in project.schema_history()] == ["created", "rename aspect"]
    assert [(t.concept, t.value) for t in project.tags_of(K1)] == [("aspect-ratio", "portrait")]
    project.close()
    with Project.open(project_location) as again:
        assert again.schema == s2 and again.schema_version == 2


@SQLITE_ONLY
def test_truncated_project_is_refused_and_left_intact(project: Project, tmp_path: Path) -> None:
    project.add_tags([K1], "aspect", "tall", "ann")
    path = project.path
    project.close()
    data = path.read_bytes()
    bad = tmp_path / "cut.studio"
    bad.write_bytes(data[: len(data) // 2])
    before = bad.read_bytes()
    with pytest.raises(ProjectError) as e:
        Project.open(bad)
    assert str(bad) in str(e.value) and "damaged" in str(e.value)
    assert bad.read_bytes() == before
    assert not Path(f"{bad}-wal").exists()


@pytest.mark.parametrize("content", [b"", b"hello world" * 20])
def test_not_a_project(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "x.studio"
    p.write_bytes(content)
    with pytest.raises(ProjectError, match="not an Analogy Studio project"):
        Project.open(p)
    assert p.read_bytes() == content


def test_foreign_sqlite_database(tmp_path: Path) -> None:
    p = tmp_path / "other.db"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(ProjectError, match="not an Analogy Studio project"):
        Project.open(p)


def test_newer_format_refused(project: Project, project_location: str) -> None:
    project.set_meta("format_version", str(FORMAT_VERSION + 1))
    project.close()
    with pytest.raises(ProjectError, match="newer Analogy Studio"):
        Project.open(project_location)


def test_format_1_project_is_migrated(tmp_path: Path, ua_schema: Schema) -> None:
    path = tmp_path / "old.studio"
    con = sqlite3.connect(path)
    for ddl in FORMAT_1_DDL:
        con.execute(ddl)
    con.executemany(
        "INSERT INTO meta VALUES (?, ?)",
        [("application", "analogy-studio"), ("format_version", "1")],
    )
    con.execute(
        "INSERT INTO schema_versions VALUES (1, ?, '2026-01-01', '', 'created')",
        (ua_schema.dumps(),),
    )
    con.execute("INSERT INTO glyphs (id, codepoint, font) VALUES (1, 9676, 'symbola')")
    con.execute("INSERT INTO tags (glyph_id, concept, value) VALUES (1, 'aspect', 'tall')")
    con.commit()
    con.close()
    with Project.open(path) as p:
        assert p.format_version == FORMAT_VERSION
        [t] = p.tags_of(K1)
        assert (t.concept, t.value, t.author) == ("aspect", "tall", "unknown")
        p.add_tags([K2], "aspect", "wide", "ann")
    assert (tmp_path / "old.studio.bak-format1").exists()


def test_project_survives_being_killed_mid_edits(
    tmp_path: Path, project_location: str, ua_schema: Schema
) -> None:
    """A process tagging in a loop is killed with SIGKILL; the project opens with every
    committed tag (the log of acknowledged edits is the proof)."""
    path = project_location
    Project.create(path, ua_schema).close()
    log = tmp_path / "acked.txt"
    script = textwrap.dedent(f"""
        import sys
        from studio.core.keys import GlyphKey
        from studio.store.project import Project
        p = Project.open({str(path)!r})
        with open({str(log)!r}, "a", buffering=1) as log:
            for cp in range(0x2500, 0x2500 + 100000):
                p.add_tags([GlyphKey(cp, "symbola")], "aspect", "tall", "bot")
                log.write(f"{{cp}}\\n")
    """)
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().split()) < 30):
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    acked = {int(x) for x in log.read_text().split()}
    assert len(acked) >= 30
    with Project.open(path) as p:
        tagged = {t.key.codepoint for t in p.all_tags()}
    assert acked <= tagged
    assert len(tagged - acked) <= 1  # at most the edit in flight


def test_closing_leaves_one_complete_file_and_no_log(tmp_path: Path, ua_schema: Schema) -> None:
    """Opening runs a precheck on a plain sqlite3 connection; if that connection outlived the
    open, SQLite kept the WAL at close, and a tool that then dropped the WAL lost the tags."""
    path = tmp_path / "p.studio"
    Project.create(path, ua_schema).close()
    project = Project.open(path)
    project.add_tags([GlyphKey(0x25CC, "symbola")], "closure", "circle", author="t")
    project.close()
    assert not Path(f"{path}-wal").exists()
    with sqlite3.connect(path) as con:  # the file alone holds the tag
        assert con.execute("SELECT count(*) FROM tags").fetchone() == (1,)
    con.close()


def test_a_pilot_s_results_are_stored_once_under_pseudonyms(tmp_path: Path, ua_schema) -> None:  # type: ignore[no-untyped-def]
    """Issue 29 (format 8): a participant is stored under a pseudonym, never the id typed;
    importing the same participant again is refused and stores nothing."""
    from studio.core.errors import StudioError
    from studio.store.pilots import StoredAnswer, pseudonym

    with Project.create(tmp_path / "p.studio", ua_schema) as project:
        assert project.format_version >= 8
        pilot = {"pilot_id": "abc123", "family": "glyph-pmp", "source": "/x"}
        answers = [
            StoredAnswer("Jane Doe", "test", "test-00001", 2, True, 2500.0),
            StoredAnswer("Jane Doe", "test", "test-00002", 0, False, 3100.0),
            StoredAnswer("Bo", "test", "test-00001", 1, False, 900.0),
        ]
        people = {"Jane Doe": ("", "jane.csv"), "Bo": ("too-fast", "bo.csv")}
        assert project.add_pilot_results(pilot, 3, people, answers, "cur") == 3
        assert project.human_accuracy(3) == {"test-00001": (1, 1), "test-00002": (0, 1)}
        assert project.pilots()[0] | {"created_at": ""} == {
            "id": "abc123", "set_id": 3, "family": "glyph-pmp", "created_at": "",
            "author": "cur", "kept": 1, "excluded": 1,
            "design": {},  # no plan in this pilot.json: the card then says less
        }  # fmt: skip
        with project._engine.connect() as conn:
            stored = {r[0] for r in conn.execute(text("SELECT participant FROM pilot_responses"))}
        assert stored == {pseudonym("abc123", "Jane Doe"), pseudonym("abc123", "Bo")}
        assert "Jane" not in " ".join(stored)
        with pytest.raises(StudioError, match="'Jane Doe' of pilot abc123 are already in the"):
            project.add_pilot_results(pilot, 3, {"Jane Doe": ("", "again.csv")}, answers[:1], "cur")
        assert project.human_accuracy(3) == {"test-00001": (1, 1), "test-00002": (0, 1)}


def test_nothing_of_a_typed_participant_id_reaches_the_project(tmp_path: Path, ua_schema) -> None:  # type: ignore[no-untyped-def]
    """Review of issue 29: the results file's name (the browser makes it of the typed id)
    was stored, and the pseudonym, a hash of the pilot id and the typed id, fell to a guess.
    Now the pseudonym is an HMAC under the pilot's own key, which the project never holds."""
    from studio.store.pilots import StoredAnswer, pseudonym

    pilot = {"pilot_id": "abc123", "pseudonym_key": "f00d" * 8, "family": "glyph-pmp"}
    answers = [StoredAnswer("Alice Smith", "test", "test-00001", 0, True, 1800.0)]
    with Project.create(tmp_path / "p.studio", ua_schema) as project:
        project.add_pilot_results(pilot, None, {"Alice Smith": ("", "sha256:ab")}, answers, "c")
        # first imported without a set, then for set 2: the pilot is the set's now
        project.add_pilot_results(
            pilot, 2, {"Bo": ("", "sha256:cd")}, [StoredAnswer("Bo", "test", "t", 1, 0, 9.0)], "c"
        )
        assert project.human_accuracy(2) == {"test-00001": (1, 1), "t": (0, 1)}
    dump = "\n".join(sqlite3.connect(tmp_path / "p.studio").iterdump())
    assert "Alice" not in dump and "f00d" not in dump
    assert pseudonym("f00d" * 8, "Alice Smith") in dump
    assert pseudonym("abc123", "Alice Smith") not in dump  # not the guessable one
