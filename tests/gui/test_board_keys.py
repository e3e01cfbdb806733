"""The curator's board at keyboard speed, driven like a user: decisions without dialogs, the
comment field, next/previous flagged puzzle, bulk approval, the preselected foil, graded
image-feature warnings (threshold and dismissal), the list at 1280×800, the statistics'
"updating…" state, and no timer started from a worker thread."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QtMsgType, qInstallMessageHandler
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from studio import splits
from studio.app import Studio
from studio.curation import PuzzleFilter
from studio.demo import build_demo
from studio.generate.params import SplitParams
from studio.gui.board_list import COLUMNS, STATUS_COL
from studio.gui.curator_board import CuratorBoard
from studio.gui.foil_dialog import ReplaceFoilDialog
from studio.gui.generate_dialog import GenerateSplitDialog
from studio.gui.main_window import MainWindow
from studio.gui.settings import FEATURE_GRADES, StudioSettings
from studio.store.project import Project
from tests.gui.windows import show_window

pytestmark = pytest.mark.gui

CTRL_SHIFT = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier


@pytest.fixture(scope="session")
def demo_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """UA's public annotations plus Symbola's Geometric Shapes, rendered."""
    path = tmp_path_factory.mktemp("demo") / "demo.studio"
    for _ in build_demo(path, blocks=["Geometric Shapes"]):
        pass
    return path


@pytest.fixture
def project_path(demo_project: Path, tmp_path: Path) -> Path:
    path = tmp_path / "keys.studio"
    shutil.copy(demo_project, path)
    return path


_open: list[Studio] = []


@pytest.fixture(autouse=True)
def _close_studios():
    yield
    while _open:
        _open.pop().close()


def open_board(qtbot, path: Path, size: tuple[int, int] = (1280, 800)) -> MainWindow:
    studio = Studio(Project.open(path), author="curator")
    _open.append(studio)
    window = show_window(qtbot, studio, size)
    qtbot.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(window.board.isVisible)
    return window


def import_split(window: MainWindow, n: int = 120, seed: int = 3) -> None:
    """A split made and vetted (image features included) by the functions the board's job
    calls."""
    studio = window.studio
    params = SplitParams(n=n, sampling="balanced", seed=seed)
    inputs = splits.split_inputs(studio)
    results = splits.generate(studio, params, inputs=inputs)
    keys = {k for r in results for p in r.puzzles for k in p.all_keys()}
    features = splits.feature_index({k: inputs.images[k] for k in keys})
    verdicts = splits.vet(results[0].puzzles, inputs.annotations, studio.schema, features)
    window.board.curator.import_results("keys", params, results, verdicts)


def shown(board: CuratorBoard, col: int = STATUS_COL) -> dict[str, str]:
    return {
        board.model.puzzle(r).id: board.model.index(r, col).data()
        for r in range(board.model.rowCount())
    }


def row_of_current(board: CuratorBoard) -> int:
    return board.table.currentIndex().row()


def choose_grade(qtbot, board: CuratorBoard, grade: str) -> None:
    combo = board.grade_combo
    combo.setFocus()
    while combo.currentData() != grade:
        key = (
            Qt.Key.Key_Down
            if FEATURE_GRADES.index(grade) > FEATURE_GRADES.index(combo.currentData())
            else Qt.Key.Key_Up
        )
        qtbot.keyClick(combo, key)
    board.table.setFocus()


def test_approve_and_reject_apply_at_once_and_move_on(qtbot, project_path: Path) -> None:
    window = open_board(qtbot, project_path)
    board = window.board
    import_split(window, n=60)
    board.table.setFocus()
    first = board.current_id()
    assert row_of_current(board) == 0
    qtbot.keyClick(board.table, Qt.Key.Key_A)
    assert shown(board)[first] == "approved"
    assert row_of_current(board) == 1  # the next puzzle is open, no dialog in between
    assert not [w for w in QApplication.topLevelWidgets() if w.isModal() and w.isVisible()]

    # C types a comment; Enter gives the keys back; R rejects with it and moves on
    second = board.current_id()
    qtbot.keyClick(board.table, Qt.Key.Key_C)
    assert board.comment_field.hasFocus()
    qtbot.keyClicks(board.comment_field, "foils too alike")  # the letters stay text
    assert shown(board)[second] != "approved"
    qtbot.keyClick(board.comment_field, Qt.Key.Key_Return)
    assert board.table.hasFocus() and board.comment_field.text() == "foils too alike"
    qtbot.keyClick(board.table, Qt.Key.Key_R)
    assert shown(board)[second] == "rejected" and row_of_current(board) == 2
    assert board.comment_field.text() == ""
    stored = window.studio.project.stored_puzzle(board.curator.set_id, second)
    assert (stored.status, stored.comment) == ("rejected", "foils too alike")
    [event] = [
        e
        for e in window.studio.project.puzzle_events(board.curator.set_id, second)
        if e.kind == "status"
    ]
    assert event.detail["comment"] == "foils too alike" and event.detail["new"] == "rejected"
    assert window.actions["edit.undo"].text() == (f"Undo Reject puzzle {second} (foils too alike)")

    # Escape throws a typed comment away
    third = board.current_id()
    qtbot.keyClick(board.table, Qt.Key.Key_C)
    qtbot.keyClicks(board.comment_field, "never mind")
    qtbot.keyClick(board.comment_field, Qt.Key.Key_Escape)
    assert board.table.hasFocus() and board.comment_field.text() == ""
    qtbot.keyClick(board.table, Qt.Key.Key_A)
    assert window.studio.project.stored_puzzle(board.curator.set_id, third).comment == ""

    # undo by keyboard, one decision at a time
    qtbot.keyClick(board.table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(board.table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert shown(board)[second] != "rejected" and shown(board)[third] != "approved"
    assert shown(board)[first] == "approved"


def test_next_and_previous_flagged_and_the_threshold(qtbot, project_path: Path) -> None:
    window = open_board(qtbot, project_path)
    board = window.board
    import_split(window, n=120)
    board.table.setFocus()
    choose_grade(qtbot, board, "low")  # every image-feature warning flags
    assert StudioSettings().feature_warning_min() == "low"  # the user's, stored at once
    assert board.curator.feature_warning_min == "low"
    statuses = shown(board)
    ids = list(statuses)
    flagged = [i for i in ids if statuses[i] == "flagged"]
    assert len(flagged) >= 3
    assert board.count_label.text().endswith(f", {len(flagged)} flagged")

    board.select_row(0)
    seen = []
    for _ in flagged:
        qtbot.keyClick(board.table, Qt.Key.Key_N)
        seen.append(board.current_id())
    assert seen == flagged
    qtbot.keyClick(board.table, Qt.Key.Key_N)  # from the last one back to the first
    assert board.current_id() == flagged[0]
    assert "first flagged" in window.statusBar().currentMessage()
    qtbot.keyClick(board.table, Qt.Key.Key_N, Qt.KeyboardModifier.ShiftModifier)
    assert board.current_id() == flagged[-1]
    qtbot.keyClick(board.table, Qt.Key.Key_P)
    assert board.current_id() == flagged[-2]

    # approving a flagged puzzle takes it out of the N round
    qtbot.keyClick(board.table, Qt.Key.Key_A)
    board.select_row(0)
    qtbot.keyClick(board.table, Qt.Key.Key_N)
    remaining = [i for i in flagged if i != flagged[-2]]
    assert board.current_id() == remaining[0]

    # the default threshold (high) flags fewer: the low-grade ones read as draft
    choose_grade(qtbot, board, "high")
    high = [i for i, s in shown(board).items() if s == "flagged"]
    assert set(high) < set(remaining)
    quiet = next(i for i in remaining if i not in high)
    row = board.model.row_of(quiet)
    assert shown(board)[quiet] == "draft"
    assert board.model.index(row, COLUMNS.index("Warn.")).data() == ""
    tip = board.model.index(row, 0).data(Qt.ItemDataRole.ToolTipRole)
    assert "not counted" in tip and "img-" in tip
    # its warning stays on the sheet, marked with its grade
    board.select_puzzle(quiet)

    def texts() -> list[str]:
        return [board.evidence_list.item(i).text() for i in range(board.evidence_list.count())]

    qtbot.waitUntil(lambda: any(t.startswith("[grade ") for t in texts()), timeout=10000)
    assert any(t.startswith(("[grade low]", "[grade medium]")) for t in texts())


def test_dismiss_a_feature_for_the_split_is_undoable(qtbot, project_path: Path) -> None:
    window = open_board(qtbot, project_path)
    board = window.board
    import_split(window, n=120)
    choose_grade(qtbot, board, "low")
    assert board.curator.feature_warning_min == "low"
    flagged_before = [i for i, s in shown(board).items() if s == "flagged"]
    assert flagged_before, board.count_label.text()
    board.select_puzzle(flagged_before[0])
    qtbot.waitUntil(lambda: bool(board.sheet.evidence), timeout=10000)  # annotations read
    feature = board.sheet.evidence[0].finding.concept
    assert feature.startswith("img-")
    button = board.dismiss_button
    assert button.isVisible() and button.text() == f"Dismiss {feature} warnings in this split"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert board.curator.dismissed_features() == {feature}
    assert button.text() == f"Count {feature} warnings again in this split"
    flagged_after = [i for i, s in shown(board).items() if s == "flagged"]
    assert len(flagged_after) < len(flagged_before)
    for pid in set(flagged_before) - set(flagged_after):
        assert {w.concept for w in board.curator.puzzle(pid).warnings} == {feature}
    assert window.actions["edit.undo"].text() == f"Undo Dismiss {feature} warnings in “keys”"
    qtbot.keyClick(board.table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert [i for i, s in shown(board).items() if s == "flagged"] == flagged_before


def test_approve_all_shown_without_errors(qtbot, project_path: Path) -> None:
    window = open_board(qtbot, project_path)
    board = window.board
    import_split(window, n=60)
    curator = board.curator
    # plant an error: a foil from the key's own folder completes the intended rule
    cp = next(
        c
        for c in curator.puzzles(PuzzleFilter(rule="constant", status="draft"))
        if not c.puzzle.shift
    )
    p = cp.puzzle
    planted = next(
        g for g in curator.annotations.folder(p.concept, p.values[-1][-1]) if g not in p.all_keys()
    )
    curator.replace_foil(p.id, p.foils[0], planted)
    assert shown(board)[p.id] == "flagged"
    # only the arithmetic puzzles are shown
    board.rule_combo.setCurrentIndex(board.rule_combo.findData("constant"))
    listed = list(shown(board))
    board.table.setFocus()
    qtbot.keyClick(board.table, Qt.Key.Key_A, CTRL_SHIFT)
    statuses = shown(board)
    assert statuses[p.id] == "flagged"
    assert all(statuses[i] == "approved" for i in listed if i != p.id)
    others = [c for c in curator.puzzles() if c.puzzle.rule != "constant"]
    assert others and all(c.status != "approved" for c in others)
    assert window.actions["edit.undo"].text() == f"Undo Approve {len(listed) - 1} puzzles"
    said = window.statusBar().currentMessage()
    assert f"Approved {len(listed) - 1} of the {len(listed)}" in said
    assert "1 flagged left for you to decide one by one" in said  # the planted one (issue 28)
    qtbot.keyClick(board.table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert not [i for i, s in shown(board).items() if s == "approved"]


def test_replace_foil_preselects_the_best_and_enter_takes_it(qtbot, project_path: Path) -> None:
    window = open_board(qtbot, project_path)
    board = window.board
    import_split(window, n=60)
    curator = board.curator
    pid = next(c.id for c in curator.puzzles() if c.puzzle.layout != "odd-one-out")
    board.select_puzzle(pid)
    board.table.setFocus()
    qtbot.keyClick(board.table, Qt.Key.Key_F)
    [dlg] = [d for d in window.findChildren(ReplaceFoilDialog) if d.isVisible()]
    foil = dlg.foil()
    best = curator.propose_replacements(pid, foil)[0]
    assert dlg.chosen() == best
    assert dlg.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()
    qtbot.keyClick(dlg.list, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not dlg.isVisible())
    assert curator.puzzle(pid).puzzle.answers[foil] == best


def test_status_is_visible_at_1280x800(qtbot, project_path: Path) -> None:
    window = open_board(qtbot, project_path, (1280, 800))
    board = window.board
    import_split(window, n=60)
    qtbot.waitUntil(lambda: board.splitter.sizes()[0] > 0)
    QApplication.processEvents()
    header = board.table.horizontalHeader()
    right = header.sectionViewportPosition(STATUS_COL) + header.sectionSize(STATUS_COL)
    assert 0 < right <= board.table.viewport().width()
    assert not board.table.horizontalScrollBar().isVisible()
    assert board.table.isColumnHidden(COLUMNS.index("Shortcut"))  # no baseline flags yet


def test_stats_show_updating_and_drop_an_older_result(qtbot, project_path: Path) -> None:
    window = open_board(qtbot, project_path)
    board = window.board
    import_split(window, n=60)
    assert board.wait_for_stats()
    panel = board.stats_panel
    assert not panel.updating_label.isVisible()
    board.table.setFocus()
    qtbot.keyClick(board.table, Qt.Key.Key_A)
    assert panel.updating_label.isVisible()  # at once, before the worker starts
    shown_before = panel.stats
    # a result of an older request arriving late is not shown
    board._stats_done(board._stats_shown, board.curator.set_id, {"all": {"puzzles": 1}})
    assert panel.stats is shown_before
    assert board.wait_for_stats()
    assert not panel.updating_label.isVisible()
    assert panel.stats["statuses"]["approved"] == 1


def test_an_event_from_a_worker_thread_starts_no_timer_there(qtbot, project_path: Path) -> None:
    """Rendering every glyph runs on a worker and announces its end (glyphs_changed) from
    there: the board reschedules its statistics on the GUI thread, so Qt prints no "Timers
    cannot be started from another thread"."""
    import threading

    messages: list[str] = []
    previous = qInstallMessageHandler(lambda _mode, _ctx, message: messages.append(message))
    try:
        studio = Studio(Project.open(project_path), author="curator")
        _open.append(studio)
        board = CuratorBoard(studio)
        qtbot.addWidget(board)
        board.resize(1280, 800)
        board.show()
        qtbot.waitExposed(board)
        assert board.wait_for_stats()
        assert not board.stats_panel.is_updating()
        worker = threading.Thread(target=studio.events.glyphs_changed.emit)
        worker.start()
        worker.join()
        qtbot.waitUntil(board.stats_panel.is_updating)  # the change reached the GUI thread
        assert board.wait_for_stats()
    finally:
        qInstallMessageHandler(previous)
    assert not [m for m in messages if "thread" in m.lower()], messages


