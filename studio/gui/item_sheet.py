"""The board's sheet for a stimulus item (issue 27: curate every family like a glyph set).

A KiVA trial, a polycube, a composition or a cube-net item is shown as its family draws it
(its sheet, the options lettered), with its questions — the right option marked — the key in
words, and every check its vetting ran with the measure behind it, so a curator judges the
distractors with the same evidence the generator used. The sheet is drawn from the stored
record on the one render thread (an EGL context belongs to its thread) and kept
(:class:`studio.stimuli.pictures.ItemSheets`); an answer for an item no longer shown is
dropped.
"""

from __future__ import annotations

from typing import Any

from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from studio.core.errors import StudioError
from studio.gui.preview.common import (
    FittedImage,
    RenderService,
    _checks_tree,
    fill_checks,
    pil_to_pixmap,
)
from studio.gui.preview.tasks import key_text, questions_html
from studio.stimuli.items import StimulusPuzzle
from studio.stimuli.pictures import ItemSheets


class ItemSheetView(QWidget):
    """A stimulus item's sheet, questions, key and checks."""

    def __init__(self, sheets: ItemSheets, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.sheets = sheets
        self.service = RenderService(self)
        self.service.finished.connect(self._drawn)
        self.service.failed.connect(self._failed)
        self._latest = 0
        self._note = ""  # what is wrong with the item's record, said beside its sheet
        self.item: StimulusPuzzle | None = None
        #: sheets drawn this session, by item id and record digest (the board re-shows them)
        self._shown: dict[str, Image.Image] = {}
        self.picture = FittedImage("itemSheet")
        self.picture.setMinimumSize(240, 160)
        self.state = QLabel(objectName="itemSheetState", wordWrap=True)
        self.state.setTextFormat(Qt.TextFormat.PlainText)  # record text is never markup
        self.key_label = QLabel(objectName="itemKey")
        self.key_label.setTextFormat(Qt.TextFormat.PlainText)
        self.questions = QLabel(objectName="itemQuestions", wordWrap=True)
        self.questions.setTextFormat(Qt.TextFormat.RichText)
        self.checks = _checks_tree("itemChecks")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.picture, 3)
        lay.addWidget(self.state)
        lay.addWidget(self.key_label)
        lay.addWidget(self.questions)
        lay.addWidget(self.checks, 2)

    def show_item(self, item: StimulusPuzzle | None) -> None:
        self.item = item
        if item is None:
            self.picture.clear()
            self.picture.original = None
            self.state.setText("")
            self.key_label.setText("")
            self.questions.setText("")
            self.checks.clear()
            return
        record = dict(item.record)
        self.key_label.setText(key_text(item.family, record))
        self._note = ""
        try:
            self.questions.setText(questions_html(record))
        except (TypeError, ValueError, AttributeError, KeyError) as e:  # edited in the store
            self.questions.setText("")
            self._note = f"Its questions cannot be read ({type(e).__name__}: {e})."
        try:
            fill_checks(self.checks, item.verdict())
        except StudioError as e:  # a record damaged in the store: said, the rest still shown
            self.checks.clear()
            self._note = f"{self._note} {e}".strip()
        cached = self._shown.get(self._cache_key(item))
        if cached is not None:
            self._set_sheet(cached)
            return
        self.picture.clear()
        self.picture.original = None
        self.state.setText(
            " ".join(x for x in (f"Drawing {item.id} ({item.family})…", self._note) if x)
        )
        # latest wins: the sheet of an item scrolled past, still waiting, is not drawn
        self._latest = self.service.submit(self.sheets.sheet, record, key="sheet")

    @staticmethod
    def _cache_key(item: StimulusPuzzle) -> str:
        from studio.stimuli.pictures import record_digest

        return f"{item.id}:{record_digest(item.record)}"

    def _drawn(self, seq: int, sheet: Any) -> None:
        if seq != self._latest or self.item is None:
            return  # an item no longer shown
        self._latest = -seq
        if len(self._shown) >= 64:
            self._shown.pop(next(iter(self._shown)))
        self._shown[self._cache_key(self.item)] = sheet
        self._set_sheet(sheet)

    def _failed(self, seq: int, message: str) -> None:
        if seq != self._latest:
            return
        self._latest = -seq
        last = message.strip().splitlines()[-1] if message.strip() else message
        self.state.setText(f"The item could not be drawn: {last}")

    def _set_sheet(self, sheet: Image.Image) -> None:
        self.state.setText(self._note)
        self.picture.set_image(pil_to_pixmap(sheet))

    def shutdown(self) -> None:
        self.service.shutdown()


__all__ = ["ItemSheetView"]
