"""Grab the tagging window on the demo project for the README: docs/tagging-window.png.

Usage: .venv/bin/python scripts/screenshot.py [PROJECT] [OUT.png]
(default: the demo project, built first if needed). Runs on the offscreen platform.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> None:
    from PySide6.QtWidgets import QApplication

    from studio.app import Studio
    from studio.core.keys import GlyphKey
    from studio.demo import build_demo, demo_path
    from studio.gui.main_window import MainWindow
    from studio.gui.settings import StudioSettings
    from studio.store.project import Project

    project = Path(sys.argv[1]) if len(sys.argv) > 1 else demo_path()
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("docs/tagging-window.png")
    if not project.exists():
        for _ in build_demo(project):
            pass
    app = QApplication([])
    settings = StudioSettings(os.path.join(os.path.dirname(out) or ".", ".screenshot-settings.ini"))
    window = MainWindow(Studio(Project.open(project), author="screenshot"), settings)
    window.resize(1440, 900)
    window.show()
    window.hide_missing.setChecked(True)
    window.tree.select("closure", "circle")
    window.block_combo.setCurrentIndex(window.block_combo.findData("Geometric Shapes"))
    key = GlyphKey(0x25CC, "symbola")
    row = window.model.row_of(key)
    if row is not None:
        window.grid.setCurrentIndex(window.model.index(row))
        window.grid.select_keys([key, GlyphKey(0x25CB, "symbola"), GlyphKey(0x25EF, "symbola")])
    end = time.time() + 4
    while time.time() < end:
        app.processEvents()
        time.sleep(0.01)
    window.grab().save(str(out))
    os.unlink(settings.file_name)
    print(out)


if __name__ == "__main__":
    main()
