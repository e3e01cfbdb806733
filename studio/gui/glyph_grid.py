"""The virtualised glyph grid: a list model over the project's glyphs, a delegate that paints
thumbnails and tag state, and a loader thread that fills thumbnails in without stalling the GUI.

The model keeps only plain Python lists; filtering builds a list of row indices. Thumbnails are
decoded (or rendered, then cached on disk) by one background thread (a
:class:`~studio.gui.jobs.ServiceThread`, newest request first); the GUI thread takes the
images finished within ``PACE_MS``, at most ``BATCH`` at a time, so a scroll through 20,000
glyphs never blocks it for long. Images are kept in a bounded LRU.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from PySide6.QtCore import (
    QAbstractListModel,
    QEvent,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRect,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFont, QImage, QKeyEvent, QPainter, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QPushButton,
    QStackedWidget,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from studio.core.keys import GlyphKey
from studio.families.glyph_pmp.split import glyph_side
from studio.generate.params import SplitParams
from studio.glyphs.unicode import block, char_name, matches
from studio.gui.jobs import ServiceThread
from studio.store.project import GlyphRecord

if TYPE_CHECKING:
    from studio.glyphs.render import GlyphRenderer

KEY_ROLE = Qt.ItemDataRole.UserRole + 1
STATE_ROLE = Qt.ItemDataRole.UserRole + 2
RECORD_ROLE = Qt.ItemDataRole.UserRole + 3
IMAGE_ROLE = Qt.ItemDataRole.UserRole + 4

THUMB = 80
CELL = QSize(92, 108)
BATCH = 64
#: milliseconds finished thumbnails gather before the GUI thread takes them (a batch)
PACE_MS = 25
LRU_SIZE = 6000

# tag state of a glyph for the current concept
STATE_VALUE = "value"  # carries the selected value
STATE_OTHER = "other"  # carries another value of the concept
STATE_NONE = "none"  # not yet tagged for this concept

#: The tag-state filter's choices: short, so the chosen one reads whole in the filter bar at
#: 1280 px ("Not yet tagged for…" was cut: issue 28); each says in full what it shows as its
#: tooltip (TAG_FILTER_TIPS). "This" is the concept or value chosen in the tree.
TAG_FILTERS = (
    ("all", "All glyphs"),
    ("untagged_concept", "Not yet tagged"),
    ("tagged_value", "With this value"),
    ("tagged_concept", "With this concept"),
    ("untagged", "No tags at all"),
)
TAG_FILTER_TIPS = {
    "all": "Every glyph the other filters let through",
    "untagged_concept": "Glyphs not yet tagged for the concept chosen in the tree (U: the next)",
    "tagged_value": "Glyphs tagged with the value chosen in the tree",
    "tagged_concept": "Glyphs tagged with any value of the concept chosen in the tree",
    "untagged": "Glyphs with no tag of any concept",
}

#: The hold-out the grid's "held-out glyphs" filter shows: the default split's.
HOLDOUT_FRACTION = SplitParams().holdout_fraction


@functools.lru_cache(maxsize=1 << 18)
def _held_out(key: GlyphKey) -> bool:
    """A glyph's side is its own and never changes: hashed once, not at every keystroke of the
    search box while the held-out filter is on."""
    return glyph_side(key, HOLDOUT_FRACTION) == "eval"


@dataclass
class GridFilter:
    font: str = ""
    block: str = ""
    text: str = ""
    tag_state: str = "all"
    #: hide the placeholders of glyphs without an image: no installed font covers them (most
    #: are private-use code points of fonts that are not installed) or the font draws nothing
    hide_missing: bool = True
    #: only these glyphs (the user's assignment), or None for all
    keys: frozenset[GlyphKey] | None = None
    #: only the glyphs a split's disjoint hold-out keeps for val and test
    held_out: bool = False


@dataclass(frozen=True)
class FontSource:
    """Where the loader finds a font's file and its cache key."""

    path: Path
    index: int
    sha256: str


