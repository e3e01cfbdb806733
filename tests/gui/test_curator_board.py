"""The curator's board, driven like a user: generate a split, click puzzles, press keys, type
comments, read what the board shows, and check the project."""

from __future__ import annotations

import html
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QProgressDialog

from studio import splits
from studio.app import Studio
from studio.curation import PuzzleFilter
from studio.demo import build_demo
from studio.generate.params import SplitParams
from studio.gui.board_list import COLUMNS
from studio.gui.curator_board import CuratorBoard
from studio.gui.foil_dialog import ReplaceFoilDialog
from studio.gui.generate_dialog import GenerateSplitDialog
from studio.gui.main_window import MainWindow
from studio.store.project import Project
from tests.gui.windows import show_window

pytestmark = pytest.mark.gui

STATUS = COLUMNS.index("Status")
ERRORS = COLUMNS.index("Err.")


@pytest.fixture(scope="session")
def demo_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """UA's public annotations plus Symbola's Geometric Shapes, rendered."""
    path = tmp_path_factory.mktemp("demo") / "demo.studio"
    for _ in build_demo(path, blocks=["Geometric Shapes"]):
        pass
    return path


@pytest.fixture
def project_path(demo_project: Path, tmp_path: Path) -> Path:
    path = tmp_path / "curate.studio"
    shutil.copy(demo_project, path)
    return path


_open: list[Studio] = []


@pytest.fixture(autouse=True)
def _close_studios():
    yield
    while _open:
        _open.pop().close()


def open_window(qtbot, path: Path) -> MainWindow:
    studio = Studio(Project.open(path), author="curator")
    _open.append(studio)
    return show_window(qtbot, studio, (1400, 900))


def open_board(qtbot, window: MainWindow) -> CuratorBoard:
    qtbot.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentWidget() is window.board
    qtbot.waitUntil(window.board.isVisible)
    return window.board


def dialog(window: MainWindow, cls, name: str):
    found = [d for d in window.findChildren(cls, name) if d.isVisible()]
    assert found, f"no {name} is shown"
    return found[-1]


def set_spin(qtbot, spin, value: int) -> None:
    spin.selectAll()
    qtbot.keyClicks(spin, str(value))
    assert spin.value() == value


def generate_in_gui(
    qtbot, window: MainWindow, n: int = 60, seed: int = 3, min_answers: int | None = None
) -> None:
    board = window.board
    qtbot.keyClick(window, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier)
    dlg = dialog(window, GenerateSplitDialog, "generateDialog")
    dlg.name_edit.clear()
    qtbot.keyClicks(dlg.name_edit, "small split")
    set_spin(qtbot, dlg.n_spin, n)
    set_spin(qtbot, dlg.seed_spin, seed)
    if min_answers is not None:
        set_spin(qtbot, dlg.form.widget("min_answers"), min_answers)
    sampling = dlg.form.widget("sampling")
    sampling.setCurrentIndex(sampling.findData("balanced"))
    with qtbot.waitSignal(board.generation_done, timeout=60000) as done:
        qtbot.mouseClick(
            dlg.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton
        )
    assert done.args == [True]


