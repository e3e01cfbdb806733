"""Start the studio window: ``analogy-studio gui [PROJECT] [--demo]``."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QEventLoop, Qt
from PySide6.QtWidgets import QApplication, QMessageBox, QProgressDialog, QWidget
from superqt.utils import create_worker

from studio.core.errors import StudioError


def build_demo_with_progress(path: Path, parent: QWidget | None = None) -> bool:
    """Build the demo project in a worker thread behind a progress dialog. False if cancelled
    or failed (the message has been shown)."""
    from studio.demo import build_demo

    dlg = QProgressDialog(
        "Building the demo project from the UA annotations…", "Cancel", 0, 0, parent
    )
    dlg.setWindowTitle("Analogy Studio")
    dlg.setWindowModality(Qt.WindowModality.ApplicationModal)
    dlg.setMinimumDuration(0)
    dlg.setObjectName("demoProgress")
    outcome: dict[str, object] = {}
    loop = QEventLoop()
    worker = create_worker(build_demo, path)

    def progress(p: tuple[str, int, int]) -> None:
        stage, done, total = p
        dlg.setLabelText(f"Building the demo project: {stage}…")
        dlg.setMaximum(max(total, 1))
        dlg.setValue(done)

    worker.yielded.connect(progress)
    worker.errored.connect(lambda e: outcome.setdefault("error", e))
    worker.finished.connect(loop.quit)
    dlg.canceled.connect(worker.quit)
    worker.start()
    dlg.show()
    loop.exec()
    dlg.close()
    if "error" in outcome:
        QMessageBox.critical(
            parent, "Demo project", f"The demo project could not be built:\n{outcome['error']}"
        )
        return False
    return path.exists()


def run_gui(project: str | None = None, demo: bool = False) -> int:
    from studio.app import Studio
    from studio.demo import demo_path
    from studio.gui.main_window import MainWindow
    from studio.gui.settings import StudioSettings, ask_annotator_name
    from studio.store.project import Project

    app = QApplication.instance() or QApplication(sys.argv)
    app.setApplicationName("Analogy Studio")
    app.setOrganizationName("Analogy Studio")
    settings = StudioSettings()
    # asked once; a person who declines is asked again before their first tag, and the status
    # bar says the name is not set meanwhile (never a silent "unknown")
    author = ask_annotator_name(None, settings) or ""
    if project is None:
        recent = [p for p in settings.recent_projects() if Path(p).exists()]
        if demo or not recent:
            path = demo_path()
            if not path.exists() and not build_demo_with_progress(path):
                return 1
        else:
            path = Path(recent[0])
    else:
        path = Path(project)
    try:
        opened = Project.open(path)
    except StudioError as e:
        QMessageBox.critical(None, "Cannot open the project", str(e))
        print(f"analogy-studio: error: {e}", file=sys.stderr)
        return 2
    settings.add_recent_project(path)
    studio = Studio(opened, author=author)
    window = MainWindow(studio, settings)
    window.show()
    code = app.exec()
    studio.close()
    return int(code)
