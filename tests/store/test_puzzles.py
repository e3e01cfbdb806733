"""Puzzle sets in the project store: format 3, the migration from format 2, the curation log."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from studio.core.errors import ProjectError
from studio.core.schema import Schema
from studio.store.dbfile import open_engine
from studio.store.migrations import FORMAT_1_DDL, FORMAT_VERSION, MIGRATIONS
from studio.store.project import NewPuzzle, Project, PuzzleChange
from tests.store.records import record


@pytest.fixture
def project(project_location: str, ua_schema: Schema) -> Iterator[Project]:
    """A new project, in a file and in a PostgreSQL database (see tests/store/conftest.py)."""
    p = Project.create(project_location, ua_schema, author="ann")
    yield p
    p.close()


def test_format_3_step_is_registered() -> None:
    """Format 3 brought the puzzle tables; later formats build on it, one step at a time."""
    assert FORMAT_VERSION >= 3 and 2 in MIGRATIONS
    assert all(v in MIGRATIONS for v in range(1, FORMAT_VERSION))


def test_puzzle_set_round_trip_and_filters(project: Project) -> None:
    puzzles = [
        NewPuzzle(record("train-00000")),
        NewPuzzle(
            record("train-00001", "progression", "ink"),
            status="flagged",
            findings=[{"kind": "emergent", "answer": 1}],
        ),
        NewPuzzle(record("test-00000"), warnings=[{"kind": "emergent", "answer": 3}]),
    ]
    summary = {"rejections": {"no-glyphs": 3}, "dry_tuples": {"val": {"union/x/noshift": "dry"}}}
    set_id = project.add_puzzle_set("first", {"n": 3, "seed": 1}, summary, puzzles, "ann")
    [s] = project.puzzle_sets()
    assert (s.id, s.name, s.count, s.author) == (set_id, "first", 3, "ann")
    assert s.params == {"n": 3, "seed": 1} and s.summary == summary
    stored = project.stored_puzzles(set_id)
    assert [p.puzzle_id for p in stored] == ["train-00000", "train-00001", "test-00000"]
    assert stored[1].record == puzzles[1].record
    assert stored[1].findings == [{"kind": "emergent", "answer": 1}]
    assert [p.puzzle_id for p in project.stored_puzzles(set_id, status="flagged")] == [
        "train-00001"
    ]
    assert len(project.stored_puzzles(set_id, rule="constant", concept="aspect")) == 2
    assert project.stored_puzzle(set_id, "nope") is None
    # the import is logged
    [ev] = project.puzzle_events(set_id)
    assert (ev.kind, ev.puzzle_id, ev.author, ev.detail) == (
        "import",
        "",
        "ann",
        {"name": "first", "puzzles": 3},
    )


def test_changes_are_logged_and_all_or_nothing(project: Project) -> None:
    set_id = project.add_puzzle_set(
        "s", {}, {}, [NewPuzzle(record("test-00000")), NewPuzzle(record("test-00001"))], "ann"
    )
    project.change_puzzles(
        set_id,
        [
            PuzzleChange(
                "test-00000",
                "status",
                {"old": "draft", "new": "approved", "comment": "fine"},
                status="approved",
                comment="fine",
            )
        ],
        "bob",
    )
    new_rec = record("test-00001") | {"answers": ["U+25A0@symbola"] * 4}
    project.change_puzzles(
        set_id,
        [
            PuzzleChange(
                "test-00001",
                "replace-foil",
                {"answer": 0, "old": "U+25A0@symbola", "new": "U+25B3@symbola"},
                record=new_rec,
                findings=[],
            )
        ],
        "bob",
    )
    p0 = project.stored_puzzle(set_id, "test-00000")
    assert (p0.status, p0.comment, p0.author) == ("approved", "fine", "bob")
    assert project.stored_puzzle(set_id, "test-00001").record == new_rec
    kinds = [(e.kind, e.puzzle_id) for e in project.puzzle_events(set_id)]
    assert kinds == [("import", ""), ("status", "test-00000"), ("replace-foil", "test-00001")]
    assert project.puzzle_events(set_id, "test-00001")[0].detail["new"] == "U+25B3@symbola"

    # a batch naming an unknown puzzle changes nothing and logs nothing
    with pytest.raises(ProjectError, match="no puzzle 'test-09999'"):
        project.change_puzzles(
            set_id,
            [
                PuzzleChange("test-00001", "status", status="rejected"),
                PuzzleChange("test-09999", "status", status="rejected"),
            ],
            "bob",
        )
    assert project.stored_puzzle(set_id, "test-00001").status == "draft"
    assert len(project.puzzle_events(set_id)) == 3
    with pytest.raises(ValueError, match="not one of"):
        project.change_puzzles(set_id, [PuzzleChange("test-00001", "status", status="ok")], "b")


def test_log_is_append_only_and_outlives_removed_sets(
    project: Project, project_location: str
) -> None:
    set_id = project.add_puzzle_set("s", {}, {}, [NewPuzzle(record("test-00000"))], "ann")
    project.remove_puzzle_set(set_id, "ann", event="undo-import")
    assert project.puzzle_sets() == [] and project.stored_puzzles(set_id) == []
    assert [e.kind for e in project.puzzle_events(set_id)] == ["import", "undo-import"]
    # a redone import keeps its id
    assert project.add_puzzle_set("s", {}, {}, [], "ann", set_id=set_id) == set_id
    # ... and the next plain import takes a new id after it (PostgreSQL: the identity moved)
    assert project.add_puzzle_set("t", {}, {}, [], "ann") == set_id + 1
    engine = open_engine(project_location)
    refused = ["UPDATE puzzle_events SET author='mallory'", "DELETE FROM puzzle_events"]
    if project.dialect == "postgresql":
        refused.append("TRUNCATE puzzle_events")  # row triggers do not see TRUNCATE
    for statement in refused:
        with pytest.raises(IntegrityError, match="append-only"), engine.begin() as conn:
            conn.execute(text(statement))
    engine.dispose()
    assert len(project.puzzle_events()) == 4


def write_format_2(path: Path, schema: Schema) -> None:
    """A real format-2 project: format 1's layout plus the 1→2 step, as a 0.1 build wrote it."""
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        for ddl in FORMAT_1_DDL:
            conn.exec_driver_sql(ddl)
        MIGRATIONS[1](conn)
        conn.exec_driver_sql(
            "INSERT INTO meta VALUES ('application', 'analogy-studio'), ('format_version', '2')"
        )
        conn.exec_driver_sql(
            "INSERT INTO schema_versions VALUES (1, ?, '2026-01-01', '', 'created')",
            (schema.dumps(),),
        )
        conn.exec_driver_sql("INSERT INTO glyphs (id, codepoint, font) VALUES (1, 9676, 'symbola')")
        conn.exec_driver_sql(
            "INSERT INTO tags (glyph_id, concept, value, author, created_at)"
            " VALUES (1, 'aspect', 'tall', 'ann', '2026-01-02')"
        )
    engine.dispose()


