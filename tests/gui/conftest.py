"""GUI tests run on Qt's offscreen platform; settings never touch the user's real ones."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point StudioSettings at a fresh INI file for every test."""
    path = tmp_path / "settings.ini"
    monkeypatch.setenv("ANALOGY_STUDIO_SETTINGS", str(path))
    return path


@pytest.fixture(autouse=True)
def no_modal_dialogs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A modal dialog nobody answers would hang the run: make any unexpected one fail fast.
    Tests that expect a prompt patch it (or the widget's ask/confirm method) themselves."""
    from PySide6.QtWidgets import QInputDialog, QMessageBox

    def unexpected(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"unexpected modal dialog: {args[1:3]!r}")

    for name in ("question", "warning", "information", "critical"):
        monkeypatch.setattr(QMessageBox, name, unexpected)
    for name in ("getText", "getItem", "getInt"):
        monkeypatch.setattr(QInputDialog, name, unexpected)


@pytest.fixture
def show_main_window(qtbot):
    """Open the studio's window on a Studio as a user sees it: 1280×800, shown, active."""
    from tests.gui.windows import show_window

    return lambda studio: show_window(qtbot, studio)


@pytest.fixture
def curator_window(tmp_path: Path, show_main_window):
    """The main window on a new, empty project (the curator "curator"), 1280×800 and active:
    where the board's stimulus tests generate and curate their items."""
    from studio.app import Studio
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.project import Project

    studio = Studio(
        Project.create(tmp_path / "items.studio", load_schema(bundled_schema_path())),
        author="curator",
    )
    w = show_main_window(studio)
    yield w
    w.running_jobs = lambda: []  # type: ignore[method-assign]
    w.close()
    studio.close()
