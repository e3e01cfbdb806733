"""The curator's board: the puzzles of a generated split, their status, their sheet with the
evidence of every finding drawn on it, the curator's actions, and the split's statistics.

All state and commands live in :class:`studio.curation.Curator` (Qt-free); this module only
shows them. Every action goes through the studio's undo stack, so the main window's Undo and
Redo work on it; every edit is stored at once. Long work — generating and vetting a split,
computing the statistics — runs on worker threads; results reach the widgets on the GUI thread
through queued signals.

Keys (declared in :mod:`studio.gui.actions`, active while the board is shown): A approve and
R reject (no dialog: the decision applies at once, with the comment typed in the board's comment
field if any, and the next puzzle opens), D return to draft, C type a comment (Enter or Escape
go back to the list), N / Shift+N (or P) next / previous flagged puzzle, Ctrl+Shift+A approve
all shown without errors or flags (flagged ones are decided one by one), F replace a foil
(the best candidate preselected: Enter takes it; a stimulus item's from its family's own
candidates, drawn off the GUI thread), G regenerate, Ctrl+G generate a split.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QEvent,
    QItemSelectionModel,
    QObject,
    QRect,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QAction, QColor, QImage, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QProgressDialog,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStyle,
    QStyleOptionViewItem,
    QTableView,
    QVBoxLayout,
    QWidget,
)
from superqt import QFlowLayout
from superqt.utils import ensure_main_thread

from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.curation import (
    FEATURE_GRADES,
    STATUSES,
    WARNING_FILTERS,
    CuratedPuzzle,
    Curator,
    GeneratedSet,
    PuzzleFilter,
    PuzzlesChanged,
    draw_item_again,
    feature_warning_grade,
    is_feature_warning,
)
from studio.generate.params import ALL_RULES
from studio.generate.request import GenerationRequest
from studio.gui.board_list import (
    COLUMNS,
    CONCEPT_COL,
    ERRORS_COL,
    LAYOUT_COL,
    PEOPLE_COL,
    SHORTCUT,
    SHORTCUT_COL,
    STATUS_COL,
    STATUS_COLOURS,
    WARNINGS_COL,
    PuzzleTableModel,
    flag_lines,
    flag_text,
    people_text,
)
from studio.gui.foil_dialog import ReplaceFoilDialog
from studio.gui.generate_dialog import GenerateSplitDialog
from studio.gui.glyph_grid import FontSource, ThumbnailLoader
from studio.gui.item_foil_dialog import ReplaceItemFoilDialog
from studio.gui.item_sheet import ItemSheetView
from studio.gui.jobs import ThreadJob
from studio.gui.settings import StudioSettings
from studio.gui.sheet_view import ERROR, WARNING, SheetView
from studio.gui.split_stats import SplitStatsPanel
from studio.gui.widgets import cell_width, header_width, refill_combo
from studio.stimuli.items import StimulusPuzzle
from studio.stimuli.pictures import ItemSheets
from studio.store.project import GlyphRecord

if TYPE_CHECKING:
    from studio.app import Studio

#: the widest the list may ask the splitter for, so that the Shortcut and People columns show
#: without scrolling sideways and the sheet keeps room at 1280 px (issue 29 review)
LIST_MAX_WIDTH = 600
#: The statistics pane: its least width, the width it keeps before the sheet's buttons get one
#: row, and the most of the board's width it takes (its text wraps to whatever it gets).
STATS_MIN_WIDTH = 240
STATS_WIDTH = 250
STATS_MAX_SHARE = 25
#: The findings list under the sheet shows this many lines at most (then it scrolls), and
#: one at least: as tall as its findings, so the sheet keeps the rest (issue 28: the list was
#: three lines tall with more findings, and the sheet's legend sat below the fold without).
EVIDENCE_LINES = 6
#: Puzzle actions that replace a foil: a glyph puzzle's from the annotations, a stimulus
#: item's from its family's own candidates (offered where the family has them)
FOIL_EDITS = ("puzzle.replace_foil",)
#: The buttons under the sheet: the action each triggers, and its text (with the key).
BUTTONS = (
    ("puzzle.approve", "Approve (A)"),
    ("puzzle.reject", "Reject (R)"),
    ("puzzle.draft", "Draft (D)"),
    ("puzzle.comment", "Comment (C)"),
    ("puzzle.replace_foil", "Replace foil (F)"),
    ("puzzle.regenerate", "Regenerate (G)"),
)
PUZZLE_ACTIONS = (
    "puzzle.approve",
    "puzzle.reject",
    "puzzle.draft",
    "puzzle.comment",
    "puzzle.next_flagged",
    "puzzle.prev_flagged",
    "puzzle.approve_clean",
    "puzzle.replace_foil",
    "puzzle.regenerate",
)
#: What the threshold combo offers: the lowest grade of image-feature warning that flags.
GRADE_CHOICES = (
    ("low", "all feature warnings"),
    ("medium", "medium and high"),
    ("high", "high only"),
)
#: an image-feature warning that does not count, in the findings list under the sheet
QUIET = QColor("#9e9e9e")


# ---- the comment field -------------------------------------------------------------------------
class CommentField(QLineEdit):
    """The board's comment field: what is typed goes with the next decision (A, R). Enter
    keeps the text and gives the keys back to the list; Escape clears it and does the same
    (``done`` fires in both cases, on the GUI thread)."""

    done = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.done.emit()
            return
        if event.key() == Qt.Key.Key_Escape:
            self.clear()
            self.done.emit()
            return
        super().keyPressEvent(event)


# ---- background work ---------------------------------------------------------------------------
class GenerationJob(ThreadJob):
    """Generates any family's set on a worker thread with
    :meth:`studio.curation.Curator.generate_set` — the pipeline the CLI's shares, without Qt.
    ``progressed(text, done, total)``; then exactly one of ``succeeded(GeneratedSet)``,
    ``cancelled()`` or ``failed(message)``. Every signal is delivered on the GUI thread;
    :meth:`cancel` stops the work at the next puzzle (a split made before it noticed is not
    imported)."""

    progressed = Signal(str, int, int)

    def __init__(
        self,
        studio: Studio,
        request: GenerationRequest,
        lock: threading.RLock,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(request.to_json(), parent)
        self.generation = request
        self.studio = studio
        self._lock = lock

    def _work(self) -> GeneratedSet:
        """Runs on the worker thread; signals it emits are queued to the GUI thread."""
        return Curator.generate_set(
            self.studio, self.generation, self._lock, self.progressed.emit, self._stop.is_set
        )


class ActionButton(QPushButton):
    """A push button with its own text that triggers an action and follows its enabled
    state (a bound method, so the connection dies with the button)."""

    def bind(self, action: QAction) -> None:
        self._action = action
        self.clicked.connect(action.trigger)
        self.setToolTip(action.toolTip())
        action.changed.connect(self._sync)
        self._sync()

    def _sync(self) -> None:
        self.setEnabled(self._action.isEnabled())


# ---- the board -----------------------------------------------------------------------------------
class CuratorBoard(QWidget):
    """List, filters, sheet, evidence, actions and statistics of the open puzzle set.
    ``generation_done(imported)`` fires when a background generation ends."""

    generation_done = Signal(bool)
    #: an item drawn anew in the background has been stored, or not (G on an item)
    redraw_done = Signal()

    def __init__(
        self,
        studio: Studio,
        parent: QWidget | None = None,
        settings: StudioSettings | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("curatorBoard")
        self.studio = studio
        self.settings = settings if settings is not None else StudioSettings()
        self.curator = Curator(studio)
        self.loader = ThumbnailLoader(studio.cache, self)
        self.loader.ready.connect(self._images_ready)
        self._records: dict[GlyphKey, GlyphRecord] | None = None
        self._fonts: dict[str, FontSource] | None = None
        self._loaded = False
        self._current_cache: CuratedPuzzle | None = None
        self._warming = False
        self._actions: Mapping[str, QAction] = {}
        self.job: GenerationJob | None = None
        self.redraw_job: ThreadJob | None = None
        self.last_generation_message = ""
        self.progress_dialog: QProgressDialog | None = None
        self.replace_dialog: ReplaceFoilDialog | ReplaceItemFoilDialog | None = None
        self._stats_job: ThreadJob | None = None
        self._stats_dirty = False
        self._stats_set_id: int | None = None
        # every request for statistics gets a number; a result older than the one shown is
        # dropped, and "updating…" shows while the newest is not in
        self._stats_requested = 0
        self._stats_shown = 0
        self._stats_token = 0
        self._prefetch_job: ThreadJob | None = None
        self._prefetch_set: int | None = None
        self._prefetch_again = False
        # the audit's clicked value and the puzzles listed for it (None: no such filter)
        self._value_filter: tuple[str, list[str]] | None = None
        self._closed = False
        self._stats_timer = QTimer(self, singleShot=True, interval=250)
        self._stats_timer.timeout.connect(self._compute_stats)
        self._build_ui()
        events = studio.events
        events.puzzles_changed.connect(self._on_puzzles_changed)
        events.puzzle_sets_changed.connect(self._on_puzzle_sets_changed)
        events.baseline_flags_changed.connect(self._on_baseline_flags_changed)
        for signal in (events.glyphs_changed, events.tags_changed, events.schema_changed):
            signal.connect(self._on_glyphs_or_tags_changed)
        events.changed_elsewhere.connect(self._on_changed_elsewhere)

    # ---- construction --------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self.set_combo = QComboBox(objectName="setCombo")
        self.set_combo.setMinimumContentsLength(24)
        self.set_combo.currentIndexChanged.connect(self._on_set_chosen)
        self.generate_button = QPushButton("Generate split…", objectName="generateButton")
        self.generate_button.clicked.connect(lambda: self.generate_split())
        self.rule_combo = QComboBox(objectName="ruleFilter")
        self.concept_combo = QComboBox(objectName="conceptFilter")
        self.concept_combo.setMinimumContentsLength(14)
        self.status_combo = QComboBox(objectName="statusFilter")
        self.status_combo.addItem("Any status", "")
        for s in STATUSES:
            self.status_combo.addItem(s, s)
        self.warning_combo = QComboBox(objectName="warningFilter")
        for key, text in WARNING_FILTERS:
            self.warning_combo.addItem(text, key)
        for combo in (self.rule_combo, self.concept_combo, self.status_combo, self.warning_combo):
            combo.currentIndexChanged.connect(lambda _i: self.apply_filter())
        # the threshold of image-feature warnings: a per-user setting
        self.grade_combo = QComboBox(objectName="featureGrade")
        for grade, text in GRADE_CHOICES:
            self.grade_combo.addItem(f"Feature warnings: {text}", grade)
        self.grade_combo.setToolTip(
            "Which image-feature warnings flag a puzzle. Each is graded by how likely its "
            "pattern is to arise by chance: low (a constant medium ink, most glyphs show it), "
            "medium, high (a rare pattern a person would see). The others stay on the sheet, "
            "greyed."
        )
        grade = self.settings.feature_warning_min()
        self.curator.set_feature_warning_min(grade)
        self.grade_combo.setCurrentIndex(max(0, self.grade_combo.findData(grade)))
        self.grade_combo.currentIndexChanged.connect(lambda _i: self._on_grade_chosen())

        top = QHBoxLayout()
        top.addWidget(QLabel("Set"))
        # the bar's spare width goes to the concept filter as much as to the set's name: a
        # set of many tuples lists concepts of 30 characters (stroke-line-straight-quantity)
        top.addWidget(self.set_combo, 1)
        top.addWidget(self.generate_button)
        top.addSpacing(12)
        top.addWidget(self.rule_combo)
        top.addWidget(self.concept_combo, 1)
        top.addWidget(self.status_combo)
        top.addWidget(self.warning_combo)
        top.addWidget(self.grade_combo)

        self.model = PuzzleTableModel(self)
        self.model.quiet_of = self._quiet_of
        self.table = QTableView(objectName="puzzleTable")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setAlternatingRowColors(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        # every column as wide as its widest text (the set's distinct values, not its 10,000
        # rows: see _fit_columns), the concept taking what the pane has left: nothing is
        # elided (issue 28: "two-…", "progressi…", "component…"), and the list shows Status
        # in its pane at 1280 px without scrolling (the Shortcut column, shown only for a set
        # with shortcut flags, may need a scroll)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setMinimumSectionSize(28)
        header.setStretchLastSection(False)
        self._column_need: dict[int, int] = {}
        self._column_texts: dict[int, set[str]] = {
            0: {"test-00000"},
            STATUS_COL: set(STATUSES),
            ERRORS_COL: {"00"},
            WARNINGS_COL: {"00"},
        }
        self._fit_columns()
        self.table.viewport().installEventFilter(self)
        # the column sorted by makes room for its arrow beside its title ("Warn." was cut)
        header.sortIndicatorChanged.connect(lambda *_: self._fit_columns())
        self.table.selectionModel().currentRowChanged.connect(lambda *_: self._row_changed())
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._update_actions())
        self.count_label = QLabel(objectName="puzzleCount")
        # shown while the list holds the puzzles of a value clicked in the answer-set audit
        self.value_filter_bar = QWidget(objectName="valueFilterBar")
        vb = QHBoxLayout(self.value_filter_bar)
        vb.setContentsMargins(0, 0, 0, 0)
        self.value_filter_label = QLabel(objectName="valueFilter", wordWrap=True)
        self.value_filter_clear = QPushButton("Show all", objectName="clearValueFilter")
        self.value_filter_clear.clicked.connect(lambda: self.clear_value_filter())
        vb.addWidget(self.value_filter_label, 1)
        vb.addWidget(self.value_filter_clear)
        self.value_filter_bar.setVisible(False)

        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(self.value_filter_bar)
        ll.addWidget(self.table, 1)
        ll.addWidget(self.count_label)

        self.title = QLabel(objectName="puzzleTitle")
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setWordWrap(True)
        self.sheet = SheetView(self._thumbnail)
        self.sheet.frame_clicked.connect(self._on_frame_clicked)
        self.sheet_scroll = QScrollArea(objectName="sheetScroll")
        self.sheet_scroll.setWidget(self.sheet)
        self.sheet_scroll.setWidgetResizable(True)
        self.sheet_scroll.setMinimumHeight(300)
        # a stimulus item (KiVA, polycubes, a plugin's) is shown as its family draws it
        self.item_sheet = ItemSheetView(ItemSheets(self.studio.cache.root / "items"))
        self.item_sheet.setVisible(False)
        self.evidence_list = QListWidget(objectName="evidenceList")
        self.evidence_list.setWordWrap(True)
        self.evidence_list.installEventFilter(self)  # its height follows its wrapped rows
        self.evidence_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.evidence_list.currentRowChanged.connect(self._on_evidence_chosen)
        self.dismiss_button = QPushButton(objectName="dismissFeature")
        self.dismiss_button.setToolTip(
            "Stop counting (or count again) the warnings of the chosen finding's image feature "
            "in this split; undoable, stored in the project"
        )
        self.dismiss_button.clicked.connect(lambda: self.toggle_dismissed())
        self.dismiss_button.setVisible(False)
        self.comment_label = QLabel(objectName="puzzleComment", wordWrap=True)
        self.comment_field = CommentField(objectName="commentField")
        self.comment_field.setPlaceholderText(
            "Comment for the next decision (C to type, Enter back to the list)"
        )
        self.comment_field.setClearButtonEnabled(True)
        self.comment_field.done.connect(self._comment_done)

        # buttons name their key; they trigger the window's actions (see bind_actions). They
        # flow onto a second line when the sheet's pane is narrower than their row, so they
        # never set the pane's least width (at 1280 px the list and the statistics need it)
        self.buttons: dict[str, ActionButton] = {}
        row = QFlowLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(4)
        for action_id, text in BUTTONS:
            b = ActionButton(text, objectName=action_id.replace("puzzle.", "button_"))
            b.setEnabled(False)
            self.buttons[action_id] = b
            row.addWidget(b)

        centre = QWidget()
        cl = QVBoxLayout(centre)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addWidget(self.title)
        cl.addWidget(self.sheet_scroll, 1)
        cl.addWidget(self.item_sheet, 1)
        cl.addWidget(self.evidence_list)
        dismiss_row = QHBoxLayout()
        dismiss_row.addWidget(self.dismiss_button)
        dismiss_row.addStretch(1)
        cl.addLayout(dismiss_row)
        cl.addWidget(self.comment_label)
        cl.addWidget(self.comment_field)
        cl.addLayout(row)

        self.stats_panel = SplitStatsPanel()
        self.stats_panel.setMinimumWidth(STATS_MIN_WIDTH)
        self.stats_panel.value_clicked.connect(self.show_value_puzzles)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(left)
        self.splitter.addWidget(centre)
        self.splitter.addWidget(self.stats_panel)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setStretchFactor(2, 1)
        self._sized = False

        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(top)
        lay.addWidget(self.splitter, 1)

    def action_handlers(self) -> dict[str, Callable[[], object]]:
        """What the board's own actions do, by id (issue 27: each page registers its
        actions; the window builds them all from ``ACTIONS`` and asks each page)."""
        return {
            "puzzle.approve": self.approve,
            "puzzle.reject": self.reject,
            "puzzle.draft": self.mark_draft,
            "puzzle.comment": self.edit_comment,
            "puzzle.next_flagged": self.next_flagged,
            "puzzle.prev_flagged": self.prev_flagged,
            "puzzle.approve_clean": self.approve_clean,
            "puzzle.replace_foil": self.replace_foil,
            "puzzle.regenerate": self.regenerate,
        }

    def bind_actions(self, actions: Mapping[str, QAction]) -> None:
        """Use the window's actions (declared in ``ACTIONS``) for the buttons."""
        self._actions = actions
        for action_id, button in self.buttons.items():
            action = actions.get(action_id)
            if action is None:
                continue
            button.bind(action)
        self._update_actions()

    # ---- loading -------------------------------------------------------------------------------
    def showEvent(self, event: Any) -> None:
        if not self._loaded:
            self.reload()
        super().showEvent(event)
        if not self._sized:
            QTimer.singleShot(0, self._size_panes)

    def _size_panes(self) -> None:
        """List, sheet and statistics share the width once it is known: the list as wide as
        its columns up to Warn. (at most 45 %), the sheet's pane as wide as the sheet — and as
        its row of buttons, when the statistics keep STATS_WIDTH — and the statistics the rest.
        Room beyond STATS_MAX_SHARE of the width goes to the list's Shortcut column, if shown,
        then to the list and the sheet alike. At 1280 px no pane then cuts its text (issue 28:
        the list's columns were squeezed to "two-…", "progressi…", "c…" by a sheet pane held
        wide by its buttons)."""
        w = self.splitter.width()
        if self._sized or w < 600:
            return
        self._sized = True
        room = w - self.splitter.handleWidth() * (self.splitter.count() - 1)
        left = min(self._list_width(SHORTCUT_COL), room * 45 // 100)
        sheet = self._sheet_pane_width()
        buttons = sum(b.sizeHint().width() for b in self.buttons.values()) + 4 * len(self.buttons)
        centre = max(sheet, min(buttons, room - left - STATS_WIDTH))
        stats = room - left - centre
        if stats < STATS_MIN_WIDTH:  # a narrow window: the sheet's pane scrolls
            centre = max(room // 4, room - left - STATS_MIN_WIDTH)
            stats = room - left - centre
        extra = stats - room * STATS_MAX_SHARE // 100
        if extra > 0:
            wider = min(extra, max(0, self._list_width(len(COLUMNS)) - left))
            left += wider + (extra - wider) // 2
            centre += extra - wider - (extra - wider) // 2
            stats -= extra
        self.splitter.setSizes([left, centre, stats])

    def _list_width(self, columns: int) -> int:
        """The list's pane wide enough for its first ``columns`` columns that are shown, its
        scroll bar and frame."""
        header = self.table.horizontalHeader()
        cols = sum(
            self._column_need.get(c, header.sectionSize(c))
            for c in range(columns)
            if not header.isSectionHidden(c)
        )
        bar = self.table.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        return cols + bar + 2 * self.table.frameWidth() + 2

    def _sheet_pane_width(self) -> int:
        """The sheet's pane wide enough for the sheet (a two-row sheet while none is shown),
        its scroll bar and frame."""
        bar = self.sheet_scroll.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        return self.sheet.natural_width() + bar + 2 * self.sheet_scroll.frameWidth()

    def _fit_columns(self) -> None:
        """Each column as wide as the widest of its texts (the set's values, computed in
        _refill_filters; the header's title in bold), the concept's as wide as the pane leaves
        it besides. Runs on the GUI thread; cheap (a few dozen strings)."""
        header = self.table.horizontalHeader()
        texts = dict(self._column_texts)
        texts[SHORTCUT_COL] = {flag_text(f) for f in self.model.shortcuts.values() if f}
        texts[PEOPLE_COL] = {people_text(a, n) for a, n in self.model.human.values() if n}
        sorted_by = header.sortIndicatorSection() if header.isSortIndicatorShown() else -1
        for col, title in enumerate(COLUMNS):
            head = header_width(header, title, sort_arrow=col == sorted_by)
            need = max(cell_width(self.table, texts.get(col, ())), head)
            self._column_need[col] = need
            if header.sectionSize(col) != need and col != CONCEPT_COL:
                header.resizeSection(col, need)
        # the list asks for the room its shown columns need (up to LIST_MAX_WIDTH): a People
        # or Shortcut column that appears is then seen, not off the list's right edge
        shown = self._column_need.get(CONCEPT_COL, 0) + sum(
            header.sectionSize(c)  # a section is never narrower than the header's minimum
            for c in range(len(COLUMNS))
            if c != CONCEPT_COL and not header.isSectionHidden(c)
        )
        sb = self.table.verticalScrollBar()
        extent = sb.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, sb)
        bar = max(extent, sb.sizeHint().width(), sb.width() if sb.isVisible() else 0)
        chrome = bar + 2 * self.table.frameWidth()
        self.table.setMinimumWidth(min(shown + chrome, LIST_MAX_WIDTH))
        self._fill_concept_column()

    def _fill_concept_column(self) -> None:
        """The concept's column takes the room the others leave in the pane, but never less
        than its widest concept (then the list scrolls sideways instead of eliding it)."""
        header = self.table.horizontalHeader()
        others = sum(
            header.sectionSize(c)
            for c in range(len(COLUMNS))
            if c != CONCEPT_COL and not header.isSectionHidden(c)
        )
        need = self._column_need.get(CONCEPT_COL, 0)
        width = max(need, self.table.viewport().width() - others)
        if header.sectionSize(CONCEPT_COL) != width:
            header.resizeSection(CONCEPT_COL, width)

    def _fit_evidence_list(self) -> None:
        """The findings list as tall as its rows wrapped at its width, one line at least and
        EVIDENCE_LINES at most (then it scrolls)."""
        view = self.evidence_list
        fm = view.fontMetrics()
        option = QStyleOptionViewItem()
        option.initFrom(view)
        option.rect = QRect(0, 0, max(1, view.viewport().width()), fm.height())  # type: ignore[attr-defined]
        option.features = QStyleOptionViewItem.ViewItemFeature.WrapText  # type: ignore[attr-defined]
        delegate = view.itemDelegate()
        rows = sum(
            delegate.sizeHint(option, view.model().index(r, 0)).height()
            for r in range(view.count())
        )
        line = fm.lineSpacing() + 4
        height = min(max(rows, line), EVIDENCE_LINES * line) + 2 * view.frameWidth()
        if view.height() != height or view.minimumHeight() != height:
            view.setFixedHeight(height)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """A resized list fills its concept column again; a findings list of another width
        takes the height of its rows wrapped again."""
        if event.type() == QEvent.Type.Resize:
            if watched is self.table.viewport():
                self._fill_concept_column()
            elif (
                watched is getattr(self, "evidence_list", None)
                and event.oldSize().width() != event.size().width()  # type: ignore[attr-defined]
            ):
                self._fit_evidence_list()
        return super().eventFilter(watched, event)

    def reload(self) -> None:
        """Read the sets, the open set's puzzles and the filters' choices from the project."""
        self._loaded = True
        self._set_value_filter(None)
        self._current_cache = None
        self._records = None
        self._fonts = None
        self._refill_sets()
        self._refill_filters()
        self.apply_filter()
        self._schedule_stats()

    def _on_changed_elsewhere(self, tables: frozenset[str]) -> None:
        """Another client's commits (a lab's database): its puzzles and sets read again."""
        if "*" in tables or tables & {"puzzles", "puzzle_sets"}:
            self.project_switched()

    def project_switched(self) -> None:
        if self.job is not None:
            self.job.cancel()  # its split belongs to the project that was closed
        if self._prefetch_job is not None:
            self._prefetch_job.cancel()
        self._prefetch_set = None
        self.loader.forget()
        self.curator.reset()
        self._loaded = False
        if self.isVisible():
            self.reload()

    def _refill_sets(self) -> None:
        self.set_combo.blockSignals(True)
        self.set_combo.clear()
        for s in self.curator.sets():
            self.set_combo.addItem(f"{s.name} ({s.count} puzzles)", s.id)
        if self.set_combo.count() == 0:
            self.set_combo.addItem("No puzzle set yet", None)
        i = self.set_combo.findData(self.curator.set_id)
        self.set_combo.setCurrentIndex(max(0, i))
        self.set_combo.blockSignals(False)

    def _refill_filters(self) -> None:
        puzzles = self.curator.summaries()
        # the glyph rules in their order, then a family's own (KiVA's domains, say)
        present = {p.rule for p in puzzles}
        rules = [r for r in ALL_RULES if r in present] + sorted(present - set(ALL_RULES))
        concepts = sorted({p.concept for p in puzzles})
        refill_combo(self.rule_combo, "Any rule", rules)
        refill_combo(self.concept_combo, "Any concept", concepts)
        # the list's columns fit the set's texts
        self._column_texts[0] = {max((p.id for p in puzzles), key=len, default="test-00000")}
        self._column_texts[1] = {p.layout for p in puzzles}
        self._column_texts[2] = set(rules)
        self._column_texts[CONCEPT_COL] = set(concepts)
        self._column_texts[ERRORS_COL] = {str(max((p.errors for p in puzzles), default=0))}
        self._column_texts[WARNINGS_COL] = {str(max((p.warnings for p in puzzles), default=0))}

    def current_filter(self) -> PuzzleFilter:
        return PuzzleFilter(
            rule=self.rule_combo.currentData() or "",
            concept=self.concept_combo.currentData() or "",
            status=self.status_combo.currentData() or "",
            warning=self.warning_combo.currentData() or "",
        )

    def apply_filter(self) -> None:
        current = self.current_id()
        ids = self._value_filter[1] if self._value_filter is not None else None
        puzzles = self.curator.summaries(self.current_filter(), ids=ids)
        self.model.set_puzzles(puzzles, self.curator.shortcut_flags())
        self._show_human()
        self.table.setColumnHidden(SHORTCUT_COL, not self.model.has_flags())
        # one layout says nothing per row (the sheet's header names it): room for the rest
        self.table.setColumnHidden(LAYOUT_COL, len({p.layout for p in puzzles}) <= 1)
        self._fit_columns()
        header = self.table.horizontalHeader()
        if header.sortIndicatorSection() >= 0 and header.sortIndicatorSection() < len(COLUMNS):
            self.model.sort(header.sortIndicatorSection(), header.sortIndicatorOrder())
        total = self.curator.current_set().count if self.curator.current_set() else 0
        flagged = sum(1 for p in puzzles if p.status == "flagged")
        self.count_label.setText(
            f"{len(puzzles)} of {total} puzzles shown" + (f", {flagged} flagged" if flagged else "")
        )
        if current is not None and self.model.row_of(current) is not None:
            self.select_puzzle(current)
        elif puzzles:
            self.select_row(0)
        else:
            self._show_current()

    # ---- selection -----------------------------------------------------------------------------
    def select_row(self, row: int) -> None:
        idx = self.model.index(row, 0)
        self.table.selectionModel().setCurrentIndex(
            idx,
            QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows,
        )
        self.table.scrollTo(idx)

    def select_puzzle(self, puzzle_id: str) -> bool:
        row = self.model.row_of(puzzle_id)
        if row is None:
            return False
        self.select_row(row)
        return True

    def show_puzzle(self, set_id: int, puzzle_id: str) -> bool:
        """Open a set and select one of its puzzles, clearing filters that would hide it (the
        Baselines tab's flagged puzzles open here). False when the puzzle is not there."""
        if self.curator.project.puzzle_set(set_id) is None:
            return False
        if not self._loaded:
            self.reload()
        if set_id != self.curator.set_id:
            self.curator.open_set(set_id)
            self._refill_sets()
            self._refill_filters()
        self._set_value_filter(None)
        for combo in (self.rule_combo, self.concept_combo, self.status_combo, self.warning_combo):
            combo.blockSignals(True)
            combo.setCurrentIndex(0)
            combo.blockSignals(False)
        self.apply_filter()
        self._schedule_stats()
        return self.select_puzzle(puzzle_id)

    def show_value_puzzles(self, value: str, ids: Sequence[str], total: int = 0) -> None:
        """List only the puzzles whose answers carry ``value`` (a ``concept=value`` the
        answer-set audit found off; ``ids`` as the audit listed them, of ``total`` that carry
        it), clearing the other filters that would hide some, and open the first."""
        for combo in (self.rule_combo, self.concept_combo, self.status_combo, self.warning_combo):
            combo.blockSignals(True)
            combo.setCurrentIndex(0)
            combo.blockSignals(False)
        self._set_value_filter((value, list(ids)), total)
        self.apply_filter()
        if self.model.rowCount() and self.current_id() not in set(ids):
            self.select_row(0)

    def clear_value_filter(self) -> None:
        """Back to the whole list (the value filter's Show all button)."""
        self._set_value_filter(None)
        self.apply_filter()

    def value_filter(self) -> str | None:
        """The audit value the list is limited to, if any."""
        return self._value_filter[0] if self._value_filter is not None else None

    def _set_value_filter(self, value_filter: tuple[str, list[str]] | None, total: int = 0) -> None:
        self._value_filter = value_filter
        if value_filter is None:
            self.value_filter_bar.setVisible(False)
            return
        value, ids = value_filter
        n = len(ids)
        of = f" (of {total})" if total > n else ""
        self.value_filter_label.setText(
            f"Answers carry <b>{html.escape(value)}</b>: {n} puzzle{'s' if n != 1 else ''}"
            f"{of} listed by the answer-set audit"
        )
        self.value_filter_bar.setVisible(True)

    def refresh_flags(self) -> None:
        """Re-read the shortcut flags (a baseline job ended) and people's accuracy."""
        self.model.set_flags(self.curator.shortcut_flags())
        self.table.setColumnHidden(SHORTCUT_COL, not self.model.has_flags())
        self._show_human()
        self._fit_columns()
        self._current_cache = None
        self._show_current()

    def _show_human(self) -> None:
        """People's accuracy from the set's pilots; the column only where there is some."""
        human = self.curator.human()
        self._choices = self.curator.human_choices() if human else {}
        self.model.set_human(
            human,
            self.curator.people_fail(human=human) if human else [],
            self.curator.people_split(human=human, choices=self._choices) if human else [],
        )
        self.table.setColumnHidden(PEOPLE_COL, not human)

    def current_id(self) -> str | None:
        idx = self.table.currentIndex()
        return self.model.puzzle(idx.row()).id if idx.isValid() else None

    def current(self) -> CuratedPuzzle | None:
        """The current puzzle in full (its record parsed once, until it changes)."""
        idx = self.table.currentIndex()
        if not idx.isValid():
            return None
        s = self.model.puzzle(idx.row())
        cached = self._current_cache
        if cached is None or cached.id != s.id or cached.updated_at != s.updated_at:
            try:
                cached = self._current_cache = self.curator.puzzle(s.id)
            except StudioError:
                return None
        return cached

    def selected_ids(self) -> list[str]:
        """The puzzles a decision acts on: the selected rows when several are selected and the
        puzzle on the sheet is one of them; else the puzzle on the sheet alone. A key never
        decides a puzzle the curator is not looking at (issue 28: after Ctrl+Home the sheet
        showed train-00000 while train-00002 stayed selected, and D acted on train-00002)."""
        current = self.current_id()
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        ids = [self.model.puzzle(r).id for r in rows]
        if len(ids) > 1 and current in ids:
            return ids
        if current is not None:
            return [current]
        return ids

    def _row_changed(self) -> None:
        """Another puzzle is current: a comment typed for the last one is not carried over."""
        self.comment_field.clear()
        self._show_current()

    def _show_current(self) -> None:
        cp = self.current()
        if cp is None:
            self.title.setText("")
            self.sheet.set_puzzle(None)
            self.item_sheet.show_item(None)
            self.evidence_list.clear()
            self._fit_evidence_list()
            self.comment_label.setText("")
            self._update_actions()
            return
        if isinstance(cp.puzzle, StimulusPuzzle):
            self._show_item(cp)
            return
        self.item_sheet.setVisible(False)
        self.sheet_scroll.setVisible(True)
        pending = not self.curator.annotations_ready
        evidence = []
        if pending:  # the first look reads every annotation and render: not on this thread
            self._warm_up()
        else:
            try:
                evidence = self.curator.evidence(cp)
            except StudioError as e:
                self._status_bar_message(str(e))
        for k in cp.puzzle.all_keys():
            self._thumbnail(k)  # ask the loader early
        self.sheet.set_puzzle(cp, evidence)
        self.sheet.set_choices(getattr(self, "_choices", {}).get(cp.id))
        p = cp.puzzle
        colour = STATUS_COLOURS.get(cp.status, QColor("#333")).name()
        self.title.setText(
            f"<b>{p.id}</b> · {p.rule} over <b>{p.concept}</b>"
            f"{' (shift)' if p.shift else ''} · {p.layout} · {p.split} · "
            f"<span style='color:{colour}'><b>{cp.status}</b></span>"
            f"<br><span style='color:#666'>values {_values(p.values)} · key: answer "
            f"{p.key + 1}</span>"
            + "".join(
                # escaped: a probe's reason quotes tag values, which the annotators typed
                f"<br><span style='color:{SHORTCUT.name()}'>⚠ {html.escape(line, quote=False)}"
                "</span>"
                for line in flag_lines(self.model.shortcuts.get(p.id, ()))
            )
        )
        self.evidence_list.blockSignals(True)
        self.evidence_list.clear()
        dismissed = self.curator.dismissed_features() if cp.warnings else frozenset()
        for e in evidence:
            item = QListWidgetItem(e.caption)
            item.setForeground(ERROR if e.severity == "error" else WARNING)
            f = e.finding
            if is_feature_warning(f):
                grade = feature_warning_grade(f)
                quiet = not self.curator.counts(f, dismissed)
                why = "dismissed in this split" if f.concept in dismissed else f"grade {grade}"
                item.setText(f"[{why}] {e.caption}")
                item.setToolTip(
                    f"Image-feature warning, grade {grade}"
                    + (" — not counted (" + why + ")" if quiet else "")
                )
                if quiet:
                    item.setForeground(QUIET)
            self.evidence_list.addItem(item)
        if evidence:
            self.evidence_list.setCurrentRow(0)
        elif pending:
            self.evidence_list.addItem("Reading the annotations…")
        elif not cp.problems:
            self.evidence_list.addItem("No findings: every foil is wrong for every rule.")
        self.evidence_list.blockSignals(False)
        self._fit_evidence_list()
        self._finish_showing(cp)

    def _show_item(self, cp: CuratedPuzzle) -> None:
        """A stimulus item: its family's sheet, questions, key and checks in place of the
        glyph sheet; the findings list names the checks that failed."""
        item = cp.puzzle
        assert isinstance(item, StimulusPuzzle)
        self.sheet_scroll.setVisible(False)
        self.item_sheet.setVisible(True)
        self.sheet.set_puzzle(None)
        self.item_sheet.show_item(item)
        colour = STATUS_COLOURS.get(cp.status, QColor("#333")).name()
        self.title.setText(
            f"<b>{html.escape(item.id)}</b> · {html.escape(item.family)} · "
            f"{html.escape(item.rule)} · <b>{html.escape(item.concept)}</b> · "
            f"{html.escape(item.split)} · <span style='color:{colour}'><b>{cp.status}</b></span>"
            + "".join(
                f"<br><span style='color:{SHORTCUT.name()}'>⚠ {html.escape(line, quote=False)}"
                "</span>"
                for line in flag_lines(self.model.shortcuts.get(item.id, ()))
            )
        )
        self.evidence_list.blockSignals(True)
        self.evidence_list.clear()
        for f in cp.problems:
            entry = QListWidgetItem(f.message())
            entry.setForeground(ERROR if f.is_error else WARNING)
            self.evidence_list.addItem(entry)
        if not cp.problems:
            self.evidence_list.addItem("No findings: every check of the family passed.")
        self.evidence_list.blockSignals(False)
        self._fit_evidence_list()
        self._finish_showing(cp)

    def _finish_showing(self, cp: CuratedPuzzle) -> None:
        """What every puzzle shown ends with: its comment, and the buttons and keys it allows."""
        who = f" — {cp.author}, {cp.updated_at}" if cp.author else ""
        self.comment_label.setText(f"Comment: {cp.comment}{who}" if cp.comment else "")
        self.comment_label.setVisible(bool(cp.comment))  # no empty line's room taken
        self._update_dismiss_button()
        self._update_actions()

    def _warm_up(self) -> None:
        if self._warming:
            return
        self._warming = True
        ThreadJob.call(self.curator.warm_up, ended=self._warmed, errored=_ignored, parent=self)

    def _warmed(self, *_args: object) -> None:
        self._warming = False
        if not self._closed:
            self._show_current()

    def _prefetch(self) -> None:
        """Compute the image features of the open set's glyphs on a worker thread, so that
        stepping from puzzle to puzzle finds them ready (one set at a time; a newer request
        waits for the running one to stop)."""
        set_id = self.curator.set_id
        if set_id is None or self._closed or self._prefetch_set == set_id:
            return
        if self._prefetch_job is not None:
            self._prefetch_job.cancel()  # the running one stops at its next chunk
            self._prefetch_again = True
            return
        self._prefetch_set = set_id
        self._prefetch_again = False
        curator = self.curator

        def work(should_stop: Callable[[], bool]) -> int:
            try:
                return curator.prefetch_features(set_id, should_stop)
            except StudioError:  # the set went away meanwhile
                return 0

        self._prefetch_job = ThreadJob.call(
            work, stoppable=True, ended=self._prefetched, errored=_ignored, parent=self
        )

    def _prefetched(self) -> None:
        job, self._prefetch_job = self._prefetch_job, None
        if job is not None and job.cancel_requested:
            self._prefetch_set = None
        if self._prefetch_again and not self._closed:
            self._prefetch()

    def prefetching(self) -> bool:
        """Whether image features are being computed in the background."""
        return self._prefetch_job is not None

    def _on_evidence_chosen(self, row: int) -> None:
        if row >= 0:
            self.sheet.select_evidence(row)
        self._update_dismiss_button()

    def _chosen_feature(self) -> str | None:
        """The image feature of the finding chosen in the evidence list (else of the first
        image-feature warning), if any."""
        evidence = self.sheet.evidence
        row = self.evidence_list.currentRow()
        order = ([row] if 0 <= row < len(evidence) else []) + list(range(len(evidence)))
        for i in order:
            if is_feature_warning(evidence[i].finding):
                return evidence[i].finding.concept
        return None

    def _update_dismiss_button(self) -> None:
        feature = self._chosen_feature()
        self.dismiss_button.setVisible(feature is not None)
        if feature is not None:
            if feature in self.curator.dismissed_features():
                self.dismiss_button.setText(f"Count {feature} warnings again in this split")
            else:
                self.dismiss_button.setText(f"Dismiss {feature} warnings in this split")

    def toggle_dismissed(self) -> None:
        """Dismiss the chosen finding's image feature for the open set, or count it again."""
        feature = self._chosen_feature()
        if feature is None:
            return
        dismiss = feature not in self.curator.dismissed_features()
        self._run("Cannot change", lambda: self.curator.dismiss_feature(feature, dismiss))
        self._current_cache = None
        self._show_current()
        self._refresh_flagged_count()

    def _on_grade_chosen(self) -> None:
        grade = self.grade_combo.currentData()
        if grade not in FEATURE_GRADES:
            return
        self.settings.set_feature_warning_min(grade)
        self.curator.set_feature_warning_min(grade)
        self._current_cache = None
        self.apply_filter()
        self._schedule_stats()

    def _quiet_of(self, puzzle_id: str) -> list[tuple[Any, str]]:
        try:
            return self.curator.quiet_warnings(puzzle_id)
        except StudioError:
            return []

    def _refresh_flagged_count(self) -> None:
        self.apply_filter()
        self._schedule_stats()

    def _on_frame_clicked(self, pos: tuple[str, int, int]) -> None:
        cp = self.current()
        if cp is None or pos[0] != "answer":
            return
        for i, e in enumerate(self.sheet.evidence):
            if e.answer == pos[1]:
                self.evidence_list.setCurrentRow(i)
                return

    def _enabled(self, action_id: str) -> bool:
        """Whether a puzzle action can act on the puzzle shown: any needs one; replacing a
        foil needs a glyph puzzle or an item whose family offers replacement foils."""
        if not self.table.currentIndex().isValid():
            return False
        if action_id in FOIL_EDITS:
            cp = self.current()
            return cp is not None and self.curator.item_foils_refusal(cp) is None
        return True

    def _update_foil_tip(self) -> None:
        """The Replace foil button says why it is off on an item whose family offers no
        replacement foils (a disabled button still shows its tooltip)."""
        button = self.buttons.get("puzzle.replace_foil")
        action = self._actions.get("puzzle.replace_foil")
        if button is None:
            return
        cp = self.current() if self.table.currentIndex().isValid() else None
        why = self.curator.item_foils_refusal(cp) if cp is not None else None
        default = action.toolTip() if action is not None else ""
        button.setToolTip(f"{why}: Replace foil does not apply to this item" if why else default)

    def _update_actions(self) -> None:
        if not self.isVisible():
            return
        self._update_foil_tip()
        for action_id in PUZZLE_ACTIONS:
            action = self._actions.get(action_id)
            if action is not None and action.isEnabled() != self._enabled(action_id):
                action.setEnabled(self._enabled(action_id))

    def set_active(self, active: bool) -> None:
        """The main window shows (True) or hides the board: its puzzle keys act only then."""
        for action_id in PUZZLE_ACTIONS:
            action = self._actions.get(action_id)
            if action is not None:
                action.setEnabled(active and self._enabled(action_id))

    # ---- thumbnails ------------------------------------------------------------------------------
    def _glyph_sources(self) -> tuple[dict[GlyphKey, GlyphRecord], dict[str, FontSource]]:
        if self._records is None or self._fonts is None:
            self._records = {g.key: g for g in self.studio.project.glyphs()}
            fonts = {}
            for f in self.studio.project.fonts():
                try:
                    fonts[f.id] = FontSource(self.studio._font_path(f.id), f.face_index, f.sha256)
                except StudioError:
                    continue
            self._fonts = fonts
        return self._records, self._fonts

    def _thumbnail(self, key: GlyphKey) -> QImage | None:
        if key in self.loader.images:
            return self.loader.images[key]
        records, fonts = self._glyph_sources()
        g = records.get(key)
        if g is None or g.render_font is None or g.status in ("uncovered", "missing"):
            return None
        src = fonts.get(g.render_font)
        if src is not None:
            self.loader.request(key, src, key.codepoint)
        return None

    def _images_ready(self, keys: list[GlyphKey]) -> None:
        shown = set(self.sheet.keys_shown())
        if shown.intersection(keys):
            self.sheet.update()
        if self.replace_dialog is not None:
            self.replace_dialog.refresh_thumbnails()

    # ---- events ----------------------------------------------------------------------------------
    # The studio's events fire on the thread that made the change: rendering every glyph runs
    # on a worker and ends with glyphs_changed. Each handler hops to the GUI thread first
    # (a timer started from a worker thread is what printed "QObject::startTimer: Timers cannot
    # be started from another thread").
    @ensure_main_thread
    def _on_puzzles_changed(self, change: PuzzlesChanged) -> None:
        if change.set_id != self.curator.set_id:
            return
        for summary in self.curator.summaries(ids=change.ids):
            self.model.update_puzzle(summary)
        if self.current_id() in change.ids:
            self._current_cache = None
            self._show_current()
        self._schedule_stats()

    @ensure_main_thread
    def _on_puzzle_sets_changed(self, *_args: object) -> None:
        if self._loaded:
            self.reload()

    @ensure_main_thread
    def _on_baseline_flags_changed(self, set_id: int) -> None:
        if self._loaded and set_id == self.curator.set_id:
            self.refresh_flags()

    @ensure_main_thread
    def _on_glyphs_or_tags_changed(self, *_args: object) -> None:
        self._records = None
        self._fonts = None
        self._prefetch_set = None  # the curator forgot the glyphs' features
        self._schedule_stats()

    def _on_set_chosen(self, _index: int) -> None:
        set_id = self.set_combo.currentData()
        if set_id is None or set_id == self.curator.set_id:
            return
        self.curator.open_set(int(set_id))
        self._set_value_filter(None)
        self._refill_filters()
        self.apply_filter()
        self._schedule_stats()

    # ---- statistics ------------------------------------------------------------------------------
    def _schedule_stats(self) -> None:
        """The statistics are out of date: say so at once, recompute shortly (debounced) on a
        worker thread. Runs on the GUI thread."""
        if self.curator.set_id != self._prefetch_set:
            self._prefetch()
        self._stats_requested += 1
        self.stats_panel.set_updating(True)
        self._stats_timer.start()

    def _compute_stats(self) -> None:
        if self._stats_job is not None or (self.job is not None):
            self._stats_dirty = True
            return
        set_id = self.curator.set_id
        if set_id is None:
            self._stats_shown = self._stats_requested
            self.stats_panel.set_stats(None)
            self.stats_panel.set_updating(False)
            return
        self._stats_dirty = False
        curator = self.curator
        token = self._stats_requested

        def work() -> tuple[int, int, Any]:
            try:
                return token, set_id, curator.stats(set_id)
            except StudioError:  # the set went away meanwhile (an undone import)
                return token, set_id, None

        self._stats_set_id = set_id
        self._stats_token = token
        # bound methods, not lambdas: Qt drops the connection if the board is deleted first
        self._stats_job = ThreadJob.call(
            work, succeeded=self._stats_returned, errored=self._stats_failed, parent=self
        )

    def _stats_returned(self, got: tuple[int, int, Any]) -> None:
        self._stats_done(*got)

    def _stats_failed(self, _error: BaseException) -> None:
        self._stats_done(self._stats_token, self._stats_set_id, None)

    def _stats_done(self, token: int, set_id: object, stats: object) -> None:
        """A result is shown only when it is newer than the one shown and of the open set;
        "updating…" stays until the newest request's result is in."""
        self._stats_job = None
        if self._closed:
            return
        if set_id == self.curator.set_id and token > self._stats_shown:
            self._stats_shown = token
            self.stats_panel.set_stats(stats if isinstance(stats, Mapping) else None)
        if self._stats_dirty or set_id != self.curator.set_id:
            self._stats_timer.start()
        self.stats_panel.set_updating(self._stats_shown < self._stats_requested)

    def stats_updating(self) -> bool:
        """Whether the statistics shown are older than the latest change."""
        return self._stats_shown < self._stats_requested

    def wait_for_stats(self, timeout_ms: int = 10000) -> bool:
        """For tests and the screenshot: block until no statistics are being computed."""
        import time

        deadline = time.monotonic() + timeout_ms / 1000
        while time.monotonic() < deadline:
            QApplication.processEvents()
            if (
                self._stats_job is None
                and not self._stats_timer.isActive()
                and not self._stats_dirty
                and not self.stats_updating()
            ):
                return True
            time.sleep(0.01)
        return False

    # ---- actions ---------------------------------------------------------------------------------
    def _status_bar_message(self, text: str, ms: int = 6000) -> None:
        bar = getattr(self.window(), "statusBar", None)
        if callable(bar):
            bar().showMessage(text, ms)

    def _run(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            out = fn()
        except StudioError as e:
            self.show_error(what, e)
            return None
        self._status_bar_message(self.studio.undo_stack.undo_label)
        return out

    def show_error(self, title: str, error: BaseException) -> None:
        show = getattr(self.window(), "show_error", None)
        if callable(show):
            show(title, error)
            return
        box = QMessageBox(QMessageBox.Icon.Warning, title, str(error), parent=self)
        box.setObjectName("errorBox")
        box.open()

    def _decide(self, status: str, title: str) -> None:
        """Apply a decision to the selected puzzles at once (no dialog), with the comment
        field's text if any, and open the puzzle after the last of them."""
        ids = self.selected_ids()
        if not ids:
            return
        comment = self.comment_field.text().strip() or None
        rows = [r for r in (self.model.row_of(i) for i in ids) if r is not None]
        after = max(rows) + 1 if rows else -1
        # move first: the edit's event then redraws the next puzzle, not the one decided
        if 0 <= after < self.model.rowCount():
            self.select_row(after)

        # what the curator saw: a puzzle another curator decided meanwhile is refused, not
        # overwritten (lab database), and the board then shows its new state
        seen = {
            i: self.model.puzzle(r).status for i in ids if (r := self.model.row_of(i)) is not None
        }

        def apply() -> bool:
            self.curator.set_status(ids, status, comment, seen=seen)
            return True

        if self._run(title, apply):
            self.comment_field.clear()
        if self.comment_field.hasFocus():
            self.table.setFocus()

    def approve(self) -> None:
        self._decide("approved", "Approve")

    def reject(self) -> None:
        self._decide("rejected", "Reject")

    def _comment_done(self) -> None:
        """Enter or Escape in the comment field: the keys go back to the list."""
        self.table.setFocus()

    def next_flagged(self) -> bool:
        """Open the next flagged puzzle of the list (from the top after the last one)."""
        return self._step_flagged(1)

    def prev_flagged(self) -> bool:
        """Open the previous flagged puzzle of the list (from the bottom before the first)."""
        return self._step_flagged(-1)

    def _step_flagged(self, step: int) -> bool:
        n = self.model.rowCount()
        if not n:
            return False
        idx = self.table.currentIndex()
        start = idx.row() if idx.isValid() else (-1 if step > 0 else n)
        rows = self.model.rows
        for k in range(1, n + 1):
            row = start + step * k
            wrapped = not 0 <= row < n
            row %= n
            if rows[row].status == "flagged":
                if row == start:
                    break  # the only flagged one is the current puzzle
                self.select_row(row)
                if wrapped:
                    where = "first" if step > 0 else "last"
                    self._status_bar_message(f"Back to the {where} flagged puzzle of the list")
                return True
        self._status_bar_message("No other flagged puzzle in the list")
        return False

    def approve_clean(self) -> list[str]:
        """Approve, as one undo step, the selected puzzles (several selected) or else every
        puzzle shown that has no error and is not decided yet."""
        chosen = self.table.selectionModel().selectedRows()
        if len(chosen) > 1:
            ids = self.selected_ids()
            scope = "selected"
        else:
            ids = [p.id for p in self.model.rows]
            scope = "shown"
        comment = self.comment_field.text().strip() or None
        done = self._run("Cannot approve", lambda: self.curator.approve_clean(ids, comment))
        if done is None:
            return []
        if done:
            self.comment_field.clear()
        flagged = len(self.curator.flagged_among(ids))
        rest = len(ids) - len(done) - flagged
        said = f"Approved {len(done)} of the {len(ids)} puzzles {scope}"
        if flagged:
            said += f"; {flagged} flagged left for you to decide one by one (N opens the next)"
        if rest:
            said += f"; {rest} with errors or decided already left as they were"
        self._status_bar_message(said)
        return list(done)

    def mark_draft(self) -> None:
        ids = self.selected_ids()
        if ids:
            self._run("Return to draft", lambda: self.curator.set_status(ids, "draft"))

    def edit_comment(self) -> None:
        """C: type in the comment field (the puzzle's comment to start from, if any); it goes
        with the next decision. Enter or Escape give the keys back to the list."""
        cp = self.current()
        if cp is None:
            return
        if not self.comment_field.text() and cp.comment:
            self.comment_field.setText(cp.comment)
        self.comment_field.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.comment_field.selectAll()

    def regenerate(self) -> None:
        cp = self.current()
        if cp is None:
            return
        if not isinstance(cp.puzzle, StimulusPuzzle):
            self._run("Cannot regenerate", lambda: self.curator.regenerate(cp.id))
            return
        if self.redraw_job is not None:
            self._status_bar_message("An item is being drawn anew; wait for it.")
            return
        # a stimulus item is drawn anew by its family (a second or two for a 3D one) on a
        # worker thread; the board stays usable and stores the new item when it comes
        request = self._run("Cannot regenerate", lambda: self.curator.item_redraw(cp.id))
        if request is None:
            return
        self._status_bar_message(f"Drawing item {cp.id} anew…", 0)

        def drawn(new: Any) -> None:
            done = self._run("Cannot regenerate", lambda: self.curator.apply_redraw(request, new))
            if done is not None:
                self._status_bar_message(f"Item {cp.id} drawn anew (Ctrl+Z undoes it).", 8000)

        def failed(message: str) -> None:
            self.show_error("Cannot regenerate", StudioError(message))

        def ended() -> None:
            self.redraw_job = None
            self.redraw_done.emit()

        self.redraw_job = ThreadJob.call(
            draw_item_again, request, succeeded=drawn, failed=failed, ended=ended, parent=self
        )

    def replace_foil(self) -> ReplaceFoilDialog | ReplaceItemFoilDialog | None:
        cp = self.current()
        if cp is None:
            return None
        if not cp.puzzle.foils:
            return None
        if isinstance(cp.puzzle, StimulusPuzzle):
            return self._replace_item_foil(cp)
        at_fault = [e.answer for e in self.sheet.evidence if e.answer != cp.puzzle.key]
        selected = self.evidence_list.currentRow()
        foil = (
            self.sheet.evidence[selected].answer
            if 0 <= selected < len(self.sheet.evidence)
            and self.sheet.evidence[selected].answer != cp.puzzle.key
            else (at_fault[0] if at_fault else cp.puzzle.foils[0])
        )
        dlg = ReplaceFoilDialog(
            cp,
            foil,
            lambda i: self.curator.replacement_candidates(cp.id, i),
            self._thumbnail,
            self,
        )
        self.replace_dialog = dlg

        def accepted() -> None:
            glyph = dlg.chosen()
            if glyph is not None:
                self._run(
                    "Cannot replace the foil",
                    lambda: self.curator.replace_foil(cp.id, dlg.foil(), glyph),
                )

        self._open_foil_dialog(dlg, accepted)
        return dlg

    def _replace_item_foil(self, cp: CuratedPuzzle) -> ReplaceItemFoilDialog | None:
        """F on a stimulus item: its family's own candidates for a foil, vetted and drawn on
        the render thread (:class:`ReplaceItemFoilDialog`); Replace stores the chosen one as
        one undo step."""
        item = cp.puzzle
        assert isinstance(item, StimulusPuzzle)
        why = self.curator.item_foils_refusal(cp)
        if why is not None:
            self.show_error("Cannot replace the foil", StudioError(why))
            return None
        dlg = ReplaceItemFoilDialog(
            item,
            item.foils[0],
            lambda i: self.curator.item_foil_request(cp.id, i),
            self.item_sheet.service,
            self.item_sheet.sheets,
            parent=self,
        )
        self.replace_dialog = dlg

        def accepted() -> None:
            choice = dlg.chosen()
            if choice is not None:
                # the candidate was vetted when proposed: storing it is one transaction
                self._run(
                    "Cannot replace the foil",
                    lambda: self.curator.replace_foil(cp.id, choice.answer, choice),
                )

        self._open_foil_dialog(dlg, accepted)
        return dlg

    def _open_foil_dialog(
        self, dlg: ReplaceFoilDialog | ReplaceItemFoilDialog, accepted: Callable[[], None]
    ) -> None:
        def finished(_code: int) -> None:
            self.replace_dialog = None
            dlg.deleteLater()

        dlg.accepted.connect(accepted)
        dlg.finished.connect(finished)
        dlg.open()

    # ---- generation ------------------------------------------------------------------------------
    def generate_split(self) -> GenerateSplitDialog | None:
        if self.job is not None:
            self._status_bar_message("A split is being generated; wait or cancel it.")
            return None
        concepts = [c.id for c in self.studio.schema.concepts]
        dlg = GenerateSplitDialog(concepts, self)
        dlg.accepted.connect(lambda: self.start_generation(dlg.request()))
        dlg.finished.connect(dlg.deleteLater)
        dlg.open()
        return dlg

    def start_generation(self, request: GenerationRequest) -> GenerationJob:
        """Generate and vet in the background with a progress dialog; import when done (any
        family: one request, one job)."""
        name = request.name or request.family
        job = GenerationJob(self.studio, request, self.curator.render_lock, self)
        if self.progress_dialog is not None:
            self.progress_dialog.deleteLater()  # the previous one, long closed
        progress = QProgressDialog("Preparing…", "Cancel", 0, 0, self)
        progress.setObjectName("generationProgress")
        progress.setWindowTitle(f"Generating “{name}”")
        progress.setWindowModality(Qt.WindowModality.WindowModal)
        progress.setMinimumDuration(0)
        progress.setAutoClose(False)
        progress.setAutoReset(False)
        progress.setMinimumWidth(420)
        progress.canceled.connect(job.cancel)

        def on_progress(stage: str, done: int, total: int) -> None:
            # setValue of a modal dialog processes events: the job may finish in there
            if self.job is not job or job.cancel_requested:
                return
            progress.setLabelText(stage)
            progress.setMaximum(max(total, 0))
            progress.setValue(min(done, total) if total else 0)

        def finish() -> None:
            self.job = None
            progress.close()
            self.activateWindow()  # back from the modal dialog: the puzzle keys work at once
            self.table.setFocus()
            if self._stats_dirty:
                self._schedule_stats()

        def on_success(made: GeneratedSet) -> None:
            finish()
            if made.annotations is not None:
                self.curator.adopt_annotations(made.annotations)
            prepared = made.prepared
            ids = self._run(
                "Cannot import the split", lambda: self.curator.import_prepared(prepared)
            )
            if ids:
                flagged = sum(self.curator.flagged_share(sid)[0] for sid in ids)
                done = (
                    f"Generated “{prepared.name}”: {prepared.total} puzzles, {flagged} flagged "
                    "for review"
                )
                if request.out_dir is not None:
                    done += f"; the split folder is {request.out_dir}"
                self.last_generation_message = self._say_coverage(done, made.coverage)
                self._status_bar_message(self.last_generation_message, 20000)
            self.generation_done.emit(bool(ids))

        def on_cancel() -> None:
            finish()
            self._status_bar_message("Generation cancelled; nothing was imported.")
            self.generation_done.emit(False)

        def on_fail(message: str) -> None:
            finish()
            self.show_error("Generation failed", StudioError(message))
            self.generation_done.emit(False)

        job.progressed.connect(on_progress)
        job.succeeded.connect(on_success)
        job.cancelled.connect(on_cancel)
        job.failed.connect(on_fail)
        self.job = job
        self.progress_dialog = progress
        progress.show()
        job.start()
        return job

    def _say_coverage(self, done: str, covered: Sequence[Mapping[str, Any]]) -> str:
        """The generation's result with what the split covers: the first coverage warning, if
        any, goes into the message (the statistics panel lists them all at its top)."""
        warnings = [w for cov in covered for w in cov["warnings"]]
        if not warnings:
            tuples = [len(cov["parts"]["test"]["tuples"]) for cov in covered]
            return f"{done}; test covers {', '.join(map(str, tuples))} (rule, concept) tuples"
        more = f" (+{len(warnings) - 1} more: see Coverage in the statistics)"
        return f"{done}. Warning: {warnings[0]}{more if len(warnings) > 1 else ''}"

    def shutdown(self) -> None:
        """Stop the background work (the window is closing)."""
        self._closed = True
        if self._prefetch_job is not None:
            self._prefetch_job.cancel()
        self._stats_timer.stop()
        if self.job is not None:
            self.job.cancel()
        self.loader.stop()
        self.item_sheet.shutdown()


def _ignored(_error: BaseException) -> None:
    """An error of work that only prepares (a warm-up, a prefetch): what it would have made is
    made again when it is needed, and says then what is wrong."""


def _values(rows: Sequence[Sequence[str]]) -> str:
    return " | ".join(", ".join(v or "present" for v in r) for r in rows) if rows else "—"