def test_format_2_project_is_backed_up_and_migrated(tmp_path: Path, ua_schema: Schema) -> None:
    path = tmp_path / "two.studio"
    write_format_2(path, ua_schema)
    before = path.read_bytes()
    with Project.open(path) as p:
        assert p.format_version == FORMAT_VERSION
        [t] = p.all_tags()
        assert (t.concept, t.value, t.author) == ("aspect", "tall", "ann")
        assert p.puzzle_sets() == []
        set_id = p.add_puzzle_set("s", {}, {}, [NewPuzzle(record("test-00000"))], "ann")
    backup = tmp_path / "two.studio.bak-format2"
    assert backup.read_bytes() == before
    with Project.open(path) as again:
        assert again.stored_puzzle(set_id, "test-00000") is not None
    # the backup is still a format-2 project that opens (and migrates) in turn
    with Project.open(backup) as b:
        assert b.format_version == FORMAT_VERSION


def test_status_edits_survive_being_killed(
    tmp_path: Path, project_location: str, ua_schema: Schema
) -> None:
    """A process changing statuses in a loop is killed; every acknowledged edit is there."""
    path = project_location
    n = 3000
    with Project.create(path, ua_schema) as p:
        set_id = p.add_puzzle_set(
            "s", {}, {}, [NewPuzzle(record(f"test-{i:05d}")) for i in range(n)], "ann"
        )
    log = tmp_path / "acked.txt"
    script = textwrap.dedent(f"""
        from studio.store.project import Project, PuzzleChange
        p = Project.open({str(path)!r})
        with open({str(log)!r}, "a", buffering=1) as log:
            for i in range({n}):
                pid = f"test-{{i:05d}}"
                p.change_puzzles({set_id}, [PuzzleChange(pid, "status", status="approved")], "bot")
                log.write(pid + "\\n")
    """)
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().split()) < 30):
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    acked = set(log.read_text().split())
    assert len(acked) >= 30
    with Project.open(path) as p:
        approved = {s.puzzle_id for s in p.stored_puzzles(set_id, status="approved")}
        logged = {e.puzzle_id for e in p.puzzle_events(set_id) if e.kind == "status"}
    assert acked <= approved and approved == logged
    assert len(approved - acked) <= 1  # at most the edit in flight


