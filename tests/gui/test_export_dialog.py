"""Puzzles ▸ Export benchmark…, driven like a user: open it by its key, choose a folder, click
Export, wait for the worker, read what the dialog says and look at the files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QApplication, QFileDialog

from studio.app import Studio
from studio.curation import Curator
from studio.gui.export_dialog import ExportDialog
from studio.gui.main_window import MainWindow
from studio.gui.settings import StudioSettings
from studio.store.project import Project
from tests.publish.curated import SET_NAME, CuratedProject, break_puzzle, build_curated_project

pytestmark = pytest.mark.gui

WAIT_MS = 120_000  # a slow machine renders and vets for a while; the test waits, times nothing


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> CuratedProject:
    return build_curated_project(tmp_path_factory.mktemp("export-gui") / "curated.studio")


@pytest.fixture
def studio(curated: CuratedProject, tmp_path: Path):
    path = tmp_path / "work.studio"
    shutil.copy(curated.path, path)
    s = Studio(Project.open(path), author="eve")
    yield s
    s.close()


def export_and_wait(qtbot, dlg: ExportDialog) -> None:
    qtbot.mouseClick(dlg.export_button, Qt.MouseButton.LeftButton)
    assert dlg.running
    with qtbot.waitSignal(dlg.finished_export, timeout=WAIT_MS):
        pass
    assert not dlg.running


def choose(monkeypatch, qtbot, dlg: ExportDialog, folder: Path) -> None:
    """Click Choose… and pick ``folder`` in the (patched) folder dialog."""
    asked: list[str] = []

    def pick(parent, caption, start):  # type: ignore[no-untyped-def]
        asked.append(start)
        return str(folder)

    monkeypatch.setattr(QFileDialog, "getExistingDirectory", pick)
    qtbot.mouseClick(dlg.choose_button, Qt.MouseButton.LeftButton)
    assert asked, "the folder dialog was not asked"


def test_ctrl_shift_b_opens_the_dialog_and_an_export_writes_the_folder(
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
    with qtbot.waitActive(window):
        window.activateWindow()
    qtbot.keyClick(
        window,
        Qt.Key.Key_B,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    dlg = window.findChild(ExportDialog)
    assert dlg is not None and dlg.isVisible()
    assert window.actions["puzzle.export"].text() == "Export benchmark…"
    # the board's open set is chosen, approved puzzles by default, a folder under "exports"
    assert dlg.set_combo.currentText().startswith(f"{SET_NAME} — 60 puzzles, 21 approved")
    assert dlg.status_combo.currentData() == "approved"
    assert Path(dlg.folder_edit.text()) == exports / SET_NAME

    # choose an empty folder as a user would, and export
    target = tmp_path / "published"
    target.mkdir()
    choose(monkeypatch, qtbot, dlg, target)
    assert dlg.folder_edit.text() == str(target)
    export_and_wait(qtbot, dlg)
    shown = dlg.result_label.text()
    assert f"Exported 21 approved puzzles of “{SET_NAME}” to {target}." in shown
    assert dlg.stage_label.text() == "Done." and dlg.progress.value() == dlg.progress.maximum()
    assert dlg.open_button.isVisible()
    ids = [
        json.loads(line)["id"]
        for line in (target / "puzzles.jsonl").read_text("utf-8").splitlines()
    ]
    assert sorted(ids) == sorted(curated.approved)
    for name in ("README.md", "croissant.json", "records.parquet", "split.json"):
        assert (target / name).is_file()
    assert settings.dialog_dir("exports") == str(tmp_path)  # remembered for next time

    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()))
    qtbot.mouseClick(dlg.open_button, Qt.MouseButton.LeftButton)
    assert opened == [str(target)]
    qtbot.mouseClick(dlg.close_button, Qt.MouseButton.LeftButton)
    assert not dlg.isVisible()


def test_a_broken_puzzle_is_named_then_left_out_with_the_checkbox(
    qtbot, curated: CuratedProject, tmp_path: Path, monkeypatch
) -> None:
    path = tmp_path / "work.studio"
    shutil.copy(curated.path, path)
    with Studio(Project.open(path), author="eve") as studio:
        curator = Curator(studio)
        shown = {pid: curator.puzzle(pid).puzzle for pid in curated.approved}
    # a puzzle whose key glyph no other approved puzzle shows: untagging it breaks that one
    broken = next(
        pid
        for pid, p in shown.items()
        if not any(p.answer_key in q.all_keys() for other, q in shown.items() if other != pid)
    )
    break_puzzle(path, broken)
    with Studio(Project.open(path), author="eve") as studio:
        dlg = ExportDialog(studio, StudioSettings())
        qtbot.addWidget(dlg)
        dlg.show()
        target = tmp_path / "out"
        dlg.folder_edit.clear()
        qtbot.keyClicks(dlg.folder_edit, str(target))

        export_and_wait(qtbot, dlg)
        shown = dlg.result_label.text()
        assert "no longer pass vetting" in shown and f"{broken}: answer " in shown
        assert dlg.stage_label.text() == "Not exported."
        assert not dlg.open_button.isVisible() and not target.exists()
        assert dlg.export_button.isEnabled()  # ready for another try

        qtbot.mouseClick(dlg.drop_check, Qt.MouseButton.LeftButton)
        assert dlg.drop_check.isChecked()
        export_and_wait(qtbot, dlg)
        shown = dlg.result_label.text()
        assert "Exported 20 approved puzzles" in shown
        assert f"Left out 1 that no longer pass vetting: {broken}." in shown
        assert broken in (target / "README.md").read_text("utf-8")
        dlg.close()
        QApplication.processEvents()


def test_licence_and_authors_typed_in_the_dialog_reach_the_card_and_croissant(
    qtbot, studio: Studio, tmp_path: Path
) -> None:
    """The dialog's Licence, Authors and Cite fields go into croissant.json and the card; with
    no licence the result says so in a warning before the folder is shared."""
    dlg = ExportDialog(studio, StudioSettings())
    qtbot.addWidget(dlg)
    dlg.show()
    first = tmp_path / "plain"
    dlg.folder_edit.clear()
    qtbot.keyClicks(dlg.folder_edit, str(first))
    export_and_wait(qtbot, dlg)
    assert "Warning: No licence given" in dlg.result_label.text()

    target = tmp_path / "licensed"
    dlg.folder_edit.clear()
    qtbot.keyClicks(dlg.folder_edit, str(target))
    dlg.license_combo.setCurrentText("")
    qtbot.keyClicks(dlg.license_combo.lineEdit(), "CC-BY-4.0")
    qtbot.keyClicks(dlg.authors_edit, "Ada Lovelace; Alan Turing")
    qtbot.keyClicks(dlg.cite_edit, "Lovelace & Turing (2026). Small.")
    export_and_wait(qtbot, dlg)
    assert "No licence" not in dlg.result_label.text()
    meta = json.loads((target / "croissant.json").read_text("utf-8"))
    assert meta["license"] == "https://spdx.org/licenses/CC-BY-4.0.html"
    assert meta["citeAs"] == "Lovelace & Turing (2026). Small."
    assert [c["name"] for c in meta["creator"]] == ["Ada Lovelace", "Alan Turing"]

    dlg.license_combo.setCurrentText("")
    qtbot.keyClicks(dlg.license_combo.lineEdit(), "not a licence")
    dlg.folder_edit.clear()
    qtbot.keyClicks(dlg.folder_edit, str(tmp_path / "refused"))
    qtbot.mouseClick(dlg.export_button, Qt.MouseButton.LeftButton)
    assert not dlg.running and "not an SPDX identifier" in dlg.result_label.text()
    assert not (tmp_path / "refused").exists()
    dlg.close()


def test_enter_in_the_folder_field_never_opens_the_folder_dialog(
    qtbot, studio: Studio, tmp_path: Path, monkeypatch
) -> None:
    """Choose… is no default button: Enter typed in a field does not pop a file dialog up
    (issue 28's walk; the pilot dialog's Choose… was already so)."""
    window = MainWindow(studio, StudioSettings())
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.export_benchmark()
    dlg = window.findChild(ExportDialog)
    assert dlg is not None
    qtbot.waitExposed(dlg)
    asked: list[str] = []
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a: asked.append("asked") or "")
    dlg.folder_edit.setFocus()
    qtbot.keyClicks(dlg.folder_edit, str(tmp_path / "typed"))
    qtbot.keyClick(dlg.folder_edit, Qt.Key.Key_Return)
    assert asked == []
    assert not dlg.choose_button.autoDefault()
    dlg.reject()
