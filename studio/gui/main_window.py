"""The annotator's window: schema tree, glyph grid with filters, inspector, status bar.

UA's method is to step through the concepts of the schema and select the glyphs in which each
value is readily perceived; the layout follows it: pick a value on the left (or press 1–9),
select glyphs in the grid (click, Shift/Ctrl-click, rubber band, Ctrl+A), press Space to tag.
All state changes go through :class:`studio.app.Studio`; long work runs in worker threads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)
from superqt.utils import create_worker

from studio import __version__
from studio.app import Studio
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.gui.actions import build_actions, build_menus
from studio.gui.curator_board import CuratorBoard
from studio.gui.dashboard import BaselineDashboard
from studio.gui.glyph_grid import (
    TAG_FILTERS,
    FontSource,
    GlyphGrid,
    GlyphGridModel,
    GridFilter,
    ThumbnailLoader,
)
from studio.gui.inspector import Inspector
from studio.gui.preview import PreviewPanel
from studio.gui.schema_tree import SchemaTree
from studio.gui.settings import StudioSettings
from studio.gui.widgets import refill_combo
from studio.store.project import GlyphRecord, Project, TagChange

PROJECT_FILTER = "Analogy Studio projects (*.studio);;All files (*)"
#: Actions that act on the glyph grid: active only while the annotator is shown.
ANNOTATOR_ACTIONS = ("edit.select_all", "view.find", "view.only_untagged", "view.inspector")


class MainWindow(QMainWindow):
    def __init__(self, studio: Studio, settings: StudioSettings | None = None) -> None:
        super().__init__()
        self.studio = studio
        self.settings = settings or StudioSettings()
        self._worker = None
        self._job_name = ""
        self.setObjectName("mainWindow")
        self.resize(1280, 800)
        self.loader = ThumbnailLoader(studio.cache, self)
        self.model = GlyphGridModel(self.loader, self)
        self._build_ui()
        self._build_actions()
        studio.events.tags_changed.connect(self._on_tags_changed)
        studio.events.schema_changed.connect(self._on_schema_changed)
        studio.events.glyphs_changed.connect(self.reload)
        studio.undo_stack.subscribe(self._update_undo_actions)
        self.reload()
        self.settings.restore_window(self)

    # ---- construction ------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self.tree = SchemaTree()
        self.tree.current_changed.connect(self._on_current_value)

        self.font_combo = QComboBox(objectName="fontFilter")
        self.block_combo = QComboBox(objectName="blockFilter")
        self.block_combo.setMinimumContentsLength(18)
        self.search = QLineEdit(objectName="search", placeholderText="Search name, U+25CC, block…")
        self.search.setClearButtonEnabled(True)
        self.state_combo = QComboBox(objectName="tagStateFilter")
        for key, text in TAG_FILTERS:
            self.state_combo.addItem(text, key)
        self.hide_missing = QCheckBox("Hide missing", objectName="hideMissing")
        # the "needs glyphs" marker: recomputed off the GUI thread a moment after tags change
        self._needs_timer = QTimer(self, singleShot=True, interval=600)
        self._needs_timer.timeout.connect(self._refresh_needs)
        self._needs_worker = None
        self._filter_timer = QTimer(self, singleShot=True, interval=200)
        self._filter_timer.timeout.connect(self._apply_filter)
        self.search.textChanged.connect(lambda _t: self._filter_timer.start())
        for combo in (self.font_combo, self.block_combo, self.state_combo):
            combo.currentIndexChanged.connect(lambda _i: self._apply_filter())
        self.hide_missing.toggled.connect(lambda _b: self._apply_filter())

        bar = QHBoxLayout()
        bar.addWidget(QLabel("Font"))
        bar.addWidget(self.font_combo)
        bar.addWidget(QLabel("Block"))
        bar.addWidget(self.block_combo, 1)
        bar.addWidget(self.search, 2)
        bar.addWidget(self.state_combo)
        bar.addWidget(self.hide_missing)

        self.current_label = QLabel(objectName="currentValue")
        self.current_label.setStyleSheet("font-size: 14px; padding: 4px;")
        self.grid = GlyphGrid()
        self.grid.setModel(self.model)
        self.grid.selectionModel().currentChanged.connect(lambda *_: self._update_inspector())
        self.grid.selectionModel().selectionChanged.connect(lambda *_: self._update_status())
        self.model.filtered.connect(self._update_status)

        centre = QWidget()
        lay = QVBoxLayout(centre)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(bar)
        lay.addWidget(self.current_label)
        lay.addWidget(self.grid, 1)

        self.inspector = Inspector(self._master_image)
        self.inspector.remove_tag.connect(self._remove_tag_from_current)
        self.inspector.setMinimumWidth(260)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.tree)
        self.splitter.addWidget(centre)
        self.splitter.addWidget(self.inspector)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([320, 680, 280])
        # the annotator and the curator's board are the window's two modes, one tab each
        self.board = CuratorBoard(self.studio)
        self.tabs = QTabWidget(objectName="modeTabs")
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.splitter, "Annotate")
        self.tabs.addTab(self.board, "Puzzles")
        self.preview = PreviewPanel()
        self.tabs.addTab(self.preview, "Preview")
        # background jobs: the dashboard's job controller drives the project's worker host
        self.dashboard = BaselineDashboard(self.studio)
        self.dashboard.open_puzzle.connect(self.open_flagged_puzzle)
        self.dashboard.flags_changed.connect(self._on_baseline_flags)
        self.tabs.addTab(self.dashboard, "Baselines")
        self.tabs.currentChanged.connect(lambda _i: self._on_mode_changed())
        self.setCentralWidget(self.tabs)

        sb = self.statusBar()
        self.counts_label = QLabel(objectName="counts")
        self.progress = QProgressBar(objectName="jobProgress", maximumWidth=220)
        self.progress.setVisible(False)
        self.cancel_button = QPushButton("Cancel", objectName="cancelJob")
        self.cancel_button.setVisible(False)
        self.cancel_button.clicked.connect(self.cancel_job)
        sb.addPermanentWidget(self.counts_label, 1)
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.cancel_button)

    def _build_actions(self) -> None:
        handlers: dict[str, Callable[[], None]] = {
            "file.new_project": self.new_project,
            "file.open_project": self.open_project,
            "file.import_annotations": self.import_annotations,
            "file.export_annotations": self.export_annotations,
            "file.add_font": self.add_font,
            "file.render_all": self.render_all,
            "file.quit": self.close,
            "edit.undo": self.undo,
            "edit.redo": self.redo,
            "edit.select_all": self.grid.selectAll,
            "edit.schema": self.edit_schema,
            "tag.apply": self.tag_selected,
            "tag.remove": self.untag_selected,
            "tag.next_concept": lambda: self.tree.step_concept(+1),
            "tag.prev_concept": lambda: self.tree.step_concept(-1),
            "tag.next_value": lambda: self.tree.step_value(+1),
            "tag.prev_value": lambda: self.tree.step_value(-1),
            "view.find": self._focus_search,
            "view.only_untagged": self._toggle_only_untagged,
            "view.inspector": self._toggle_inspector,
            "puzzle.board": self.show_board,
            "puzzle.generate": self.generate_split,
            "puzzle.approve": self.board.approve,
            "puzzle.reject": self.board.reject,
            "puzzle.draft": self.board.mark_draft,
            "puzzle.comment": self.board.edit_comment,
            "puzzle.replace_foil": self.board.replace_foil,
            "puzzle.regenerate": self.board.regenerate,
            "view.annotator": self.show_annotator,
            "view.preview": self.show_preview,
            "view.baselines": self.show_baselines,
            "help.shortcuts": self.show_shortcuts,
            "help.about": self.show_about,
        }
        for n in range(1, 10):
            handlers[f"tag.value_{n}"] = lambda n=n: self.tag_with_nth_value(n)
        self.actions = build_actions(self, handlers)
        self.menus = build_menus(self.menuBar(), self.actions)
        self.actions["view.inspector"].setChecked(True)
        self.board.bind_actions(self.actions)
        self._on_mode_changed()
        self._update_undo_actions()

    # ---- modes: annotator and curator's board --------------------------------------------------
    def show_board(self) -> None:
        self.tabs.setCurrentWidget(self.board)

    def show_annotator(self) -> None:
        self.tabs.setCurrentWidget(self.splitter)

    def show_preview(self) -> None:
        self.tabs.setCurrentWidget(self.preview)

    def show_baselines(self) -> None:
        self.tabs.setCurrentWidget(self.dashboard)

    def open_flagged_puzzle(self, set_id: int, puzzle_id: str) -> None:
        """A flagged puzzle was activated on the Baselines tab: open it on the board."""
        self.show_board()
        show_puzzle = getattr(self.board, "show_puzzle", None)
        if show_puzzle is None:
            return
        if not show_puzzle(set_id, puzzle_id):
            self.statusBar().showMessage(
                f"Puzzle {puzzle_id} is no longer in puzzle set {set_id}", 8000
            )

    def _on_baseline_flags(self, set_id: int) -> None:
        """A baseline job stored shortcut flags for a set: views listening to the studio (the
        curator's board) re-read them."""
        self.studio.baseline_flags_changed(set_id)

    def generate_split(self) -> None:
        self.show_board()
        self.board.generate_split()

    def _on_mode_changed(self) -> None:
        """Keys act on what is shown: tagging keys in the annotator, puzzle keys on the board."""
        annotating = self.tabs.currentWidget() is self.splitter
        for action_id, action in self.actions.items():
            if action_id.startswith("tag.") or action_id in ANNOTATOR_ACTIONS:
                action.setEnabled(annotating)
        self.counts_label.setVisible(annotating)  # glyph counts say nothing about puzzles
        self.board.set_active(self.tabs.currentWidget() is self.board)

    # ---- loading -----------------------------------------------------------------------------
    def reload(self) -> None:
        """Read the project into the views (glyphs, tags, schema)."""
        project = self.studio.project
        self.setWindowTitle(f"{project.path.name} — Analogy Studio")
        glyphs = project.glyphs()
        tag_sets: dict[GlyphKey, set[tuple[str, str]]] = {}
        by_id = {g.id: g.key for g in glyphs}
        for gid, pairs in project.tag_map().items():
            key = by_id.get(gid)
            if key is not None:
                tag_sets[key] = set(pairs)
        self.model.set_glyphs(glyphs, tag_sets, self._font_sources())
        refill_combo(self.font_combo, "All fonts", self.model.fonts_present())
        refill_combo(self.block_combo, "All blocks", self.model.blocks_present())
        self.tree.set_schema(project.schema, project.tag_counts())
        if self.tree.current() == (None, None):
            self.tree.step_concept(0)
        self._update_status()
        self._needs_timer.start()

    def _font_sources(self) -> dict[str, FontSource]:
        out = {}
        for f in self.studio.project.fonts():
            try:
                out[f.id] = FontSource(self.studio._font_path(f.id), f.face_index, f.sha256)
            except StudioError as e:
                self.statusBar().showMessage(str(e), 10000)
        return out

    # ---- events from the studio --------------------------------------------------------------
    def _on_tags_changed(self, keys: list[GlyphKey]) -> None:
        for key in keys:
            self.model.update_tags(
                key, {(t.concept, t.value) for t in self.studio.project.tags_of(key)}
            )
        self.tree.update_counts(self.studio.project.tag_counts())
        self._update_inspector()
        self._update_status()
        self._needs_timer.start()

    def _on_schema_changed(self) -> None:
        self.tree.set_schema(self.studio.schema, self.studio.project.tag_counts())
        self.reload()

    def _refresh_needs(self) -> None:
        """Read the tags here (the project's connection), compute the needs in a worker."""
        if self._needs_worker is not None:
            self._needs_timer.start()  # one at a time; try again shortly
            return
        from studio.families.glyph_pmp.needs import annotation_needs, project_annotations
        from studio.generate.params import SplitParams

        project = self.studio.project
        annotations = project_annotations(project.glyphs(), project.all_tags())
        schema = self.studio.schema

        def work():  # type: ignore[no-untyped-def]
            return annotation_needs(SplitParams(), annotations, schema)

        worker = create_worker(work)
        worker.returned.connect(self._show_needs)
        worker.errored.connect(
            lambda e: self.statusBar().showMessage(f"Annotation needs: {e}", 10000)
        )
        worker.finished.connect(self._needs_done)
        self._needs_worker = worker
        worker.start()

    def _needs_done(self) -> None:
        self._needs_worker = None

    def _show_needs(self, report: object) -> None:
        from studio.families.glyph_pmp.needs import NeedsReport

        if isinstance(report, NeedsReport):
            self.tree.update_needs(report.per_value(), report.tuples_of)

    def _on_current_value(self, concept: str | None, value: str | None) -> None:
        self.model.set_current(concept, value)
        if concept is None:
            self.current_label.setText("Choose a concept value on the left to tag glyphs.")
        else:
            c = self.studio.schema.concept(concept)
            v = c.value(value).display if value is not None else "— choose a value —"
            self.current_label.setText(
                f"<b>{c.display}</b> = <b>{v}</b> &nbsp; <span style='color:#666'>"
                f"({c.kind}; Space tags the selection, 1–9 pick a value, ] next concept)</span>"
            )
        self._update_status()

    # ---- tagging -----------------------------------------------------------------------------
    def selected_keys(self) -> list[GlyphKey]:
        return self.grid.selected_keys()

    def tag_selected(self) -> None:
        concept, value = self.tree.current()
        keys = self.selected_keys()
        if concept is None or value is None:
            self.statusBar().showMessage("Choose a concept value first (left, or keys 1–9).", 5000)
            return
        if not keys:
            self.statusBar().showMessage("Select glyphs to tag first.", 5000)
            return
        n = self.studio.tag(keys, concept, value)
        self.statusBar().showMessage(self.studio.undo_stack.undo_label + f" ({n} new)", 5000)

    def untag_selected(self) -> None:
        concept, value = self.tree.current()
        keys = self.selected_keys()
        if concept is None or value is None or not keys:
            return
        n = self.studio.untag(keys, concept, value)
        self.statusBar().showMessage(
            f"Removed {concept} = {value or 'present'} from {n} glyphs", 5000
        )

    def tag_with_nth_value(self, n: int) -> None:
        if self.tree.nth_value(n) is not None:
            self.tag_selected()

    def _remove_tag_from_current(self, concept: str, value: str) -> None:
        g = self._current_record()
        if g is not None:
            self.studio.untag([g.key], concept, value)

    def undo(self) -> None:
        try:
            label = self.studio.undo_stack.undo()
        except StudioError as e:
            self.show_error("Cannot undo", e)
            return
        if label:
            self.statusBar().showMessage(f"Undone: {label}", 5000)

    def redo(self) -> None:
        try:
            label = self.studio.undo_stack.redo()
        except StudioError as e:
            self.show_error("Cannot redo", e)
            return
        if label:
            self.statusBar().showMessage(f"Redone: {label}", 5000)

    def _update_undo_actions(self) -> None:
        if not hasattr(self, "actions"):
            return
        stack = self.studio.undo_stack
        self.actions["edit.undo"].setEnabled(stack.can_undo)
        self.actions["edit.undo"].setText(f"Undo {stack.undo_label}" if stack.can_undo else "Undo")
        self.actions["edit.redo"].setEnabled(stack.can_redo)
        self.actions["edit.redo"].setText(f"Redo {stack.redo_label}" if stack.can_redo else "Redo")

    # ---- views -------------------------------------------------------------------------------
    def _apply_filter(self) -> None:
        selected = self.selected_keys()
        self.model.set_filter(
            GridFilter(
                font=self.font_combo.currentData() or "",
                block=self.block_combo.currentData() or "",
                text=self.search.text(),
                tag_state=self.state_combo.currentData() or "all",
                hide_missing=self.hide_missing.isChecked(),
            )
        )
        self.grid.select_keys(selected)
        self.actions["view.only_untagged"].setChecked(
            self.state_combo.currentData() == "untagged_concept"
        )

    def _focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def _toggle_only_untagged(self) -> None:
        want = self.actions["view.only_untagged"].isChecked()
        self.state_combo.setCurrentIndex(
            self.state_combo.findData("untagged_concept" if want else "all")
        )

    def _toggle_inspector(self) -> None:
        self.inspector.setVisible(self.actions["view.inspector"].isChecked())

    def _current_record(self) -> GlyphRecord | None:
        idx = self.grid.currentIndex()
        return self.model.record(idx.row()) if idx.isValid() else None

    def _update_inspector(self) -> None:
        g = self._current_record()
        self.inspector.show_glyph(g, self.studio.project.tags_of(g.key) if g else [])

    def _master_image(self, g: GlyphRecord) -> np.ndarray | None:
        try:
            return self.studio.master(g)
        except (StudioError, OSError) as e:  # the grid shows the reason; no image here
            self.statusBar().showMessage(str(e), 5000)
            return None

    def _update_status(self) -> None:
        concept, _value = self.tree.current()
        total = len(self.model.glyphs)
        tagged = len(self.model.tags)
        parts = [
            f"{self.model.rowCount():,} shown of {total:,} glyphs",
            f"{len(self.grid.selectionModel().selectedIndexes()):,} selected",
            f"{tagged:,} glyphs tagged, {sum(len(t) for t in self.model.tags.values()):,} tags",
        ]
        if concept is not None:
            in_concept = sum(1 for t in self.model.tags.values() if any(c == concept for c, _ in t))
            parts.append(f"{concept}: {in_concept:,} glyphs tagged")
        self.counts_label.setText("  ·  ".join(parts))

    # ---- background jobs ---------------------------------------------------------------------
    def run_job(
        self,
        name: str,
        gen: Callable[[], Iterator[tuple[int, int]]],
        on_done: Callable[[], None] | None = None,
    ) -> None:
        """Run a generator of (done, total) in a worker thread, with progress and Cancel."""
        if self._worker is not None:
            QMessageBox.information(
                self, "Busy", f"Wait for “{self._job_name}” to finish or cancel it."
            )
            return
        self._job_name = name
        worker = create_worker(gen)
        worker.yielded.connect(self._job_progress)
        worker.errored.connect(lambda e: self.show_error(f"{name} failed", e))
        worker.finished.connect(lambda: self._job_finished(on_done))
        self._worker = worker
        self.progress.setRange(0, 0)
        self.progress.setFormat(f"{name} %p%")
        self.progress.setVisible(True)
        self.cancel_button.setVisible(True)
        worker.start()

    def _job_progress(self, p: tuple[int, int]) -> None:
        done, total = p
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)

    def _job_finished(self, on_done: Callable[[], None] | None) -> None:
        self._worker = None
        self.progress.setVisible(False)
        self.cancel_button.setVisible(False)
        self.statusBar().showMessage(f"{self._job_name}: done", 5000)
        if on_done is not None:
            on_done()

    def cancel_job(self) -> None:
        if self._worker is not None:
            self._worker.quit()
            self.statusBar().showMessage(f"Cancelling {self._job_name}…", 3000)

    def job_running(self) -> bool:
        return self._worker is not None

    # ---- file actions --------------------------------------------------------------------------
    def render_all(self) -> None:
        self.run_job("Rendering glyphs", self.studio.render_all, self.reload)

    def import_annotations(self, path: str | None = None) -> None:
        if path is None:
            path, _ = QFileDialog.getOpenFileName(
                self, "Import annotations", "", "Annotation CSV (*.csv);;All files (*)"
            )
            if not path:
                return
        try:
            report = self.studio.import_annotations(path)
        except StudioError as e:
            self.show_error("Import refused", e)
            return
        self.reload()
        self.last_import_report = report
        box = QMessageBox(
            QMessageBox.Icon.Information, "Import report", report.lines()[0], parent=self
        )
        box.setDetailedText("\n".join(report.lines()))
        box.setObjectName("importReport")
        box.open()
        self.render_all()

    def export_annotations(self, path: str | None = None) -> None:
        if path is None:
            path, _ = QFileDialog.getSaveFileName(
                self,
                "Export annotations (a .csv file, or a folder name for UA's layout)",
                "",
                "Annotation CSV (*.csv);;UA folder layout (*)",
            )
            if not path:
                return
        try:
            n = self.studio.export_annotations(path)
        except (StudioError, OSError) as e:
            self.show_error("Export failed", e)
            return
        self.statusBar().showMessage(f"Exported {n} tags to {path}", 8000)

    def add_font(self, path: str | None = None) -> None:
        if path is None:
            path, _ = QFileDialog.getOpenFileName(
                self, "Add a font", "", "Fonts (*.ttf *.otf *.ttc *.otc);;All files (*)"
            )
            if not path:
                return
        try:
            font_id = self.studio.add_font_file(path)
        except StudioError as e:
            self.show_error("Cannot add this font", e)
            return
        answer = QMessageBox.question(
            self, "Add glyphs", f"Font “{font_id}” added. Add all of its glyphs to the project?"
        )
        if answer == QMessageBox.StandardButton.Yes:
            cps = sorted(self.studio.catalog.codepoints(font_id))
            self.studio.add_glyphs(GlyphKey(c, font_id) for c in cps)
            self.render_all()

    def new_project(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "New project", "", PROJECT_FILTER)
        if not path:
            return
        if not path.endswith(".studio"):
            path += ".studio"
        from studio.core.schema import bundled_schema_path, load_schema
        from studio.store.project import Project

        try:
            project = Project.create(
                path, load_schema(bundled_schema_path()), author=self.studio.author
            )
        except StudioError as e:
            self.show_error("Cannot create the project", e)
            return
        self.switch_project(project)

    def open_project(self, path: str | None = None) -> None:
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self, "Open project", "", PROJECT_FILTER)
            if not path:
                return
        from studio.store.project import Project

        try:
            project = Project.open(path)
        except StudioError as e:
            self.show_error("Cannot open the project", e)
            return
        self.switch_project(project)

    def switch_project(self, project: Project) -> None:
        if self.job_running():
            self.cancel_job()
        self.studio.close()
        self.studio.project = project
        self.studio.undo_stack.clear()
        self.settings.add_recent_project(project.path)
        self.reload()
        self.board.project_switched()
        self.dashboard.project_switched()

    # ---- schema --------------------------------------------------------------------------------
    def edit_schema(self) -> None:
        from studio.gui.schema_editor import SchemaEditor

        counts = self.studio.project.tag_counts()

        def tag_count(concept: str, value: str | None) -> int:
            return sum(
                n for (c, v), n in counts.items() if c == concept and (value is None or v == value)
            )

        dlg = SchemaEditor(self.studio.schema, tag_count, self)
        if not dlg.exec():
            return
        new = dlg.result_schema()
        if new == self.studio.schema:
            return
        changes = [
            TagChange(ch.kind, ch.concept, ch.value, ch.new_name) for ch in dlg.tag_changes()
        ]
        labels = dlg.edit_labels()
        note = labels[0] if len(labels) == 1 else f"Edit the schema ({len(labels)} changes)"
        try:
            self.studio.set_schema(new, changes, note)
        except StudioError as e:
            self.show_error("Schema not changed", e)

    # ---- help, errors, closing -----------------------------------------------------------------
    def show_shortcuts(self) -> None:
        from studio.gui.shortcuts_dialog import ShortcutsDialog

        ShortcutsDialog(self).exec()

    def show_about(self) -> None:
        QMessageBox.about(
            self,
            "About Analogy Studio",
            f"<b>Analogy Studio</b> {__version__}<br>Author visual-analogy stimuli from "
            "schema-tagged Unicode glyphs.<br>Demo data: the public Unicode Analogies annotations "
            "(see resources/ua/README.md).",
        )

    def show_error(self, title: str, error: BaseException) -> None:
        first = str(error).split("\n")[0]
        self.statusBar().showMessage(f"{title}: {first}", 10000)
        box = QMessageBox(QMessageBox.Icon.Warning, title, first, parent=self)
        box.setObjectName("errorBox")
        if "\n" in str(error):
            box.setDetailedText(str(error))
        box.open()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._worker is not None:
            self._worker.quit()
        self._needs_timer.stop()
        if self._needs_worker is not None:
            from PySide6.QtCore import QThreadPool

            QThreadPool.globalInstance().waitForDone(5000)  # a few milliseconds of work
        self.loader.stop()
        self.board.shutdown()
        self.preview.shutdown()
        self.dashboard.shutdown()
        self.settings.save_window(self)
        super().closeEvent(event)
