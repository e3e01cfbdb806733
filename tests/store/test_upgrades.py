"""Upgrades keep data: a project of every earlier format, written by the real code of the
commit that wrote that format (tests/fixtures/projects, see its README), opens with today's
code, is migrated with a byte-identical backup, and keeps its tags (with their authors),
puzzle sets, curation statuses and log, jobs, job logs and baseline flags."""

from __future__ import annotations

import csv
import json
import lzma
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from studio.cli import main
from studio.core.errors import ProjectError
from studio.store.migrations import FORMAT_VERSION
from studio.store.project import Project

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "projects"
VERSIONS = range(1, FORMAT_VERSION + 1)


def fixture_file(version: int) -> Path:
    plain = FIXTURES / f"format-{version}.studio"
    return plain if plain.exists() else FIXTURES / f"format-{version}.studio.xz"


def fixture_bytes(version: int) -> bytes:
    f = fixture_file(version)
    return lzma.decompress(f.read_bytes()) if f.suffix == ".xz" else f.read_bytes()


def copy_fixture(version: int, folder: Path) -> Path:
    path = folder / f"format-{version}.studio"
    path.write_bytes(fixture_bytes(version))
    return path


def read_fixture(version: int, folder: Path) -> dict[str, Any]:
    """What the old code stored, read with sqlite3 from a pristine copy (never the file under
    test)."""
    ref = folder / "reference" / f"format-{version}.studio"
    ref.parent.mkdir()
    ref.write_bytes(fixture_bytes(version))
    conn = sqlite3.connect(f"file:{ref}?mode=ro&immutable=1", uri=True)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        author = "author, created_at" if version >= 2 else "'unknown', NULL"
        out: dict[str, Any] = {
            "format": int(
                conn.execute("SELECT value FROM meta WHERE key='format_version'").fetchone()[0]
            ),
            "glyphs": conn.execute("SELECT COUNT(*) FROM glyphs").fetchone()[0],
            "tags": sorted(
                conn.execute(
                    f"SELECT g.codepoint, g.font, t.concept, t.value, {author}"
                    " FROM tags t JOIN glyphs g ON g.id = t.glyph_id"
                ).fetchall()
            ),
        }
        # format 9: each tag's source (before it every tag was given by hand)
        source = "t.source" if version >= 9 else "'hand'"
        out["sources"] = sorted(
            conn.execute(
                f"SELECT g.codepoint, g.font, t.concept, t.value, {source}"
                " FROM tags t JOIN glyphs g ON g.id = t.glyph_id"
            ).fetchall()
        )
        if version >= 7:
            own = "a.source" if version >= 9 else "'hand'"
            out["own_sources"] = sorted(
                conn.execute(
                    f"SELECT a.glyph_id, a.annotator, a.concept, a.value, {own}"
                    " FROM annotator_tags a"
                ).fetchall()
            )
        if "puzzles" in tables:
            out["sets"] = conn.execute("SELECT id, name, author FROM puzzle_sets").fetchall()
            out["puzzles"] = sorted(
                conn.execute("SELECT set_id, puzzle_id, status, comment FROM puzzles").fetchall()
            )
            out["events"] = conn.execute(
                "SELECT set_id, puzzle_id, author, kind FROM puzzle_events ORDER BY id"
            ).fetchall()
        if "jobs" in tables:
            out["jobs"] = conn.execute(
                "SELECT id, kind, status, progress, device, error FROM jobs ORDER BY id"
            ).fetchall()
            out["job_logs"] = conn.execute(
                "SELECT job_id, level, line FROM job_logs ORDER BY seq"
            ).fetchall()
            reason = "reason" if version >= 5 else "''"
            out["flags"] = conn.execute(
                f"SELECT job_id, set_id, puzzle_id, model, confidence, {reason}"
                " FROM baseline_flags ORDER BY id"
            ).fetchall()
        if version >= 6:
            out["job_memory"] = conn.execute(
                "SELECT id, peak_rss, memory_limit, stalled_at IS NOT NULL FROM jobs ORDER BY id"
            ).fetchall()
    finally:
        conn.close()
    return out


