"""Errors no handler caught are shown in the window, and the studio keeps running."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from studio.core.errors import StudioError
from studio.gui.main import install_error_hook

pytestmark = pytest.mark.gui


def _boxes() -> list[QMessageBox]:
    return [
        w
        for w in QApplication.topLevelWidgets()
        if isinstance(w, QMessageBox) and w.objectName() == "uncaughtErrorBox" and w.isVisible()
    ]


def test_a_studio_error_is_shown_with_its_message(qtbot, capsys) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    previous = install_error_hook(lambda: window)
    try:
        error = StudioError("damaged: line 3 is not valid JSON", Path("/data/x.jsonl"))
        sys.excepthook(StudioError, error, None)
        qtbot.waitUntil(lambda: bool(_boxes()))
        box = _boxes()[0]
        assert box.text() == "/data/x.jsonl: damaged: line 3 is not valid JSON"
        assert "error: /data/x.jsonl" in capsys.readouterr().err
        box.close()
    finally:
        sys.excepthook = previous


def test_a_bug_is_shown_as_one_and_its_traceback_saved(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANALOGY_STUDIO_LOG_DIR", str(tmp_path))
    window = QWidget()
    qtbot.addWidget(window)
    previous = install_error_hook(lambda: window)
    try:
        try:
            {}["missing"]
        except KeyError as e:
            sys.excepthook(KeyError, e, e.__traceback__)
        qtbot.waitUntil(lambda: bool(_boxes()))
        box = _boxes()[0]
        assert "a bug in Analogy Studio" in box.text() and "KeyError" in box.text()
        logs = list(tmp_path.glob("crash-*.log"))
        assert len(logs) == 1 and str(logs[0]) in box.text()
        assert "test_error_hook.py" in logs[0].read_text()
        box.close()
    finally:
        sys.excepthook = previous
