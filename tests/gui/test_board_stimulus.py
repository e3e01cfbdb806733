"""A stimulus family's set on the curator's board, driven like a user (issue 27: generating
KiVA or polycube items from the board wrote a folder and nothing appeared to curate): Ctrl+G,
a family, a name and a folder; the items land on the board as a set; each shows its family's
sheet, key, questions and checks; A, R and C decide with undo."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from studio.gui.board_list import COLUMNS
from studio.gui.curator_board import CuratorBoard
from studio.gui.generate_dialog import GenerateSplitDialog
from studio.gui.main_window import MainWindow
from studio.stimuli.items import StimulusPuzzle

pytestmark = pytest.mark.gui

STATUS = COLUMNS.index("Status")
WAIT_MS = 120_000


@pytest.fixture
def window(curator_window):
    return curator_window


def generate_items(
    qtbot, window: MainWindow, family: str, folder: Path | None, n: int
) -> CuratorBoard:
    qtbot.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    board = window.board
    qtbot.keyClick(window, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier)
    dlg = next(d for d in window.findChildren(GenerateSplitDialog) if d.isVisible())
    dlg.family_combo.setCurrentIndex(dlg.family_combo.findData(family))
    dlg.name_edit.clear()
    qtbot.keyClicks(dlg.name_edit, "nets to vet")
    if folder is not None:
        qtbot.keyClicks(dlg.folder_edit, str(folder))
    dlg.n_spin.selectAll()
    qtbot.keyClicks(dlg.n_spin, str(n))
    with qtbot.waitSignal(board.generation_done, timeout=WAIT_MS) as done:
        qtbot.mouseClick(
            dlg.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton
        )
    assert done.args[0] is True, done.args
    # the progress dialog closed: the window has the keyboard again (a user would wait too)
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=WAIT_MS)
    return board


def test_items_need_no_folder_to_be_curated(qtbot, window: MainWindow, tmp_path: Path) -> None:
    """The board's set of a stimulus family needs no split folder (issue 27: the dialog
    insisted on one): the items are drawn into the project and shown."""
    board = generate_items(qtbot, window, "cube-net", None, 4)
    assert board.model.rowCount() == 4 and board.set_combo.currentText().startswith("nets")
    said = window.statusBar().currentMessage()
    assert "Generated “nets to vet”: 4 puzzles" in said and "split folder" not in said
    assert not list(tmp_path.rglob("items.jsonl")) and not list(tmp_path.rglob("split.json"))
    board.table.setFocus()
    qtbot.keyClick(board.table, Qt.Key.Key_Home)
    qtbot.waitUntil(lambda: board.item_sheet.picture.original is not None, timeout=WAIT_MS)


def test_generated_items_are_curated_on_the_board(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    folder = tmp_path / "nets"
    board = generate_items(qtbot, window, "cube-net", folder, 6)
    # the folder is written (pictures for vet and the baselines) and the set is on the board
    assert (folder / "items.jsonl").is_file()
    assert board.set_combo.currentText().startswith("nets to vet")
    assert board.model.rowCount() == 6
    said = window.statusBar().currentMessage()
    assert "Generated “nets to vet”: 6 puzzles" in said and f"the split folder is {folder}" in said
    # the first item: its family's sheet, its key and checks, not a glyph sheet
    board.table.setFocus()
    qtbot.keyClick(board.table, Qt.Key.Key_Home)
    cp = board.current()
    assert cp is not None and isinstance(cp.puzzle, StimulusPuzzle)
    assert board.item_sheet.isVisible() and not board.sheet_scroll.isVisible()
    qtbot.waitUntil(lambda: board.item_sheet.picture.original is not None, timeout=WAIT_MS)
    assert board.item_sheet.key_label.text().startswith("Key: ")
    assert board.item_sheet.checks.topLevelItemCount() >= 3
    assert "cube-net" in board.title.text()
    # the cube-net family offers replacement foils (F: tests/gui/test_board_item_foil.py); G
    # draws the item anew
    assert window.actions["puzzle.replace_foil"].isEnabled()
    assert board.buttons["puzzle.replace_foil"].isEnabled()
    assert window.actions["puzzle.approve"].isEnabled()
    before = dict(cp.puzzle.record)
    # drawn on a worker thread: the board answers at once and stores the item when it comes
    with qtbot.waitSignal(board.redraw_done, timeout=WAIT_MS):
        qtbot.keyClick(board.table, Qt.Key.Key_G)
        assert board.redraw_job is not None  # the key returned before the item was drawn
    assert "drawn anew (Ctrl+Z undoes it)" in window.statusBar().currentMessage()
    again = board.current()
    assert again is not None and again.id == cp.id
    assert again.puzzle.record["regenerated"] == 1

    def drawn(record: dict) -> dict:
        return {k: v for k, v in record.items() if k not in ("regenerated", "verdict")}

    assert drawn(dict(again.puzzle.record)) != drawn(before)  # another item, not a recount
    assert again.puzzle.concept == cp.puzzle.concept
    qtbot.waitUntil(lambda: board.item_sheet.picture.original is not None, timeout=WAIT_MS)
    first = cp.id
    # C, a comment, Enter; A approves it and opens the next item
    qtbot.keyClick(board.table, Qt.Key.Key_C)
    qtbot.keyClicks(board.comment_field, "net reads well")
    qtbot.keyClick(board.comment_field, Qt.Key.Key_Return)
    qtbot.keyClick(board.table, Qt.Key.Key_A)
    project = window.studio.project
    stored = {s.puzzle_id: s for s in project.stored_puzzles(board.curator.set_id)}
    assert stored[first].status == "approved" and stored[first].comment == "net reads well"
    assert board.current().id != first
    second = board.current().id
    qtbot.keyClick(board.table, Qt.Key.Key_R)
    assert {s.puzzle_id: s for s in project.stored_puzzles(board.curator.set_id)}[
        second
    ].status == "rejected"
    # Ctrl+Z takes the rejection back
    qtbot.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert {s.puzzle_id: s for s in project.stored_puzzles(board.curator.set_id)}[
        second
    ].status == "draft"
    # the statistics are the family's: six items over the parts, the key's position
    assert board.wait_for_stats(WAIT_MS)
    assert board.stats_panel.summary.text().startswith("6 puzzles shown")
    # a glyph split's own measures (tuple coverage, foil values) are not shown empty for it
    panel = board.stats_panel
    assert not panel.coverage_heading.isVisible() and not panel.foil_table.isVisible()
    assert panel.rule_chart.isVisible()
    # Ctrl+Shift+B publishes the approved item as a split folder with its card
    from studio.gui.export_dialog import ExportDialog
    from studio.stimuli.split import is_stimulus_split, read_stimulus_split

    qtbot.keyClick(
        window,
        Qt.Key.Key_B,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    dlg = window.findChild(ExportDialog)
    assert dlg is not None and dlg.isVisible()
    assert dlg.set_combo.currentText().startswith("nets to vet")
    published = tmp_path / "published"
    dlg.folder_edit.setText(str(published))
    with qtbot.waitSignal(dlg.finished_export, timeout=WAIT_MS) as finished:
        qtbot.mouseClick(dlg.export_button, Qt.MouseButton.LeftButton)
    assert finished.args == [True], dlg.result_label.text()
    assert "Exported 1 approved" in dlg.result_label.text()
    assert is_stimulus_split(published)
    assert [r["id"] for r in read_stimulus_split(published)[1]] == [first]
    assert (published / "README.md").read_text("utf-8").startswith("# nets to vet")
    dlg.reject()


def test_an_item_damaged_in_the_store_is_shown_with_what_is_wrong(qtbot, tmp_path: Path) -> None:
    """Hostile fields of a stored record (a lab's database edited by hand) never raise out of
    the item view: what cannot be read is said beside the sheet."""
    import json

    from studio.gui.item_sheet import ItemSheetView
    from studio.stimuli.pictures import ItemSheets
    from studio.stimuli.split import generate_stimulus_split

    out = tmp_path / "nets"
    generate_stimulus_split("cube-net", out, 1, seed=3)
    record = json.loads((out / "items.jsonl").read_text("utf-8").splitlines()[0])
    record |= {"questions": [{"options": 5}], "verdict": "zz"}
    view = ItemSheetView(ItemSheets(tmp_path / "cache"))
    qtbot.addWidget(view)
    view.show()
    view.show_item(StimulusPuzzle.from_record(record))
    qtbot.waitUntil(lambda: view.picture.original is not None, timeout=WAIT_MS)
    said = view.state.text()
    assert "questions cannot be read" in said and "recorded verdict is damaged" in said
    assert view.checks.topLevelItemCount() == 0
    view.shutdown()
