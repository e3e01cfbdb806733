"""Run under a bare X server (Xvfb, no window manager) by test_dialog_focus.py: does the
main window get the keyboard back when a dialog closes? Prints one JSON object.

Twice: first without :class:`studio.gui.widgets.RefocusAfterDialogs` (the X server leaves
focus nowhere, as the issue saw: shortcuts dead until a click), then with it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDialog

from studio.app import Studio
from studio.core.schema import bundled_schema_path, load_schema
from studio.glyphs.fonts import FontCatalog
from studio.glyphs.render import RenderCache
from studio.gui.main_window import MainWindow
from studio.gui.settings import StudioSettings
from studio.store.project import Project


def wait(app: QApplication, cond: Callable[[], bool], ms: int = 3000) -> bool:
    waited = 0
    while not cond() and waited < ms:
        QTest.qWait(20)
        waited += 20
    return cond()


def close_preferences(app: QApplication, window: MainWindow) -> str:
    """Open Preferences with its shortcut, close it with Escape; who has the keyboard then."""
    assert wait(app, lambda: app.activeWindow() is window), "the window never became active"
    QTest.keyClick(window, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    dlg = window.preferences_dialog
    assert isinstance(dlg, QDialog)
    assert wait(app, lambda: app.activeWindow() is dlg), "the dialog never became active"
    QTest.keyClick(dlg, Qt.Key.Key_Escape)
    wait(app, lambda: app.activeWindow() is window, ms=1500)
    active = app.activeWindow()
    return "window" if active is window else ("none" if active is None else type(active).__name__)


def main(tmp: Path) -> None:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    project = Project.create(tmp / "focus.studio", load_schema(bundled_schema_path()))
    studio = Studio(
        project,
        catalog=FontCatalog.scan(cache_dir=tmp / "fonts"),
        cache=RenderCache(tmp / "renders"),
        author="ann",
    )
    window = MainWindow(studio, StudioSettings())
    window.show()
    window.activateWindow()
    out = {"platform": app.platformName()}
    app.removeEventFilter(window._refocus)  # as before the fix
    out["without"] = close_preferences(app, window)
    window.activateWindow()
    app.installEventFilter(window._refocus)
    out["with"] = close_preferences(app, window)
    print(json.dumps(out), flush=True)
    window.running_jobs = lambda: []  # type: ignore[method-assign]
    window.close()
    studio.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