def test_no_timer_from_a_worker_thread_and_generated_says_so(qtbot, project_path: Path) -> None:
    """Generate a split from the board (by keys: Ctrl+G, Enter): Qt prints no thread
    warning, and the status bar says the puzzles were generated, not imported."""
    messages: list[str] = []

    def handler(mode: QtMsgType, _context: object, message: str) -> None:
        messages.append(message)

    previous = qInstallMessageHandler(handler)
    try:
        window = open_board(qtbot, project_path)
        board = window.board
        qtbot.keyClick(window, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier)
        [dlg] = [d for d in window.findChildren(GenerateSplitDialog) if d.isVisible()]
        dlg.n_spin.setValue(40)
        sampling = dlg.form.widget("sampling")
        sampling.setCurrentIndex(sampling.findData("balanced"))
        with qtbot.waitSignal(board.generation_done, timeout=60000) as done:
            qtbot.keyClick(dlg.name_edit, Qt.Key.Key_Return)
        assert done.args == [True]
        assert board.wait_for_stats()
    finally:
        qInstallMessageHandler(previous)
    assert not [m for m in messages if "thread" in m.lower()], messages
    text = window.statusBar().currentMessage()
    assert text.startswith("Generated “") and "40 puzzles" in text
    assert "Imported" not in text


def test_a_decision_key_acts_on_the_puzzle_whose_sheet_is_shown(qtbot, project_path: Path) -> None:
    """Issue 28: after Ctrl+Home the sheet showed train-00000 while train-00002 stayed
    selected, and D returned train-00002 to draft: A, R or D decided a puzzle the curator was
    not looking at."""
    window = open_board(qtbot, project_path)
    board = window.board
    import_split(window, n=60)
    board.table.setFocus()
    for _ in range(2):
        qtbot.keyClick(board.table, Qt.Key.Key_Down)
    hidden = board.current_id()
    qtbot.keyClick(board.table, Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)
    seen = board.current_id()
    assert seen != hidden and board.title.text().find(seen) >= 0  # the sheet is the first's
    before = shown(board)[hidden]
    qtbot.keyClick(board.table, Qt.Key.Key_R)
    assert shown(board)[seen] == "rejected"
    assert shown(board)[hidden] == before  # untouched: not on the sheet
