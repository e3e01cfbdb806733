"""The curator's view of one puzzle: the sheet as solvers see it (context rows above, answers
below, numbered, with the geometry of :func:`studio.generate.sheet.sheet_layout`), plus what
only a curator should see — the key outlined in green, and the evidence of each finding drawn
on the frames: the offending foil outlined in red (an image-feature warning in orange), the
context frames taking part outlined dashed, each with the values it carries for the finding's
concept (and, for a warning, the feature numbers), and one caption line per finding below.

Images come from a :class:`~studio.gui.glyph_grid.ThumbnailLoader` (80×80 renders from the
render cache, loaded on its thread); a frame whose image has not arrived yet shows "…".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QImage,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QResizeEvent,
)
from PySide6.QtWidgets import QSizePolicy, QWidget

from studio.core.keys import GlyphKey
from studio.curation import CuratedPuzzle, Evidence, FramePos
from studio.generate.sheet import Box, SheetLayout, sheet_layout

CELL = 80
GAP = 36  # room under each frame for the values it carries (two short lines)
MARGIN = 12
LINE = 17  # caption line height
#: What the view leaves unpainted of the layout's own margin (GAP on every side): at the sides
#: all but the half gap the values under a frame reach into, and 6 px; at the top all but 10 px
#: for the outlines. The sheet needs 52 px less width and 26 px less height (issue 28: at
#: 1280×800 its pane was too narrow for the list and the statistics beside it).
TRIM_X = GAP - (GAP // 2 - 2) - 6
TRIM_Y = GAP - 10

ERROR = QColor("#d32f2f")
WARNING = QColor("#ef6c00")
KEY = QColor("#2e7d32")
FRAME = QColor("#9e9e9e")
TEXT = QColor("#333333")

ImageOf = Callable[[GlyphKey], "QImage | None"]


class SheetView(QWidget):
    """Paints one :class:`CuratedPuzzle` and its evidence. ``frame_clicked`` gives the
    position of a clicked frame (("answer", i, 0) or ("context", r, c))."""

    frame_clicked = Signal(object)

    def __init__(self, image_of: ImageOf, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sheetView")
        self._image_of = image_of
        self.puzzle: CuratedPuzzle | None = None
        self.evidence: list[Evidence] = []
        self.selected = 0  # which evidence has its frames highlighted
        #: answer index -> how many people chose it in the set's pilots (issue 29)
        self.choices: dict[int, int] = {}
        self.layout_: SheetLayout | None = None
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAutoFillBackground(True)
        pal = self.palette()
        pal.setColor(self.backgroundRole(), QColor("white"))
        self.setPalette(pal)

    # ---- state -------------------------------------------------------------------------------
    def set_puzzle(self, puzzle: CuratedPuzzle | None, evidence: Sequence[Evidence] = ()) -> None:
        self.puzzle = puzzle
        self.evidence = list(evidence)
        self.selected = 0
        self.layout_ = sheet_layout(puzzle.puzzle, CELL, GAP) if puzzle is not None else None
        self._fit_height()
        self.updateGeometry()
        self.update()

    def set_choices(self, choices: dict[int, int] | None) -> None:
        """People's choices of each answer in the set's pilots: a bar under each answer."""
        self.choices = dict(choices or {})
        self.update()

    def choice_texts(self) -> list[str]:
        """What the bars say, per answer ("3 of 5"); empty without pilot answers."""
        if self.puzzle is None or not self.choices:
            return []
        n = sum(self.choices.values())
        return [f"{self.choices.get(i, 0)} of {n}" for i in range(len(self.puzzle.puzzle.answers))]

    def select_evidence(self, index: int) -> None:
        self.selected = index
        self._fit_height()  # the bold caption may wrap differently
        self.update()

    def keys_shown(self) -> list[GlyphKey]:
        return list(self.puzzle.puzzle.all_keys()) if self.puzzle is not None else []

    def captions(self) -> list[str]:
        """The evidence lines drawn under the sheet (what a test reads)."""
        return [e.caption for e in self.evidence]

    # ---- geometry ----------------------------------------------------------------------------
    def _origin(self) -> tuple[int, int]:
        """Where the layout's top left corner goes: its empty margin trimmed (TRIM_X,
        TRIM_Y), the sheet centred in a wider view."""
        if self.layout_ is None:
            return (0, 0)
        w = self.layout_.size[0]
        return (max(-TRIM_X, (self.width() - w) // 2), MARGIN - TRIM_Y)

    def natural_width(self) -> int:
        """The width the sheet needs whole (a two-row sheet's while none is shown)."""
        if self.layout_ is None:
            return 500 - 2 * TRIM_X
        return self.layout_.size[0] - 2 * TRIM_X

    def frame_rect(self, pos: FramePos) -> QRect | None:
        """Where a frame is drawn in widget coordinates."""
        if self.layout_ is None:
            return None
        kind, a, b = pos
        try:
            box = self.layout_.answers[a] if kind == "answer" else self.layout_.context[a][b]
        except IndexError:
            return None
        return self._rect(box)

    def _rect(self, box: Box) -> QRect:
        ox, oy = self._origin()
        return QRect(ox + box[0], oy + box[1], box[2] - box[0], box[3] - box[1])

    def _sheet_bottom(self) -> int:
        assert self.layout_ is not None
        numbers = max((b[3] for b in self.layout_.numbers), default=self.layout_.size[1])
        return self._origin()[1] + numbers + 2 * LINE + 4  # + the values under the answers

    def sizeHint(self) -> QSize:
        if self.layout_ is None:
            return QSize(480, 360)
        h = self.layout_.size[1] - TRIM_Y
        return QSize(self.natural_width(), h + 2 * MARGIN + LINE * (len(self.evidence) * 2 + 2))

    def minimumSizeHint(self) -> QSize:
        """As wide as the sheet: a narrower pane scrolls to its last answers instead of
        cutting them off."""
        return QSize(self.natural_width(), 240)

    # ---- painting ----------------------------------------------------------------------------
    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        if self.puzzle is None or self.layout_ is None:
            p.setPen(QColor("#888"))
            p.drawText(
                self.rect(), Qt.AlignmentFlag.AlignCenter, "Select a puzzle to see its sheet."
            )
            return
        puzzle = self.puzzle.puzzle
        lay = self.layout_
        small = self._small_font()
        # frames
        for keys, boxes in zip(puzzle.context, lay.context, strict=False):
            for key, box in zip(keys, boxes, strict=False):
                self._frame(p, self._rect(box), key)
        if lay.question is not None:
            q = self._rect(lay.question)
            p.setPen(QPen(FRAME, 1))
            p.drawRect(q.adjusted(-1, -1, 0, 0))
            f = QFont(self.font())
            f.setPointSize(28)
            p.setFont(f)
            p.setPen(TEXT)
            p.drawText(q, Qt.AlignmentFlag.AlignCenter, "?")
        if lay.separator is not None:
            ox, oy = self._origin()
            p.setPen(QPen(QColor("#777"), 1))
            y = oy + lay.separator
            p.drawLine(ox + TRIM_X, y, ox + lay.size[0] - TRIM_X, y)
        for i, (key, box) in enumerate(zip(puzzle.answers, lay.answers, strict=True)):
            rect = self._rect(box)
            self._frame(p, rect, key)
            num = self._rect(lay.numbers[i])
            f = QFont(self.font())
            f.setBold(i == puzzle.key)
            p.setFont(f)
            p.setPen(KEY if i == puzzle.key else TEXT)
            number = f"{i + 1}" + (" key" if i == puzzle.key else "")
            p.drawText(num, Qt.AlignmentFlag.AlignCenter, number)
            if self.choices:
                self._choice_bar(p, rect, i, i == puzzle.key, small)
        # the key, for curators
        key_rect = self.frame_rect(("answer", puzzle.key, 0))
        if key_rect is not None:
            p.setPen(QPen(KEY, 3))
            p.drawRect(key_rect.adjusted(-3, -3, 2, 2))
        # evidence
        self._draw_evidence(p, small)
        p.end()

    def _choice_bar(self, p: QPainter, frame: QRect, i: int, key: bool, small: QFont) -> None:
        """How many people chose answer ``i``: a bar just above the frame, in the gap under the
        separator (green for the key, red for a foil), and "k of n" in it."""
        n = sum(self.choices.values())
        k = self.choices.get(i, 0)
        top = QRect(frame.left(), frame.top() - 19, frame.width(), 14)
        p.fillRect(top, QColor("#eeeeee"))
        share = k / n if n else 0.0
        p.fillRect(
            QRect(top.left(), top.top(), round(top.width() * share), top.height()),
            QColor("#a7d8b0") if key else QColor("#f4b4ac"),
        )
        p.setFont(small)
        p.setPen(TEXT)
        p.drawText(top, Qt.AlignmentFlag.AlignCenter, f"{k} of {n}")

    def _frame(self, p: QPainter, rect: QRect, key: GlyphKey) -> None:
        p.setPen(QPen(FRAME, 1))
        p.drawRect(rect.adjusted(-1, -1, 0, 0))
        img = self._image_of(key)
        if img is not None:
            p.drawImage(rect, img)
        else:
            p.setPen(QColor("#b0b0b0"))
            p.drawText(rect, Qt.AlignmentFlag.AlignCenter, "…")

    def _small_font(self) -> QFont:
        small = QFont(self.font())
        small.setPointSizeF(max(7.0, self.font().pointSizeF() * 0.85))
        return small

    def _text_blocks(self, small: QFont) -> list[tuple[QRect, QFont, QColor, str]]:
        """Where the legend and the captions go under the sheet (painting and sizing agree)."""
        if self.layout_ is None:
            return []
        y = self._sheet_bottom() + 6
        width = max(200, self.width() - 2 * MARGIN)
        legend = (
            "green: the key (curators only) · red: a foil completing a rule · orange: an "
            "image-feature warning · dashed: the context rows of the highlighted finding"
            if self.evidence
            else "green: the key (curators only) · no findings"
        )
        items = [(small, QColor("#777"), legend, 8)]
        for i, e in enumerate(self.evidence):
            f = QFont(self.font())
            f.setBold(i == self.selected)
            text = ("▶ " if i == self.selected else "• ") + e.caption
            items.append((f, ERROR if e.severity == "error" else WARNING, text, 3))
        out = []
        for font, colour, text, after in items:
            h = (
                QFontMetrics(font)
                .boundingRect(QRect(MARGIN, y, width, 1000), int(Qt.TextFlag.TextWordWrap), text)
                .height()
            )
            out.append((QRect(MARGIN, y, width, h), font, colour, text))
            y += h + after
        return out

    def content_height(self) -> int:
        blocks = self._text_blocks(self._small_font())
        return (blocks[-1][0].bottom() + MARGIN) if blocks else 240

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_height()

    def _fit_height(self) -> None:
        """Grow to hold every caption, so the scroll area scrolls instead of clipping."""
        h = self.content_height()
        if self.minimumHeight() != h:
            self.setMinimumHeight(h)

    def _draw_evidence(self, p: QPainter, small: QFont) -> None:
        assert self.puzzle is not None
        # every foil at fault gets an outline, errors over warnings
        for e in sorted(self.evidence, key=lambda e: e.severity == "error"):
            rect = self.frame_rect(("answer", e.answer, 0))
            if rect is not None and e.finding.check != "key-fails":
                colour = ERROR if e.severity == "error" else WARNING
                p.setPen(QPen(colour, 2))
                p.drawRect(rect.adjusted(-5, -5, 4, 4))
        if 0 <= self.selected < len(self.evidence):
            e = self.evidence[self.selected]
            colour = ERROR if e.severity == "error" else WARNING
            fm = QFontMetrics(small)
            p.setFont(small)
            line_h = fm.height()
            for pos, text in e.frame_values.items():
                rect = self.frame_rect(pos)
                if rect is None:
                    continue
                if pos[0] == "context":
                    pen = QPen(colour, 2, Qt.PenStyle.DashLine)
                    p.setPen(pen)
                    p.drawRect(rect.adjusted(-3, -3, 2, 2))
                    below = rect.bottom() + 3
                else:
                    if e.finding.check != "key-fails":
                        p.setPen(QPen(colour, 4))
                        p.drawRect(rect.adjusted(-5, -5, 4, 4))
                    below = rect.bottom() + 4 + LINE + 2  # under the answer's number
                p.setPen(colour)
                # the values, then (for a warning) the feature numbers on a second line
                value, _, numbers = text.partition(" (")
                lines = [value] + ([f"({numbers}"] if numbers else [])
                for k, line in enumerate(lines):
                    label = QRect(
                        rect.x() - GAP // 2 + 2, below + k * line_h, rect.width() + GAP - 4, line_h
                    )
                    p.drawText(
                        label,
                        Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
                        fm.elidedText(line, Qt.TextElideMode.ElideRight, label.width()),
                    )
        # the legend, then one caption per finding (the highlighted one in bold)
        for rect, font, colour, text in self._text_blocks(small):
            p.setFont(font)
            p.setPen(colour)
            p.drawText(rect, int(Qt.TextFlag.TextWordWrap), text)

    # ---- mouse -------------------------------------------------------------------------------
    def frame_at(self, x: int, y: int) -> FramePos | None:
        if self.puzzle is None or self.layout_ is None:
            return None
        for i in range(len(self.layout_.answers)):
            r = self.frame_rect(("answer", i, 0))
            if r is not None and r.contains(x, y):
                return ("answer", i, 0)
        for ri, row in enumerate(self.layout_.context):
            for ci in range(len(row)):
                r = self.frame_rect(("context", ri, ci))
                if r is not None and r.contains(x, y):
                    return ("context", ri, ci)
        return None

    def mousePressEvent(self, event: QMouseEvent) -> None:
        pos = self.frame_at(int(event.position().x()), int(event.position().y()))
        if pos is not None:
            self.frame_clicked.emit(pos)
        super().mousePressEvent(event)
