"""The Annotate page (the glyph tagger): schema tree, glyph grid with filters, inspector.

The window (:mod:`studio.gui.main_window`) is a frame: menus, status bar, background jobs, the
project's opening and closing, and five pages in tabs (Annotate, Puzzles, Preview, Baselines,
Lab). This module is the Annotate page, so that the tagger's widgets and what its keys do live
apart from the frame: the window builds every action from :data:`studio.gui.actions.ACTIONS`
and asks the page what its own do (:meth:`TaggerPage.action_handlers`). What needs the window
(the status bar, the annotator's name, its error box, the per-user filtering of a lab) is passed
in explicitly or asked for by a signal: the page never reaches back into the window.
The page reads the project itself: its glyphs, the tags the grid shows (on a lab database, the
consensus or the login's own), the login's assignment.

UA's method is to step through the concepts of the schema and select the glyphs in which each
value is readily perceived; the layout follows it: pick a value on the left (or press 1–9),
select glyphs in the grid (click, Shift/Ctrl-click, rubber band, Ctrl+A), press Space to tag.
Tagging goes through :class:`studio.app.Studio`, so that it is undone like any edit, and through
the lab's gate on writes: a refusal of the server (a right the login lacks, a lock held
elsewhere, a lost connection) is said in words, not raised. Long work (the Needs column) runs in
a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

import numpy as np
from PySide6.QtCore import QItemSelectionModel, QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSplitter,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio.app import Studio
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.gui.actions import name_value_actions
from studio.gui.glyph_grid import (
    TAG_FILTER_TIPS,
    TAG_FILTERS,
    FontSource,
    GlyphGridModel,
    GridFilter,
    GridPanel,
    SearchKeys,
)
from studio.gui.inspector import Inspector
from studio.gui.job_controller import JobController
from studio.gui.jobs import ThreadJob
from studio.gui.lab_panel import refusal
from studio.gui.schema_tree import SchemaTree, value_label
from studio.gui.settings import StudioSettings
from studio.gui.suggest_panel import SuggestionPanel
from studio.gui.widgets import refill_combo
from studio.store.project import GlyphRecord, TagRecord

#: Actions that act on the glyph grid besides the Tag menu's: active only while it is shown.
ANNOTATOR_ACTIONS = (
    "edit.select_all",
    "view.find",
    "view.only_untagged",
    "view.my_assignment",
    "view.held_out",
    "view.inspector",
)


class TaggerPage(QSplitter):
    """The Annotate tab: the schema tree, the filter bar over the grid, the inspector, and what
    the Tag menu's keys do there.

    ``settings`` keeps the Tag menu's "Advance after tagging" and the View menu's "Hide
    others' tags"; ``show_message(text, ms)`` shows a message in the window's status bar;
    ``ensure_annotator()`` asks for the annotator's name before a tag is written (False: none
    given, nothing written); ``jobs`` drives the project's background jobs (the window's job
    controller: the suggestion queue trains its encoder there). The window's actions are given
    by :meth:`bind_actions` once they exist, and the window says whether the page is shown by
    :meth:`set_active`.

    Signals (GUI thread): ``counts_changed(text)``: the glyphs shown, selected and tagged, for
    the window's status bar; ``error(title, error)``: a write was refused or failed, for the
    window's error box; ``marked_done()``: glyphs of the user's assignment were marked done (or
    not done), which the Lab tab's view of the assignments shows.
    """

    counts_changed = Signal(str)
    error = Signal(str, object)
    marked_done = Signal()

    def __init__(
        self,
        studio: Studio,
        model: GlyphGridModel,
        settings: StudioSettings,
        show_message: Callable[[str, int], None],
        ensure_annotator: Callable[[], bool],
        jobs: JobController | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.studio = studio
        self.model = model
        self.settings = settings
        self._show_message = show_message
        self._ensure_annotator = ensure_annotator
        self._assignment_keys: frozenset[GlyphKey] | None = None  # see my_assignment
        self._jobs = jobs
        self._actions: Mapping[str, QAction] = {}
        self._active = False  # the window shows the page (set_active)
        self._build()

    def _build(self) -> None:
        self.tree = SchemaTree()
        self.tree.current_changed.connect(self._on_current_value)

        # the filter bar fits the grid's pane at 1280 px with every text whole (issue 28):
        # the combo boxes say what they filter ("All fonts", "All blocks") instead of labels
        # beside them, and the tag states are short, each explained in its tooltip
        self.font_combo = QComboBox(objectName="fontFilter")
        self.font_combo.setMinimumContentsLength(8)
        self.block_combo = QComboBox(objectName="blockFilter")
        self.block_combo.setMinimumContentsLength(15)
        # font and Unicode block names run to 45 characters: a long one chosen may be elided
        # in the bar (the list shows each whole), so the chosen one is the tooltip too
        self.font_combo.currentTextChanged.connect(
            lambda text: self.font_combo.setToolTip(f"Font: {text}")
        )
        self.block_combo.currentTextChanged.connect(
            lambda text: self.block_combo.setToolTip(f"Unicode block: {text}")
        )
        self.search = QLineEdit(objectName="search", placeholderText="Name, U+25CC, block")
        self.search.setClearButtonEnabled(True)
        self.search.setMinimumWidth(170)  # room for what is typed, and the placeholder, at 1280
        self.search.setToolTip(
            "Search by name, code point (U+25CC or 25CC) or block. Down or Enter: go to the "
            "first match in the grid"
        )
        self.state_combo = QComboBox(objectName="tagStateFilter")
        self.state_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        for key, text in TAG_FILTERS:
            self.state_combo.addItem(text, key)
            self.state_combo.setItemData(
                self.state_combo.count() - 1, TAG_FILTER_TIPS[key], Qt.ItemDataRole.ToolTipRole
            )
        self.state_combo.setToolTip(TAG_FILTER_TIPS["all"])
        self.state_combo.currentIndexChanged.connect(
            lambda _i: self.state_combo.setToolTip(
                TAG_FILTER_TIPS.get(self.state_combo.currentData(), "")
            )
        )
        self.hide_missing = QCheckBox("Hide placeholders", objectName="hideMissing")
        self.hide_missing.setChecked(self.model.filter.hide_missing)
        self.hide_missing.setToolTip(
            "Hide glyphs that have no image here: private-use code points of fonts that are not "
            "installed, and code points a font maps but draws nothing for"
        )
        # the "needs glyphs" marker: recomputed off the GUI thread a moment after tags change
        self._needs_timer = QTimer(self, singleShot=True, interval=600)
        self._needs_timer.timeout.connect(self.refresh_needs)
        self._needs_job: ThreadJob | None = None
        self._filter_timer = QTimer(self, singleShot=True, interval=200)
        self._filter_timer.timeout.connect(self.apply_filter)
        self.search.textChanged.connect(lambda _t: self._filter_timer.start())
        for combo in (self.font_combo, self.block_combo, self.state_combo):
            combo.currentIndexChanged.connect(lambda _i: self.apply_filter())
        self.hide_missing.toggled.connect(lambda _b: self.apply_filter())

        bar = QHBoxLayout()
        bar.addWidget(self.font_combo)
        bar.addWidget(self.block_combo, 1)
        bar.addWidget(self.search, 2)
        bar.addWidget(self.state_combo)
        bar.addWidget(self.hide_missing)

        # wrapped: a long concept and its key hints must not widen the grid's pane (at 1280 px
        # "stroke-line-straight-quantity" squeezed the schema tree to 116 px: issue 28)
        self.current_label = QLabel(objectName="currentValue", wordWrap=True)
        self.current_label.setStyleSheet("font-size: 14px; padding: 4px;")
        self.grid_panel = GridPanel(self.model)
        self.grid = self.grid_panel.grid
        self._search_keys = SearchKeys(self.search, self.grid, self.flush_search)
        self.grid.selectionModel().currentChanged.connect(lambda *_: self.update_inspector())
        # a number the concept has no value for is hidden from the Tag menu, and a hidden
        # action's key does nothing: these say why instead (enabled only for such numbers)
        self._spare_value_keys: dict[int, QShortcut] = {}
        for n in range(1, 10):
            shortcut = QShortcut(QKeySequence(str(n)), self)
            shortcut.activated.connect(partial(self.tag_with_nth_value, n))
            shortcut.setEnabled(False)
            self._spare_value_keys[n] = shortcut

        centre = QWidget()
        lay = QVBoxLayout(centre)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(bar)
        current = QHBoxLayout()
        current.addWidget(self.current_label, 1)
        self.current_row = current  # the assignment buttons join it (bind_actions)
        lay.addLayout(current)
        lay.addWidget(self.grid_panel, 1)

        # the suggestion queue (Tag ▸ Suggest…) takes the grid's place while it is open
        self.suggestions = SuggestionPanel(
            self.studio, self._accept_suggestion, self._show_message, self._jobs
        )
        self.suggestions.closed.connect(self.close_suggestions)
        self.suggestions.concept_shown.connect(lambda c: self.tree.select(c, None))
        self.centre = QStackedWidget(objectName="annotateCentre")
        self.centre.addWidget(centre)
        self.centre.addWidget(self.suggestions)
        self._grid_pane = centre

        self.inspector = Inspector(self._master_image)
        self._show_definition(*self.tree.current())
        # as narrow as its render allows: at 1280 px the tree and the filter bar need the rest
        self.inspector.setMinimumWidth(240)
        self.inspector.remove_tag.connect(self._remove_tag_from_current)
        # the status bar's counts follow the selection and the filters
        self.grid.selectionModel().selectionChanged.connect(lambda *_: self.update_counts())
        self.model.filtered.connect(self.update_counts)

        self.addWidget(self.tree)
        self.addWidget(self.centre)
        self.addWidget(self.inspector)
        self.setStretchFactor(1, 1)
        self.setSizes([320, 680, 280])

    def action_handlers(self) -> dict[str, Callable[[], object]]:
        """What the page's own actions do, by id (issue 27: each page registers its actions;
        the window builds them all from ``ACTIONS`` and asks each page)."""
        handlers: dict[str, Callable[[], object]] = {
            "edit.select_all": self.grid.selectAll,
            "tag.apply": self.tag_selected,
            "tag.advance": lambda: self.settings.set_advance_after_tagging(
                self._actions["tag.advance"].isChecked()
            ),
            "tag.remove": self.untag_selected,
            "tag.next_concept": lambda: self.tree.step_concept(+1),
            "tag.prev_concept": lambda: self.tree.step_concept(-1),
            "tag.next_value": lambda: self.tree.step_value(+1),
            "tag.prev_value": lambda: self.tree.step_value(-1),
            "tag.next_untagged": lambda: self._say(self.grid.step_untagged(+1)),
            "tag.prev_untagged": lambda: self._say(self.grid.step_untagged(-1)),
            "tag.next_glyph": lambda: self._say(self.grid.step_glyph(+1)),
            "tag.prev_glyph": lambda: self._say(self.grid.step_glyph(-1)),
            "tag.mark_done": self.mark_selected_done,
            # enabled only while the page is shown (set_active): no need to show it first
            "tag.suggest": self.open_suggestions,
            "view.find": self.focus_search,
            "view.only_untagged": self.toggle_only_untagged,
            "view.my_assignment": self.assignment_changed,
            "view.held_out": self.apply_filter,
            "view.hide_others": self.toggle_hide_others,
            "view.inspector": self.toggle_inspector,
        }
        for n in range(1, 10):
            handlers[f"tag.value_{n}"] = partial(self.tag_with_nth_value, n)
        return handlers

    def bind_actions(self, actions: Mapping[str, QAction]) -> None:
        """The window's actions the page reads and sets: the Tag menu's (named after the
        concept's values, enabled while the grid is shown), View ▸ Only untagged, Only my
        assignment, Held out, Inspector, Hide others' tags."""
        self._actions = actions
        self._actions["view.inspector"].setChecked(True)
        self._actions["view.hide_others"].setChecked(self.settings.hide_others())
        self._actions["tag.advance"].setChecked(self.settings.advance_after_tagging())
        # the grid says it is narrowed to an assignment, not only the View menu
        self.mine_button = QToolButton(objectName="myAssignmentButton")
        self.mine_button.setDefaultAction(actions["view.my_assignment"])
        self.show_assignment_button()
        self.current_row.addWidget(self.mine_button)
        # and that it shows only the glyphs held out for val and test (the Needs column's ask)
        self.held_out_button = QToolButton(objectName="heldOutButton")
        actions["view.held_out"].setIconText("Held out")  # the row is full at 1280 px
        self.held_out_button.setDefaultAction(actions["view.held_out"])
        self.current_row.addWidget(self.held_out_button)

    def set_active(self, active: bool) -> None:
        """The window shows (True) or hides the page: the tagging keys act only while it is
        shown, and only Suggest… while the suggestion queue is open (it answers its own keys:
        the grid's tag and view keys wait)."""
        self._active = active
        self._update_actions()

    def _update_actions(self) -> None:
        on_grid = self._active and not self.suggesting()
        for action_id, action in self._actions.items():
            if action_id == "tag.suggest":
                action.setEnabled(self._active)
            elif action_id.startswith("tag.") or action_id in ANNOTATOR_ACTIONS:
                action.setEnabled(on_grid)
        self._sync_value_keys()

    def _sync_value_keys(self) -> None:
        """A number's own shortcut speaks only where its Tag-menu action is hidden (both on
        one key would make Qt call the key ambiguous and run neither), and only while the
        grid is shown."""
        if not self._actions:
            return
        on_grid = self._active and not self.suggesting()
        for n, key in self._spare_value_keys.items():
            key.setEnabled(on_grid and not self._actions[f"tag.value_{n}"].isVisible())

    # ---- the suggestion queue -----------------------------------------------------------------
    def suggesting(self) -> bool:
        """Whether the suggestion queue is shown (in the grid's place)."""
        return self.centre.currentWidget() is self.suggestions

    def open_suggestions(self) -> None:
        """Tag ▸ Suggest…: the queue of the concept chosen in the tree (none: a chooser), in
        the grid's place, with the keyboard."""
        concept, _value = self.tree.current()
        self.centre.setCurrentWidget(self.suggestions)
        self.suggestions.open_for(concept)
        self.suggestions.setFocus()
        self._update_actions()

    def close_suggestions(self) -> None:
        """Esc in the queue: the grid is back, with the keyboard."""
        if not self.suggesting():
            return
        self.centre.setCurrentWidget(self._grid_pane)
        self.grid.setFocus()
        self._update_actions()

    def _accept_suggestion(self, key: GlyphKey, concept: str, value: str) -> int | None:
        """The queue's annotator accepted a suggestion: tag it through the lab's gate, as the
        annotator (asked for once); None when refused."""
        from studio.suggest.queue import accept

        if not self._ensure_annotator():
            return None
        return self._lab_write("Not tagged", accept, self.studio, key, concept, value)

    # ---- loading -----------------------------------------------------------------------------
    def reload(self) -> None:
        """Read the project: its glyphs (with the tags the grid shows), its fonts, its schema."""
        project = self.studio.project
        glyphs = project.glyphs()
        tag_sets: dict[GlyphKey, set[tuple[str, str]]] = {}
        by_id = {g.id: g.key for g in glyphs}
        for gid, pairs in self._grid_tag_map().items():
            key = by_id.get(gid)
            if key is not None:
                tag_sets[key] = set(pairs)
        fonts = self._font_sources()
        if len(glyphs) != len(self.model.glyphs):
            self.suggestions.glyphs_changed()  # its glyph space is built again when needed
        self.model.set_glyphs(glyphs, tag_sets, fonts)
        refill_combo(self.font_combo, "All fonts", self.model.fonts_present())
        refill_combo(self.block_combo, "All blocks", self.model.blocks_present())
        self.tree.set_schema(project.schema, project.tag_counts())
        if self.tree.current() == (None, None):
            self.tree.step_concept(0)
        self._needs_timer.start()
        self.update_counts()

    def _font_sources(self) -> dict[str, FontSource]:
        out = {}
        for f in self.studio.project.fonts():
            try:
                out[f.id] = FontSource(self.studio._font_path(f.id), f.face_index, f.sha256)
            except StudioError as e:
                self._show_message(str(e), 10000)
        return out

    def schema_changed(self) -> None:
        """The studio's schema changed (edited, undone): the tree and the grid show it."""
        self.tree.set_schema(self.studio.schema, self.studio.project.tag_counts())
        self.reload()

    def tags_changed(self, keys: list[GlyphKey]) -> None:
        """Tags of ``keys`` changed (the studio's event): the grid, the tree's counts, the
        inspector, the suggestion queue and the Needs column follow."""
        for key in keys:
            self.model.update_tags(key, self._grid_tags_of(key))
        self.tree.update_counts(self.studio.project.tag_counts())
        self.update_inspector()
        self.suggestions.tags_changed(keys)
        self._needs_timer.start()
        self.update_counts()

    def project_switched(self) -> None:
        """Another project is open (the window has switched the studio to it): its assignment
        is read anew, and nothing of the closed one stays on the page."""
        self._assignment_keys = None
        self.reset()

    def reset(self) -> None:
        """Nothing of the closed project stays on the page: selection, inspector, search,
        font, block and state filters (the view toggles stay: :meth:`narrowing_off`)."""
        self._needs_timer.stop()
        self._filter_timer.stop()
        self.suggestions.reset()
        self.close_suggestions()
        self.grid.clearSelection()
        self.grid.setCurrentIndex(QModelIndex())
        self.inspector.show_glyph(None, [])
        for w in (self.search, self.font_combo, self.block_combo, self.state_combo):
            w.blockSignals(True)
        self.search.clear()
        self.font_combo.setCurrentIndex(0)
        self.block_combo.setCurrentIndex(0)
        self.state_combo.setCurrentIndex(0)
        for w in (self.search, self.font_combo, self.block_combo, self.state_combo):
            w.blockSignals(False)
        self.apply_filter()

    def shutdown(self) -> None:
        """The window closes: no Needs refresh starts, a running one is waited for (and the
        suggestion queue's work, cancelled)."""
        self._needs_timer.stop()
        self.suggestions.shutdown()
        if self._needs_job is not None:
            self._needs_job.wait(5000)  # a few milliseconds of work

    # ---- the Needs column --------------------------------------------------------------------
    def refresh_needs(self) -> None:
        """Read the tags here (the project's connection), compute the needs in a worker."""
        if self._needs_job is not None:
            self._needs_timer.start()  # one at a time; try again shortly
            return
        from studio.families.glyph_pmp.needs import annotation_needs, project_annotations
        from studio.generate.params import SplitParams

        project = self.studio.project
        annotations = project_annotations(project.glyphs(), project.all_tags())
        schema = self.studio.schema

        def work():  # type: ignore[no-untyped-def]
            return annotation_needs(SplitParams(), annotations, schema)

        self._needs_job = ThreadJob.call(
            work,
            succeeded=self._show_needs,
            errored=lambda e: self._show_message(f"Annotation needs: {e}", 10000),
            ended=self._needs_done,
            parent=self,
        )

    def _needs_done(self) -> None:
        self._needs_job = None

    def _show_needs(self, report: object) -> None:
        from studio.families.glyph_pmp.needs import NeedsReport

        if isinstance(report, NeedsReport):
            unmendable: dict[str, list[str]] = {}
            for t in report.tuples:
                if not t.mendable:
                    unmendable.setdefault(t.tuple.split("/")[1], []).append(t.tuple)
            self.tree.update_needs(
                report.per_value(), report.tuples_of, report.side_text, unmendable
            )

    # ---- the current concept value -------------------------------------------------------------
    def _on_current_value(self, concept: str | None, value: str | None) -> None:
        """The grid marks the value, the inspector defines it, the label above the grid names
        it, the Tag menu names the concept's values ("1  round") and the status bar counts the
        concept's glyphs."""
        self.model.set_current(concept, value)
        self._show_definition(concept, value)
        if concept is None:
            self.current_label.setText("Choose a concept value on the left to tag glyphs.")
        else:
            c = self.studio.schema.concept(concept)
            v = c.value(value).display if value is not None else "— choose a value —"
            self.current_label.setText(
                f"<b>{c.display}</b> = <b>{v}</b> &nbsp; <span style='color:#666'>"
                f"({c.kind}; Space or 1–9 tag, U next untagged, J/K step, ] next concept)</span>"
            )
        if self._actions:
            values = self.tree.values_of(concept)
            labels = [value_label(n, d) for n, (_v, d) in enumerate(values, start=1)]
            name_value_actions(self._actions, concept, labels)
            self._sync_value_keys()
        self.update_counts()

    def _show_definition(self, concept: str | None, value: str | None) -> None:
        """The inspector's definition panel follows the tree (issue 28)."""
        if not hasattr(self, "inspector"):
            return
        schema = self.studio.schema
        self.inspector.set_concepts({c.id: c for c in schema.concepts})
        if concept is None or not schema.has_concept(concept):
            self.inspector.show_definition(None, None)
            return
        c = schema.concept(concept)
        v = c.value(value) if value is not None and c.has_value(value) else None
        self.inspector.show_definition(c, v, self._example_image)

    def _example_image(self, key: GlyphKey) -> np.ndarray | None:
        """An example glyph's 80-pixel render, when the project has the glyph."""
        g = self.studio.project.glyph(key)
        if g is None:
            return None
        try:
            return self.studio.render(g)
        except (StudioError, OSError):
            return None

    # ---- tagging -----------------------------------------------------------------------------
    def _say(self, message: str | None) -> None:
        """Show why a key did nothing (or what it did) in the status bar."""
        if message:
            self._show_message(message, 6000)

    def _why_no_tag(self) -> str | None:
        """Why a tagging key cannot act now, or None."""
        concept, value = self.tree.current()
        if concept is None:
            return "No concept chosen: pick one on the left (or press ] for the next)"
        if value is None:
            return f"Concept '{concept}': choose a value first (left, or keys 1–9)"
        if not self.selected_keys():
            return "No glyph selected: click one, or press J/K to step, U for the next untagged"
        return None

    def tag_selected(self) -> None:
        """Tag ▸ Tag selected glyphs (Space): the selected glyphs get the tree's value."""
        if (why := self._why_no_tag()) is not None:
            self._say(why)
            return
        if not self._ensure_annotator():
            return
        concept, value = self.tree.current()
        assert concept is not None and value is not None
        keys = self.selected_keys()
        n = self._lab_write("Not tagged", self.studio.tag, keys, concept, value)
        if n is None:
            return
        said = self.studio.undo_stack.undo_label + f" ({n} new)"
        if len(keys) == 1 and self._actions["tag.advance"].isChecked():
            # one glyph tagged: on to the next one the concept still lacks (a selection of
            # several is a batch; where to go after it is the annotator's to say)
            moved = self.grid.step_untagged(+1)
            if moved is not None:
                said += f"; {moved[0].lower()}{moved[1:]}"
        self._show_message(said, 5000)

    def untag_selected(self) -> None:
        """Tag ▸ Remove tag (Backspace, Del): the tree's value leaves the selected glyphs."""
        if (why := self._why_no_tag()) is not None:
            self._say(why)
            return
        concept, value = self.tree.current()
        assert concept is not None and value is not None
        n = self._lab_write("Not removed", self.studio.untag, self.selected_keys(), concept, value)
        if n is None:
            return
        self._show_message(
            f"Removed {concept} = {value or 'present'} from {n} glyphs"
            if n
            else f"None of the selected glyphs has {concept} = {value or 'present'}",
            5000,
        )

    def tag_with_nth_value(self, n: int) -> None:
        """Keys 1–9: choose the concept's n-th value and tag the selection with it."""
        if (why := self.tree.nth_value_problem(n)) is not None:
            self._say(why)
            return
        self.tree.nth_value(n)
        self.tag_selected()

    def _remove_tag_from_current(self, concept: str, value: str) -> None:
        """The inspector's Remove selected tag: off the current glyph."""
        g = self.current_record()
        if g is not None:
            self._lab_write("Not removed", self.studio.untag, [g.key], concept, value)

    def _lab_write(self, title: str, fn: Callable[..., int], *args: object) -> int | None:
        """Run a write; a refusal (a right the login lacks, a lock held elsewhere, a lost
        connection) is shown as an error (the window's box) and gives None."""
        try:
            return fn(*args)
        except Exception as e:
            message = refusal(e)
            if message is None:
                raise
            self.error.emit(title, StudioError(message))
            return None

    def update_counts(self) -> None:
        """The status bar's counts: glyphs shown, selected, tagged, and the concept's."""
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
        self.counts_changed.emit("  ·  ".join(parts))

    # ---- filters -----------------------------------------------------------------------------
    def selected_keys(self) -> list[GlyphKey]:
        return self.grid.selected_keys()

    def apply_filter(self) -> None:
        selected = self.selected_keys()
        self.model.set_filter(
            GridFilter(
                font=self.font_combo.currentData() or "",
                block=self.block_combo.currentData() or "",
                text=self.search.text(),
                tag_state=self.state_combo.currentData() or "all",
                hide_missing=self.hide_missing.isChecked(),
                keys=self.my_assignment()
                if self._actions["view.my_assignment"].isChecked()
                else None,
                held_out=self._actions["view.held_out"].isChecked(),
            )
        )
        self.grid.select_keys(selected)
        self._actions["view.only_untagged"].setChecked(
            self.state_combo.currentData() == "untagged_concept"
        )

    def flush_search(self) -> None:
        """Apply a search still waiting for its debounce (Down/Enter leave the field)."""
        if self._filter_timer.isActive():
            self._filter_timer.stop()
            self.apply_filter()

    def open_on_start_block(self) -> None:
        """A project that names a block to open on (the demo: one with real glyphs) shows it."""
        from studio.demo import start_block

        if self.studio.project.is_database:
            return  # the demo is a file
        name = start_block(self.studio.project)
        i = self.block_combo.findData(name) if name else -1
        if i >= 0:
            self.block_combo.setCurrentIndex(i)

    def show_font(self, font_id: str) -> None:
        """The grid shows the font's glyphs (a font just added), when the project has it."""
        i = self.font_combo.findData(font_id)
        if i >= 0:
            self.font_combo.setCurrentIndex(i)

    def go_to_glyph(self, key: GlyphKey) -> bool:
        """Make the glyph current and selected, scrolled into view; False when the grid does
        not show it (a filter hides it, or the project has no such glyph)."""
        row = self.model.row_of(key)
        if row is None:
            return False
        index = self.model.index(row)
        self.grid.setCurrentIndex(index)
        self.grid.scrollTo(index)
        return True

    def view_state(self) -> dict[str, str | bool]:
        """What the page shows of the project, by name, for the window to store per project
        and give back to :meth:`restore_view_state` when it opens again."""
        concept, value = self.tree.current()
        return {
            "concept": concept or "",
            "value": value if value is not None else "",
            "has_value": value is not None,
            "font": self.font_combo.currentData() or "",
            "block": self.block_combo.currentData() or "",
            "search": self.search.text(),
            "tag_state": self.state_combo.currentData() or "all",
            "hide_missing": self.hide_missing.isChecked(),
        }

    def restore_view_state(self, stored: Callable[[str], object]) -> None:
        """Show again what :meth:`view_state` gave, read back by ``stored(name)`` (None where
        nothing is stored; a flag may come back as text), where it still applies: a concept
        the schema no longer has, or a font no longer in the project, is left alone."""

        def text(name: str) -> str:
            value = stored(name)
            return value if isinstance(value, str) else ""

        def flag(name: str) -> bool | None:
            value = stored(name)
            if isinstance(value, bool):
                return value
            return {"true": True, "false": False}.get(str(value).lower()) if value else None

        concept = text("concept")
        if concept and any(c.id == concept for c in self.studio.schema.concepts):
            value = text("value") if flag("has_value") else None
            values = {v for v, _d in self.tree.values_of(concept)}
            self.tree.select(concept, value if value in values else None)
        for combo, name in (
            (self.font_combo, "font"),
            (self.block_combo, "block"),
            (self.state_combo, "tag_state"),
        ):
            i = combo.findData(text(name)) if text(name) else -1
            if i >= 0:
                combo.setCurrentIndex(i)
        hide = flag("hide_missing")
        if hide is not None:
            self.hide_missing.setChecked(hide)
        search = text("search")
        if search:
            self.search.setText(search)
            self.flush_search()

    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def toggle_only_untagged(self) -> None:
        want = self._actions["view.only_untagged"].isChecked()
        self.state_combo.setCurrentIndex(
            self.state_combo.findData("untagged_concept" if want else "all")
        )

    # ---- a lab: the login's assignment, others' tags -------------------------------------------
    def _me(self) -> str:
        """Who tags here: the login on a lab database, else the annotator of the settings."""
        return self.studio.project.author_for(self.studio.author)

    def my_assignment(self) -> frozenset[GlyphKey]:
        """The user's assigned glyphs, read once per change of the assignment (the filter is
        applied again at every search keystroke)."""
        if self._assignment_keys is None:
            try:
                keys = self.studio.project.assigned(self._me())
            except StudioError as e:
                self._say(f"Cannot read your assignment: {e}")
                return frozenset()
            self._assignment_keys = frozenset(k for k, _ in keys)
        return self._assignment_keys

    def assignment_changed(self) -> None:
        """Only my assignment toggled, or the assignment changed (another client's commit)."""
        self._assignment_keys = None
        self.show_assignment_button()  # on a file, the button shows while its filter is on
        self.apply_filter()

    def narrowing_off(self) -> list[str]:
        """Turn off the view toggles that narrow the grid (Held out, Only my assignment),
        which :meth:`reset` keeps (they are the person's view, restored per project); the
        names of those that were on. For a glyph asked for from another tab that they hid."""
        off = []
        for action_id in ("view.held_out", "view.my_assignment"):
            action = self._actions[action_id]
            if action.isChecked():
                action.setChecked(False)
                off.append(action.text().replace("&", ""))
        if off:
            self._assignment_keys = None
            self.show_assignment_button()
            self.apply_filter()
        return off

    def show_assignment_button(self) -> None:
        """The assignment button shows on a lab database (a file has no assignments), or
        while its filter is on."""
        self.mine_button.setVisible(
            self.studio.project.is_database or self._actions["view.my_assignment"].isChecked()
        )

    def mark_selected_done(self) -> None:
        """Mark the selected glyphs of the user's assignment done (all done already: not done)."""
        keys = self.selected_keys()
        if not keys:
            self._say("Select the glyphs you are done with first")
            return
        project = self.studio.project
        try:
            done = dict(project.assigned(self._me()))
            mine = [k for k in keys if k in done]
            if not mine:
                self._say("None of the selected glyphs is in your assignment (Lab ▸ Assignments)")
                return
            undo = all(done[k] is not None for k in mine)
            n = self.studio.mark_done(mine, done=not undo)  # the views hear of it
        except StudioError as e:
            self.error.emit("Cannot mark glyphs done", e)
            return
        what = "not done any more" if undo else "done"
        self._say(f"{n} of your glyphs marked {what}")
        self.marked_done.emit()

    def toggle_hide_others(self) -> None:
        """View ▸ Hide others' tags: the inspector (and on a lab database, the grid) shows only
        the user's own tags; the choice is kept for the next window."""
        hide = self._actions["view.hide_others"].isChecked()
        self.settings.set_hide_others(hide)
        if self.studio.project.is_database:  # the grid shows your own tags, or the consensus
            current = self.current_record()
            selected = self.selected_keys()
            self.reload()
            self.grid.select_keys(selected)
            row = self.model.row_of(current.key) if current is not None else None
            if row is not None:
                self.grid.selectionModel().setCurrentIndex(
                    self.model.index(row), QItemSelectionModel.SelectionFlag.NoUpdate
                )
        self.update_inspector()
        self._say("Others' tags are hidden: you see only yours" if hide
                  else "Others' tags are shown")  # fmt: skip

    def _grid_tag_map(self) -> dict[int, list[tuple[str, str]]]:
        """What the grid shows per glyph id: the consensus; on a lab database with others'
        tags hidden, the login's own tags."""
        project = self.studio.project
        if not (project.is_database and self.settings.hide_others()):
            return project.tag_map()
        me = project.user
        out: dict[int, list[tuple[str, str]]] = {}
        for gid, who, concept, value in project.ratings()[0]:
            if who == me:
                out.setdefault(gid, []).append((concept, value))
        return out

    def _grid_tags_of(self, key: GlyphKey) -> set[tuple[str, str]]:
        project = self.studio.project
        if project.is_database and self.settings.hide_others():
            me = project.user
            return {(t.concept, t.value) for t in project.own_tags_of(key) if t.annotator == me}
        return {(t.concept, t.value) for t in project.tags_of(key)}

    # ---- the inspector -----------------------------------------------------------------------
    def toggle_inspector(self) -> None:
        self.inspector.setVisible(self._actions["view.inspector"].isChecked())

    def current_record(self) -> GlyphRecord | None:
        idx = self.grid.currentIndex()
        return self.model.record(idx.row()) if idx.isValid() else None

    def update_inspector(self) -> None:
        g = self.current_record()
        project = self.studio.project
        if g is None:
            self.inspector.show_glyph(None, [])
            self.inspector.show_others(None)
            return
        me = project.user or self.studio.author
        own = project.own_tags_of(g.key) if project.is_database else []
        hide = self._actions["view.hide_others"].isChecked()
        if project.is_database and hide:  # only yours: nothing another person said shows
            mine = [TagRecord(g.key, t.concept, t.value, t.annotator, t.created_at)
                    for t in own if t.annotator == me]  # fmt: skip
            self.inspector.tags_title.setText("<b>Your tags</b> (all concepts)")
            self.inspector.show_glyph(g, mine)
        else:
            what = "the consensus" if project.is_database else "all concepts"
            self.inspector.tags_title.setText(f"<b>Tags</b> ({what})")
            self.inspector.show_glyph(g, project.tags_of(g.key))
        others = [f"{t.annotator}: {t.concept}={t.value or 'present'}" for t in own
                  if t.annotator != me]  # fmt: skip
        if not project.is_database:
            self.inspector.show_others(None)
        else:
            self.inspector.show_others(others, hidden=hide)

    def _master_image(self, g: GlyphRecord) -> np.ndarray | None:
        try:
            return self.studio.master(g)
        except (StudioError, OSError) as e:  # the grid shows the reason; no image here
            self._show_message(str(e), 5000)
            return None
