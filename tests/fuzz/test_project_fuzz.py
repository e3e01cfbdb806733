"""Fuzzed project files opened and read as the studio does: each opens, or is refused with a
ProjectError naming the file (and the table and row of a bad cell) while its bytes stay as they
were and no ``.bak-format<N>`` appears — never another exception. Also: format versions that
are not numbers, migrations re-run on tables that exist, a migration that fails."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from binary_loaders import (
    PROJECT_EDITS,
    check_refusal_keeps_project,
    edited_project,
    make_seed_project,
)
from conftest import corpus, loader_named, run_one
from fuzz_kit import sha256
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.core.errors import ProjectError, StudioError
from studio.store.migrations import FORMAT_VERSION
from studio.store.project import Project

LOADER = loader_named("project")


@pytest.fixture(scope="session")
def project_ctx(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return LOADER.prepare(tmp_path_factory.mktemp("fuzz-project"))


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False))
def test_mutated_projects_open_or_are_refused_untouched(
    rng: random.Random, project_ctx: Any, tmp_path: Path
) -> None:
    run_one(LOADER, project_ctx, LOADER.make(project_ctx, rng), tmp_path)


@pytest.mark.parametrize("sql", PROJECT_EDITS)
def test_bad_values_are_refused_or_migrated_cleanly(
    sql: str, project_ctx: Any, tmp_path: Path
) -> None:
    path = tmp_path / "edited.studio"
    path.write_bytes(edited_project(project_ctx.seed, sql, tmp_path / "scratch"))
    before = sha256(path)
    try:
        check_refusal_keeps_project(path, before)
    except StudioError as e:
        assert not getattr(e, "_project_changed", False), "a refused file changed"
        assert isinstance(e, ProjectError) and e.path == str(path)
        return
    # accepted: only a lower format version (its tables all there) is, and it was migrated
    assert "format_version" in sql
    with Project.open(path) as p:
        assert p.format_version == FORMAT_VERSION


@pytest.mark.parametrize("value", ["", "3.5", "abc", "1e3", "-1", "٣"])
def test_unreadable_format_version_names_the_value(
    value: str, project_ctx: Any, tmp_path: Path
) -> None:
    path = tmp_path / "v.studio"
    sql = f"UPDATE meta SET value='{value}' WHERE key='format_version'"
    path.write_bytes(edited_project(project_ctx.seed, sql, tmp_path / "scratch"))
    with pytest.raises(ProjectError, match="unreadable project format version"):
        Project.open(path)


def test_out_of_range_cell_names_table_and_row(project_ctx: Any, tmp_path: Path) -> None:
    path = tmp_path / "cp.studio"
    sql = "UPDATE glyphs SET codepoint=1114112 WHERE id=7"
    path.write_bytes(edited_project(project_ctx.seed, sql, tmp_path / "scratch"))
    with pytest.raises(ProjectError, match="table 'glyphs', row 7: code point outside Unicode"):
        Project.open(path)


def test_migration_rerun_on_existing_tables_is_harmless(project_ctx: Any, tmp_path: Path) -> None:
    """A current file that says format 2: every step from 2 finds its tables and columns,
    adds nothing, and the project opens with its data; the old file is kept as a backup."""
    path = tmp_path / "two.studio"
    sql = "UPDATE meta SET value='2' WHERE key='format_version'"
    path.write_bytes(edited_project(project_ctx.seed, sql, tmp_path / "scratch"))
    before = path.read_bytes()
    with Project.open(path) as p:
        assert p.format_version == FORMAT_VERSION
        assert p.tag_count() > 0 and len(p.puzzle_sets()) == 1
    assert (tmp_path / "two.studio.bak-format2").read_bytes() == before


def test_failed_migration_leaves_file_and_no_backup(project_ctx: Any, tmp_path: Path) -> None:
    """A format-3 file whose ``jobs`` table (format 4's) exists without a ``status`` column:
    the step to format 4 cannot index it. The file keeps its bytes; no backup, no leftovers."""
    path = tmp_path / "three.studio"
    sql = (
        "DROP TABLE jobs; CREATE TABLE jobs (id INTEGER PRIMARY KEY);"
        "UPDATE meta SET value='3' WHERE key='format_version'"
    )
    path.write_bytes(edited_project(project_ctx.seed, sql, tmp_path / "scratch"))
    before = sha256(path)
    with pytest.raises(ProjectError, match="cannot be migrated from project format 3") as e:
        Project.open(path)
    assert "no such column: status" in str(e.value) and "It was not changed" in str(e.value)
    assert sha256(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scratch", "three.studio"]


def test_migration_result_must_have_the_current_layout(project_ctx: Any, tmp_path: Path) -> None:
    """A format-2 file with a stray ``puzzles`` table of another shape: the migration would
    keep it (CREATE TABLE IF NOT EXISTS), so the result is checked and refused."""
    path = tmp_path / "stray.studio"
    sql = (
        "DROP TABLE puzzles;"
        "CREATE TABLE puzzles (id INTEGER PRIMARY KEY, set_id INTEGER, position INTEGER);"
        "UPDATE meta SET value='2' WHERE key='format_version'"
    )
    path.write_bytes(edited_project(project_ctx.seed, sql, tmp_path / "scratch"))
    before = sha256(path)
    with pytest.raises(ProjectError, match="table 'puzzles' has no column"):
        Project.open(path)
    assert sha256(path) == before
    assert not list(tmp_path.glob("stray.studio.bak*"))


def test_migration_with_a_wal_keeps_its_edits(project_ctx: Any, tmp_path: Path) -> None:
    """An older project whose last edits are still in its WAL (the studio was killed): the
    migrated file and the backup both hold them."""
    path = tmp_path / "walled.studio"
    sql = "UPDATE meta SET value='4' WHERE key='format_version'"
    path.write_bytes(edited_project(project_ctx.seed, sql, tmp_path / "scratch"))
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("UPDATE puzzle_sets SET name='renamed in the WAL'")
    writer.commit()
    keep = sqlite3.connect(path)  # a second connection keeps the WAL from being folded in
    keep.execute("SELECT COUNT(*) FROM meta").fetchall()
    writer.close()
    assert Path(f"{path}-wal").stat().st_size > 0
    try:
        with Project.open(path) as p:
            assert p.format_version == FORMAT_VERSION
            assert [s.name for s in p.puzzle_sets()] == ["renamed in the WAL"]
    finally:
        keep.close()
    backup = sqlite3.connect(tmp_path / "walled.studio.bak-format4")
    assert backup.execute("SELECT name FROM puzzle_sets").fetchall() == [("renamed in the WAL",)]
    backup.close()


@pytest.mark.parametrize("case", corpus("projects"), ids=lambda p: p.name)
def test_project_corpus_is_refused_untouched(case: Path, tmp_path: Path) -> None:
    """Bit flips that broke the open: an error message SQLite quotes in invalid UTF-8; a font
    id damaged in an index only (quick_check passes it, integrity_check does not)."""
    path = tmp_path / case.name
    path.write_bytes(case.read_bytes())
    before = sha256(path)
    with pytest.raises(ProjectError, match="damaged"):
        check_refusal_keeps_project(path, before)
    assert sha256(path) == before


def test_seed_project_opens(tmp_path: Path) -> None:
    path = make_seed_project(tmp_path / "seed.studio")
    check_refusal_keeps_project(path, sha256(path))