def test_every_earlier_format_has_a_fixture() -> None:
    for version in VERSIONS:
        assert fixture_file(version).exists(), f"no fixture of project format {version}"
    made = {p.name.split(".")[0] for p in FIXTURES.glob("format-*.studio*")}
    assert made == {f"format-{v}" for v in VERSIONS}, "a fixture of an unknown format"


@pytest.mark.parametrize("version", VERSIONS)
def test_fixture_opens_migrates_with_backup_and_keeps_its_data(
    version: int, tmp_path: Path
) -> None:
    want = read_fixture(version, tmp_path)
    # the fixtures hold real data of every kind their format has (else this test proves little)
    assert want["format"] == version
    assert len(want["tags"]) == 40 and want["glyphs"] == 40
    assert len(want.get("puzzles", [])) == (6 if version >= 3 else 0)
    assert len(want.get("jobs", [])) == (2 if version >= 4 else 0)

    path = copy_fixture(version, tmp_path)
    with Project.open(path) as project:
        assert project.format_version == FORMAT_VERSION
        backup = tmp_path / f"format-{version}.studio.bak-format{version}"
        if version < FORMAT_VERSION:
            assert backup.read_bytes() == fixture_bytes(version)
        else:
            assert not list(tmp_path.glob("*.bak-format*"))

        assert project.glyph_count() == want["glyphs"]
        tags = sorted(
            (t.key.codepoint, t.key.font, t.concept, t.value, t.author, t.created_at)
            for t in project.all_tags()
        )
        assert tags == want["tags"]
        # format 9: tags keep their source; every tag migrated from before it is 'hand'
        sources = sorted(
            (t.key.codepoint, t.key.font, t.concept, t.value, t.source) for t in project.all_tags()
        )
        assert sources == want["sources"]
        assert Counter(s[4] for s in sources) == (
            {"hand": 39, "suggestion": 1} if version >= 9 else {"hand": 40}
        )
        authors = Counter(t[4] for t in tags)
        if version < 7:
            assert authors == {("unknown" if version == 1 else "fixture-maker"): 40}
            # format 7: the tags of before become their authors' own; the consensus is them
            own = sorted(
                (t.key.codepoint, t.key.font, t.concept, t.value, t.annotator, t.created_at)
                for k in {t.key for t in project.all_tags()}
                for t in project.own_tags_of(k)
            )
            assert own == tags
        else:  # the format-7 fixture's lab: a curator settled one glyph
            assert authors == {"fixture-maker": 39, "cur": 1}
            assert [(p.name, p.role) for p in project.people()] == [
                ("ann", "annotator"),
                ("bea", "annotator"),
                ("cur", "curator"),
            ]
            assert len(project.adjudications()) == 1 and project.disagreement_queue() == []
            ratings, annotated = project.ratings()
            # format 9: bea accepted one more tag from a suggestion
            bea = 4 if version >= 9 else 3
            assert Counter(r[1] for r in ratings) == {"fixture-maker": 40, "ann": 3, "bea": bea}
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                own = sorted(
                    con.execute(
                        "SELECT glyph_id, annotator, concept, value, source FROM annotator_tags"
                    ).fetchall()
                )
            finally:
                con.close()
            assert own == want["own_sources"]
            assert [o[1] for o in own if o[4] == "suggestion"] == (["bea"] if version >= 9 else [])
            assert {a for _, a in annotated} == {"fixture-maker", "ann", "bea"}

        sets = project.puzzle_sets()
        assert [(s.id, s.name, s.author) for s in sets] == want.get("sets", [])
        # format 8: a pilot of the set, two participants kept and one excluded
        pilots = [(p["id"], p["set_id"], p["kept"], p["excluded"]) for p in project.pilots()]
        assert pilots == ([("f1x7ure00008", 1, 2, 1)] if version >= 8 else [])
        if version >= 8:
            assert sum(n for _, n in project.human_accuracy(1).values()) == 6
        puzzles = sorted(
            (p.set_id, p.puzzle_id, p.status, p.comment)
            for s in sets
            for p in project.stored_puzzles(s.id)
        )
        assert puzzles == want.get("puzzles", [])
        events = [(e.set_id, e.puzzle_id, e.author, e.kind) for e in project.puzzle_events()]
        assert events == want.get("events", [])
        if version >= 3:
            statuses = Counter(p[2] for p in puzzles)
            assert statuses["approved"] == 1 and statuses["rejected"] == 1
            assert [e[3] for e in events] == ["import", "status", "status", "comment"]

        jobs = sorted(project.jobs.jobs(), key=lambda j: j.id)
        assert [(j.id, j.kind, j.status, j.progress, j.device, j.error) for j in jobs] == want.get(
            "jobs", []
        )
        logs = [(j.id, line.level, line.line) for j in jobs for line in project.jobs.logs(j.id)]
        assert logs == want.get("job_logs", [])
        flags = [
            (f.job_id, f.set_id, f.puzzle_id, f.model, f.confidence, f.reason)
            for s in sets
            for fs in project.jobs.flags(s.id).values()
            for f in fs
        ]
        assert flags == want.get("flags", [])
        if version >= 4:
            assert jobs[0].result is not None and jobs[0].result["accuracy"] == {"blind": 0.5}
            assert bool(flags[0][5]) == (version >= 5)  # a reason from format 5 on
        memory = [(j.id, j.peak_rss, j.memory_limit, j.stalled_at is not None) for j in jobs]
        assert memory == want.get("job_memory", [(j.id, None, None, False) for j in jobs])

    # opening the migrated file again changes nothing and makes no second backup
    with Project.open(path) as project:
        assert project.format_version == FORMAT_VERSION
    assert len(list(tmp_path.glob("*.bak-format*"))) == (1 if version < FORMAT_VERSION else 0)


