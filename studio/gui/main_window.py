"""The application window: a frame of five pages, with the menus, the status bar, background
jobs and the project's opening, switching and closing.

The pages are tabs: Annotate (the glyph tagger, :mod:`studio.gui.tagger_page`), Puzzles (the
curator's board), Preview, Baselines and Lab. The window builds every action and menu from
:data:`studio.gui.actions.ACTIONS` and asks each page what its own actions do; it keeps what
is everyone's: the status bar, the settings, the annotator's name, undo and redo, the lab's
connection and the rights of its login, and the routes from one page to another. All state
changes go through :class:`studio.app.Studio`; long work runs in worker threads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTabWidget,
)

from studio.app import Studio
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.gui.about_dialog import AboutDialog
from studio.gui.actions import build_actions, build_menus
from studio.gui.add_font_dialog import AddFontDialog, FontChoice, add_glyphs_job
from studio.gui.curator_board import CuratorBoard
from studio.gui.dashboard import BaselineDashboard
from studio.gui.export_dialog import ExportDialog
from studio.gui.glyph_grid import GlyphGridModel, ThumbnailLoader
from studio.gui.jobs import ThreadJob
from studio.gui.lab_dialog import OpenLabDialog
from studio.gui.lab_panel import LabPanel
from studio.gui.lab_session import LiveChanges, RightsGate, signed_in_text, window_title
from studio.gui.pilot_dialog import PilotDialog
from studio.gui.preferences_dialog import PreferencesDialog
from studio.gui.preview import PreviewPanel
from studio.gui.settings import StudioSettings, ask_annotator_name
from studio.gui.tagger_page import TaggerPage
from studio.gui.widgets import RefocusAfterDialogs
from studio.store.dbfile import is_database_url
from studio.store.project import Project, TagChange

if TYPE_CHECKING:
    from psygnal import SignalInstance

PROJECT_FILTER = "Analogy Studio projects (*.studio);;All files (*)"
#: a dialog on a puzzle set (:meth:`MainWindow._open_set_dialog`)
D = TypeVar("D", ExportDialog, PilotDialog)
#: The author :class:`~studio.app.Studio` records when it was given no name.
UNKNOWN_AUTHOR = "unknown"


class MainWindow(QMainWindow):
    def __init__(self, studio: Studio, settings: StudioSettings | None = None) -> None:
        super().__init__()
        self.studio = studio
        self.settings = settings or StudioSettings()
        # the name stored with tags and decisions: the one in the preferences, else the one
        # the studio was started with; never "unknown" without saying so (see _annotator_text)
        stored_name = self.settings.annotator_name()
        if stored_name is not None:
            studio.author = stored_name
        self._job: ThreadJob | None = None
        self._job_name = ""
        self.setObjectName("mainWindow")
        self.resize(1280, 800)
        # its shortcuts work when a dialog closes, window manager or not (issue 28)
        self._refocus = RefocusAfterDialogs(self)
        self.loader = ThumbnailLoader(studio.cache, self)
        self.model = GlyphGridModel(self.loader, self)
        self._build_ui()
        self._build_actions()
        studio.events.tags_changed.connect(self.tagger.tags_changed)
        studio.events.schema_changed.connect(self.tagger.schema_changed)
        studio.events.glyphs_changed.connect(self.reload)
        studio.events.undo_changed.connect(self._update_undo_actions)
        self.reload()
        self.tagger.open_on_start_block()
        self._restore_state()
        self.settings.restore_window(self)
        self._start_lab()

    # ---- construction ------------------------------------------------------------------------
    def _build_ui(self) -> None:
        # background jobs: the dashboard's job controller drives the project's worker host
        # (built first: the Annotate page's suggestion queue trains its encoder there too)
        self.dashboard = BaselineDashboard(self.studio)
        self.dashboard.open_puzzle.connect(self.open_flagged_puzzle)
        self.dashboard.flags_changed.connect(self._on_baseline_flags)
        # the Annotate page: what needs the window reaches it as callables, never by attribute
        self.tagger = TaggerPage(
            self.studio,
            self.model,
            self.settings,
            lambda text, ms: self.statusBar().showMessage(text, ms),
            self.ensure_annotator,
            self.dashboard.controller,
        )
        self.tagger.error.connect(self.show_error)
        # the window's names for the page's widgets: the tests, bench/ and scripts/ reach the
        # page through them (about 190 places); the window itself uses grid_panel and splitter
        self.tree = self.tagger.tree
        self.font_combo = self.tagger.font_combo
        self.block_combo = self.tagger.block_combo
        self.search = self.tagger.search
        self.state_combo = self.tagger.state_combo
        self.hide_missing = self.tagger.hide_missing
        self.current_label = self.tagger.current_label
        self.grid_panel = self.tagger.grid_panel
        self.grid = self.tagger.grid
        self.inspector = self.tagger.inspector
        self.splitter = self.tagger  # the Annotate tab
        # the grid's empty state offers the File menu's Add font… and Import annotations…
        self.grid_panel.add_font_requested.connect(lambda: self.add_font())
        self.grid_panel.import_requested.connect(lambda: self.import_annotations())

        # the annotator and the curator's board are the window's two modes, one tab each
        self.board = CuratorBoard(self.studio)
        self.tabs = QTabWidget(objectName="modeTabs")
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.splitter, "Annotate")
        self.tabs.addTab(self.board, "Puzzles")
        self.preview = PreviewPanel()
        self.tabs.addTab(self.preview, "Preview")
        self.tabs.addTab(self.dashboard, "Baselines")
        # the lab: people, assignments, agreement, disagreements, audit (a file: a lab of one)
        self.lab = LabPanel(self.studio)
        self.lab.go_to_glyph.connect(self.go_to_glyph)
        self.lab.error.connect(self.show_error)
        self.tagger.marked_done.connect(self.lab.refresh)  # its view of the assignments
        self.tabs.addTab(self.lab, "Lab")
        self.live = LiveChanges(self)
        self.live.refresh.connect(self._on_live_changes)
        self.live.state.connect(self._on_live_state)
        self.tabs.currentChanged.connect(lambda _i: self._on_mode_changed())
        self.setCentralWidget(self.tabs)

        sb = self.statusBar()
        self.counts_label = QLabel(objectName="counts")  # the Annotate page's counts
        self.tagger.counts_changed.connect(self.counts_label.setText)
        self.progress = QProgressBar(objectName="jobProgress", maximumWidth=220)
        self.progress.setVisible(False)
        self.cancel_button = QPushButton("Cancel", objectName="cancelJob")
        self.cancel_button.setVisible(False)
        self.cancel_button.clicked.connect(self.cancel_job)
        self.annotator_button = QPushButton(objectName="annotatorButton")
        self.annotator_button.setFlat(True)
        self.annotator_button.setToolTip(
            "The name stored with every tag and decision you make (File ▸ Preferences…)"
        )
        self.annotator_button.clicked.connect(lambda: self.edit_preferences())
        # no stretch: QStatusBar draws its messages in the room left of the permanent widgets,
        # which a stretched label took whole (issue 28: no message ever showed on Annotate)
        sb.addPermanentWidget(self.counts_label)
        sb.addPermanentWidget(self.progress)
        sb.addPermanentWidget(self.cancel_button)
        self.lab_label = QLabel(objectName="labStatus")
        self.lab_label.setVisible(False)
        sb.addPermanentWidget(self.lab_label)
        sb.addPermanentWidget(self.annotator_button)
        self._show_annotator()

    def _build_actions(self) -> None:
        handlers: dict[str, Callable[[], object]] = {
            "file.new_project": self.new_project,
            "file.open_project": self.open_project,
            "file.open_lab": self.open_lab_database,
            "file.save_copy": self.save_copy,
            "file.preferences": self.edit_preferences,
            "file.import_annotations": self.import_annotations,
            "file.export_annotations": self.export_annotations,
            "file.add_font": self.add_font,
            "file.render_all": self.render_all,
            "file.quit": self.close,
            "edit.undo": self.undo,
            "edit.redo": self.redo,
            "edit.schema": self.edit_schema,
            "puzzle.board": self.show_board,
            "puzzle.generate": self.generate_split,
            "puzzle.export": self.export_benchmark,
            "puzzle.pilot_export": self.pilot_study,
            "puzzle.pilot_import": self.import_pilot,
            "view.annotator": self.show_annotator,
            "view.preview": self.show_preview,
            "view.baselines": self.show_baselines,
            "view.lab": self.show_lab,
            "lab.agreement": self.compute_agreement,
            "help.shortcuts": self.show_shortcuts,
            "help.about": self.show_about,
        }
        # the pages' own actions, each page saying what its ids do
        for page in (self.tagger, self.board, self.lab):
            handlers.update(page.action_handlers())
        self.actions = build_actions(self, handlers)
        self.tagger.bind_actions(self.actions)
        self.menus = build_menus(self.menuBar(), self.actions)
        self._build_recent_menu()
        self.rights = RightsGate(self.actions, self)
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

    def pilot_study(self) -> PilotDialog:
        """Puzzles ▸ Pilot study…: the pilot dialog, on the board's open set."""
        return self._open_set_dialog(PilotDialog)

    def _open_set_dialog(self, cls: type[D]) -> D:
        """A dialog that writes the board's open set somewhere (pilot, export), opened."""
        curator = self.board.curator
        dlg = cls(
            self.studio, self.settings, set_id=curator.set_id, lock=curator.render_lock, parent=self
        )
        dlg.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dlg.open()
        return dlg

    def ask_pilot(self) -> tuple[str, list[str]] | None:
        """The pilot's folder, then its results files (overridable: tests answer it)."""
        from PySide6.QtWidgets import QFileDialog

        folder = QFileDialog.getExistingDirectory(self, "The pilot's folder (from pilot export)")
        if not folder:
            return None
        files, _ = QFileDialog.getOpenFileNames(
            self, "The participants' data files", folder, "Pilot data (*.csv *.json)"
        )
        return (folder, files) if files else None

    def import_pilot(self) -> dict[str, Any] | None:
        """Puzzles ▸ Import pilot results…: store them for the board's open set (as
        `pilot import --set`), then show people's accuracy in its People column."""
        from studio.pilot.store import import_results

        set_id = self.board.curator.set_id
        if set_id is None:
            self.statusBar().showMessage("Open a puzzle set first: its pilot's results go to it")
            return None
        chosen = self.ask_pilot()
        if chosen is None:
            return None
        folder, files = chosen
        try:
            found = import_results(self.studio.project, folder, files, set_id, self.studio.author)
        except StudioError as e:
            self.show_error("Cannot import the pilot's results", e)
            return None
        self.show_board()
        self.board.refresh_flags()
        excluded = sum(found["excluded"].values())
        fail = len(self.board.curator.people_fail())
        self.statusBar().showMessage(
            f"Stored {found['stored_answers']} answers of {found['participants']} participants "
            f"({excluded} excluded) of pilot {found['pilot_id']}; people fail {fail} puzzles",
            15000,
        )
        return found

    def export_benchmark(self) -> ExportDialog:
        """Puzzles ▸ Export benchmark…: the export dialog, on the board's open set."""
        return self._open_set_dialog(ExportDialog)

    def _on_mode_changed(self) -> None:
        """Keys act on what is shown: tagging keys in the annotator, puzzle keys on the board."""
        annotating = self.tabs.currentWidget() is self.splitter
        self.tagger.set_active(annotating)
        self.counts_label.setVisible(annotating)  # glyph counts say nothing about puzzles
        self.actions["lab.settle"].setEnabled(self.tabs.currentWidget() is self.lab)
        self.board.set_active(self.tabs.currentWidget() is self.board)

    # ---- loading -----------------------------------------------------------------------------
    def reload(self) -> None:
        """Read the project into the views: the title, and the Annotate page's glyphs, tags
        and schema (the other pages read it themselves)."""
        self.setWindowTitle(window_title(self.studio.project))
        self.tagger.reload()

    # ---- messages, undo ------------------------------------------------------------------------
    def _say(self, message: str | None) -> None:
        """Show why a key did nothing (or what it did) in the status bar."""
        if message:
            self.statusBar().showMessage(message, 6000)

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

    # ---- background jobs ---------------------------------------------------------------------
    def run_job(
        self,
        name: str,
        gen: Callable[[], Iterator[tuple[int, int]]],
        on_done: Callable[[], None] | None = None,
        announce: Sequence[SignalInstance] = (),
    ) -> None:
        """Run a generator of (done, total) in a worker thread, with progress and Cancel;
        ``announce``: the studio events it fires, announced on the GUI thread as it ends
        (before ``on_done``; see :class:`ThreadJob`)."""
        if self._job is not None:
            QMessageBox.information(
                self, "Busy", f"Wait for “{self._job_name}” to finish or cancel it."
            )
            return
        self._job_name = name
        self._job = ThreadJob.call(
            gen,
            yielded=self._job_progress,
            errored=lambda e: self.show_error(f"{name} failed", e),
            ended=lambda: self._job_finished(on_done),
            announce=announce,
            parent=self,
        )
        self.progress.setRange(0, 0)
        self.progress.setFormat(f"{name} %p%")
        self.progress.setVisible(True)
        self.cancel_button.setVisible(True)

    def _job_progress(self, p: tuple[int, int]) -> None:
        done, total = p
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)

    def _job_finished(self, on_done: Callable[[], None] | None) -> None:
        self._job = None
        self.progress.setVisible(False)
        self.cancel_button.setVisible(False)
        self.statusBar().showMessage(f"{self._job_name}: done", 5000)
        if on_done is not None:
            on_done()

    def cancel_job(self) -> None:
        if self._job is not None:
            self._job.cancel()
            self.statusBar().showMessage(f"Cancelling {self._job_name}…", 3000)

    def job_running(self) -> bool:
        return self._job is not None

    # ---- file actions --------------------------------------------------------------------------
    def render_all(self) -> None:
        # glyphs_changed is announced on the GUI thread as the job ends, not by the worker
        self.run_job(
            "Rendering glyphs", self.studio.render_all, announce=[self.studio.events.glyphs_changed]
        )

    def import_annotations(self, path: str | None = None) -> None:
        if path is None:
            path, _ = QFileDialog.getOpenFileName(
                self,
                "Import annotations",
                self.settings.dialog_dir("annotations"),
                "Annotation CSV (*.csv);;All files (*)",
            )
            if not path:
                return
            self.settings.remember_dir("annotations", path)
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
                self.settings.dialog_dir("exports"),
                "Annotation CSV (*.csv);;UA folder layout (*)",
            )
            if not path:
                return
            self.settings.remember_dir("exports", path)
        try:
            n = self.studio.export_annotations(path)
        except (StudioError, OSError) as e:
            self.show_error("Export failed", e)
            return
        self.statusBar().showMessage(f"Exported {n} tags to {path}", 8000)

    def add_font(self, path: str | None = None) -> AddFontDialog:
        """Open the Add font dialog (window-modal, not blocking): installed fonts, or the
        file ``path``; the blocks chosen are added and rendered by a background job."""
        from studio.glyphs.system_fonts import list_system_fonts

        dlg = AddFontDialog(list_system_fonts(catalog=self.studio.catalog), self.settings, self)
        if path is not None:
            dlg.browse(path)
        dlg.accepted.connect(lambda: self._add_font_glyphs(dlg.choice()))
        dlg.finished.connect(dlg.deleteLater)
        self.add_font_dialog = dlg
        dlg.open()
        return dlg

    def _add_font_glyphs(self, choice: FontChoice | None) -> None:
        if choice is None:
            return
        font_id = choice.font.id
        if choice.from_file:
            try:
                font_id = self.studio.add_font_file(choice.font.path)
            except StudioError as e:
                self.show_error("Cannot add this font", e)
                return

        def done() -> None:  # after glyphs_changed, on the GUI thread: the views reloaded
            self.tagger.show_font(font_id)

        self.run_job(
            f"Adding {choice.glyph_count:,} glyphs of {choice.font.label}",
            partial(add_glyphs_job, self.studio, font_id, choice.blocks),
            done,
            announce=[self.studio.events.glyphs_changed],
        )

    def new_project(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, "New project", self.settings.dialog_dir("projects"), PROJECT_FILTER
        )
        if not path:
            return
        self.settings.remember_dir("projects", path)
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
            path, _ = QFileDialog.getOpenFileName(
                self, "Open project", self.settings.dialog_dir("projects"), PROJECT_FILTER
            )
            if not path:
                return
            self.settings.remember_dir("projects", path)
        from studio.store.project import Project

        try:
            project = Project.open(path)
        except StudioError as e:
            if is_database_url(path):  # a recent lab database: ask for what is missing
                dlg = self.open_lab_database(path)
                dlg._say(str(e).splitlines()[0], ok=False)
                return
            self.show_error("Cannot open the project", e)
            return
        self.switch_project(project)

    # ---- a lab's shared project ------------------------------------------------------------
    def open_lab_database(self, location: str | None = None) -> OpenLabDialog:
        """File ▸ Open lab database… (window-modal, not blocking): on OK the dialog opens the
        project in the background, and the window switches to it."""
        dlg = OpenLabDialog(self, location)
        dlg.accepted.connect(lambda: self._lab_dialog_done(dlg))
        dlg.finished.connect(dlg.deleteLater)
        self.lab_dialog: OpenLabDialog | None = dlg
        dlg.open()
        return dlg

    def _lab_dialog_done(self, dlg: OpenLabDialog) -> None:
        self.lab_dialog = None
        if dlg.project is not None:
            self.switch_project(dlg.project)
            if dlg.kept_password_problem:
                self.statusBar().showMessage(dlg.kept_password_problem, 10000)

    def show_lab(self) -> None:
        self.tabs.setCurrentWidget(self.lab)

    def compute_agreement(self) -> None:
        self.show_lab()
        self.lab.tabs.setCurrentIndex(2)
        self.lab.compute_agreement()

    def go_to_glyph(self, key: object) -> None:
        """Show a glyph (from the Lab tab) in the annotator: current and selected."""
        if not isinstance(key, GlyphKey):
            return
        self.show_annotator()
        if self.tagger.go_to_glyph(key):
            return
        self._reset_panes()  # hidden by a filter: show every glyph
        if self.tagger.go_to_glyph(key):
            return
        off = self.tagger.narrowing_off()  # hidden by Held out or Only my assignment
        if off and self.tagger.go_to_glyph(key):
            self._say(f"{' and '.join(off)} turned off to show {key}")
        else:
            self._say(f"{key} is not in the grid")

    def _start_lab(self) -> None:
        """After opening a project: who signs in, what their role allows, live changes."""
        project = self.studio.project
        if project.is_database:
            self.studio.author = project.user or self.studio.author  # the server's view
            role = project.role()
            who = signed_in_text(project)
            self.lab_label.setText(f"{project.location} · {who}")
            self.lab_label.setStyleSheet("")
            self.lab_label.setToolTip("The lab database open, and who the server knows you as")
            self.live.start(project)
        else:
            name = self.settings.annotator_name()
            if name is not None:
                self.studio.author = name
            role = "admin"
        self.lab_label.setVisible(project.is_database)
        self.tagger.show_assignment_button()
        self.rights.apply(role, self.studio.author)
        self._on_mode_changed()
        self._show_annotator()

    def _on_live_changes(self, glyph_ids: set[int], tables: set[str]) -> None:
        """Another client's commits (coalesced), on the GUI thread: the studio tells every
        view (:meth:`Studio.external_change`); the Annotate page's assignment filter is told
        here (no studio event says an assignment changed)."""
        ids = set(glyph_ids)
        keys = [g.key for g in self.model.glyphs if g.id in ids] if ids else None
        self.studio.external_change(tables, keys)
        if "assignment_items" in tables and self.actions["view.my_assignment"].isChecked():
            self.tagger.assignment_changed()  # a curator gave me more glyphs (or took some back)

    def _on_live_state(self, text: str) -> None:
        """The listener lost its connection, or found it again: say so where it stays seen."""
        lost = text.startswith("lost")
        self.lab_label.setStyleSheet("color: #b00020; font-weight: bold;" if lost else "")
        project = self.studio.project
        self.lab_label.setText(
            f"{project.location} · connection lost, reconnecting…"
            if lost
            else f"{project.location} · {signed_in_text(project)}"
        )
        self.statusBar().showMessage(text[0].upper() + text[1:], 0 if lost else 8000)

    # ---- recent projects, a copy ----------------------------------------------------------------
    def _build_recent_menu(self) -> None:
        """File ▸ Open recent, after Open project…: filled each time it opens."""
        menu = QMenu("Open &recent", self, objectName="menu.recent")
        menu.aboutToShow.connect(self.fill_recent_menu)
        self.recent_menu = menu
        file_menu = self.menus["file"]
        after = self.actions["file.open_project"]
        actions = file_menu.actions()
        i = actions.index(after) if after in actions else len(actions) - 1
        before = actions[i + 1] if i + 1 < len(actions) else None
        if before is None:
            file_menu.addMenu(menu)
        else:
            file_menu.insertMenu(before, menu)
        self.fill_recent_menu()

    def fill_recent_menu(self) -> None:
        """One entry per recent project (most recent first; a missing file is greyed), then
        Clear."""
        menu = self.recent_menu
        menu.clear()
        project = self.studio.project
        current = project.location if project.is_database else project.path.absolute()
        recent = self.settings.recent_projects()
        for n, path in enumerate(recent, start=1):
            here = path == current
            name = path if isinstance(path, str) else path.name  # a lab database: its URL
            text = f"&{n}  {name}" if n < 10 else name
            action = menu.addAction(text.replace("&", "&&") if n >= 10 else text)
            action.setObjectName(f"recent_{n}")
            action.setData(str(path))
            exists = isinstance(path, str) or path.exists()
            action.setToolTip(str(path) if exists else f"{path} (not found)")
            action.setStatusTip(str(path) if exists else f"{path} — not found")
            action.setEnabled(exists and not here)
            if here:
                action.setText(f"{text}  (open)")
            action.triggered.connect(lambda _c=False, p=str(path): self.open_project(p))
        if not recent:
            menu.addAction("No recent project").setEnabled(False)
        menu.addSeparator()
        clear = menu.addAction("Clear the list")
        clear.setObjectName("recent_clear")
        clear.setEnabled(bool(recent))
        clear.triggered.connect(self.clear_recent_projects)

    def clear_recent_projects(self) -> None:
        self.settings.clear_recent_projects()
        self.fill_recent_menu()
        self.statusBar().showMessage("The list of recent projects is cleared", 5000)

    def save_copy(self, path: str | None = None) -> Path | None:
        """Write a consistent copy of the project file (SQLite's backup API) to ``path`` (asked
        when None); the open project stays open and unchanged. Returns the copy's path."""
        from studio.gui.project_copy import save_project_copy

        if self.studio.project.is_database:
            self.show_error(
                "No copy made",
                StudioError(
                    f"{self.studio.project.location} is a lab database: copy it with "
                    "`analogy-studio copy URL FILE.studio` (or ask the lab's IT for a backup)"
                ),
            )
            return None
        source = self.studio.project.path
        if path is None:
            start = Path(self.settings.dialog_dir("projects")) / f"{source.stem} copy.studio"
            path, _ = QFileDialog.getSaveFileName(
                self, "Save a copy of the project", str(start), PROJECT_FILTER
            )
            if not path:
                return None
            if not path.endswith(".studio"):
                path += ".studio"
            self.settings.remember_dir("projects", path)
        try:
            out = save_project_copy(source, path)
        except StudioError as e:
            self.show_error("Cannot save a copy", e)
            return None
        self.statusBar().showMessage(f"Saved a copy to {out}; {source.name} stays open", 8000)
        return out

    def switch_project(self, project: Project) -> None:
        if self.job_running():
            self.cancel_job()
        self.tagger.suggestions.cancel()  # before its project closes
        self.save_state()  # the closing project's concept and filters, for its next opening
        self.live.stop()
        self.studio.close()
        self.studio.project = project
        self.studio.undo_stack.clear()
        self.settings.add_recent_project(project.location if project.is_database else project.path)
        self.tagger.project_switched()  # its assignment is read anew, nothing of the old shows
        self.statusBar().clearMessage()
        self.reload()
        self.tagger.open_on_start_block()
        self._restore_state()
        self.board.project_switched()
        self.dashboard.project_switched()
        self.lab.project_switched()
        self._start_lab()

    def _reset_panes(self) -> None:
        """Every glyph shown again (a glyph the Lab tab asks for was hidden by a filter): no
        selection, search or filter of the Annotate page stays, nor a status message."""
        self.tagger.reset()
        self.statusBar().clearMessage()

    # ---- state restored on reopening ------------------------------------------------------------
    def _state_key(self, name: str) -> str:
        """A settings key of the open project's view state (per project file)."""
        import hashlib

        project = self.studio.project
        where = project.location if project.is_database else str(project.path.absolute())
        digest = hashlib.sha1(where.encode()).hexdigest()
        return f"state/{digest[:16]}/{name}"

    def save_state(self) -> None:
        """Store the tab shown (for every project) and this project's concept, value and
        filters (the Annotate page's view state), restored by :meth:`_restore_state` when it
        opens again."""
        s = self.settings
        s.set_value("state/tab", self.tabs.currentIndex())
        for name, value in self.tagger.view_state().items():
            s.set_value(self._state_key(name), value)

    def _restore_state(self) -> None:
        """What :meth:`save_state` stored: the tab, and the Annotate page's view state where it
        still applies (the page says where)."""
        s = self.settings
        tab = s.value("state/tab")
        try:
            index = int(tab) if tab is not None else -1  # type: ignore[call-overload]
        except (TypeError, ValueError):
            index = -1
        if 0 <= index < self.tabs.count():
            self.tabs.setCurrentIndex(index)
        self.tagger.restore_view_state(lambda name: s.value(self._state_key(name)))

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

    def show_about(self) -> AboutDialog:
        """Help ▸ About: the studio and the versions a bug report needs (non-blocking)."""
        dlg = AboutDialog(self.studio.project, self)
        dlg.finished.connect(dlg.deleteLater)
        self.about_dialog = dlg
        dlg.open()
        return dlg

    # ---- preferences, the annotator's name ------------------------------------------------------
    def edit_preferences(self) -> PreferencesDialog:
        """File ▸ Preferences… (window-modal, not blocking); OK applies them at once."""
        dlg = PreferencesDialog(self.settings, self)
        dlg.accepted.connect(self._apply_preferences)
        dlg.finished.connect(dlg.deleteLater)
        self.preferences_dialog = dlg
        dlg.open()
        return dlg

    def _apply_preferences(self) -> None:
        name = self.settings.annotator_name()
        if name is not None:
            self.studio.author = name
        self._show_annotator()
        grade = self.settings.feature_warning_min()
        combo = getattr(self.board, "grade_combo", None)  # the board shows the threshold too
        if isinstance(combo, QComboBox) and combo.findData(grade) >= 0:
            combo.setCurrentIndex(combo.findData(grade))
        self.fill_recent_menu()
        self.statusBar().showMessage("Preferences saved", 4000)

    def annotator_set(self) -> bool:
        """Whether tags and decisions carry a real name (not the placeholder "unknown")."""
        return self.studio.author not in ("", UNKNOWN_AUTHOR)

    def _show_annotator(self) -> None:
        if self.annotator_set():
            self.annotator_button.setText(f"Annotator: {self.studio.author}")
            self.annotator_button.setStyleSheet("")
        else:
            self.annotator_button.setText("Annotator: not set — click to set")
            self.annotator_button.setStyleSheet("color: #b00020; font-weight: bold;")

    def ensure_annotator(self) -> bool:
        """Before an edit that records its author: ask for the name once when none is set
        (the answer is stored in the preferences). False when the person gave none."""
        if self.annotator_set():
            return True
        name = ask_annotator_name(self, self.settings)
        if name is None:
            self._say("Not done: set your annotator name first (File ▸ Preferences…)")
            return False
        self.studio.author = name
        self._show_annotator()
        return True

    def show_error(self, title: str, error: BaseException) -> None:
        first = str(error).split("\n")[0]
        self.statusBar().showMessage(f"{title}: {first}", 10000)
        box = QMessageBox(QMessageBox.Icon.Warning, title, first, parent=self)
        box.setObjectName("errorBox")
        if "\n" in str(error):
            box.setDetailedText(str(error))
        box.open()

    def running_jobs(self) -> list[str]:
        """What would stop if the window closed now: this window's job, the board's split
        generation and the dashboard's running or queued jobs."""
        out = [self._job_name] if self._job is not None else []
        if getattr(self.board, "job", None) is not None:
            out.append("Generating a split")
        for job in self.dashboard.controller.jobs:
            if job.status in ("running", "queued"):
                out.append(f"Job {job.id}: {job.title or job.kind} ({job.status})")
        return out

    def confirm_quit(self, jobs: list[str]) -> QMessageBox:
        """Ask whether to quit while jobs run, window-modal and without blocking (a blocking
        prompt nobody answers would hang a script or a test): Quit anyway closes the window
        (stopping the jobs), Cancel keeps it. Returns the open message box."""
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Quit Analogy Studio?",
            "A job is still running:" if len(jobs) == 1 else f"{len(jobs)} jobs are still running:",
            parent=self,
        )
        box.setObjectName("quitWhileRunning")
        box.setInformativeText(
            "\n".join(f"• {j}" for j in jobs[:8])
            + "\n\nQuitting stops them; a baseline job can be resumed from its checkpoint."
        )
        quit_button = box.addButton("Quit anyway", QMessageBox.ButtonRole.DestructiveRole)
        quit_button.setObjectName("quitAnyway")
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.setEscapeButton(cancel)
        quit_button.clicked.connect(self._quit_anyway)
        box.finished.connect(lambda _r: setattr(self, "quit_box", None))
        box.finished.connect(box.deleteLater)
        self.quit_box: QMessageBox | None = box
        box.open()
        return box

    def _quit_anyway(self) -> None:
        self._quit_confirmed = True
        QTimer.singleShot(0, self.close)  # once the box has closed

    def closeEvent(self, event: QCloseEvent) -> None:
        jobs = self.running_jobs()
        if jobs and not getattr(self, "_quit_confirmed", False):
            event.ignore()
            if getattr(self, "quit_box", None) is None:  # not asking already
                self.confirm_quit(jobs)
            return
        self.save_state()
        if self._job is not None:
            self._job.cancel()
        self.tagger.shutdown()
        self.live.stop()
        self.loader.stop()
        self.board.shutdown()
        self.preview.shutdown()
        self.dashboard.shutdown()
        self.settings.save_window(self)
        super().closeEvent(event)
