"""Per-user settings of the studio, on QSettings.

By default they live where Qt keeps an application's settings (organisation "Analogy Studio",
application "analogy-studio"; on Linux ``~/.config/Analogy Studio/analogy-studio.conf``). Tests
and lab installs can point them at an INI file instead: pass ``path`` or set the environment
variable ``ANALOGY_STUDIO_SETTINGS``. The file carries a ``settings_version``; a migration
function per step brings an older file up to date when it is opened.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings, QStandardPaths
from PySide6.QtWidgets import QInputDialog, QLineEdit, QMainWindow, QWidget

ORGANIZATION = "Analogy Studio"
APPLICATION = "analogy-studio"
ENV_VAR = "ANALOGY_STUDIO_SETTINGS"
SETTINGS_VERSION = 1
MAX_RECENT_PROJECTS = 10

_ANNOTATOR = "annotator/name"
_FEATURE_GRADE = "board/feature_warning_min"
#: Image-feature warnings are graded; the board shows a warning at or above this grade.
FEATURE_GRADES = ("low", "medium", "high")
_RECENT = "projects/recent"
_HIDE_OTHERS = "tagging/hide_others"
_LAB_JOBS_HERE = "jobs/run_lab_jobs_here"
_ADVANCE = "tagging/advance_after_tagging"
_VERSION = "settings_version"

#: ``MIGRATIONS[n]`` turns a version-``n`` settings store into version ``n + 1``.
MIGRATIONS: dict[int, Callable[[QSettings], None]] = {}


def _as_str_list(value: object) -> list[str]:
    """QSettings returns a one-item list from an INI file as a plain string; undo that."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v]
    return []