@pytest.mark.parametrize("version", VERSIONS)
def test_export_annotations_of_a_migrated_fixture_gives_its_tags(
    version: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    want = read_fixture(version, tmp_path)
    path = copy_fixture(version, tmp_path)
    out = tmp_path / "tags.csv"
    assert main(["export-annotations", str(path), str(out)]) == 0
    assert "wrote 40 tags" in capsys.readouterr().out
    with out.open(newline="", encoding="utf-8") as f:
        rows = sorted(
            (int(r["codepoint"], 16), r["font"], r["concept"], r["value"])
            for r in csv.DictReader(f)
        )
    assert rows == sorted(t[:4] for t in want["tags"])


def test_info_reports_the_migration_and_the_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_fixture(4, tmp_path)
    assert main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    backup = tmp_path / "format-4.studio.bak-format4"
    assert info == {
        "path": str(path),
        "format_before": 4,
        "format_after": FORMAT_VERSION,
        "migrated": True,
        "backup": str(backup),
        "glyphs": 40,
        "tags": 40,
        "puzzle_sets": 1,
        "puzzles": 6,
        "jobs": 2,
        "schema": "ua 1.0",
        "dialect": "sqlite",
    }
    assert backup.read_bytes() == fixture_bytes(4)
    # a second look: already current, nothing migrated
    assert main(["info", str(path)]) == 0
    text = capsys.readouterr().out
    assert f"project format {FORMAT_VERSION} (current, not migrated)" in text
    assert "1 puzzle sets, 6 puzzles" in text and "2 jobs" in text


def test_a_project_of_a_newer_format_is_refused_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_fixture(FORMAT_VERSION, tmp_path)
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute(
                "UPDATE meta SET value=? WHERE key='format_version'", (str(FORMAT_VERSION + 1),)
            )
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)
    before = path.read_bytes()
    newer = f"newer Analogy Studio .project format {FORMAT_VERSION + 1}"
    with pytest.raises(ProjectError, match=newer):
        Project.open(path)
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and f"reads up to {FORMAT_VERSION}" in err
    assert path.read_bytes() == before
    assert not list(tmp_path.glob("*.bak-format*"))
