"""Actions declared as data, the shortcuts dialog that lists them, and the user settings."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QInputDialog, QMainWindow, QWidget

from studio.gui.actions import (
    ACTIONS,
    MENUS,
    action_spec,
    build_actions,
    build_menus,
    menu_title,
)
from studio.gui.settings import MAX_RECENT_PROJECTS, StudioSettings, ask_annotator_name
from studio.gui.shortcuts_dialog import ShortcutsDialog

pytestmark = pytest.mark.gui

PORTABLE = QKeySequence.SequenceFormat.PortableText
NATIVE = QKeySequence.SequenceFormat.NativeText


# ---- the table ------------------------------------------------------------------------------


def test_ids_are_unique_and_menus_known() -> None:
    ids = [a.id for a in ACTIONS]
    assert len(ids) == len(set(ids))
    menus = {m for m, _ in MENUS}
    for a in ACTIONS:
        assert a.menu in menus
        assert a.id.split(".")[0] == a.menu
        assert a.tip


def test_every_shortcut_parses_and_no_two_actions_share_one() -> None:
    owners: Counter[str] = Counter()
    for a in ACTIONS:
        for text in a.shortcuts:
            seq = QKeySequence(text)
            assert seq.count() == 1, f"{a.id}: {text!r} is not one key sequence"
            assert seq.toString(PORTABLE) == text, f"{a.id}: {text!r} reads back differently"
            owners[seq.toString(PORTABLE)] += 1
    shared = [k for k, n in owners.items() if n > 1]
    assert not shared, f"shared shortcuts: {shared}"


@pytest.mark.parametrize(
    ("action_id", "keys"),
    [
        ("file.new_project", ("Ctrl+N",)),
        ("file.open_project", ("Ctrl+O",)),
        ("file.import_annotations", ("Ctrl+I",)),
        ("file.export_annotations", ("Ctrl+E",)),
        ("file.add_font", ("Ctrl+Shift+F",)),
        ("file.render_all", ("Ctrl+R",)),
        ("file.quit", ("Ctrl+Q",)),
        ("edit.undo", ("Ctrl+Z",)),
        ("edit.redo", ("Ctrl+Shift+Z",)),
        ("edit.select_all", ("Ctrl+A",)),
        ("edit.schema", ("Ctrl+Shift+E",)),
        ("tag.apply", ("Space",)),
        ("tag.remove", ("Backspace", "Del")),
        ("tag.value_1", ("1",)),
        ("tag.value_9", ("9",)),
        ("tag.next_concept", ("Alt+Down", "]")),
        ("tag.prev_concept", ("Alt+Up", "[")),
        ("tag.next_value", ("Ctrl+Down",)),
        ("tag.prev_value", ("Ctrl+Up",)),
        ("view.find", ("Ctrl+F",)),
        ("view.only_untagged", ("Ctrl+U",)),
        ("view.inspector", ("Ctrl+Shift+I",)),
        ("view.baselines", ("Ctrl+4",)),
        ("help.shortcuts", ("F1", "Ctrl+/")),
        ("help.about", ()),
    ],
)
def test_declared_keys(action_id: str, keys: tuple[str, ...]) -> None:
    assert action_spec(action_id).shortcuts == keys


def test_texts() -> None:
    assert action_spec("edit.schema").text == "Edit schema…"
    assert action_spec("tag.apply").tip == "Tag selected glyphs with the selected value"
    assert [action_spec(f"tag.value_{n}").shortcut for n in range(1, 10)] == [
        str(n) for n in range(1, 10)
    ]


# ---- QActions and menus ------------------------------------------------------------------------


def test_build_actions_and_menus(qtbot) -> None:
    window = QMainWindow()
    qtbot.addWidget(window)
    calls: list[str] = []
    handlers = {
        "file.new_project": lambda: calls.append("new"),
        "view.only_untagged": lambda: calls.append("untagged"),
    }
    actions = build_actions(window, handlers)
    menus = build_menus(window.menuBar(), actions)

    assert list(actions) == [a.id for a in ACTIONS]
    new = actions["file.new_project"]
    assert new.isEnabled()
    assert new.shortcut() == QKeySequence("Ctrl+N")
    assert new.shortcutContext() == Qt.ShortcutContext.WindowShortcut
    assert new.statusTip() == "Create a new, empty project"
    assert not actions["file.open_project"].isEnabled()  # no handler
    assert actions["tag.remove"].shortcuts() == [QKeySequence("Backspace"), QKeySequence("Del")]
    assert actions["view.only_untagged"].isCheckable()

    assert [m.title() for m in menus.values()] == [
        "&File",
        "&Edit",
        "&Tag",
        "&Puzzles",
        "&Lab",
        "&View",
        "&Help",
    ]
    for menu_id, menu in menus.items():
        in_menu = [a.data() for a in menu.actions() if not a.isSeparator()]
        assert in_menu == [a.id for a in ACTIONS if a.menu == menu_id]
    assert any(a.isSeparator() for a in menus["file"].actions())

    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(window, Qt.Key.Key_U, Qt.KeyboardModifier.ControlModifier)
    assert calls == ["new", "untagged"]
    assert actions["view.only_untagged"].isChecked()
    qtbot.keyClick(window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)  # disabled
    assert calls == ["new", "untagged"]


# ---- the shortcuts dialog -----------------------------------------------------------------------


@pytest.fixture
def shortcuts(qtbot) -> ShortcutsDialog:
    dialog = ShortcutsDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    return dialog


def shown_rows(dialog: ShortcutsDialog) -> dict[str, list[tuple[str, str]]]:
    out = {}
    tree = dialog.tree
    for i in range(tree.topLevelItemCount()):
        group = tree.topLevelItem(i)
        if group.isHidden():
            continue
        out[group.text(0)] = [
            (group.child(j).text(0), group.child(j).text(1))
            for j in range(group.childCount())
            if not group.child(j).isHidden()
        ]
    return out


def test_every_action_is_listed_with_its_shortcut(shortcuts: ShortcutsDialog) -> None:
    rows = shown_rows(shortcuts)
    assert list(rows) == ["File", "Edit", "Tag", "Puzzles", "Lab", "View", "Help"]
    for a in ACTIONS:
        native = ", ".join(QKeySequence(k).toString(NATIVE) for k in a.shortcuts)
        assert (a.text, native) in rows[menu_title(a.menu)]
    assert sum(len(r) for r in rows.values()) == len(ACTIONS)
    assert ("Keyboard shortcuts", "F1, Ctrl+/") in rows["Help"]


def test_filter_narrows_the_list(qtbot, shortcuts: ShortcutsDialog) -> None:
    qtbot.keyClicks(shortcuts.filter_edit, "Concept")
    ids = shortcuts.visible_action_ids()
    assert {"tag.next_concept", "tag.prev_concept", "edit.schema", "tag.value_1"} <= set(ids)
    assert "file.quit" not in ids
    assert "Help" not in shown_rows(shortcuts)  # a menu with nothing left is hidden

    shortcuts.filter_edit.clear()
    qtbot.keyClicks(shortcuts.filter_edit, "ctrl+shift")
    texts = [t for rows in shown_rows(shortcuts).values() for t, _ in rows]
    with_ctrl_shift = [a for a in ACTIONS if any("Ctrl+Shift" in k for k in a.shortcuts)]
    assert {"Redo", "Edit schema…", "Inspector"} <= set(texts)
    assert sorted(texts) == sorted(a.text for a in with_ctrl_shift)
    assert not shortcuts.empty_label.isVisible()

    shortcuts.filter_edit.clear()
    qtbot.keyClicks(shortcuts.filter_edit, "no such thing")
    assert shown_rows(shortcuts) == {}
    assert shortcuts.empty_label.isVisible()
    shortcuts.filter_edit.clear()
    assert sum(len(r) for r in shown_rows(shortcuts).values()) == len(ACTIONS)


def test_escape_closes(qtbot, shortcuts: ShortcutsDialog) -> None:
    shortcuts.filter_edit.setFocus()
    with qtbot.waitSignal(shortcuts.rejected):
        qtbot.keyClick(shortcuts.filter_edit, Qt.Key.Key_Escape)
    assert not shortcuts.isVisible()


# ---- settings (StudioSettings, ask_annotator_name) ---------------------------------------------


def test_settings_file_comes_from_the_environment(isolated_settings: Path) -> None:
    settings = StudioSettings()
    assert Path(settings.file_name) == isolated_settings
    assert settings.annotator_name() is None
    assert settings.recent_projects() == []


def test_annotator_is_asked_once_and_stored(
    qtbot, monkeypatch: pytest.MonkeyPatch, isolated_settings: Path
) -> None:
    asked: list[str] = []

    def get_text(parent, title, label, *args, **kwargs):
        asked.append(title)
        return "  Ada L. ", True

    monkeypatch.setattr(QInputDialog, "getText", get_text)
    parent = QWidget()
    qtbot.addWidget(parent)
    settings = StudioSettings()
    assert ask_annotator_name(parent, settings) == "Ada L."
    assert asked == ["Who is annotating?"]
    assert ask_annotator_name(parent, settings) == "Ada L."
    assert ask_annotator_name(parent, StudioSettings(isolated_settings)) == "Ada L."
    assert asked == ["Who is annotating?"]  # not asked again, not even by a new session


def test_annotator_cancel_stores_nothing(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("Ada", False))
    settings = StudioSettings()
    assert ask_annotator_name(None, settings) is None
    assert settings.annotator_name() is None
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("   ", True))
    assert ask_annotator_name(None, settings) is None
    assert settings.annotator_name() is None


def test_recent_projects(tmp_path: Path) -> None:
    settings = StudioSettings(tmp_path / "s.ini")
    settings.add_recent_project(tmp_path / "a.studio")
    assert StudioSettings(tmp_path / "s.ini").recent_projects() == [tmp_path / "a.studio"]
    for i in range(12):
        settings.add_recent_project(tmp_path / f"p{i}.studio")
    settings.add_recent_project(tmp_path / "p5.studio")
    recent = StudioSettings(tmp_path / "s.ini").recent_projects()
    assert len(recent) == MAX_RECENT_PROJECTS
    assert recent[:3] == [tmp_path / "p5.studio", tmp_path / "p11.studio", tmp_path / "p10.studio"]
    assert recent.count(tmp_path / "p5.studio") == 1
    settings.remove_recent_project(tmp_path / "p11.studio")
    assert tmp_path / "p11.studio" not in settings.recent_projects()


def test_window_geometry_round_trip(qtbot, tmp_path: Path) -> None:
    settings = StudioSettings(tmp_path / "s.ini")
    window = QMainWindow()
    qtbot.addWidget(window)
    assert not settings.restore_window(window)
    window.resize(640, 480)
    window.show()
    qtbot.waitExposed(window)
    settings.save_window(window)
    other = QMainWindow()
    qtbot.addWidget(other)
    assert StudioSettings(tmp_path / "s.ini").restore_window(other)
    assert other.size().width() == 640
    assert other.size().height() == 480