class StudioSettings:
    """The studio's settings. Every setter writes through to disk at once (``sync``)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        if path is None:
            path = os.environ.get(ENV_VAR) or None
        if path is not None:
            self.qsettings = QSettings(str(path), QSettings.Format.IniFormat)
        else:
            self.qsettings = QSettings(ORGANIZATION, APPLICATION)
        self._migrate()

    def _migrate(self) -> None:
        q = self.qsettings
        version = int(q.value(_VERSION, 0 if q.allKeys() else SETTINGS_VERSION))
        if version > SETTINGS_VERSION:
            return  # written by a newer studio: read what we know, never downgrade
        while version < SETTINGS_VERSION:
            step = MIGRATIONS.get(version)
            if step is not None:
                step(q)
            version += 1
        q.setValue(_VERSION, SETTINGS_VERSION)
        q.sync()

    @property
    def file_name(self) -> str:
        return self.qsettings.fileName()

    # ---- annotator ----------------------------------------------------------------------
    def annotator_name(self) -> str | None:
        """The name stored with every tag this user makes, or None when none is set."""
        value = self.qsettings.value(_ANNOTATOR)
        if not isinstance(value, str) or not value.strip():
            return None
        return value.strip()

    def set_annotator_name(self, name: str) -> None:
        name = name.strip()
        if not name:
            raise ValueError("the annotator name is empty")
        self.qsettings.setValue(_ANNOTATOR, name)
        self.qsettings.sync()

    # ---- recent projects ----------------------------------------------------------------
    def recent_projects(self) -> list[Path | str]:
        """Recently opened projects, most recent first (at most MAX_RECENT_PROJECTS): files
        as Paths, lab databases as their URL without password (a str)."""
        return [_recent_entry(p) for p in _as_str_list(self.qsettings.value(_RECENT))]

    def add_recent_project(self, path: str | os.PathLike[str]) -> None:
        """Put ``path`` first in the recent list (once; the oldest fall off the end). A
        database URL is stored without any password."""
        new = _recent_entry(path)
        paths = [new] + [p for p in self.recent_projects() if p != new]
        self._set_recent(paths[:MAX_RECENT_PROJECTS])

    def remove_recent_project(self, path: str | os.PathLike[str]) -> None:
        gone = _recent_entry(path)
        self._set_recent([p for p in self.recent_projects() if p != gone])

    def clear_recent_projects(self) -> None:
        self._set_recent([])

    def _set_recent(self, paths: list[Path | str]) -> None:
        self.qsettings.setValue(_RECENT, [str(p) for p in paths])
        self.qsettings.sync()

    # ---- tagging with others --------------------------------------------------------------
    def hide_others(self) -> bool:
        """Whether the tagger shows only the user's own tags (View ▸ Hide others' tags)."""
        return str(self.qsettings.value(_HIDE_OTHERS, "false")).lower() == "true"

    def set_hide_others(self, hide: bool) -> None:
        self.qsettings.setValue(_HIDE_OTHERS, "true" if hide else "false")
        self.qsettings.sync()

    def advance_after_tagging(self) -> bool:
        """Whether tagging one glyph moves on to the next untagged one (Tag ▸ Advance after
        tagging): one key per tag (issue 28's keystrokes per tag)."""
        return str(self.qsettings.value(_ADVANCE, "false")).lower() == "true"

    def set_advance_after_tagging(self, advance: bool) -> None:
        self.qsettings.setValue(_ADVANCE, "true" if advance else "false")
        self.qsettings.sync()

    def run_lab_jobs_here(self) -> bool:
        """Whether this window also runs a lab database's queued jobs (default: no, its
        workers do — ``analogy-studio worker serve`` on the lab's GPU servers)."""
        return str(self.qsettings.value(_LAB_JOBS_HERE, "false")).lower() == "true"

    def set_run_lab_jobs_here(self, run: bool) -> None:
        self.qsettings.setValue(_LAB_JOBS_HERE, "true" if run else "false")
        self.qsettings.sync()

    # ---- folders the file dialogs start in ------------------------------------------------
    def dialog_dir(self, kind: str) -> str:
        """Where a file dialog of ``kind`` ("projects", "fonts", "annotations", "exports"…)
        starts: the folder last used for that kind, else the user's documents folder (never
        the studio's working directory, which is wherever it was launched from)."""
        value = self.qsettings.value(f"folders/{kind}")
        if isinstance(value, str) and value and Path(value).is_dir():
            return value
        return default_documents_dir()

    def remember_dir(self, kind: str, path: str | os.PathLike[str]) -> None:
        """Remember the folder of ``path`` (or ``path`` itself when it is a folder) for
        the next dialog of ``kind``."""
        p = Path(path).expanduser().absolute()
        folder = p if p.is_dir() else p.parent
        self.qsettings.setValue(f"folders/{kind}", str(folder))
        self.qsettings.sync()

    # ---- image-feature warnings on the board --------------------------------------------
    def feature_warning_min(self) -> str:
        """The lowest grade of image-feature warning the board counts as a warning."""
        value = self.qsettings.value(_FEATURE_GRADE)
        return value if value in FEATURE_GRADES else "high"

    def set_feature_warning_min(self, grade: str) -> None:
        if grade not in FEATURE_GRADES:
            raise ValueError(f"unknown grade {grade!r}; one of {', '.join(FEATURE_GRADES)}")
        self.qsettings.setValue(_FEATURE_GRADE, grade)
        self.qsettings.sync()

    # ---- any other value ----------------------------------------------------------------
    def value(self, key: str, default: object = None) -> object:
        """A stored value (for state a view restores: last concept, filters, tab)."""
        return self.qsettings.value(key, default)

    def set_value(self, key: str, value: object) -> None:
        self.qsettings.setValue(key, value)
        self.qsettings.sync()

    # ---- window geometry ----------------------------------------------------------------
    def save_window(self, window: QWidget, name: str = "main") -> None:
        """Store the window's geometry (and a main window's dock/toolbar state)."""
        self.qsettings.setValue(f"windows/{name}/geometry", window.saveGeometry())
        if isinstance(window, QMainWindow):
            self.qsettings.setValue(f"windows/{name}/state", window.saveState())
        self.qsettings.sync()

    def restore_window(self, window: QWidget, name: str = "main") -> bool:
        """Restore what :meth:`save_window` stored; False when nothing (valid) was stored."""
        geometry = self.qsettings.value(f"windows/{name}/geometry")
        if not isinstance(geometry, QByteArray) or geometry.isEmpty():
            return False
        ok = window.restoreGeometry(geometry)
        state = self.qsettings.value(f"windows/{name}/state")
        if isinstance(window, QMainWindow) and isinstance(state, QByteArray):
            window.restoreState(state)
        return ok


def _recent_entry(location: str | os.PathLike[str]) -> Path | str:
    """A recent-list entry: a lab database's URL without password, or a file's absolute path."""
    from studio.store.dbfile import is_database_url, safe_location

    if isinstance(location, str) and is_database_url(location):
        return safe_location(location)
    return Path(location).expanduser().absolute()


def default_documents_dir() -> str:
    """The user's documents folder (the home folder where the platform names none)."""
    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    if docs and Path(docs).is_dir():
        return docs
    return str(Path.home())


def ask_annotator_name(parent: QWidget | None, settings: StudioSettings) -> str | None:
    """The annotator's name: the stored one, else asked once and stored.

    Returns None (and stores nothing) when the person cancels or leaves the field empty; the
    caller may ask again at the next tagging session.
    """
    stored = settings.annotator_name()
    if stored is not None:
        return stored
    text, ok = QInputDialog.getText(
        parent,
        "Who is annotating?",
        "Your name or initials, stored with every tag you make:",
        QLineEdit.EchoMode.Normal,
        "",
    )
    if not ok or not text.strip():
        return None
    settings.set_annotator_name(text)
    return settings.annotator_name()
