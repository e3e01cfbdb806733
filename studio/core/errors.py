"""Errors a user sees. Each names the file (and where in it) and says what is wrong."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class StudioError(Exception):
    """Base of every error meant for a person: the message is complete and readable as is."""

    def __init__(self, message: str, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.problem = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


class SchemaError(StudioError):
    """A concept schema that does not validate; `json_path` points at the offending node."""

    def __init__(self, path: str | Path | None, json_path: str, problem: str) -> None:
        self.json_path = json_path
        super().__init__(f"at {json_path}: {problem}", path)
        self.problem = problem


@dataclass(frozen=True)
class ImportProblem:
    """One bad record of an import: ``where`` is "line 12" (CSV) or a relative path (folder)."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class AnnotationImportError(StudioError):
    """An import refused as a whole; `problems` lists every bad line, not just the first."""

    def __init__(self, path: str | Path, problems: list[ImportProblem], limit: int = 20) -> None:
        self.problems = problems
        shown = "\n".join(f"  {p}" for p in problems[:limit])
        more = f"\n  … and {len(problems) - limit} more" if len(problems) > limit else ""
        super().__init__(f"{len(problems)} problem(s); nothing was imported:\n{shown}{more}", path)


class ProjectError(StudioError):
    """A project file that cannot be opened or written (corrupt, too new, not a project)."""


class FontError(StudioError):
    """A font file that cannot be read or rendered."""
