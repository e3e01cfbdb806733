"""Replace foil (F) on a glyph puzzle: the annotations' valid replacements for one foil,
with thumbnails, best first (split out of curator_board.py, issue 27). A stimulus item's
foils are replaced in :mod:`studio.gui.item_foil_dialog`."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSize
from PySide6.QtGui import QIcon, QImage, QPixmap
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
from studio.core.keys import GlyphKey
from studio.curation import CuratedPuzzle, Replacement
from studio.gui.board_list import PUZZLE_ROLE
from studio.gui.sheet_view import WARNING
from studio.gui.widgets import replace_buttons


class ReplaceFoilDialog(QDialog):
    """Lists valid replacements for one foil, with thumbnails; choose one and press Replace."""

    def __init__(
        self,
        cp: CuratedPuzzle,
        foil: int,
        candidates: Callable[[int], list[Replacement]],
        thumbnail: Callable[[GlyphKey], QImage | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("replaceFoilDialog")
        self.setWindowTitle(f"Replace a foil of puzzle {cp.id}")
        self.resize(620, 460)
        self._candidates = candidates
        self._thumbnail = thumbnail
        self.cp = cp
        self.replacements: list[Replacement] = []

        self.foil_combo = QComboBox(objectName="foilCombo")
        for i in cp.puzzle.foils:
            bad = [f for f in cp.problems if f.answer == i]
            mark = " — " + bad[0].message().split(" ", 2)[2] if bad else ""
            self.foil_combo.addItem(f"Answer {i + 1} ({cp.puzzle.answers[i]}){mark}", i)
        self.foil_combo.setCurrentIndex(max(0, self.foil_combo.findData(foil)))
        self.foil_combo.currentIndexChanged.connect(lambda _i: self._fill())

        self.list = QListWidget(objectName="replacementList")
        self.list.setViewMode(QListView.ViewMode.IconMode)
        self.list.setIconSize(QSize(80, 80))
        self.list.setGridSize(QSize(124, 128))
        self.list.setResizeMode(QListView.ResizeMode.Adjust)
        self.list.setMovement(QListView.Movement.Static)
        self.list.setWordWrap(True)
        self.list.itemSelectionChanged.connect(self._update_ok)
        self.list.itemDoubleClicked.connect(lambda _item: self.accept())
        self.note = QLabel(objectName="replacementNote", wordWrap=True)

        self.buttons = replace_buttons(self)

        form = QHBoxLayout()
        form.addWidget(QLabel("Foil"))
        form.addWidget(self.foil_combo, 1)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.list, 1)
        lay.addWidget(self.note)
        lay.addWidget(self.buttons)
        self._fill()

    def foil(self) -> int:
        return int(self.foil_combo.currentData())

    def chosen(self) -> GlyphKey | None:
        items = self.list.selectedItems()
        return items[0].data(PUZZLE_ROLE) if items else None

    def _fill(self) -> None:
        self.list.clear()
        try:
            self.replacements = self._candidates(self.foil())
        except StudioError as e:
            self.replacements = []
            self.note.setText(str(e))
        for r in self.replacements:
            values = ", ".join(v or "present" for v in r.values)
            text = ("⚠ " if r.warned else "") + f"U+{r.glyph.codepoint:04X}\n{values}"
            item = QListWidgetItem(text)
            item.setData(PUZZLE_ROLE, r.glyph)
            item.setToolTip(
                f"{r.glyph}\n{self.cp.puzzle.concept} = {values}"
                + ("\nthe image features warn about this one" if r.warned else "")
            )
            if r.warned:
                item.setForeground(WARNING)
            self.list.addItem(item)
        if not self.replacements:
            self.note.setText(
                "No glyph of this concept can replace this foil without breaking the puzzle; "
                "regenerate the puzzle or reject it."
            )
        else:
            self.note.setText(
                f"{len(self.replacements)} valid replacements, best first (values the other "
                "foils lack first; ⚠ = image features warn)."
            )
        if self.list.count():
            # the best candidate (the ranking's first) is chosen: Enter takes it
            self.list.setCurrentRow(0)
            self.list.item(0).setSelected(True)
            self.list.setFocus()
        self.refresh_thumbnails()
        self._update_ok()

    def refresh_thumbnails(self) -> None:
        for i in range(self.list.count()):
            item = self.list.item(i)
            if item.icon().isNull():
                img = self._thumbnail(item.data(PUZZLE_ROLE))
                if img is not None:
                    item.setIcon(QIcon(QPixmap.fromImage(img)))

    def _update_ok(self) -> None:
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(
            self.chosen() is not None
        )
