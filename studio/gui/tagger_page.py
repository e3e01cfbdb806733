"""The Annotate page (the glyph tagger): schema tree, glyph grid with filters, inspector.

The window (:mod:`studio.gui.main_window`) is a frame: menus, status bar, background jobs, the
project's opening and closing, and five pages in tabs (Annotate, Puzzles, Preview, Baselines,
Lab). This module is the Annotate page, so that the tagger's widgets and the view logic that
belongs to it alone live apart from the frame. What needs the window (the status bar, the
per-user filtering of a lab, the lab's gate on writes) is passed in explicitly: the page never
reaches back into the window.

UA's method is to step through the concepts of the schema and select the glyphs in which each
value is readily perceived; the layout follows it: pick a value on the left (or press 1–9),
select glyphs in the grid (click, Shift/Ctrl-click, rubber band, Ctrl+A), press Space to tag.
The tagging itself (the window's Tag menu) goes through :class:`studio.app.Studio`; long work
(the Needs column) runs in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from studio.app import Studio
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
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
from studio.gui.schema_tree import SchemaTree
from studio.gui.suggest_panel import SuggestionPanel
from studio.gui.widgets import refill_combo
from studio.store.project import GlyphRecord, TagRecord


class TaggerPage(QSplitter):
    """The Annotate tab: the schema tree, the filter bar over the grid, the inspector.

    ``show_message(text, ms)`` shows a message in the window's status bar; ``my_assignment``
    gives the glyphs assigned to the user (the View menu's "Only my assignment");
    ``write_tag(key, concept, value)`` writes a tag the suggestion queue's annotator accepted,
    through the window's gate (None: refused); ``jobs`` drives the project's background jobs
    (the window's job controller: the suggestion queue trains its encoder there). The window's
    actions (filters, the inspector, hiding others' tags) are given by :meth:`bind_actions`
    once they exist.

    ``suggesting_changed(bool)`` (GUI thread): the suggestion queue took the grid's place, or
    gave it back.
    """

    suggesting_changed = Signal(bool)

    def __init__(
        self,
        studio: Studio,
        model: GlyphGridModel,
        show_message: Callable[[str, int], None],
        my_assignment: Callable[[], frozenset[GlyphKey]],
        write_tag: Callable[[GlyphKey, str, str], int | None],
        jobs: JobController | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.studio = studio
        self.model = model
        self._show_message = show_message
        self._my_assignment = my_assignment
        self._write_tag = write_tag
        self._jobs = jobs
        self._actions: Mapping[str, QAction] = {}
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

        centre = QWidget()
        lay = QVBoxLayout(centre)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(bar)
        current = QHBoxLayout()
        current.addWidget(self.current_label, 1)
        self.current_row = current  # the window's assignment buttons join it (its actions)
        lay.addLayout(current)
        lay.addWidget(self.grid_panel, 1)

        # the suggestion queue (Tag ▸ Suggest…) takes the grid's place while it is open
        self.suggestions = SuggestionPanel(
            self.studio, self._write_tag, self._show_message, self._jobs
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

        self.addWidget(self.tree)
        self.addWidget(self.centre)
        self.addWidget(self.inspector)
        self.setStretchFactor(1, 1)
        self.setSizes([320, 680, 280])

    def action_handlers(self) -> dict[str, Callable[[], object]]:
        """What the page's own view actions do, by id (issue 27: each page registers its
        actions; tagging itself goes through the window's gate on a lab's writes)."""
        return {
            "view.find": self.focus_search,
            "view.only_untagged": self.toggle_only_untagged,
            "view.inspector": self.toggle_inspector,
        }

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
        self.suggesting_changed.emit(True)

    def close_suggestions(self) -> None:
        """Esc in the queue: the grid is back, with the keyboard."""
        if not self.suggesting():
            return
        self.centre.setCurrentWidget(self._grid_pane)
        self.grid.setFocus()
        self.suggesting_changed.emit(False)

    def bind_actions(self, actions: Mapping[str, QAction]) -> None:
        """The window's actions the page reads: View ▸ Only untagged, Only my assignment,
        Held out, Inspector, Hide others' tags."""
        self._actions = actions

    # ---- loading -----------------------------------------------------------------------------
    def load(
        self,
        glyphs: list[GlyphRecord],
        tag_sets: dict[GlyphKey, set[tuple[str, str]]],
        fonts: dict[str, FontSource],
    ) -> None:
        """Show the project's glyphs (with the tags the grid shows) and its schema."""
        project = self.studio.project
        if len(glyphs) != len(self.model.glyphs):
            self.suggestions.glyphs_changed()  # its glyph space is built again when needed
        self.model.set_glyphs(glyphs, tag_sets, fonts)
        refill_combo(self.font_combo, "All fonts", self.model.fonts_present())
        refill_combo(self.block_combo, "All blocks", self.model.blocks_present())
        self.tree.set_schema(project.schema, project.tag_counts())
        if self.tree.current() == (None, None):
            self.tree.step_concept(0)
        self._needs_timer.start()

    def tags_changed(
        self, keys: list[GlyphKey], tags_of: Callable[[GlyphKey], set[tuple[str, str]]]
    ) -> None:
        """Tags of ``keys`` changed: the grid shows ``tags_of(key)`` for each."""
        for key in keys:
            self.model.update_tags(key, tags_of(key))
        self.tree.update_counts(self.studio.project.tag_counts())
        self.update_inspector()
        self.suggestions.tags_changed(keys)
        self._needs_timer.start()

    def reset(self) -> None:
        """Nothing of the closed project stays on the page: selection, inspector, search,
        filters."""
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
        """The grid marks the value, the inspector defines it, the label above the grid names it
        (the window names the Tag menu's values and counts in the status bar)."""
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
                keys=self._my_assignment()
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

    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def toggle_only_untagged(self) -> None:
        want = self._actions["view.only_untagged"].isChecked()
        self.state_combo.setCurrentIndex(
            self.state_combo.findData("untagged_concept" if want else "all")
        )

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
