"""What ``analogy-studio info`` reports: a project's format before and after opening it (an
older format is migrated, with a backup, exactly as the studio does) and what it holds."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from studio.store.filecheck import check_project_file
from studio.store.migrations import FORMAT_VERSION
from studio.store.project import Project


@dataclass(frozen=True)
class ProjectInfo:
    """A project as :func:`open_for_info` found it. ``backup`` is the copy of the file as it
    was (``<name>.bak-format<N>``) when opening migrated it, else None."""

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

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        if self.migrated:
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


def open_for_info(path: str | Path) -> ProjectInfo:
    """Open the project at ``path`` as the studio does (refusing a damaged or newer file with
    ProjectError, migrating an older one with a backup) and count what it holds."""
    p = Path(path)
    before = check_project_file(p).format_version
    with Project.open(p) as project:
        after = project.format_version
        sets = project.puzzle_sets()
        schema = f"{project.schema.id} {project.schema.version}"
        glyphs, tags = project.glyph_count(), project.tag_count()
        jobs = len(project.jobs.jobs())
    backup = p.with_name(f"{p.name}.bak-format{before}") if before < FORMAT_VERSION else None
    return ProjectInfo(
        path=str(p),
        format_before=before,
        format_after=after,
        migrated=backup is not None,
        backup=None if backup is None else str(backup),
        glyphs=glyphs,
        tags=tags,
        puzzle_sets=len(sets),
        puzzles=sum(s.count for s in sets),
        jobs=jobs,
        schema=schema,
    )