@dataclass
class _Request:
    row_key: GlyphKey
    font: FontSource
    codepoint: int


class ThumbnailLoader(QObject):
    """Decodes cached renders (or renders and caches) on one background thread.

    ``ready`` is emitted on the GUI thread with the keys whose images arrived.
    """

    ready = Signal(list)

    def __init__(self, cache, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._cache = cache
        # a glyph asked for again moves to the front; what scrolled away long ago is forgotten
        self._service = ServiceThread(
            "thumbnails",
            newest_first=True,
            limit=4 * BATCH * 8,
            batch=BATCH,
            pace_ms=PACE_MS,
            parent=self,
        )
        self._service.finished.connect(self._arrived)
        self._service.delivered.connect(self._announce)
        self._arrived_keys: list[GlyphKey] = []
        #: the font renderers, made and used on the thumbnail thread only
        self._renderers: dict[tuple[Path, int], GlyphRenderer] = {}
        self.images: collections.OrderedDict[GlyphKey, QImage | None] = collections.OrderedDict()

    def request(self, key: GlyphKey, font: FontSource, codepoint: int) -> None:
        self._service.submit(self._load, _Request(key, font, codepoint), key=key)

    def forget(self, keys: Iterable[GlyphKey] | None = None) -> None:
        if keys is None:
            self.images.clear()
        else:
            for k in keys:
                self.images.pop(k, None)

    def stop(self) -> None:
        self._service.shutdown(timeout=2)

    def _load(self, req: _Request) -> tuple[GlyphKey, QImage | None]:
        """On the thumbnail thread: the glyph's key and its image (None: nothing to show)."""
        try:
            return req.row_key, self._image(req)
        except Exception:  # a broken font shows as a missing image, the grid goes on
            return req.row_key, None

    def _image(self, req: _Request) -> QImage | None:
        arr = self._cache.get(req.font.sha256, req.codepoint, THUMB)
        if arr is None:
            from studio.glyphs.render import GlyphRenderer

            r = self._renderers.get((req.font.path, req.font.index))
            if r is None:
                r = self._renderers[(req.font.path, req.font.index)] = GlyphRenderer(
                    req.font.path, req.font.index
                )
            if r.missing_reason(req.codepoint, THUMB):
                return None
            arr = r.render(req.codepoint, THUMB)
            self._cache.put(req.font.sha256, req.codepoint, THUMB, arr)
        return to_qimage(arr)

    def _arrived(self, _seq: int, answer: tuple[GlyphKey, QImage | None]) -> None:
        key, img = answer
        self.images[key] = img
        self.images.move_to_end(key)
        self._arrived_keys.append(key)

    def _announce(self) -> None:
        """A batch is in: trim the LRU, say which keys arrived."""
        while len(self.images) > LRU_SIZE:
            self.images.popitem(last=False)
        keys, self._arrived_keys = self._arrived_keys, []
        if keys:
            self.ready.emit(keys)


def to_qimage(arr: np.ndarray) -> QImage:
    """A grey QImage that owns a copy of ``arr`` (h×w uint8).

    It is filled through ``bits()`` rather than built on the array's buffer: PySide6's
    buffer constructor, used from the thumbnail thread, corrupted reference counts
    ("Fatal Python error: none_dealloc") under the grid benchmark's scrolling.
    """
    arr = np.asarray(arr, dtype=np.uint8)
    h, w = arr.shape
    img = QImage(w, h, QImage.Format.Format_Grayscale8)
    view = np.frombuffer(img.bits(), dtype=np.uint8).reshape(h, img.bytesPerLine())
    view[:, :w] = arr
    return img


class GlyphGridModel(QAbstractListModel):
    """Rows are the glyphs that pass the filter; ``glyphs`` holds every glyph of the project."""

    filtered = Signal()

    def __init__(
        self, loader: ThumbnailLoader | None = None, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.glyphs: list[GlyphRecord] = []
        self.tags: dict[GlyphKey, set[tuple[str, str]]] = {}
        self.fonts: dict[str, FontSource] = {}
        self._rows: list[int] = []
        self._row_of_key: dict[GlyphKey, int] = {}
        self._names: list[str] | None = None
        self._blocks: list[str] = []
        self.filter = GridFilter()
        self.concept: str | None = None
        self.value: str | None = None
        self.loader = loader
        if loader is not None:
            loader.ready.connect(self._images_ready)

    # ---- data ----------------------------------------------------------------------------
    def set_glyphs(
        self,
        glyphs: Sequence[GlyphRecord],
        tags: dict[GlyphKey, set[tuple[str, str]]],
        fonts: dict[str, FontSource],
    ) -> None:
        self.beginResetModel()
        self.glyphs = list(glyphs)
        self.tags = tags
        self.fonts = fonts
        self._names = None
        self._blocks = [block(g.key.codepoint) for g in self.glyphs]
        self._rows = self._compute_rows()
        self._reindex()
        self.endResetModel()
        if self.loader is not None:
            self.loader.forget()
        self.filtered.emit()

    def blocks_present(self) -> list[str]:
        return sorted(set(self._blocks))

    def fonts_present(self) -> list[str]:
        return sorted({g.key.font for g in self.glyphs})

    def update_tags(self, key: GlyphKey, tags: set[tuple[str, str]]) -> None:
        """New tags of one glyph; repaints it (it stays shown until the filter is re-applied,
        so a glyph does not jump away under the annotator's cursor)."""
        if tags:
            self.tags[key] = tags
        else:
            self.tags.pop(key, None)
        row = self._row_of_key.get(key)
        if row is not None:
            idx = self.index(row)
            self.dataChanged.emit(idx, idx)

    def set_current(self, concept: str | None, value: str | None) -> None:
        self.concept, self.value = concept, value
        if self.filter.tag_state != "all":
            self.apply_filter()
        elif self._rows:
            self.dataChanged.emit(self.index(0), self.index(len(self._rows) - 1))

    def set_filter(self, f: GridFilter) -> None:
        self.filter = f
        self.apply_filter()

    def apply_filter(self) -> None:
        self.beginResetModel()
        self._rows = self._compute_rows()
        self._reindex()
        self.endResetModel()
        self.filtered.emit()

    def _reindex(self) -> None:
        self._row_of_key = {self.glyphs[i].key: r for r, i in enumerate(self._rows)}

    def names(self) -> list[str]:
        if self._names is None:
            self._names = [char_name(g.key.codepoint) for g in self.glyphs]
        return self._names

    def state(self, key: GlyphKey) -> str:
        if self.concept is None:
            return STATE_NONE
        tags = self.tags.get(key, ())
        if self.value is not None and (self.concept, self.value) in tags:
            return STATE_VALUE
        if any(c == self.concept for c, _ in tags):
            return STATE_OTHER
        return STATE_NONE

    def _compute_rows(self) -> list[int]:
        f = self.filter
        text = f.text.strip()
        names = self.names() if text else None
        rows = []
        for i, g in enumerate(self.glyphs):
            if f.keys is not None and g.key not in f.keys:
                continue
            if f.font and g.key.font != f.font:
                continue
            if f.block and self._blocks[i] != f.block:
                continue
            if f.hide_missing and g.status in ("missing", "uncovered"):
                continue
            if text and not (
                matches(g.key.codepoint, text)
                or (names is not None and text.lower() in names[i].lower())
            ):
                continue
            if f.tag_state != "all" and not self._passes_tag_state(g.key):
                continue
            if f.held_out and not _held_out(g.key):
                continue
            rows.append(i)
        return rows

    def _passes_tag_state(self, key: GlyphKey) -> bool:
        tags = self.tags.get(key, set())
        st = self.filter.tag_state
        if st == "untagged":
            return not tags
        if self.concept is None:
            return True
        in_concept = any(c == self.concept for c, _ in tags)
        if st == "untagged_concept":
            return not in_concept
        if st == "tagged_concept":
            return in_concept
        if st == "tagged_value":
            return self.value is not None and (self.concept, self.value) in tags
        return True

    # ---- Qt model API ----------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def record(self, row: int) -> GlyphRecord:
        return self.glyphs[self._rows[row]]

    def row_of(self, key: GlyphKey) -> int | None:
        return self._row_of_key.get(key)

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ):
        if not index.isValid():
            return None
        g = self.glyphs[self._rows[index.row()]]
        if role == Qt.ItemDataRole.DisplayRole:
            return f"U+{g.key.codepoint:04X}"
        if role == KEY_ROLE:
            return g.key
        if role == RECORD_ROLE:
            return g
        if role == STATE_ROLE:
            return self.state(g.key)
        if role == IMAGE_ROLE:
            return self.image(g)
        if role == Qt.ItemDataRole.ToolTipRole:
            sub = (
                f"\n* {g.key.font} is not installed here: drawn with {g.render_font}, "
                "a font that covers this code point"
                if g.substituted
                else ""
            )
            status = f"\n{g.status}: {g.reason}" if g.reason else ""
            return f"{g.key}\n{char_name(g.key.codepoint)}{sub}{status}"
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"{g.key} {char_name(g.key.codepoint)}"
        return None

    def image(self, g: GlyphRecord) -> QImage | None:
        if self.loader is None or g.status == "uncovered" or g.render_font is None:
            return None
        imgs = self.loader.images
        if g.key in imgs:
            return imgs[g.key]
        src = self.fonts.get(g.render_font)
        if src is not None:
            self.loader.request(g.key, src, g.key.codepoint)
        return None

    def _images_ready(self, keys: list[GlyphKey]) -> None:
        rows = [r for r in (self._row_of_key.get(k) for k in keys) if r is not None]
        if rows:
            self.dataChanged.emit(self.index(min(rows)), self.index(max(rows)), [IMAGE_ROLE])

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable


class GlyphDelegate(QStyledItemDelegate):
    """Paints a thumbnail, the code point and the tag state for the current concept."""

    COLOURS: ClassVar[dict[str, QColor]] = {
        STATE_VALUE: QColor("#2e7d32"),
        STATE_OTHER: QColor("#9e9e9e"),
    }

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        return CELL

    def paint(
        self, p: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        r: QRect = option.rect.adjusted(2, 2, -2, -2)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        p.save()
        p.fillRect(r, option.palette.highlight() if selected else QColor("white"))
        state = index.data(STATE_ROLE)
        colour = self.COLOURS.get(state)
        if colour is not None:
            p.setPen(QPen(colour, 3))
            p.drawRect(r.adjusted(1, 1, -1, -1))
        img: QImage | None = index.data(IMAGE_ROLE)
        img_rect = QRect(r.x() + (r.width() - THUMB) // 2, r.y() + 4, THUMB, THUMB)
        g: GlyphRecord = index.data(RECORD_ROLE)
        if img is not None:
            p.drawImage(img_rect, img)
        else:
            p.setPen(QColor("#b0b0b0"))
            f = QFont(p.font())
            f.setPointSizeF(f.pointSizeF() * 0.85)
            p.setFont(f)
            text = {"uncovered": "no font", "missing": g.reason or "missing"}.get(g.status, "…")
            p.drawText(img_rect, Qt.AlignmentFlag.AlignCenter, text)
        p.setPen(option.palette.highlightedText().color() if selected else QColor("#555"))
        f = QFont(p.font())
        f.setPointSizeF(max(6.0, f.pointSizeF() * 0.8))
        p.setFont(f)
        label = index.data(Qt.ItemDataRole.DisplayRole)
        if g.substituted:
            label += " *"
        p.drawText(
            QRect(r.x(), r.bottom() - 18, r.width(), 16), Qt.AlignmentFlag.AlignCenter, label
        )
        if state == STATE_VALUE:
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(colour)
            p.drawEllipse(QRect(r.right() - 14, r.y() + 4, 10, 10))
        p.restore()


class GlyphGrid(QListView):
    """Icon-mode list view with uniform cells: only visible cells are ever painted."""

    activated_keys = Signal(list)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setViewMode(QListView.ViewMode.IconMode)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setMovement(QListView.Movement.Static)
        self.setUniformItemSizes(True)
        self.setGridSize(CELL)
        self.setSpacing(0)
        self.setLayoutMode(QListView.LayoutMode.Batched)
        self.setBatchSize(2000)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setSelectionRectVisible(True)
        self.setItemDelegate(GlyphDelegate(self))
        self.setWordWrap(False)
        self.setObjectName("glyphGrid")

    def selected_keys(self) -> list[GlyphKey]:
        rows = sorted(i.row() for i in self.selectionModel().selectedIndexes())
        model = self.model()
        return [model.index(r).data(KEY_ROLE) for r in rows]

    def select_keys(self, keys: Iterable[GlyphKey]) -> None:
        from PySide6.QtCore import QItemSelection

        model: GlyphGridModel = self.model()  # type: ignore[assignment]
        sel = QItemSelection()
        for k in keys:
            r = model.row_of(k)
            if r is not None:
                sel.select(model.index(r), model.index(r))
        self.selectionModel().select(sel, QItemSelectionModel.SelectionFlag.ClearAndSelect)

    # ---- keyboard: stepping through the glyphs shown ---------------------------------------
    def go_to_row(self, row: int) -> None:
        """Make ``row`` the current glyph, the only one selected, and scroll it into view."""
        idx = self.model().index(row, 0)
        self.selectionModel().setCurrentIndex(idx, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        self.scrollTo(idx)

    def step_glyph(self, delta: int) -> str | None:
        """Go ``delta`` glyphs on from the current one (J/K). Returns a sentence for the status
        bar when it cannot move, else None."""
        n = self.model().rowCount()
        if n == 0:
            return _NOTHING_SHOWN
        cur = self._current_selected()
        target = cur.row() + delta if cur.isValid() else self._entry_row(delta)
        if not 0 <= target < n:
            return "This is the last glyph shown" if delta > 0 else "This is the first glyph shown"
        self.go_to_row(target)
        return None

    def step_untagged(self, delta: int) -> str | None:
        """Go to the next (``delta`` > 0) or previous glyph shown with no tag for the current
        concept, wrapping around once (U / Shift+U). Returns a sentence for the status bar
        when it did not simply move on (nothing to go to, or it wrapped), else None."""
        model: GlyphGridModel = self.model()  # type: ignore[assignment]
        if model.concept is None:
            return "No concept chosen: pick one on the left to find glyphs not yet tagged for it"
        n = model.rowCount()
        if n == 0:
            return _NOTHING_SHOWN
        cur = self._current_selected()
        step = 1 if delta > 0 else -1
        start = cur.row() if cur.isValid() else self._entry_row(delta) - step
        for i in range(1, n + 1):
            row = start + step * i
            wrapped = not 0 <= row < n
            row %= n
            if model.state(model.record(row).key) == STATE_NONE:
                if cur.isValid() and row == cur.row():
                    break  # only the current glyph is left: it is where we are
                self.go_to_row(row)
                if wrapped and cur.isValid():
                    where = "first" if delta > 0 else "last"
                    return f"Wrapped around to the {where} glyph not tagged for '{model.concept}'"
                return None
        if cur.isValid() and model.state(model.record(cur.row()).key) == STATE_NONE:
            return f"This is the only glyph shown not yet tagged for '{model.concept}'"
        return f"Every glyph shown is tagged for '{model.concept}'"

    def _current_selected(self) -> QModelIndex:
        """The current glyph when it is also selected; else an invalid index (Qt makes the
        first cell current when the grid takes focus, without selecting it: that one has not
        been visited yet)."""
        cur = self.currentIndex()
        if cur.isValid() and self.selectionModel().isSelected(cur):
            return cur
        return QModelIndex()

    def _entry_row(self, delta: int) -> int:
        """Where stepping starts when no glyph is current: the unvisited current cell, else
        the first (or, stepping back, the last) glyph."""
        cur = self.currentIndex()
        if cur.isValid():
            return cur.row()
        return 0 if delta > 0 else self.model().rowCount() - 1

    def enter_from_search(self) -> None:
        """Focus the grid with its first glyph current and selected (Down/Enter in search)."""
        self.setFocus(Qt.FocusReason.TabFocusReason)
        if self.model().rowCount():
            self.go_to_row(0)


_NOTHING_SHOWN = "No glyph shown: change the filters, or add a font (File ▸ Add font…)"

#: What the grid's marks mean, shown under it.
LEGEND = (
    "<span style='color:#2e7d32'>■</span> tagged with the chosen value &nbsp; "
    "<span style='color:#9e9e9e'>■</span> another value of this concept &nbsp; "
    "<b>*</b> drawn with a stand-in font (its own is not installed)"
)


class SearchKeys(QObject):
    """Down, Return or Enter in the search field move into the grid, first match selected.

    ``before`` runs first (the window applies a pending, debounced filter there)."""

    def __init__(
        self,
        search: QLineEdit,
        grid: GlyphGrid,
        before: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(search)
        self._grid = grid
        self._before = before
        search.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Return, Qt.Key.Key_Enter)
        ):
            if self._before is not None:
                self._before()
            self._grid.enter_from_search()
            return True
        return super().eventFilter(watched, event)


class GridPanel(QWidget):
    """The grid with its legend, or, while the project has no glyphs, what to do next.

    ``add_font_requested`` and ``import_requested`` are the empty page's two buttons."""

    add_font_requested = Signal()
    import_requested = Signal()

    def __init__(self, model: GlyphGridModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.grid = GlyphGrid()
        self.grid.setModel(model)
        self.legend = QLabel(LEGEND, objectName="gridLegend", wordWrap=True)
        self.legend.setStyleSheet("color: #555; padding: 2px 4px;")
        self.legend.setToolTip(
            "* : the project names the glyph in a font that is not installed on this machine; "
            "its image is drawn with an installed font that covers the same code point "
            "(the inspector names it)"
        )
        self.empty = QWidget(objectName="emptyProject")
        title = QLabel("<h2>This project has no glyphs yet</h2>")
        text = QLabel(
            "Add a font to tag its glyphs — pick an installed font, or a font file, and the "
            "Unicode blocks you want.<br>Or import annotations (a CSV of "
            "concept,value,codepoint,font, or UA's folder layout) to bring glyphs with their "
            "tags.",
            wordWrap=True,
        )
        text.setFixedWidth(480)  # a word-wrapped label centred in a layout needs a width
        text.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.add_font_button = QPushButton("Add a font…", objectName="emptyAddFont")
        self.import_button = QPushButton("Import annotations…", objectName="emptyImport")
        self.add_font_button.clicked.connect(self.add_font_requested)
        self.import_button.clicked.connect(self.import_requested)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.add_font_button)
        buttons.addWidget(self.import_button)
        buttons.addStretch(1)
        page = QVBoxLayout(self.empty)
        page.addStretch(1)
        page.addWidget(title, alignment=Qt.AlignmentFlag.AlignHCenter)
        centred = QHBoxLayout()  # (an alignment flag would cut the wrapped label's height)
        centred.addStretch(1)
        centred.addWidget(text)
        centred.addStretch(1)
        page.addLayout(centred)
        page.addLayout(buttons)
        page.addStretch(2)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.grid)
        self.stack.addWidget(self.empty)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.stack, 1)
        lay.addWidget(self.legend)
        model.filtered.connect(self._refresh)
        self._refresh()

    def is_empty(self) -> bool:
        """True while the empty page is shown (the project has no glyphs)."""
        return self.stack.currentWidget() is self.empty

    def _refresh(self) -> None:
        empty = not self.model.glyphs
        self.stack.setCurrentWidget(self.empty if empty else self.grid)
        self.legend.setVisible(not empty)
