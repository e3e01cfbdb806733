"""The annotator's window, driven like a user: click glyphs, press keys, look at what is shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from studio.app import Studio
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.glyphs.fonts import FontCatalog
from studio.glyphs.render import RenderCache
from studio.gui.glyph_grid import IMAGE_ROLE, KEY_ROLE, STATE_NONE, STATE_ROLE, STATE_VALUE
from studio.gui.main_window import MainWindow
from studio.store.project import Project
from tests.gui.windows import show_window

pytestmark = pytest.mark.gui

WHITE_CIRCLE = GlyphKey(0x25CB, "symbola")
BLACK_CIRCLE = GlyphKey(0x25CF, "symbola")


@pytest.fixture(scope="session")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> FontCatalog:
    return FontCatalog.scan(cache_dir=tmp_path_factory.mktemp("fontcache"))


@pytest.fixture(scope="session")
def render_cache(tmp_path_factory: pytest.TempPathFactory) -> RenderCache:
    return RenderCache(tmp_path_factory.mktemp("renders"))


@pytest.fixture
def project_path(
    tmp_path: Path, ua_schema: Schema, catalog: FontCatalog, render_cache: RenderCache
) -> Path:
    """A project with the Geometric Shapes of Symbola, rendered, and a few UA tags."""
    if catalog.get("symbola") is None:
        pytest.skip("Symbola is not installed (Debian package fonts-symbola)")
    path = tmp_path / "shapes.studio"
    project = Project.create(path, ua_schema)
    studio = Studio(project, catalog=catalog, cache=render_cache, author="setup")
    studio.add_glyphs(GlyphKey(cp, "symbola") for cp in range(0x25A0, 0x2600))
    csv = tmp_path / "few.csv"
    csv.write_text("concept,value,codepoint,font\nclosure,circle,25CB,symbola\n")
    studio.import_annotations(csv)
    for _ in studio.render_all(workers=1):
        pass
    project.close()
    return path


_open: list[Studio] = []


@pytest.fixture(autouse=True)
def _close_studios():
    yield
    while _open:
        _open.pop().close()


def open_window(qtbot, path: Path, catalog: FontCatalog, render_cache: RenderCache) -> MainWindow:
    studio = Studio(Project.open(path), catalog=catalog, cache=render_cache, author="ann")
    _open.append(studio)
    return show_window(qtbot, studio, (1200, 800))


def click_glyph(
    qtbot, window: MainWindow, key: GlyphKey, modifier=Qt.KeyboardModifier.NoModifier
) -> None:
    row = window.model.row_of(key)
    assert row is not None, f"{key} is not shown"
    index = window.model.index(row)
    window.grid.scrollTo(index)
    rect = window.grid.visualRect(index)
    qtbot.mouseClick(window.grid.viewport(), Qt.MouseButton.LeftButton, modifier, rect.center())


def test_tag_by_keyboard_undo_close_reopen(
    qtbot, project_path: Path, catalog, render_cache
) -> None:
    window = open_window(qtbot, project_path, catalog, render_cache)
    window.tree.select("closure", "circle")
    assert "closure" in window.current_label.text() and "circle" in window.current_label.text()
    click_glyph(qtbot, window, BLACK_CIRCLE)
    assert window.tagger.selected_keys() == [BLACK_CIRCLE]
    # the inspector shows the glyph
    assert window.inspector.name.text() == "BLACK CIRCLE"
    qtbot.keyClick(window.grid, Qt.Key.Key_Space)
    tags = {(t.concept, t.value) for t in window.studio.project.tags_of(BLACK_CIRCLE)}
    assert ("closure", "circle") in tags
    assert window.model.index(window.model.row_of(BLACK_CIRCLE)).data(STATE_ROLE) == STATE_VALUE
    assert window.inspector.tags.rowCount() == 1
    # undo and redo by keyboard
    qtbot.keyClick(window.grid, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.studio.project.tags_of(BLACK_CIRCLE) == []
    assert window.model.index(window.model.row_of(BLACK_CIRCLE)).data(STATE_ROLE) == STATE_NONE
    qtbot.keyClick(
        window.grid,
        Qt.Key.Key_Z,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    assert len(window.studio.project.tags_of(BLACK_CIRCLE)) == 1
    # key 2 picks the concept's second value ("line") and tags with it; multi-select by Ctrl-click
    click_glyph(qtbot, window, WHITE_CIRCLE, Qt.KeyboardModifier.ControlModifier)
    assert set(window.tagger.selected_keys()) == {BLACK_CIRCLE, WHITE_CIRCLE}
    qtbot.keyClick(window.grid, Qt.Key.Key_2)
    assert window.tree.current() == ("closure", "line")
    window.close()
    window.studio.close()

    with Project.open(project_path) as again:
        black = {(t.concept, t.value, t.author) for t in again.tags_of(BLACK_CIRCLE)}
        white = {(t.concept, t.value) for t in again.tags_of(WHITE_CIRCLE)}
    assert black == {("closure", "circle", "ann"), ("closure", "line", "ann")}
    assert white == {("closure", "circle"), ("closure", "line")}


def test_remove_tag_with_backspace_and_counts(
    qtbot, project_path: Path, catalog, render_cache
) -> None:
    window = open_window(qtbot, project_path, catalog, render_cache)
    window.tree.select("closure", "circle")
    item = window.tree._items[("closure", "circle")]
    assert item.text(1) == "1"
    click_glyph(qtbot, window, WHITE_CIRCLE)
    qtbot.keyClick(window.grid, Qt.Key.Key_Backspace)
    assert window.studio.project.tags_of(WHITE_CIRCLE) == []
    assert item.text(1) == "0"
    assert "0 glyphs tagged" in window.counts_label.text()


def test_filters_search_and_untagged(qtbot, project_path: Path, catalog, render_cache) -> None:
    window = open_window(qtbot, project_path, catalog, render_cache)
    total = window.model.rowCount()
    assert total == 96
    window.tree.select("closure", "circle")
    qtbot.keyClick(window.grid, Qt.Key.Key_U, Qt.KeyboardModifier.ControlModifier)
    assert window.state_combo.currentData() == "untagged_concept"
    assert window.model.rowCount() == total - 1
    assert window.model.row_of(WHITE_CIRCLE) is None
    window.state_combo.setCurrentIndex(0)
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert window.search.hasFocus()
    qtbot.keyClicks(window.search, "black circle")
    qtbot.waitUntil(lambda: window.model.rowCount() < total, timeout=3000)
    shown = {window.model.index(r).data(KEY_ROLE) for r in range(window.model.rowCount())}
    assert BLACK_CIRCLE in shown and WHITE_CIRCLE not in shown
    window.search.clear()
    qtbot.keyClicks(window.search, "U+25CB")
    qtbot.waitUntil(lambda: window.model.rowCount() == 1, timeout=3000)


def test_thumbnails_fill_in(qtbot, project_path: Path, catalog, render_cache) -> None:
    window = open_window(qtbot, project_path, catalog, render_cache)
    index = window.model.index(window.model.row_of(BLACK_CIRCLE))
    index.data(IMAGE_ROLE)  # asks the loader
    qtbot.waitUntil(lambda: index.data(IMAGE_ROLE) is not None, timeout=5000)
    img = index.data(IMAGE_ROLE)
    assert (img.width(), img.height()) == (80, 80)
    # a black circle has a lot of ink in the middle
    assert img.pixelColor(40, 40).value() < 128


def test_bad_import_shows_error_and_keeps_tags(
    qtbot, project_path: Path, catalog, render_cache, tmp_path: Path
) -> None:
    window = open_window(qtbot, project_path, catalog, render_cache)
    before = window.studio.project.tag_rows()
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "concept,value,codepoint,font\nclosure,circle,25CF,symbola\nsparkle,1,25A0,symbola\n"
    )
    window.import_annotations(str(bad))
    box = window.findChild(QMessageBox, "errorBox")
    assert box is not None and box.isVisible()
    assert "bad.csv" in box.text() and "nothing was imported" in box.text()
    assert "line 3: unknown concept 'sparkle'" in box.detailedText()
    box.close()
    assert window.studio.project.tag_rows() == before


def test_shortcuts_dialog_from_help(
    qtbot, project_path: Path, catalog, render_cache, monkeypatch
) -> None:
    window = open_window(qtbot, project_path, catalog, render_cache)
    seen = {}

    from studio.gui import shortcuts_dialog

    def fake_exec(self) -> int:
        seen["ids"] = self.visible_action_ids()
        return 0

    monkeypatch.setattr(shortcuts_dialog.ShortcutsDialog, "exec", fake_exec)
    qtbot.keyClick(window, Qt.Key.Key_F1)
    assert "tag.apply" in seen["ids"] and "edit.undo" in seen["ids"]


def test_the_schema_tree_marks_the_glyphs_the_generator_needs(
    qtbot, project_path: Path, catalog, render_cache
) -> None:
    """One circle tagged: constant over closure is dry, so the tree asks for more circles (the
    annotation-needs report, computed off the GUI thread); tagging five more lowers the ask."""
    window = open_window(qtbot, project_path, catalog, render_cache)
    qtbot.waitUntil(
        lambda: window.tree.needs_text("closure", "circle").startswith("+"), timeout=10000
    )
    before = int(window.tree.needs_text("closure", "circle")[1:])
    item = window.tree._items[("closure", "circle")]
    assert "constant/closure/noshift" in item.toolTip(2)
    assert window.tree.needs_text("closure", None).startswith("+")  # the concept sums its values
    window.tree.select("closure", "circle")
    circles = [GlyphKey(cp, "symbola") for cp in (0x25CF, 0x25EF, 0x25CC, 0x25CD, 0x25CE)]
    click_glyph(qtbot, window, circles[0])
    for key in circles[1:]:
        click_glyph(qtbot, window, key, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(window.grid, Qt.Key.Key_Space)
    assert window.tree._items[("closure", "circle")].text(1) == "6"
    qtbot.waitUntil(
        lambda: window.tree.needs_text("closure", "circle") != f"+{before}", timeout=10000
    )
    after = window.tree.needs_text("closure", "circle")
    assert after == "" or int(after[1:]) < before


def test_only_held_out_glyphs_shows_the_val_test_side_and_the_needs_say_which_side(
    qtbot, project_path: Path, catalog, render_cache
) -> None:
    """Ctrl+Shift+T keeps the glyphs a split's hold-out puts on the val/test side (each
    glyph's own side, tagged or not); the Needs tooltip says how many of a value's glyphs
    must be held-out ones and where to find them."""
    from studio.families.glyph_pmp.split import glyph_side

    window = open_window(qtbot, project_path, catalog, render_cache)
    total = window.model.rowCount()
    qtbot.keyClick(
        window,
        Qt.Key.Key_T,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    assert window.actions["view.held_out"].isChecked()
    assert window.tagger.held_out_button.isChecked()  # the grid says it is narrowed
    shown = {window.model.index(r).data(KEY_ROLE) for r in range(window.model.rowCount())}
    assert 0 < len(shown) < total
    assert {glyph_side(k, 0.3) for k in shown} == {"eval"}
    qtbot.waitUntil(
        lambda: window.tree.needs_text("closure", "circle").startswith("+"), timeout=10000
    )
    tip = window.tree._items[("closure", "circle")].toolTip(2)
    assert "held-out" in tip and "Ctrl+Shift+T" in tip
    qtbot.keyClick(
        window,
        Qt.Key.Key_T,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    assert window.model.rowCount() == total


def test_a_blank_needs_cell_says_why_it_is_blank(
    qtbot, project_path: Path, catalog, render_cache
) -> None:
    """Issue 28: aspect's Needs cell was blank and unexplained. Its tooltip now says there is
    nothing to tag for it, and which of its tuples no tagging can build (horns is a mark a
    glyph has or not: a constant over it without shift has one possible key, and a set needs
    two)."""
    window = open_window(qtbot, project_path, catalog, render_cache)
    qtbot.waitUntil(
        lambda: window.tree.needs_text("closure", "circle").startswith("+"), timeout=10000
    )
    assert window.tree.needs_text("horns", None) == ""
    tip = window.tree.needs_tip("horns", None)
    assert tip.startswith("No glyphs to tag for horns")
    assert "constant/horns/noshift cannot be built whatever is tagged" in tip
    assert window.tree.needs_tip("horns", "none").startswith("No glyphs to tag for horns = none")
    assert "held-out" in window.tree.needs_tip("closure", "circle")  # a filled cell: as before


def test_the_tagger_shows_what_a_concept_and_value_mean(
    qtbot, project_path: Path, catalog, render_cache
) -> None:
    """Issue 28: a concept's tooltip said only "closure (nominal) — rules: constant, dist3".
    The bundled UA schema defines every concept and value, with example glyphs; the tree's
    tooltips, the inspector's definition panel and its tags' tooltips show them."""
    import html

    window = open_window(qtbot, project_path, catalog, render_cache)
    c = window.studio.schema.concept("closure")
    v = c.value("circle")
    assert c.description and v.description and v.examples
    assert html.escape(c.description) in window.tree.name_tip("closure", None)
    tip = window.tree.name_tip("closure", "circle")
    assert "key 1 tags the selection with it" in tip and html.escape(v.description) in tip
    window.tree.select("closure", "circle")
    shown = window.inspector.definition.text()
    assert html.escape(v.description) in shown and html.escape(c.description) in shown
    assert window.inspector.examples_shown() == list(v.examples)
    # an example glyph the project has is drawn; one it lacks shows its character
    for label, key in zip(window.inspector.example_labels, v.examples, strict=False):
        has = window.studio.project.glyph(GlyphKey.parse(key)) is not None
        assert (label.pixmap() is not None and not label.pixmap().isNull()) == has, key
    assert any(window.studio.project.glyph(GlyphKey.parse(k)) is not None for k in v.examples), (
        "the fixture's Geometric Shapes hold one of closure = circle's examples"
    )
    # a concept row shows the concept's definition and examples
    window.tree.select("closure", None)
    assert html.escape(c.description) in window.inspector.definition.text()
    assert window.inspector.examples_shown() == list(c.examples[:6])
    # the inspector's tag rows explain the value they name
    click_glyph(qtbot, window, GlyphKey(0x25CB, "symbola"))
    assert window.inspector.tags.rowCount() == 1
    assert html.escape(v.description) in window.inspector.tags.item(0, 1).toolTip()


def test_a_glyph_asked_for_that_held_out_hides_is_shown(
    qtbot, project_path: Path, catalog, render_cache
) -> None:
    """Another tab asks for a glyph (the Lab tab's queue, the board) that Only held-out
    glyphs hides: the toggle goes off and the glyph is shown, and the status bar says why
    (it said the glyph was not in the grid)."""
    from studio.families.glyph_pmp.split import glyph_side

    window = open_window(qtbot, project_path, catalog, render_cache)
    keys = [window.model.index(r).data(KEY_ROLE) for r in range(window.model.rowCount())]
    trained = next(k for k in keys if glyph_side(k, 0.3) != "eval")
    window.actions["view.held_out"].trigger()
    shown = {window.model.index(r).data(KEY_ROLE) for r in range(window.model.rowCount())}
    assert trained not in shown
    window.go_to_glyph(trained)
    assert window.grid.currentIndex().data(KEY_ROLE) == trained
    assert not window.actions["view.held_out"].isChecked()
    assert not window.tagger.held_out_button.isChecked()
    said = window.statusBar().currentMessage()
    assert said == f"Only held-out glyphs turned off to show {trained}"


def test_only_my_assignment_on_a_file_shows_its_button_while_on(
    qtbot, project_path: Path, catalog, render_cache
) -> None:
    """A project file has no assignments, so the assignment button is hidden; turned on from
    the View menu, the filter empties the grid, and its button shows (to say why, and to
    turn it off)."""
    window = open_window(qtbot, project_path, catalog, render_cache)
    button = window.tagger.mine_button
    assert not button.isVisible()
    window.actions["view.my_assignment"].trigger()
    assert window.model.rowCount() == 0 and button.isVisible() and button.isChecked()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert window.model.rowCount() > 0 and not button.isVisible()
