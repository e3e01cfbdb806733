"""What ``analogy-studio info`` reports: a project's format before and after opening it (an
older format is migrated, with a backup, exactly as the studio does; a lab database in place,
without one) and what it holds. Works on a file and on a PostgreSQL URL."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from studio.store.dbfile import is_database_url, open_engine, safe_location
from studio.store.filecheck import check_database, check_project_file
from studio.store.migrations import FORMAT_VERSION
from studio.store.project import PG_DUMP_HINT, Project


@dataclass(frozen=True)
class ProjectInfo:
    """A project as :func:`open_for_info` found it. ``backup`` is the copy of the file as it
    was (``<name>.bak-format<N>``) when opening migrated it, else None (always for a lab
    database: ``pg_dump`` is its backup). ``path`` is the location without any password."""

    path: str
    format_before: int
    format_after: int
    migrated: bool
    backup: str | None
    glyphs: int
    tags: int
    puzzle_sets: int
    puzzles: int
    jobs: int
    schema: str
    dialect: str = "sqlite"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        if self.migrated and self.backup is None:
            fmt = (
                f"project format {self.format_before} -> {self.format_after}"
                f" (migrated in place; no backup file: {PG_DUMP_HINT})"
            )
        elif self.migrated:
            fmt = (
                f"project format {self.format_before} -> {self.format_after}"
                f" (migrated; the original is kept as {self.backup})"
            )
        else:
            fmt = f"project format {self.format_after} (current, not migrated)"
        return [
            f"{self.path}: {fmt}",
            f"schema {self.schema}",
            f"{self.glyphs} glyphs, {self.tags} tags",
            f"{self.puzzle_sets} puzzle sets, {self.puzzles} puzzles",
            f"{self.jobs} jobs",
        ]


def _database_format(url: str) -> int:
    engine = open_engine(url)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            return check_database(conn, safe_location(url)).format_version
    finally:
        engine.dispose()


def open_for_info(path: str | Path) -> ProjectInfo:
    """Open the project at ``path`` (a file or a database URL) as the studio does (refusing a
    damaged or newer one with ProjectError, migrating an older one: a file with a backup) and
    count what it holds."""
    if is_database_url(path):
        before = _database_format(str(path))
        with Project.open(path) as project:
            return _counted(project, before, None)
    p = Path(path)
    before = check_project_file(p).format_version
    backup = p.with_name(f"{p.name}.bak-format{before}") if before < FORMAT_VERSION else None
    with Project.open(p) as project:
        return _counted(project, before, backup)


def _counted(project: Project, before: int, backup: Path | None) -> ProjectInfo:
    after = project.format_version
    sets = project.puzzle_sets()
    schema = f"{project.schema.id} {project.schema.version}"
    glyphs, tags = project.glyph_count(), project.tag_count()
    jobs = len(project.jobs.jobs())
    return ProjectInfo(
        path=project.location,
        format_before=before,
        format_after=after,
        migrated=before < after,
        backup=None if backup is None else str(backup),
        glyphs=glyphs,
        tags=tags,
        puzzle_sets=len(sets),
        puzzles=sum(s.count for s in sets),
        jobs=jobs,
        schema=schema,
        dialect=project.dialect,
    )