def test_summaries_and_findings_filter(project: Project) -> None:
    set_id = project.add_puzzle_set(
        "s",
        {},
        {},
        [
            NewPuzzle(record("train-00000"), status="flagged", findings=[{"kind": "x"}]),
            NewPuzzle(record("train-00001"), status="flagged", warnings=[{"kind": "y"}] * 2),
            NewPuzzle(record("test-00000")),
        ],
        "ann",
    )
    rows = project.puzzle_summaries(set_id)
    assert [(s.id, s.errors, s.warnings, s.split) for s in rows] == [
        ("train-00000", 1, 0, "train"),
        ("train-00001", 0, 2, "train"),
        ("test-00000", 0, 0, "test"),
    ]
    assert [s.id for s in project.puzzle_summaries(set_id, findings="errors")] == ["train-00000"]
    assert [s.id for s in project.puzzle_summaries(set_id, findings="warnings")] == ["train-00001"]
    assert [s.id for s in project.puzzle_summaries(set_id, findings="none")] == ["test-00000"]
    assert [s.id for s in project.puzzle_summaries(set_id, split="test")] == ["test-00000"]
    assert [s.id for s in project.puzzle_summaries(set_id, ids=["test-00000"])] == ["test-00000"]
    assert project.puzzle_summaries(set_id, ids=[]) == []
    # the counts follow edits
    project.change_puzzles(set_id, [PuzzleChange("train-00000", "replace-foil", findings=[])], "a")
    assert project.puzzle_summaries(set_id, findings="errors") == []
    assert [p.puzzle_id for p in project.stored_puzzles(set_id, findings="none")] == [
        "train-00000",
        "test-00000",
    ]


def test_close_leaves_a_complete_file(tmp_path: Path, ua_schema: Schema) -> None:
    """Closing folds the write-ahead log into the file: the file alone holds every edit
    (build_demo moves only the main file into place)."""
    path = tmp_path / "p.studio"
    p = Project.create(path, ua_schema)
    set_id = p.add_puzzle_set("s", {}, {}, [NewPuzzle(record("test-00000"))], "ann")
    p.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    with Project.open(path) as again:
        assert again.stored_puzzle(set_id, "test-00000") is not None


def test_two_curators_cannot_overwrite_each_other(project: Project) -> None:
    """A decision made from a stale view (or an undo after someone else's decision) is refused
    with who changed the puzzle, and nothing of the batch is written: no lost update."""
    from studio.store.project import PuzzleConflict

    set_id = project.add_puzzle_set(
        "s", {}, {}, [NewPuzzle(record("test-00000")), NewPuzzle(record("test-00001"))], "ann"
    )
    other = Project.open(project.target)  # a second client: another curator's studio
    try:
        other.change_puzzles(
            set_id,
            [
                PuzzleChange(
                    "test-00000", "status", {"old": "draft", "new": "rejected"}, status="rejected"
                )
            ],
            "bob",
        )
        stale = [
            PuzzleChange("test-00001", "status", {"old": "draft", "new": "approved"},
                         status="approved"),
            PuzzleChange("test-00000", "status", {"old": "draft", "new": "approved"},
                         status="approved"),
        ]  # fmt: skip
        with pytest.raises(PuzzleConflict, match=r"test-00000 was changed by .* 'rejected'"):
            project.change_puzzles(set_id, stale, "ann")
        statuses = {p.puzzle_id: p.status for p in project.stored_puzzles(set_id)}
        assert statuses == {"test-00000": "rejected", "test-00001": "draft"}  # all or nothing
        # from what is there now, it goes through
        project.change_puzzles(
            set_id,
            [
                PuzzleChange(
                    "test-00000",
                    "status",
                    {"old": "rejected", "new": "approved"},
                    status="approved",
                )
            ],
            "ann",
        )
        assert other.stored_puzzle(set_id, "test-00000").status == "approved"
    finally:
        other.close()
