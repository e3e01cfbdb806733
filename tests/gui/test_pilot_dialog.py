"""Puzzles ▸ Pilot study…, driven like a user: open it by its key, type the design, read
whether it covers the set, write the pilot, open it; the folder then imports back onto the
board (issue 29)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QDesktopServices

from studio.app import Studio
from studio.gui.main_window import MainWindow
from studio.gui.pilot_dialog import PilotDialog
from studio.gui.settings import StudioSettings
from studio.store.project import Project
from tests.pilot.test_results import cohort
from tests.publish.curated import SET_NAME, CuratedProject, build_curated_project

pytestmark = pytest.mark.gui

WAIT_MS = 120_000


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> CuratedProject:
    return build_curated_project(tmp_path_factory.mktemp("pilot-gui") / "curated.studio")


@pytest.fixture
def studio(curated: CuratedProject, tmp_path: Path):
    path = tmp_path / "work.studio"
    shutil.copy(curated.path, path)
    s = Studio(Project.open(path), author="eve")
    yield s
    s.close()


def set_spin(qtbot, box, value: int) -> None:
    """Type a number into a spin box as a user would: select all, type, Tab on."""
    box.setFocus()
    box.selectAll()
    qtbot.keyClicks(box, str(value))
    qtbot.keyClick(box, Qt.Key.Key_Tab)
    assert box.value() == value


def test_ctrl_alt_p_pilots_the_open_set_and_its_answers_come_back(
    qtbot, curated: CuratedProject, studio: Studio, tmp_path: Path, monkeypatch
) -> None:
    settings = StudioSettings()
    exports = tmp_path / "exports"
    exports.mkdir()
    settings.remember_dir("exports", exports)
    window = MainWindow(studio, settings)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    assert window.board.curator.set_id == 1
    with qtbot.waitActive(window):
        window.activateWindow()
    qtbot.keyClick(
        window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
    )
    dlg = window.findChild(PilotDialog)
    assert dlg is not None and dlg.isVisible()
    assert window.actions["puzzle.pilot_export"].text() == "Pilot study…"
    assert dlg.set_combo.currentText().startswith(f"{SET_NAME} — 60 puzzles")
    assert dlg.status_combo.currentData() == "any"  # a lab pilots drafts
    assert Path(dlg.folder_edit.text()).parent == exports

    # every part, 5 lists of 10 asking 4 answers a puzzle: too few, and the dialog says so
    qtbot.mouseClick(dlg.part_checks["train"], Qt.MouseButton.LeftButton)
    set_spin(qtbot, dlg.participants, 5)
    set_spin(qtbot, dlg.per_participant, 10)
    set_spin(qtbot, dlg.responses, 4)
    said = dlg.coverage_label.text()
    assert said.startswith("60 puzzles in test, train, val: 5 × 10 = 50 answers for the 240")
    assert "Too few: 24 participants would do." in said and not dlg.pilot_button.isEnabled()
    set_spin(qtbot, dlg.participants, 30)
    assert dlg.pilot_button.isEnabled() and "Too few" not in dlg.coverage_label.text()
    assert "No practice puzzles: they come from a part left out" in dlg.coverage_label.text()

    target = tmp_path / "pilot"
    dlg.folder_edit.setText(str(target))
    qtbot.mouseClick(dlg.pilot_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(dlg.finished_pilot, timeout=WAIT_MS) as done:
        pass
    assert done.args == [True], dlg.result_label.text()
    shown = dlg.result_label.text()
    assert f"of “{SET_NAME}” to {target}: 60 puzzles" in shown
    assert "30 lists of 10 puzzles over 60 puzzles" in shown and "at least 4)" in shown
    doc = json.loads((target / "pilot.json").read_text())
    assert (target / "index.html").is_file() and "set 1" in doc["source"]

    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()))
    qtbot.mouseClick(dlg.run_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(dlg.open_button, Qt.MouseButton.LeftButton)
    assert opened == [str(target / "index.html"), str(target)]
    qtbot.mouseClick(dlg.close_button, Qt.MouseButton.LeftButton)

    # the participants' files come back onto the board (Puzzles ▸ Import pilot results…)
    piloted = sorted({t["item"] for ts in doc["plan"]["lists"] for t in ts} - set(doc["catch_ids"]))
    files, truth = cohort(target, tmp_path, piloted[0], piloted[1])
    monkeypatch.setattr(window, "ask_pilot", lambda: (str(target), [str(f) for f in files]))
    found = window.import_pilot()
    assert found is not None and found["participants"] == 30
    human = studio.project.human_accuracy(1)
    assert {k: round(a / n, 4) for k, (a, n) in human.items()} == {
        k: round(v, 4) for k, v in truth.items()
    }


def test_a_folder_with_files_is_refused_and_left_as_it_was(
    qtbot, studio: Studio, tmp_path: Path
) -> None:
    dlg = PilotDialog(studio, StudioSettings(), set_id=1)
    qtbot.addWidget(dlg)
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    dlg.folder_edit.setText(str(full))
    qtbot.mouseClick(dlg.pilot_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(dlg.finished_pilot, timeout=WAIT_MS) as done:
        pass
    assert done.args == [False]
    assert "not an empty folder" in dlg.result_label.text()
    assert [p.name for p in full.iterdir()] == ["keep.txt"]
    assert dlg.pilot_button.isEnabled()
