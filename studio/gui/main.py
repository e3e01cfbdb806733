"""Start the studio window: ``analogy-studio gui [PROJECT] [--demo]``."""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from PySide6.QtCore import QEventLoop, Qt, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox, QProgressDialog, QWidget

from studio.core.errors import StudioError, bug_message, save_crash_log
from studio.gui.jobs import ThreadJob


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

    def progress(p: tuple[str, int, int]) -> None:
        stage, done, total = p
        dlg.setLabelText(f"Building the demo project: {stage}…")
        dlg.setMaximum(max(total, 1))
        dlg.setValue(done)

    job = ThreadJob.call(
        build_demo,
        path,
        yielded=progress,
        errored=lambda e: outcome.setdefault("error", e),
        ended=loop.quit,
    )
    dlg.canceled.connect(job.cancel)
    dlg.show()
    loop.exec()
    dlg.close()
    if "error" in outcome:
        QMessageBox.critical(
            parent, "Demo project", f"The demo project could not be built:\n{outcome['error']}"
        )
        return False
    return path.exists()


ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], None]


def install_error_hook(parent: Callable[[], QWidget | None] = lambda: None) -> ExceptHook:
    """Errors no handler caught (in a slot, a timer, a queued call) are shown, and the studio
    keeps running: a StudioError with its message, as the CLI prints it; anything else as a bug,
    its traceback saved to the crash log. Returns the hook it replaced."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if isinstance(exc, KeyboardInterrupt):
            previous(kind, exc, tb)
            return
        if isinstance(exc, StudioError):
            title, text = "Analogy Studio", str(exc)
        else:
            title, text = "Analogy Studio: internal error", bug_message(exc, save_crash_log(exc))
            traceback.print_exception(kind, exc, tb)  # on stderr too, for whoever started it
        print(f"analogy-studio: error: {text}", file=sys.stderr)
        if QApplication.instance() is not None:
            box = QMessageBox(QMessageBox.Icon.Warning, title, text, parent=parent())
            box.setObjectName("uncaughtErrorBox")
            box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            box.open()

    sys.excepthook = hook
    return previous


#: Set to a file name, the studio writes the wall-clock time (``time.time()``) at which its first
#: window is up there and quits: how the installer's checks measure cold start to first window
#: (packaging/verify-clean.sh) without a screen or a person.
FIRST_WINDOW_ENV = "ANALOGY_STUDIO_FIRST_WINDOW"


def _first_window_up(path: str, app: QApplication) -> None:
    Path(path).write_text(f"{time.time():.3f}\n", encoding="utf-8")
    app.quit()


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
    previous_hook = install_error_hook(lambda: window)
    window.show()
    first_window = os.environ.get(FIRST_WINDOW_ENV)
    if first_window:  # runs once the event loop has shown and painted the window
        QTimer.singleShot(0, lambda: _first_window_up(first_window, app))
    try:
        code = app.exec()
    finally:
        sys.excepthook = previous_hook
    studio.close()
    return int(code)
