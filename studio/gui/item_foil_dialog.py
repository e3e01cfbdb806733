"""Replace foil (F) on a stimulus item (issue 27): the item's family proposes other foils
its design could have drawn in that place, each shown as the family draws it.

The proposals (the family's ``foil_candidates``, every candidate vetted) and their pictures
are made on the board's one render thread (:class:`~studio.gui.preview.common.RenderService`:
an EGL context belongs to its thread; a KiVA candidate takes a few tenths of a second to vet
and draw), never on the GUI thread: the dialog opens at once with "Finding replacements…",
the candidates appear as soon as they are vetted, and each tile's picture fills in as it is
drawn — the current foil first, so the two can be compared. Choosing a candidate shows the
whole item with it in place. Arrow keys move, Enter or a double click replaces, Esc keeps
the item as it is. What the item cannot offer (KiVA's "no change" option, a design with no
other value there) is said in the dialog, in the family's words.

On first opening the dialog starts with the foil asked for and, when that one has no
replacement by design, moves on to the next foil that has (so F on a KiVA trial lands on its
sibling change, not on "no change"); choosing a foil in the combo asks for that one only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PIL import Image
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import StudioError
from studio.curation import ITEM_FOIL_CANDIDATES, ItemReplacement, item_replacements
from studio.gui.preview.common import FittedImage, RenderService, pil_to_pixmap
from studio.gui.preview.tasks import key_text
from studio.gui.widgets import replace_buttons
from studio.stimuli.items import StimulusPuzzle
from studio.stimuli.pictures import ItemSheets

#: The side of a candidate's tile, in pixels
TILE = 120
#: A tile's cell in the row of candidates (the picture and its caption)
CELL = QSize(TILE + 24, TILE + 40)
CHOICE_ROLE = Qt.ItemDataRole.UserRole + 7

Request = Callable[[int], tuple[StimulusPuzzle, int]]


def _propose(
    item: StimulusPuzzle, asks: Sequence[tuple[int, int]], limit: int
) -> tuple[int, list[ItemReplacement], list[str]]:
    """On the render thread: the first foil of ``asks`` ((answer, seed), in order) that has
    replacements, and why each one before it had none."""
    why: list[str] = []
    for answer, seed in asks:
        try:
            return answer, item_replacements(item, answer, seed, limit), why
        except StudioError as e:
            why.append(str(e))
    return asks[-1][0] if asks else -1, [], why


def _draw(record: Any, answer: str, sheets: ItemSheets | None) -> tuple[Image.Image, Image.Image]:
    """On the render thread: one answer's picture and the item's sheet, as its family draws
    them; the sheet is kept for the board (it is shown at once once the foil is replaced)."""
    from studio.stimuli.split import render_record

    images, sheet = render_record(record)
    if sheets is not None:
        sheets.put(record, sheet)
    return images[answer], sheet


class ReplaceItemFoilDialog(QDialog):
    """The foil to replace (a combo of the item's foils), the current foil's picture, the
    candidates as tiles of their pictures, the whole item with the chosen one, a note, and
    Replace / Cancel. :meth:`chosen` is the candidate picked (an
    :class:`~studio.curation.ItemReplacement`), :meth:`foil` the answer it replaces."""

    def __init__(
        self,
        item: StimulusPuzzle,
        foil: int,
        request: Request,
        service: RenderService,
        sheets: ItemSheets | None = None,
        limit: int = ITEM_FOIL_CANDIDATES,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("replaceItemFoilDialog")
        self.setWindowTitle(f"Replace a foil of item {item.id}")
        self.resize(1060, 660)
        self.item = item
        self._request = request
        self._service = service
        self._sheets = sheets
        self._limit = limit
        self._closed = False
        #: render jobs in flight: sequence number → what the answer fills (-1: the proposal,
        #: -2: the current foil's picture, k ≥ 0: candidate k's tile)
        self._jobs: dict[int, int] = {}
        self.replacements: list[ItemReplacement] = []
        self._sheets_drawn: dict[int, Image.Image] = {}
        self.current_sheet: Image.Image | None = None
        service.finished.connect(self._finished)
        service.failed.connect(self._failed)

        self.foil_combo = QComboBox(objectName="foilCombo")
        for i in item.foils:
            self.foil_combo.addItem(f"Answer {i + 1}: {item.answer_words(i)}", i)
        self.foil_combo.setCurrentIndex(max(0, self.foil_combo.findData(foil)))
        self.foil_combo.currentIndexChanged.connect(lambda _i: self._ask([self.foil()]))

        self.now_picture = QLabel(objectName="currentFoil")
        self.now_picture.setFixedSize(TILE, TILE)
        self.now_picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.now_picture.setStyleSheet("border: 1px solid #bbb; background: white")
        now_box = QVBoxLayout()
        now_box.setSpacing(2)
        now_box.addWidget(self.now_picture)
        now_box.addWidget(QLabel("now", alignment=Qt.AlignmentFlag.AlignHCenter))
        now_box.addStretch(1)

        # one row of tiles beside the current foil (scrolled sideways when it is longer), so
        # the whole item with the chosen one keeps the rest of the height
        self.list = QListWidget(objectName="replacementList")
        self.list.setViewMode(QListView.ViewMode.IconMode)
        self.list.setFlow(QListView.Flow.LeftToRight)
        self.list.setWrapping(False)
        self.list.setIconSize(QSize(TILE, TILE))
        self.list.setGridSize(CELL)
        self.list.setMovement(QListView.Movement.Static)
        self.list.setWordWrap(True)
        scroll = self.list.horizontalScrollBar().sizeHint().height()
        self.list.setFixedHeight(CELL.height() + scroll + 2 * self.list.frameWidth())
        self.list.itemSelectionChanged.connect(self._selection_changed)
        self.list.itemDoubleClicked.connect(lambda _item: self.accept())

        self.preview = FittedImage("replacementSheet")
        self.preview.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.preview.setMinimumSize(320, 160)
        # the whole item's picture does not mark the key: say which it is (it stays)
        self.key_label = QLabel(objectName="replacementKey")
        self.key_label.setTextFormat(Qt.TextFormat.PlainText)
        said = key_text(item.family, dict(item.record))  # "" for a record it cannot read
        if said:
            self.key_label.setText(f"{said} — the key stays; only the chosen foil changes")
        self.note = QLabel(objectName="replacementNote", wordWrap=True)
        self.note.setTextFormat(Qt.TextFormat.PlainText)  # a family's reason is never markup

        self.buttons = replace_buttons(self)

        form = QHBoxLayout()
        form.addWidget(QLabel("Foil"))
        form.addWidget(self.foil_combo, 1)
        tiles = QHBoxLayout()
        tiles.addLayout(now_box)
        tiles.addWidget(self.list, 1)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addLayout(tiles)
        lay.addWidget(self.preview, 1)
        lay.addWidget(self.key_label)
        lay.addWidget(self.note)
        lay.addWidget(self.buttons)
        self.finished.connect(self._close)
        # the foil asked for first, then the others in order: the first that has any
        self._ask([foil] + [i for i in item.foils if i != foil])

    # ---- what the caller reads -------------------------------------------------------------------
    def foil(self) -> int:
        return int(self.foil_combo.currentData())

    def chosen(self) -> ItemReplacement | None:
        items = self.list.selectedItems()
        if not items:
            return None
        return self.replacements[int(items[0].data(CHOICE_ROLE))]

    @property
    def busy(self) -> bool:
        """Whether proposals or pictures are still being made."""
        return bool(self._jobs)

    # ---- asking and drawing ----------------------------------------------------------------------
    def _ask(self, foils: Sequence[int]) -> None:
        """Ask the render thread for the replacements of the first of ``foils`` that has any."""
        self._jobs.clear()  # answers to an earlier request are dropped when they come
        self.list.clear()
        self.replacements = []
        self._sheets_drawn.clear()
        self.now_picture.clear()
        self.preview.clear()
        self.preview.original = None
        asks: list[tuple[int, int]] = []
        why: list[str] = []
        for i in foils:
            try:
                asks.append((i, self._request(i)[1]))
            except StudioError as e:
                why.append(str(e))
        self._update_ok()
        if not asks:
            self.note.setText(" ".join(why) or "This item has no foil to replace.")
            return
        self.note.setText(f"Finding replacements for answer {asks[0][0] + 1}…")
        self._submit(-1, _propose, self.item, asks, self._limit)

    def _submit(self, role: int, fn: Callable[..., Any], *args: Any) -> None:
        seq = self._service.submit(fn, *args)
        if seq:  # 0: the board is closing
            self._jobs[seq] = role

    def _finished(self, seq: int, result: Any) -> None:
        role = self._jobs.pop(seq, None)
        if role is None or self._closed:
            return
        if role == -1:
            self._proposed(*result)
        elif role == -2:
            picture, sheet = result
            self.now_picture.setPixmap(_tile(picture))
            self.current_sheet = sheet
            if not self.list.selectedItems():
                self.preview.set_image(pil_to_pixmap(sheet))
        else:
            picture, sheet = result
            self._sheets_drawn[role] = sheet
            tile = self.list.item(role)
            if tile is not None:
                tile.setIcon(_icon(picture))
            if self.chosen() is self.replacements[role]:
                self.preview.set_image(pil_to_pixmap(sheet))
        if not self._jobs and self.replacements:
            self.note.setText(self._summary())

    def _failed(self, seq: int, message: str) -> None:
        role = self._jobs.pop(seq, None)
        if role is None or self._closed:
            return
        last = message.strip().splitlines()[-1] if message.strip() else message
        self.note.setText(f"Could not draw the replacements: {last}")

    def _proposed(self, answer: int, replacements: list[ItemReplacement], why: list[str]) -> None:
        if answer >= 0 and answer != self.foil():
            self.foil_combo.blockSignals(True)
            self.foil_combo.setCurrentIndex(max(0, self.foil_combo.findData(answer)))
            self.foil_combo.blockSignals(False)
        self.replacements = replacements
        if not replacements:
            self.note.setText(" ".join(why) or "No replacement was found.")
            self._update_ok()
            return
        name = self.item.answers[answer]
        self._submit(-2, _draw, dict(self.item.record), name, self._sheets)
        for k, r in enumerate(replacements):
            tile = QListWidgetItem(f"{k + 1}. {r.new}")
            tile.setData(CHOICE_ROLE, k)
            tile.setToolTip(
                f"Answer {answer + 1} would show: {r.new}\n"
                f"now: {r.old}\n"
                + ("valid by every check of its family" if r.verdict.valid else "flagged")
                + (f", {len(r.verdict.warnings)} warnings" if r.verdict.warnings else "")
            )
            self.list.addItem(tile)
            self._submit(k, _draw, dict(r.record), name, self._sheets)
        self.note.setText(
            f"{len(replacements)} replacements for answer {answer + 1}; drawing them…"
            + (f" ({' '.join(why)})" if why else "")
        )
        # the first candidate is chosen: Enter takes it
        self.list.setCurrentRow(0)
        self.list.item(0).setSelected(True)
        self.list.setFocus()
        self._update_ok()

    def _summary(self) -> str:
        answer = self.foil()
        return (
            f"{len(self.replacements)} replacements for answer {answer + 1}, each drawn the way "
            f"the {self.item.family} generator draws this foil and valid by every check of its "
            "family; the key and the other answers stay. Enter replaces, Esc keeps the item."
        )

    def _selection_changed(self) -> None:
        items = self.list.selectedItems()
        if items:
            sheet = self._sheets_drawn.get(int(items[0].data(CHOICE_ROLE)))
            if sheet is not None:
                self.preview.set_image(pil_to_pixmap(sheet))
            else:
                self.preview.clear()
                self.preview.original = None
        self._update_ok()

    def _update_ok(self) -> None:
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(
            self.chosen() is not None
        )

    def _close(self, _code: int) -> None:
        self._closed = True
        self._jobs.clear()


def _icon(picture: Image.Image) -> QIcon:
    """A tile's picture, the same when chosen (no selection tint over what is judged)."""
    pixmap = _tile(picture)
    icon = QIcon(pixmap)
    icon.addPixmap(pixmap, QIcon.Mode.Selected)
    return icon


def _tile(picture: Image.Image) -> QPixmap:
    return pil_to_pixmap(picture).scaled(
        TILE,
        TILE,
        Qt.AspectRatioMode.KeepAspectRatio,
        Qt.TransformationMode.SmoothTransformation,
    )


__all__ = ["ReplaceItemFoilDialog"]