def click_row(qtbot, board: CuratorBoard, puzzle_id: str) -> None:
    row = board.model.row_of(puzzle_id)
    assert row is not None, f"{puzzle_id} is not listed"
    index = board.model.index(row, 0)
    board.table.scrollTo(index)
    rect = board.table.visualRect(index)
    qtbot.mouseClick(board.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert board.current_id() == puzzle_id


def shown_status(board: CuratorBoard, puzzle_id: str) -> str:
    return board.model.index(board.model.row_of(puzzle_id), STATUS).data()


def type_comment(qtbot, board: CuratorBoard, text: str) -> None:
    """C, the text, Enter: the comment waits in the field for the next decision."""
    qtbot.keyClick(board.table, Qt.Key.Key_C)
    assert board.comment_field.hasFocus()
    qtbot.keyClicks(board.comment_field, text)
    qtbot.keyClick(board.comment_field, Qt.Key.Key_Return)
    assert board.table.hasFocus()


def test_generate_approve_by_keyboard_undo_and_reopen(qtbot, project_path: Path) -> None:
    window = open_window(qtbot, project_path)
    board = open_board(qtbot, window)
    assert board.model.rowCount() == 0
    assert "No puzzle set" in board.set_combo.currentText()
    # UA's four answers throughout, asked for in the dialog (sets of two to four are the
    # default); on this set some candidates are rejected, which the statistics list
    generate_in_gui(qtbot, window, min_answers=4)

    assert board.model.rowCount() == 60
    assert board.set_combo.currentText() == "small split (60 puzzles)"
    assert board.count_label.text().startswith("60 of 60 puzzles shown")
    [set_rec] = window.studio.project.puzzle_sets()
    assert set_rec.params["n"] == 60 and set_rec.params["sampling"] == "balanced"
    assert set_rec.params["min_answers"] == 4
    # the statistics panel fills in from its worker
    assert board.wait_for_stats()
    assert board.stats_panel.summary.text().startswith("60 puzzles shown")
    assert sum(v for _, v in board.stats_panel.position_chart.rows) == 60
    assert board.stats_panel.rejection_chart.rows  # rejection reasons listed

    draft = board.curator.puzzles(PuzzleFilter(status="draft"))[2].id
    # shown as draft; stored as vetted (flagged when only a low-grade warning was found)
    stored_before = window.studio.project.stored_puzzle(set_rec.id, draft).status
    click_row(qtbot, board, draft)
    assert draft in board.title.text() and board.sheet.puzzle.id == draft
    qtbot.keyClick(board.table, Qt.Key.Key_A)
    assert shown_status(board, draft) == "approved"
    assert window.studio.project.stored_puzzle(set_rec.id, draft).status == "approved"
    assert window.actions["edit.undo"].text() == f"Undo Approve puzzle {draft}"

    qtbot.keyClick(board.table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert shown_status(board, draft) == "draft"
    assert window.studio.project.stored_puzzle(set_rec.id, draft).status == stored_before
    qtbot.keyClick(
        board.table,
        Qt.Key.Key_Z,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    assert shown_status(board, draft) == "approved"

    # approving opened the next one: rejected with a comment, by keyboard
    other = board.current_id()
    assert other != draft
    type_comment(qtbot, board, "two foils look alike")
    qtbot.keyClick(board.table, Qt.Key.Key_R)
    assert shown_status(board, other) == "rejected"
    assert board.current_id() != other and board.comment_field.text() == ""
    click_row(qtbot, board, other)
    assert "two foils look alike" in board.comment_label.text()

    # the filter shows only what was asked for
    board.status_combo.setCurrentIndex(board.status_combo.findData("approved"))
    assert [board.model.puzzle(r).id for r in range(board.model.rowCount())] == [draft]
    window.close()
    window.studio.close()

    window = open_window(qtbot, project_path)
    board = open_board(qtbot, window)
    assert board.model.rowCount() == 60
    assert shown_status(board, draft) == "approved"
    assert shown_status(board, other) == "rejected"
    click_row(qtbot, board, other)
    assert "two foils look alike" in board.comment_label.text()


def import_small(window: MainWindow) -> None:
    """A split made by the same functions the board's job calls (faster than the dialog)."""
    studio = window.studio
    params = SplitParams(n=60, sampling="balanced", seed=3)
    inputs = splits.split_inputs(studio)
    results = splits.generate(studio, params, inputs=inputs)
    keys = {k for r in results for p in r.puzzles for k in p.all_keys()}
    features = splits.feature_index({k: inputs.images[k] for k in keys})
    verdicts = splits.vet(results[0].puzzles, inputs.annotations, studio.schema, features)
    window.board.curator.import_results("small", params, results, verdicts)


def test_flagged_puzzle_shows_evidence_and_a_proposed_foil_fixes_it(
    qtbot, project_path: Path
) -> None:
    window = open_window(qtbot, project_path)
    board = open_board(qtbot, window)
    import_small(window)
    assert board.model.rowCount() == 60
    curator = board.curator
    # plant a foil from the key's own folder: it completes the intended rule
    cp = next(
        c
        for c in curator.puzzles(PuzzleFilter(rule="constant", status="draft"))
        if not c.puzzle.shift
    )
    p = cp.puzzle
    value = p.values[-1][-1]
    planted = next(g for g in curator.annotations.folder(p.concept, value) if g not in p.all_keys())
    foil = p.foils[0]
    curator.replace_foil(p.id, foil, planted)
    assert shown_status(board, p.id) == "flagged"
    assert board.model.index(board.model.row_of(p.id), ERRORS).data() == "1"

    click_row(qtbot, board, p.id)
    expected = f"Answer {foil + 1} also completes constant over {p.concept}: {value} | {value}"
    assert board.sheet.captions()[0] == expected
    assert board.evidence_list.item(0).text() == expected
    ev = board.sheet.evidence[0]
    assert ev.answer == foil and ev.severity == "error"
    assert ("context", 0, 0) in ev.frame_values  # the context frames are highlighted
    # the sheet shows the frames' renders once the loader has them
    qtbot.waitUntil(
        lambda: all(board._thumbnail(k) is not None for k in p.all_keys()), timeout=5000
    )

    qtbot.keyClick(board.table, Qt.Key.Key_F)
    dlg = dialog(window, ReplaceFoilDialog, "replaceFoilDialog")
    assert dlg.foil() == foil  # the foil at fault is chosen
    assert dlg.list.count() > 0
    first = dlg.list.item(0)
    replacement = first.data(Qt.ItemDataRole.UserRole + 1)
    assert replacement == curator.propose_replacements(p.id, foil)[0]
    rect = dlg.list.visualItemRect(first)
    qtbot.mouseClick(dlg.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseClick(
        dlg.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton
    )
    after = curator.puzzle(p.id)
    assert after.puzzle.answers[foil] == replacement
    assert not after.findings
    assert board.model.index(board.model.row_of(p.id), ERRORS).data() == ""
    assert not [e for e in board.sheet.evidence if e.severity == "error"]
    assert shown_status(board, p.id) == after.status

    # reject it anyway, with a comment; then undo the rejection and the replacement
    type_comment(qtbot, board, "the rule is too easy")
    qtbot.keyClick(board.table, Qt.Key.Key_R)
    stored = window.studio.project.stored_puzzle(curator.set_id, p.id)
    assert (stored.status, stored.comment) == ("rejected", "the rule is too easy")
    click_row(qtbot, board, p.id)
    assert "the rule is too easy" in board.comment_label.text()
    window.undo()
    window.undo()
    assert shown_status(board, p.id) == "flagged"
    assert board.sheet.captions()[0] == expected
    events = [e.kind for e in window.studio.project.puzzle_events(curator.set_id, p.id)]
    assert events == ["replace-foil", "replace-foil", "status", "status", "replace-foil"]


def test_regenerate_and_keys_only_act_on_the_board(qtbot, project_path: Path) -> None:
    window = open_window(qtbot, project_path)
    board = open_board(qtbot, window)
    import_small(window)
    pid = board.curator.puzzles()[0].id
    click_row(qtbot, board, pid)
    before = board.current().puzzle
    qtbot.keyClick(board.table, Qt.Key.Key_G)
    after = board.current().puzzle
    assert after.id == pid and after.answers != before.answers
    assert window.actions["edit.undo"].text() == f"Undo Regenerate puzzle {pid}"
    # in the annotator, A is not "approve" (and Space is tagging again)
    qtbot.keyClick(window, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentWidget() is window.splitter
    assert not window.actions["puzzle.approve"].isEnabled()
    assert window.actions["tag.apply"].isEnabled()
    qtbot.keyClick(window.grid, Qt.Key.Key_A)
    assert board.curator.puzzle(pid).status != "approved"
    qtbot.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    assert window.actions["puzzle.approve"].isEnabled()
    assert not window.actions["tag.apply"].isEnabled()


def test_cancel_generation_imports_nothing(qtbot, project_path: Path) -> None:
    window = open_window(qtbot, project_path)
    board = open_board(qtbot, window)
    qtbot.mouseClick(board.generate_button, Qt.MouseButton.LeftButton)
    dlg = dialog(window, GenerateSplitDialog, "generateDialog")
    set_spin(qtbot, dlg.n_spin, 500000)
    sampling = dlg.form.widget("sampling")
    sampling.setCurrentIndex(sampling.findData("balanced"))
    qtbot.mouseClick(
        dlg.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton
    )
    progress = dialog(window, QProgressDialog, "generationProgress")
    qtbot.waitUntil(lambda: progress.value() > 0, timeout=30000)
    assert progress.labelText() == "Generating puzzles…"
    with qtbot.waitSignal(board.generation_done, timeout=30000) as done:
        cancel = next(b for b in progress.findChildren(type(board.generate_button)))
        qtbot.mouseClick(cancel, Qt.MouseButton.LeftButton)
    assert done.args == [False]
    QApplication.processEvents()
    assert not progress.isVisible()
    assert window.studio.project.puzzle_sets() == []
    assert board.model.rowCount() == 0
    assert "nothing was imported" in window.statusBar().currentMessage()
    assert not window.studio.undo_stack.can_undo


def test_puzzle_shortcuts_are_listed_in_help(qtbot) -> None:
    from studio.gui.shortcuts_dialog import ShortcutsDialog

    dialog = ShortcutsDialog()
    qtbot.addWidget(dialog)
    qtbot.keyClicks(dialog.filter_edit, "puzzle")
    ids = dialog.visible_action_ids()
    for action_id in (
        "puzzle.board",
        "puzzle.approve",
        "puzzle.reject",
        "puzzle.replace_foil",
        "puzzle.regenerate",
    ):
        assert action_id in ids
    rows = {}
    for i in range(dialog.tree.topLevelItemCount()):
        group = dialog.tree.topLevelItem(i)
        for j in range(group.childCount()):
            rows[group.child(j).text(0)] = (group.text(0), group.child(j).text(1))
    assert rows["Approve puzzle"] == ("Puzzles", "A")
    assert rows["Reject puzzle"] == ("Puzzles", "R")
    assert rows["Next flagged puzzle"] == ("Puzzles", "N")
    assert rows["Previous flagged puzzle"] == ("Puzzles", "Shift+N, P")
    assert rows["Approve all shown without errors"] == ("Puzzles", "Ctrl+Shift+A")
    assert rows["Generate split…"] == ("Puzzles", "Ctrl+G")


def test_shortcut_flags_show_filter_and_open(qtbot, project_path: Path) -> None:
    """A baseline job that flagged puzzles: the board shows the flag in its column and under
    the title, the "Shortcut-prone" filter lists only those, and show_puzzle (what the
    Baselines tab calls) opens one even behind a filter that hides it."""
    window = open_window(qtbot, project_path)
    board = open_board(qtbot, window)
    generate_in_gui(qtbot, window, n=40)
    set_id = board.curator.set_id
    ids = [board.model.puzzle(r).id for r in range(board.model.rowCount())]
    flagged = {ids[3]: 0.93, ids[7]: 0.71}
    jobs = window.studio.project.jobs
    job = jobs.submit("baseline", {"source": {"kind": "project-set", "set_id": set_id}})
    assert jobs.claim(job, pid=1)
    result = {
        "puzzle_flags": {
            "set_id": set_id,
            "models": ["blind"],
            "flags": [
                {"id": pid, "model": "blind", "confidence": c, "seeds_correct": 3, "seeds": 3}
                for pid, c in flagged.items()
            ],
        }
    }
    assert jobs.finish(job, "done", result=result, pid=1)
    window.studio.baseline_flags_changed(set_id)

    col = COLUMNS.index("Shortcut")
    shown = {
        board.model.puzzle(r).id: board.model.index(r, col).data()
        for r in range(board.model.rowCount())
    }
    assert shown[ids[3]] == "blind 0.93" and shown[ids[7]] == "blind 0.71"
    assert sum(1 for v in shown.values() if v) == 2
    click_row(qtbot, board, ids[3])
    assert "Shortcut-prone: blind chose the key in 3 of 3 seeds" in board.title.text()

    board.warning_combo.setCurrentIndex(board.warning_combo.findData("shortcut"))
    assert sorted(board.model.puzzle(r).id for r in range(board.model.rowCount())) == sorted(
        flagged
    )
    board.warning_combo.setCurrentIndex(board.warning_combo.findData("errors"))
    assert board.show_puzzle(set_id, ids[7])
    assert board.current_id() == ids[7]
    assert board.warning_combo.currentData() == ""
    assert not board.show_puzzle(set_id + 99, ids[7])


# ---- the answer-set audit in the statistics panel ------------------------------------------------
def import_leaky(window: MainWindow, n: int = 120) -> None:
    """A split with UA's own foil pool (``answer_sets="ua"``): the key is the answer whose
    value no other answer shares, a leak the audit must show."""
    studio = window.studio
    params = SplitParams(n=n, sampling="balanced", seed=3, answer_sets="ua")
    inputs = splits.split_inputs(studio)
    results = splits.generate(studio, params, inputs=inputs)
    verdicts = splits.vet(results[0].puzzles, inputs.annotations, studio.schema)
    window.board.curator.import_results("ua answers", params, results, verdicts)


def click_tree_row(qtbot, tree, row: int) -> str:
    item = tree.topLevelItem(row)
    tree.scrollToItem(item)
    rect = tree.visualItemRect(item)
    qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    return item.text(0)


def test_audit_shows_the_leak_and_a_value_lists_its_puzzles(qtbot, project_path: Path) -> None:
    window = open_window(qtbot, project_path)
    board = open_board(qtbot, window)
    import_leaky(window)
    assert board.wait_for_stats()
    panel = board.stats_panel
    verdict = panel.audit_label.text()
    assert "Key rate per value: <b style='color:#c62828'>off</b>" in verdict
    assert "Answers sharing a value: <b style='color:#c62828'>off</b>" in verdict
    assert "Key position: " in verdict
    # the key shares its value with nobody; foils do with each other
    audit = panel.stats["all"]["audit"]
    assert audit["sharing"]["intended"]["mean"]["key"] == 0.0
    sharing = panel.sharing_label.text()
    assert "<td>key</td><td align='right'>&nbsp;100%</td>" in sharing
    assert "<td>foils</td>" in sharing
    # the worst values, the furthest off first, red where off after Holm
    worst = audit["key_rates"]["intended"]["worst"]
    assert panel.worst_table.topLevelItemCount() == len(worst) > 0
    first = panel.worst_table.topLevelItem(0)
    assert first.text(0) == worst[0]["value"]
    assert first.text(1) == f"{worst[0]['on_key']}/{worst[0]['expected_key']:.3g}"

    # clicking a value lists the puzzles whose answers carry it, and opens one of them
    value = click_tree_row(qtbot, panel.worst_table, 0)
    assert board.value_filter() == value
    ids = worst[0]["puzzles"]
    listed = sorted(board.model.puzzle(r).id for r in range(board.model.rowCount()))
    assert listed == sorted(ids)
    assert board.count_label.text() == f"{len(ids)} of 120 puzzles shown"
    assert board.value_filter_bar.isVisible() and value in board.value_filter_label.text()
    total = worst[0]["puzzles_total"]
    assert f"{len(ids)} puzzle" in board.value_filter_label.text()
    assert (f"(of {total})" in board.value_filter_label.text()) == (total > len(ids))
    assert board.current_id() in ids
    concept, _, v = value.partition("=")
    for pid in ids:
        answers = board.curator.puzzle(pid).puzzle.answers
        assert any(v in board.curator.annotations.values(g, concept) for g in answers)

    # another value replaces the filter; the other filters are cleared by a click
    board.rule_combo.setCurrentIndex(1)
    second = click_tree_row(qtbot, panel.worst_table, 1)
    assert board.value_filter() == second and board.rule_combo.currentIndex() == 0
    assert board.model.rowCount() == len(worst[1]["puzzles"])

    # Show all: back to the whole list
    qtbot.mouseClick(board.value_filter_clear, Qt.MouseButton.LeftButton)
    assert board.value_filter() is None and not board.value_filter_bar.isVisible()
    assert board.count_label.text() == "120 of 120 puzzles shown"


def test_audit_of_a_generated_split_and_of_a_part(qtbot, project_path: Path) -> None:
    """A split generated in the GUI: the panel shows its audit, and the part combo switches
    it to the audit of one part."""
    window = open_window(qtbot, project_path)
    board = open_board(qtbot, window)
    generate_in_gui(qtbot, window, n=60)
    assert board.wait_for_stats()
    panel = board.stats_panel
    audit = panel.stats["all"]["audit"]
    assert audit["puzzles"] == 60
    assert "Key rate per value:" in panel.audit_label.text()
    panel.part_combo.setCurrentIndex(panel.part_combo.findData("test"))
    test_audit = panel.stats["test"]["audit"]
    assert test_audit["puzzles"] == panel.stats["test"]["puzzles"] < 60
    assert panel.worst_table.topLevelItemCount() == len(
        test_audit["key_rates"]["intended"]["worst"]
    )


def test_stats_panel_audit_scopes_and_capped_value_lists(qtbot, ua_csv: Path, ua_schema) -> None:
    """The panel alone on a real 1,200-puzzle split of UA's answer sets: a value carried by more
    puzzles than the audit lists says so when clicked; with tags of several concepts per
    answer (image-feature tags merged in) the scope combo appears and switches the table."""
    from studio.core.annotations import read_annotation_csv
    from studio.core.tagindex import TagIndex
    from studio.gui.split_stats import SplitStatsPanel
    from studio.vet.audit import MAX_IDS
    from studio.vet.balance import split_stats

    rows = read_annotation_csv(ua_csv, ua_schema)
    ua = TagIndex.from_tags((r.key, r.concept, r.value) for r in rows)
    params = SplitParams(n=1200, sampling="balanced", seed=2, answer_sets="ua")
    [result] = splits.generate_from(ua, ua_schema, params)
    panel = SplitStatsPanel()
    qtbot.addWidget(panel)
    panel.resize(320, 900)
    panel.show()
    panel.set_stats(split_stats(result.puzzles, ua, ua_schema))
    assert not panel.audit_scope.isVisible()  # UA tags each glyph in one concept
    worst = panel.stats["all"]["audit"]["key_rates"]["intended"]["worst"]
    row = next(i for i, r in enumerate(worst) if r["puzzles_total"] > MAX_IDS)
    with qtbot.waitSignal(panel.value_clicked) as clicked:
        click_tree_row(qtbot, panel.worst_table, row)
    value, ids, total = clicked.args
    assert value == worst[row]["value"] and len(ids) == MAX_IDS < total
    assert total == worst[row]["puzzles_total"]

    # a second concept on every answer glyph: the all-concepts scope differs and can be shown
    extra = {g: {"parity": frozenset({"even" if g.codepoint % 2 else "odd"})} for g in ua.glyphs()}
    panel.set_stats(split_stats(result.puzzles, ua.merged(extra), ua_schema))
    assert panel.audit_scope.isVisible()
    panel.audit_scope.setCurrentIndex(panel.audit_scope.findData("all"))
    shown = [panel.worst_table.topLevelItem(i).text(0) for i in range(10)]
    all_worst = panel.stats["all"]["audit"]["key_rates"]["all"]["worst"]
    assert shown == [r["value"] for r in all_worst]


# ---- the answers-only probes' reasons on the board -----------------------------------------------
def test_a_probe_flag_shows_why_on_the_board(qtbot, project_path: Path, tmp_path: Path) -> None:
    """A baseline job runs the answers-only tag probe on a set with UA's own foil pool (the key
    is the answer whose value nobody shares): the flags it stores carry the probe's reason, and
    the board shows that reason where a curator reads the flag (the Shortcut column's tooltip
    and under the puzzle's title), so a curator reads why the puzzle gives its key away."""
    from studio.baselines.job import run_job
    from studio.worker.context import LocalContext

    window = open_window(qtbot, project_path)
    board = open_board(qtbot, window)
    import_leaky(window)
    set_id = board.curator.set_id
    params = {
        "source": {"kind": "project-set", "project": str(project_path), "set_id": set_id},
        "models": ["probe-tags"],
        "seeds": 1,
        "device": "cpu",
    }
    jobs = window.studio.project.jobs
    job = jobs.submit("baseline", params)
    assert jobs.claim(job, pid=1)
    result = run_job(LocalContext(params, work_dir=tmp_path / "job"))
    flags = result["puzzle_flags"]["flags"]
    assert flags and all(f["model"] == "probe-tags" and f["reason"] for f in flags)
    assert jobs.finish(job, "done", result=result, pid=1)
    window.studio.baseline_flags_changed(set_id)

    stored = board.curator.shortcut_flags()
    assert {pid: [f.reason for f in fs] for pid, fs in stored.items()} == {
        f["id"]: [f["reason"]] for f in flags
    }
    flag = max(flags, key=lambda f: f["confidence"])
    row = board.model.row_of(flag["id"])
    assert row is not None
    cell = board.model.index(row, COLUMNS.index("Shortcut"))
    assert cell.data() == f"probe-tags {flag['confidence']:.2f}"
    assert f"seeds, mean confidence {flag['confidence']:.2f} (job {job}): {flag['reason']}" in (
        cell.data(Qt.ItemDataRole.ToolTipRole)
    )
    click_row(qtbot, board, flag["id"])
    assert "Shortcut-prone: probe-tags chose the key in 1 of 1 seeds" in board.title.text()
    assert flag["reason"] in board.title.text()


def test_a_generated_split_says_what_it_covers_at_the_top_of_the_statistics(
    qtbot, project_path: Path
) -> None:
    """Issue 24: per part, the tuples and rules covered, with a warning when test is narrow
    or a rule yields nothing — in the generation's message and at the panel's top."""
    window = open_window(qtbot, project_path)
    board = open_board(qtbot, window)
    # 20 puzzles: a test part of a few puzzles covers fewer than five tuples, so a warning
    # is certain (at 60 it hung on how many tuples the generator happened to reach)
    generate_in_gui(qtbot, window, n=20)
    assert board.wait_for_stats()
    panel = board.stats_panel
    cov = panel.stats["coverage"]
    assert sum(e["made"] for e in cov["parts"].values()) == 20
    assert 0 < cov["parts"]["test"]["made"] < cov["min_tuples"]
    text = panel.coverage_label.text()
    assert "test: " in text and "/" in text and " tuple" in text
    assert cov["warnings"], "a test part of fewer puzzles than five covers few tuples"
    assert html.escape(cov["warnings"][0]) in text
    assert "Warning: " in board.last_generation_message
    assert "test: " + ", ".join(cov["parts"]["test"]["tuples"]) in panel.coverage_label.toolTip()
    # at the top: above the status chart
    assert panel.coverage_label.y() < panel.status_chart.y()
    # and whether one row alone finds the key, for the part shown
    views = panel.stats["all"]["partial_views"]["views"]
    shown = panel.partial_label.text()
    assert f"the first row alone finds the key {views['row1']['accuracy']:.0%}" in shown
    assert panel.partial_label.y() < panel.status_chart.y()
    panel.part_combo.setCurrentIndex(panel.part_combo.findData("test"))
    test_views = panel.stats["test"]["partial_views"]["views"]
    assert f"finds the key {test_views['row1']['accuracy']:.0%}" in panel.partial_label.text()


def test_replace_foil_names_a_foil_by_its_highest_grade_finding(qtbot) -> None:
    """Issue 28: a foil with a low-grade and a high-grade image-feature warning was named in
    the Foil combo by the low one."""
    from studio.curation import CuratedPuzzle
    from tests.graded_findings import graded_puzzle, high_warning, low_warning

    puzzle, low, high = graded_puzzle(), low_warning(1), high_warning(1)
    cp = CuratedPuzzle(1, puzzle, "flagged", "", (), (low, high), "", "")
    dlg = ReplaceFoilDialog(cp, 1, lambda i: [], lambda k: None)
    qtbot.addWidget(dlg)
    assert dlg.foil() == 1
    named = dlg.foil_combo.itemText(dlg.foil_combo.findData(1))
    assert "img-holes" in named and "img-ink" not in named
