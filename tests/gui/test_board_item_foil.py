"""Replace foil (F) on a stimulus item, driven like a user (issue 27): the family's own
candidates are proposed and drawn off the GUI thread, arrow keys choose one, Enter replaces the
foil, the item's sheet shows it, Ctrl+Z restores the item; a family without replacement foils
keeps F off and says why."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from studio.core.errors import StudioError
from studio.gui.item_foil_dialog import ReplaceItemFoilDialog
from studio.gui.main_window import MainWindow
from studio.stimuli.items import StimulusPuzzle
from studio.stimuli.pictures import record_digest
from studio.stimuli.split import generate_stimulus_split, read_stimulus_split

pytestmark = pytest.mark.gui

WAIT_MS = 60_000


@pytest.fixture
def window(curator_window):
    return curator_window


def open_set(qtbot, window: MainWindow, folder: Path, records: list | None = None):
    qtbot.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    board = window.board
    curator = board.curator
    if records is None:
        curator.import_prepared(curator.prepare_folder_import(folder, "nets"))
    else:
        meta = {"family": records[0]["family"], "seed": 1}
        curator.import_prepared(curator.prepare_stimulus_import("plain", meta, records))
    board.reload()
    board.table.setFocus()
    qtbot.keyClick(board.table, Qt.Key.Key_Home)
    qtbot.waitUntil(lambda: board.item_sheet.picture.original is not None, timeout=WAIT_MS)
    return board


def test_f_replaces_an_item_s_foil_and_ctrl_z_restores_it(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    folder = tmp_path / "nets"
    generate_stimulus_split("cube-net", folder, 3, seed=4, options={"size": 96})
    board = open_set(qtbot, window, folder)
    cp = board.current()
    assert cp is not None and isinstance(cp.puzzle, StimulusPuzzle)
    old = cp.puzzle
    before_sheet = board.item_sheet.picture.original.toImage()
    assert window.actions["puzzle.replace_foil"].isEnabled()
    assert board.buttons["puzzle.replace_foil"].isEnabled()

    qtbot.keyClick(board.table, Qt.Key.Key_F)
    dlg = board.replace_dialog
    assert isinstance(dlg, ReplaceItemFoilDialog) and dlg.isVisible()
    # the candidates come from the render thread, and each tile's picture after them
    qtbot.waitUntil(lambda: dlg.list.count() > 1 and not dlg.busy, timeout=WAIT_MS)
    foil = dlg.foil()
    assert foil == old.foils[0]
    assert all(not dlg.list.item(k).icon().isNull() for k in range(dlg.list.count()))
    assert dlg.now_picture.pixmap() is not None and not dlg.now_picture.pixmap().isNull()
    assert dlg.preview.original is not None  # the whole item with the chosen candidate
    # the picture does not mark the key, so the dialog says which it is (an outside review)
    assert dlg.key_label.text().startswith("Key: ") and "the key stays" in dlg.key_label.text()
    assert "valid by every check" in dlg.note.text()
    # the first is chosen; → picks the second and Enter replaces the foil with it
    assert dlg.chosen() is dlg.replacements[0]
    qtbot.keyClick(dlg.list, Qt.Key.Key_Right)
    choice = dlg.chosen()
    assert choice is dlg.replacements[1]
    qtbot.keyClick(dlg.list, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: board.replace_dialog is None, timeout=WAIT_MS)
    # the dialog closed: the window has the keyboard again
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=WAIT_MS)

    after = board.current()
    assert after is not None and after.id == old.id
    new = after.puzzle
    assert isinstance(new, StimulusPuzzle)
    assert dict(new.record) == dict(choice.record)
    assert new.answer_record(foil) != old.answer_record(foil)
    assert [new.answer_record(j) for j in range(4) if j != foil] == [
        old.answer_record(j) for j in range(4) if j != foil
    ]
    # the item's sheet is the new one (drawn in the dialog, so shown at once)
    assert board.item_sheet.item is not None
    assert record_digest(board.item_sheet.item.record) == record_digest(choice.record)
    qtbot.waitUntil(lambda: board.item_sheet.picture.original is not None, timeout=WAIT_MS)
    assert board.item_sheet.picture.original.toImage() != before_sheet
    assert "Replace answer" in window.statusBar().currentMessage()

    qtbot.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    restored = board.current()
    assert restored is not None and dict(restored.puzzle.record) == dict(old.record)
    qtbot.waitUntil(lambda: board.item_sheet.picture.original is not None, timeout=WAIT_MS)
    assert board.item_sheet.picture.original.toImage() == before_sheet


def test_f_moves_on_from_a_kiva_option_that_has_no_replacement(
    qtbot, window: MainWindow, tmp_path: Path
) -> None:
    """ "No change" is in every KiVA trial: F lands on the foil that can be replaced, and
    choosing "no change" in the combo says why it cannot."""
    folder = tmp_path / "trials"
    options = {
        "size": 64,
        "mode": "kiva-adults",
        "objects": ("l-block", "key", "toy-car"),
        "no_change_share": 0.0,
    }
    generate_stimulus_split("kiva", folder, 4, seed=6, options=options)
    board = open_set(qtbot, window, folder)
    # a trial whose sibling change has others the design offers (a reflection has none)
    for row in board.curator.summaries():
        item = board.curator.puzzle(row.puzzle_id).puzzle
        ext = next(q for q in item.record["questions"] if q["id"] == "extrapolate")
        sibling = ext["option_ids"].index(item.record["sibling"])
        no_change = ext["option_ids"].index("no-change")
        try:
            board.curator.replacement_items(item.id, sibling, 1)
        except StudioError:
            continue
        break
    assert board.select_puzzle(item.id)
    # F asks for the first foil, here "no change": the dialog moves on to the sibling
    assert item.foils[0] == no_change
    qtbot.keyClick(board.table, Qt.Key.Key_F)
    dlg = board.replace_dialog
    assert isinstance(dlg, ReplaceItemFoilDialog)
    qtbot.waitUntil(lambda: not dlg.busy and dlg.list.count() > 0, timeout=WAIT_MS)
    assert dlg.foil() == sibling
    dlg.foil_combo.setCurrentIndex(dlg.foil_combo.findData(no_change))
    qtbot.waitUntil(lambda: not dlg.busy, timeout=WAIT_MS)
    assert dlg.list.count() == 0 and dlg.chosen() is None
    assert "shows no change, which every KiVA trial offers" in dlg.note.text()
    dlg.reject()
    assert dict(board.current().puzzle.record) == dict(item.record)


def test_a_family_without_replacement_foils_keeps_f_off_and_says_why(
    qtbot, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from studio.plugins import family, registry

    plain = replace(family("cube-net"), id="plain-net", label="Plain nets", foil_candidates=None)
    reg = registry("families")
    monkeypatch.setitem(reg._entries, "plain-net", plain)
    monkeypatch.setitem(reg._meta, "plain-net", {})
    folder = tmp_path / "nets"
    generate_stimulus_split("cube-net", folder, 2, seed=4, options={"size": 64})
    rows = [r | {"family": "plain-net"} for r in read_stimulus_split(folder)[1]]
    board = open_set(qtbot, window, folder, rows)
    assert isinstance(board.current().puzzle, StimulusPuzzle)
    assert not window.actions["puzzle.replace_foil"].isEnabled()
    button = board.buttons["puzzle.replace_foil"]
    assert not button.isEnabled()
    assert button.toolTip().startswith("the Plain nets family offers no replacement foils")
    qtbot.keyClick(board.table, Qt.Key.Key_F)
    assert board.replace_dialog is None
