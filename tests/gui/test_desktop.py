"""Desktop conventions, driven like a user: preferences, the annotator's name, recent projects,
save a copy, panes that forget a closed project, quitting while a job runs, the state restored
on reopening, About, and the job list's progress bars."""

from __future__ import annotations

import sys
import threading
import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QApplication,
    QInputDialog,
    QTableView,
    QWidget,
)

from studio.app import Studio
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.glyphs.fonts import FontCatalog
from studio.glyphs.render import RenderCache
from studio.gui.job_list import COL_PROGRESS, JobTableModel, ProgressDelegate
from studio.gui.main_window import MainWindow
from studio.gui.settings import StudioSettings, default_documents_dir
from studio.store.jobs import JobRecord
from studio.store.project import Project
from studio.worker.jobtext import job_seconds_left
from tests.gui.windows import show_window

pytestmark = pytest.mark.gui

BLACK_CIRCLE = GlyphKey(0x25CF, "symbola")
LEFT_ARROW = GlyphKey(0x2190, "symbola")


# ---- two small projects ----------------------------------------------------------------------
@pytest.fixture(scope="session")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> FontCatalog:
    return FontCatalog.scan(cache_dir=tmp_path_factory.mktemp("fontcache"))


@pytest.fixture(scope="session")
def render_cache(tmp_path_factory: pytest.TempPathFactory) -> RenderCache:
    return RenderCache(tmp_path_factory.mktemp("renders"))


def make_project(
    path: Path, schema: Schema, catalog: FontCatalog, cache: RenderCache, cps: range
) -> Path:
    if catalog.get("symbola") is None:
        pytest.skip("Symbola is not installed (Debian package fonts-symbola)")
    project = Project.create(path, schema)
    studio = Studio(project, catalog=catalog, cache=cache, author="setup")
    studio.add_glyphs(GlyphKey(cp, "symbola") for cp in cps)
    for _ in studio.render_all(workers=1):
        pass
    project.close()
    return path


@pytest.fixture
def shapes(tmp_path: Path, ua_schema: Schema, catalog, render_cache) -> Path:
    """Project A: the Geometric Shapes."""
    return make_project(
        tmp_path / "shapes.studio", ua_schema, catalog, render_cache, range(0x25A0, 0x2600)
    )


@pytest.fixture
def arrows(tmp_path: Path, ua_schema: Schema, catalog, render_cache) -> Path:
    """Project B: the Arrows."""
    return make_project(
        tmp_path / "arrows.studio", ua_schema, catalog, render_cache, range(0x2190, 0x2200)
    )


@pytest.fixture
def open_window(qtbot, catalog, render_cache) -> Iterator:
    """Open a window on a project like ``analogy-studio gui PROJECT`` (``author`` "" is a
    person who gave no name); every window and studio is closed after the test."""
    opened: list[MainWindow] = []

    def open_(path: Path, author: str = "ann") -> MainWindow:
        studio = Studio(Project.open(path), catalog=catalog, cache=render_cache, author=author)
        window = show_window(qtbot, studio)
        opened.append(window)
        return window

    yield open_
    for window in opened:
        if window.isVisible():
            window.running_jobs = lambda: []  # type: ignore[method-assign]
            window.close()
        window.studio.close()


