"""Errors a user sees. Each names the file (and where in it) and says what is wrong."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from studio.core.keys import GlyphKey


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


class FontChangedError(StudioError):
    """The file installed under a font's id is not the one the project rendered with, and the
    project keeps no copy: its glyphs would render differently, so every split made from them
    would change. Names the font, both hashes and the glyphs."""

    def __init__(
        self,
        font_id: str,
        recorded_sha256: str,
        path: str,
        installed_sha256: str | None,
        glyphs: Sequence[GlyphKey],
        limit: int = 8,
    ) -> None:
        self.font_id = font_id
        self.glyphs = list(glyphs)
        now = (
            f"the file there now has sha256 {installed_sha256[:12]}…"
            if installed_sha256
            else "the file is gone"
        )
        shown = ", ".join(str(k) for k in glyphs[:limit])
        more = f" and {len(glyphs) - limit} more" if len(glyphs) > limit else ""
        super().__init__(
            f"font {font_id!r} is not the file this project rendered with (recorded sha256 "
            f"{recorded_sha256[:12]}…; {now}) and the project keeps no copy of it: "
            f"{len(glyphs)} glyph(s) would render differently ({shown}{more}). Install the "
            "recorded font, or pass --allow-font-change to render with this one (the splits "
            "will differ from earlier ones).",
            path,
        )


# ---- unexpected exceptions (bugs) -----------------------------------------------------------
#: Environment variable: the folder crash logs go to (default: the user's log folder).
CRASH_LOG_DIR_ENV = "ANALOGY_STUDIO_LOG_DIR"


def crash_log_dir() -> Path:
    """Where :func:`save_crash_log` writes: ``$ANALOGY_STUDIO_LOG_DIR``, else the platform's
    user log folder (``~/.local/state/analogy-studio/log`` on Linux)."""
    import os

    import platformdirs

    override = os.environ.get(CRASH_LOG_DIR_ENV)
    return Path(override) if override else Path(platformdirs.user_log_dir("analogy-studio"))


def save_crash_log(exc: BaseException, context: str = "") -> Path | None:
    """Write ``exc``'s traceback (and ``context``: the command line, say) to a new file in
    :func:`crash_log_dir`; its path, or None when it could not be written. Never raises."""
    import os
    import time
    import traceback

    try:
        folder = crash_log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = folder / f"crash-{stamp}-{os.getpid()}.log"
        text = "".join(traceback.format_exception(exc))
        path.write_text((f"{context}\n\n" if context else "") + text, "utf-8", "backslashreplace")
        return path
    except Exception:  # a crash log must never hide the crash it reports
        return None


def bug_message(exc: BaseException, log: Path | None) -> str:
    """One line for a person: this is a bug (not their input), what it was, where the
    traceback is."""
    what = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
    where = f"traceback saved to {log}" if log else "the traceback could not be saved"
    return f"internal error (a bug in Analogy Studio, please report it): {what[:300]}; {where}"
