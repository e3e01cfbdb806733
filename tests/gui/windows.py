"""Opening the studio's window in a GUI test as a user sees it: sized, shown, exposed and
active (keys go to it). One way for every test; the sizes are the tests' own."""

from __future__ import annotations

from typing import Any

from studio.gui.main_window import MainWindow
from studio.gui.settings import StudioSettings


def show_window(qtbot: Any, studio: Any, size: tuple[int, int] = (1280, 800)) -> MainWindow:
    window = MainWindow(studio, StudioSettings())
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitActive(window):
        window.activateWindow()
    return window