def click_glyph(qtbot, window: MainWindow, key: GlyphKey) -> None:
    row = window.model.row_of(key)
    assert row is not None, f"{key} is not shown"
    index = window.model.index(row)
    window.grid.scrollTo(index)
    rect = window.grid.visualRect(index)
    qtbot.mouseClick(window.grid.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def press(qtbot, window: MainWindow, key: Qt.Key, modifiers=Qt.KeyboardModifier.NoModifier):
    qtbot.keyClick(window, key, modifiers)


# ---- preferences and the annotator's name ----------------------------------------------------
def test_preferences_set_the_name_folders_and_threshold(
    qtbot, shapes: Path, open_window, tmp_path: Path
) -> None:
    window = open_window(shapes, author="")
    # no name given at start: the status bar says so, it is not silently "unknown"
    assert window.annotator_button.text() == "Annotator: not set — click to set"
    press(qtbot, window, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    dlg = window.preferences_dialog
    qtbot.waitExposed(dlg)
    assert dlg.name_edit.text() == ""
    # the folders start at the documents folder
    assert dlg.folder_edits["projects"].text() == default_documents_dir()
    # an empty name is refused, with the reason
    qtbot.mouseClick(dlg.buttons.button(dlg.buttons.StandardButton.Ok), Qt.MouseButton.LeftButton)
    assert dlg.isVisible() and "name" in dlg.problem.text()
    qtbot.keyClicks(dlg.name_edit, "Ada L.")
    exports = tmp_path / "exports"
    exports.mkdir()
    dlg.folder_edits["exports"].setText(str(exports))
    dlg.grade_combo.setCurrentIndex(dlg.grade_combo.findData("medium"))
    qtbot.mouseClick(dlg.buttons.button(dlg.buttons.StandardButton.Ok), Qt.MouseButton.LeftButton)
    assert not dlg.isVisible()

    settings = StudioSettings()
    assert settings.annotator_name() == "Ada L."
    assert settings.dialog_dir("exports") == str(exports)
    assert settings.feature_warning_min() == "medium"
    assert window.annotator_button.text() == "Annotator: Ada L."
    assert window.board.grade_combo.currentData() == "medium"  # the board follows
    # the next tag carries the name
    window.tree.select("closure", "circle")
    click_glyph(qtbot, window, BLACK_CIRCLE)
    qtbot.keyClick(window.grid, Qt.Key.Key_Space)
    assert [t.author for t in window.studio.project.tags_of(BLACK_CIRCLE)] == ["Ada L."]

    # the name can be changed at any time; clicking it in the status bar opens the dialog
    qtbot.mouseClick(window.annotator_button, Qt.MouseButton.LeftButton)
    dlg = window.preferences_dialog
    dlg.name_edit.clear()
    qtbot.keyClicks(dlg.name_edit, "Grace")
    qtbot.keyClick(dlg.name_edit, Qt.Key.Key_Return)
    assert window.studio.author == "Grace" and window.annotator_button.text() == "Annotator: Grace"


def test_a_tag_without_a_name_asks_once_and_a_refusal_tags_nothing(
    qtbot, shapes: Path, open_window, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = open_window(shapes, author="")
    window.tree.select("closure", "circle")
    click_glyph(qtbot, window, BLACK_CIRCLE)
    asked: list[str] = []

    def refuse(*args: object, **kwargs: object) -> tuple[str, bool]:
        asked.append(str(args[1]))
        return "", False

    monkeypatch.setattr(QInputDialog, "getText", refuse)
    qtbot.keyClick(window.grid, Qt.Key.Key_Space)
    assert asked == ["Who is annotating?"]
    assert window.studio.project.tags_of(BLACK_CIRCLE) == []  # not tagged as "unknown"
    assert "annotator name" in window.statusBar().currentMessage()

    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("Bo", True))
    qtbot.keyClick(window.grid, Qt.Key.Key_Space)
    assert [t.author for t in window.studio.project.tags_of(BLACK_CIRCLE)] == ["Bo"]
    assert StudioSettings().annotator_name() == "Bo"
    assert window.annotator_button.text() == "Annotator: Bo"


# ---- recent projects ---------------------------------------------------------------------------
def test_recent_projects_open_and_clear(
    qtbot, shapes: Path, arrows: Path, open_window, tmp_path: Path
) -> None:
    settings = StudioSettings()
    settings.add_recent_project(tmp_path / "gone.studio")
    settings.add_recent_project(arrows)
    settings.add_recent_project(shapes)
    window = open_window(shapes)
    menu = window.recent_menu
    assert menu.menuAction() in window.menus["file"].actions()
    menu.aboutToShow.emit()  # as when the person opens File ▸ Open recent
    entries = [a for a in menu.actions() if a.objectName().startswith("recent_")]
    texts = [a.text() for a in entries]
    assert texts[:3] == ["&1  shapes.studio  (open)", "&2  arrows.studio", "&3  gone.studio"]
    assert [a.isEnabled() for a in entries[:3]] == [False, True, False]  # open; there; missing
    assert "not found" in entries[2].toolTip()

    entries[1].trigger()
    assert window.studio.project.path == arrows
    assert window.windowTitle().startswith("arrows.studio")
    assert StudioSettings().recent_projects()[:2] == [arrows.absolute(), shapes.absolute()]

    menu.aboutToShow.emit()
    clear = next(a for a in menu.actions() if a.objectName() == "recent_clear")
    clear.trigger()
    assert StudioSettings().recent_projects() == []
    menu.aboutToShow.emit()
    assert [a.text() for a in menu.actions() if a.text()] == [
        "No recent project",
        "Clear the list",
    ]
    assert not any(a.isEnabled() for a in menu.actions() if not a.isSeparator())


# ---- save a copy ---------------------------------------------------------------------------------
def test_save_a_copy_writes_a_consistent_file_and_keeps_the_project_open(
    qtbot, shapes: Path, open_window, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PySide6.QtWidgets import QFileDialog

    window = open_window(shapes)
    window.tree.select("closure", "circle")
    click_glyph(qtbot, window, BLACK_CIRCLE)
    qtbot.keyClick(window.grid, Qt.Key.Key_Space)  # an edit the copy must hold
    target = tmp_path / "copies" / "snapshot.studio"
    asked: list[str] = []

    def save_name(parent: QWidget, caption: str, start: str, filters: str) -> tuple[str, str]:
        asked.append(start)
        return str(target.with_suffix("")), filters  # the person typed no extension

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_name)
    press(
        qtbot,
        window,
        Qt.Key.Key_S,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    # the dialog started in the documents folder, with a name for the copy
    assert asked == [str(Path(default_documents_dir()) / "shapes copy.studio")]
    assert target.exists() and not Path(f"{target}-wal").exists()
    assert "Saved a copy" in window.statusBar().currentMessage()
    with Project.open(target) as copy:
        assert [(t.concept, t.value) for t in copy.tags_of(BLACK_CIRCLE)] == [("closure", "circle")]
        assert copy.glyph_count() == window.studio.project.glyph_count()
    # the open project is still the original and still takes edits
    assert window.studio.project.path == shapes
    window.tree.select("closure", "line")
    qtbot.keyClick(window.grid, Qt.Key.Key_Space)
    assert len(window.studio.project.tags_of(BLACK_CIRCLE)) == 2
    with Project.open(target) as copy:
        assert len(copy.tags_of(BLACK_CIRCLE)) == 1  # a copy, not a link
    # the project itself is refused as the copy's name
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a: (str(shapes), ""))
    monkeypatch.setattr(MainWindow, "show_error", lambda self, title, e: asked.append(str(e)))
    window.save_copy()
    assert "open project itself" in asked[-1]


# ---- panes forget the closed project -----------------------------------------------------------
def test_opening_another_project_resets_every_pane(
    qtbot, shapes: Path, arrows: Path, open_window
) -> None:
    window = open_window(shapes)
    click_glyph(qtbot, window, BLACK_CIRCLE)
    assert window.inspector.name.text() == "BLACK CIRCLE"
    qtbot.keyClicks(window.search, "circle")
    window.tagger.flush_search()
    job_id = window.dashboard.submit(
        "diagnostic", {"action": "sleep", "seconds": 0.1, "steps": 2}, "A's job"
    )
    qtbot.waitUntil(lambda: window.dashboard.model.rowCount() == 1, timeout=10_000)
    assert job_id is not None

    window.open_project(str(arrows))
    assert window.studio.project.path == arrows
    # nothing of A: not in the inspector, the grid's selection, the search or the dashboard
    assert window.inspector.name.text() == "" and window.inspector.key.text() == ""
    assert window.inspector.image.text() == "Select a glyph"
    assert window.tagger.selected_keys() == [] and not window.grid.currentIndex().isValid()
    assert window.search.text() == ""
    assert window.model.row_of(BLACK_CIRCLE) is None and window.model.row_of(LEFT_ARROW) is not None
    assert window.dashboard.model.rowCount() == 0
    assert "No job selected" in window.dashboard.job_title.text()
    window.show_board()
    assert window.board.set_combo.findText("A's job") < 0
    assert window.studio.undo_stack.can_undo is False


# ---- quitting while a job runs ------------------------------------------------------------------
def test_quitting_while_a_job_runs_asks_first(qtbot, shapes: Path, open_window) -> None:
    window = open_window(shapes)
    release = threading.Event()

    def slow_job() -> Iterator[tuple[int, int]]:
        yield 0, 2
        release.wait(10)
        yield 2, 2

    window.run_job("Rendering glyphs", slow_job)
    qtbot.waitUntil(window.job_running, timeout=5000)
    try:
        press(qtbot, window, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
        box = window.quit_box
        assert box is not None and box.isVisible() and window.isVisible()
        assert box.text() == "A job is still running:"
        assert "Rendering glyphs" in box.informativeText()
        assert sorted(b.text() for b in box.buttons()) == ["Cancel", "Quit anyway"]
        qtbot.keyClick(box, Qt.Key.Key_Escape)  # Cancel: nothing stopped
        qtbot.waitUntil(lambda: window.quit_box is None, timeout=5000)
        assert window.isVisible() and window.job_running()

        press(qtbot, window, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
        box = window.quit_box
        assert box is not None
        quit_anyway = next(b for b in box.buttons() if b.objectName() == "quitAnyway")
        qtbot.mouseClick(quit_anyway, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=5000)
    finally:
        release.set()


def test_quitting_with_no_job_asks_nothing(qtbot, shapes: Path, open_window) -> None:
    window = open_window(shapes)
    assert window.running_jobs() == []
    press(qtbot, window, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)  # no dialog
    assert not window.isVisible()


# ---- the state restored on reopening ------------------------------------------------------------
def test_concept_filters_and_tab_come_back_on_reopening(
    qtbot, shapes: Path, arrows: Path, open_window
) -> None:
    window = open_window(shapes)
    window.tree.select("elongation", None)
    window.block_combo.setCurrentIndex(window.block_combo.findData("Geometric Shapes"))
    qtbot.keyClicks(window.search, "square")
    window.state_combo.setCurrentIndex(window.state_combo.findData("untagged_concept"))
    press(qtbot, window, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)  # Baselines tab
    concept = window.tree.current()
    window.close()
    window.studio.close()

    again = open_window(shapes)
    assert again.tree.current() == concept
    assert again.block_combo.currentData() == "Geometric Shapes"
    assert again.search.text() == "square"
    assert again.state_combo.currentData() == "untagged_concept"
    assert again.tabs.currentWidget() is again.dashboard
    shown = [again.model.record(r).key.codepoint for r in range(again.model.rowCount())]
    assert shown and all("SQUARE" in unicodedata.name(chr(cp), "") for cp in shown)
    # another project has its own concept and filters (the tab is the window's)
    again.open_project(str(arrows))
    assert again.search.text() == "" and again.block_combo.currentIndex() == 0
    assert again.tabs.currentWidget() is again.dashboard


# ---- About ---------------------------------------------------------------------------------------
def test_about_lists_versions_without_importing_torch(qtbot, shapes: Path, open_window) -> None:
    torch_before = "torch" in sys.modules
    window = open_window(shapes)
    window.actions["help.about"].trigger()
    dlg = window.about_dialog
    qtbot.waitExposed(dlg)
    rows = dict(dlg.rows)
    from studio import __version__

    assert rows["Analogy Studio"] == __version__
    assert rows["Python"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}.")
    assert rows["PySide6"] and rows["Qt"]
    assert rows["NumPy"] == metadata.version("numpy")
    assert rows["SQLAlchemy"] == metadata.version("SQLAlchemy")
    fmt = window.studio.project.format_version
    assert rows["Open project"] == f"shapes.studio (format {fmt})"
    assert rows["Its schema"].startswith("ua 1.0")
    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = "not installed"
    assert rows["PyTorch (baselines)"] == torch
    assert ("torch" in sys.modules) == torch_before  # read from metadata, not imported
    texts = [dlg.table.topLevelItem(i).text(0) for i in range(dlg.table.topLevelItemCount())]
    assert texts[0] == "Analogy Studio"
    qtbot.mouseClick(dlg.copy_button, Qt.MouseButton.LeftButton)
    assert f"Analogy Studio: {__version__}" in QApplication.clipboard().text()


# ---- the schema editor's title ------------------------------------------------------------------
def test_the_schema_editor_names_its_schema_once(qtbot, ua_schema: Schema) -> None:
    from dataclasses import replace

    from studio.gui.schema_editor import SchemaEditor, schema_label

    dlg = SchemaEditor(ua_schema, lambda c, v: 0)
    qtbot.addWidget(dlg)
    assert ua_schema.title == "Unicode Analogies 1.0"
    assert dlg.windowTitle() == "Edit schema — Unicode Analogies 1.0"
    assert schema_label(replace(ua_schema, title="")) == "ua 1.0"
    assert schema_label(replace(ua_schema, title="Shapes")) == "Shapes 1.0"


# ---- the job list: a filled bar and the time left ------------------------------------------------
def running_job(job_id: int, progress: float, seconds: float, now: datetime) -> JobRecord:
    started = (now - timedelta(seconds=seconds)).isoformat()
    return JobRecord(job_id, "baseline", f"job {job_id}", {}, "running", progress,
                     "blind · seed 2 · epoch 3/8", started, started, None, None, "cpu", False,
                     None, "", {}, 1)  # fmt: skip


def test_a_running_job_shows_the_time_left() -> None:
    now = datetime.now(UTC)
    assert job_seconds_left(running_job(1, 0.25, 100, now), now) == pytest.approx(300)
    assert job_seconds_left(running_job(1, 0.0, 100, now), now) is None  # no rate yet
    model = JobTableModel()
    model.set_jobs([running_job(1, 0.25, 100, now)], now)
    text = model.index(0, COL_PROGRESS).data()
    assert text == "25% · 5 min 00 s left · blind · seed 2 · epoch 3/8"


def test_no_time_left_until_a_unit_of_the_job_has_finished() -> None:
    """Issue 28: the first estimate came from start-up time over a tiny share. The list
    tells none until the job's message moves on (a seed or model done) or a tenth is done."""
    from dataclasses import replace

    now = datetime.now(UTC)
    model = JobTableModel()
    early = running_job(1, 0.02, 60, now)
    model.set_jobs([early], now)
    assert model.index(0, COL_PROGRESS).data() == "2% · blind · seed 2 · epoch 3/8"
    later = replace(early, progress=0.04, message="blind · seed 3 · epoch 1/8")
    model.set_jobs([later], now + timedelta(seconds=10))
    # the rate since the list first saw it working: 2 % in 10 s, start-up not in it
    assert model.index(0, COL_PROGRESS).data().startswith("4% · 8 min 00 s left")
    assert job_seconds_left(early, now, first_message=early.message) is None
    assert job_seconds_left(early, now) is not None  # without a first message: the old rule


def test_the_progress_bar_is_filled_at_13_percent(qtbot) -> None:
    now = datetime.now(UTC)
    model = JobTableModel()
    model.set_jobs([running_job(1, 0.13, 60, now), running_job(2, 0.5, 60, now)], now)
    table = QTableView()
    qtbot.addWidget(table)
    table.setModel(model)
    table.setItemDelegateForColumn(COL_PROGRESS, ProgressDelegate(table))
    table.horizontalHeader().resizeSection(COL_PROGRESS, 400)
    table.verticalHeader().setDefaultSectionSize(24)
    table.resize(900, 200)
    table.show()
    qtbot.waitExposed(table)
    image = table.viewport().grab().toImage()
    highlight = table.palette().highlight().color()

    def filled_share(row: int) -> float:
        """The share of the bar's width painted in the highlight colour, along the line a
        quarter of the way down the bar (between the frame and the text)."""
        rect = table.visualRect(model.index(row, COL_PROGRESS)).adjusted(4, 4, -4, -4)
        y = rect.top() + rect.height() // 4
        hits = sum(
            1
            for x in range(rect.left(), rect.right())
            if _close(QColor(image.pixel(x, y)), highlight)
        )
        return hits / rect.width()

    assert 0.08 < filled_share(0) < 0.2  # 13%: a visible fill from the left
    assert 0.4 < filled_share(1) < 0.6


def _close(a: QColor, b: QColor, tolerance: int = 60) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a.getRgb()[:3], b.getRgb()[:3], strict=True))


# ---- the charts follow the window's size ---------------------------------------------------------
def test_the_charts_grow_with_the_window(qtbot, shapes: Path, open_window) -> None:
    from test_dashboard import add_done_baseline_job  # a hand-written report, as the worker

    add_done_baseline_job(shapes)
    window = open_window(shapes)
    press(qtbot, window, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)
    dash = window.dashboard
    qtbot.waitUntil(lambda: dash.selected_id() is not None, timeout=10_000)
    dash.detail_tabs.setCurrentIndex(2)  # Plots
    qtbot.waitUntil(lambda: len(dash.plot_canvases()) == 4, timeout=30_000)
    canvas = dash.plot_canvases()["accuracy-rule"]
    qtbot.waitUntil(canvas.isVisible, timeout=5000)
    small = (canvas.width(), canvas.height())
    window.resize(1900, 1200)
    qtbot.waitUntil(lambda: canvas.width() > small[0] + 200, timeout=5000)
    assert canvas.height() > small[1] + 100
    # the figure is redrawn at the new size, not stretched
    dpi = canvas.figure.dpi / canvas.devicePixelRatioF()
    assert canvas.figure.get_size_inches()[0] * dpi == pytest.approx(canvas.width(), abs=2)


# ---- one default for --sampling ----------------------------------------------------------------
def test_the_cli_and_the_generate_dialog_share_the_sampling_default(qtbot) -> None:
    from studio.cli import _split_params, build_parser
    from studio.generate.params import DEFAULT_SAMPLING
    from studio.gui.generate_dialog import GenerateSplitDialog

    args = build_parser().parse_args(["generate", "project.studio", "out"])
    assert _split_params(args).sampling == DEFAULT_SAMPLING
    dlg = GenerateSplitDialog(["closure", "aspect"])
    qtbot.addWidget(dlg)
    assert dlg.request().options["sampling"] == DEFAULT_SAMPLING == "balanced"
