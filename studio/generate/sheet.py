"""A puzzle as one picture, like UA's figures: the context rows above, the answers below.

The sheet is what a person is shown, so the key is *not* marked. Layouts:

- ``two-row`` / ``matrix-3x3``: the context rows as a grid; the missing last frame of the last
  row is a box with a "?";
- ``sequence``: one row of frames and the "?" box;
- ``analogy``: ``A  A′`` over ``B  ?`` (the context rows as given, "?" after the last);
- ``odd-one-out``: one row of the members, numbered (they are the answers).

Below a separator line the answers stand in a row, numbered 1…n under them. A glyph whose image
is missing (``image_of`` returns None) is drawn as a crossed box. Images are the renderer's
(0 = ink, 255 = paper); one of another size is scaled to the cell with nearest neighbours.

The output depends only on the inputs: :func:`sheet_png` writes a PNG with no time or text
chunks, so the same puzzle gives the same bytes.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle

ImageOf = Callable[[GlyphKey], "np.ndarray | None"]
Box = tuple[int, int, int, int]  # left, top, right (exclusive), bottom (exclusive)

PAPER = 255
INK = 0
FRAME = 150  # grey of the panel frames
SEPARATOR = 90


@dataclass(frozen=True)
class SheetLayout:
    """Where everything of a sheet goes, in pixels: the GUI draws evidence on these boxes."""

    size: tuple[int, int]  # width, height
    context: tuple[tuple[Box, ...], ...]  # row by row, as puzzle.context
    question: Box | None  # the "?" box (None for odd-one-out)
    answers: tuple[Box, ...]
    numbers: tuple[Box, ...]  # where each answer's number is written
    separator: int | None  # y of the separator line


def sheet_layout(puzzle: Puzzle, cell: int = 80, gap: int | None = None) -> SheetLayout:
    """The geometry of ``render_sheet`` for this puzzle."""
    gap = max(4, cell // 8) if gap is None else gap
    margin = gap
    label_h = max(12, cell // 4)
    odd = puzzle.layout == "odd-one-out"
    rows = [] if odd else [len(r) for r in puzzle.context]
    if rows:
        rows[-1] += 1  # the "?" box
    else:
        rows = [] if odd else [1]
    n_ans = len(puzzle.answers)

    def width(k: int) -> int:
        return k * cell + max(0, k - 1) * gap

    inner = max([width(k) for k in rows] + [width(n_ans)])
    w = inner + 2 * margin
    y = margin
    context: list[tuple[Box, ...]] = []
    question: Box | None = None
    for r, k in enumerate(rows):
        x0 = margin + (inner - width(k)) // 2
        boxes = [
            (x0 + i * (cell + gap), y, x0 + i * (cell + gap) + cell, y + cell) for i in range(k)
        ]
        if r == len(rows) - 1:
            question = boxes.pop()
        context.append(tuple(boxes))
        y += cell + gap
    separator = None
    if rows:
        separator = y
        y += gap + 1
    x0 = margin + (inner - width(n_ans)) // 2
    answers = tuple(
        (x0 + i * (cell + gap), y, x0 + i * (cell + gap) + cell, y + cell) for i in range(n_ans)
    )
    numbers = tuple((a[0], a[3] + 2, a[2], a[3] + 2 + label_h) for a in answers)
    h = y + cell + 2 + label_h + margin
    if puzzle.layout != "odd-one-out" and puzzle.context:
        context = context[: len(puzzle.context)]
    return SheetLayout(
        size=(w, h),
        context=tuple(context),
        question=question,
        answers=answers,
        numbers=numbers,
        separator=separator,
    )


_fonts = threading.local()  # a FreeType face must not be shared between threads


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    cache = getattr(_fonts, "by_size", None)
    if cache is None:
        cache = _fonts.by_size = {}
    font = cache.get(size)
    if font is None:
        font = cache[size] = ImageFont.load_default(size=size)
    return font


def _frame(draw: ImageDraw.ImageDraw, box: Box) -> None:
    draw.rectangle((box[0] - 1, box[1] - 1, box[2], box[3]), outline=FRAME)


def _centred_text(draw: ImageDraw.ImageDraw, box: Box, text: str, size: int) -> None:
    font = _font(size)
    x0, y0, x1, y1 = draw.textbbox((0, 0), text, font=font)
    cx = (box[0] + box[2] - (x1 - x0)) // 2 - x0
    cy = (box[1] + box[3] - (y1 - y0)) // 2 - y0
    draw.text((cx, cy), text, fill=INK, font=font)


def _paste(sheet: Image.Image, draw: ImageDraw.ImageDraw, box: Box, img: np.ndarray | None) -> None:
    cell = box[2] - box[0]
    if img is None:
        draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), outline=INK)
        draw.line((box[0], box[1], box[2] - 1, box[3] - 1), fill=INK)
        draw.line((box[0], box[3] - 1, box[2] - 1, box[1]), fill=INK)
        return
    arr = np.asarray(img, dtype=np.uint8)
    tile = Image.fromarray(arr, mode="L") if arr.ndim == 2 else Image.fromarray(arr).convert("L")
    if tile.size != (cell, cell):
        tile = tile.resize((cell, cell), Image.Resampling.NEAREST)
    sheet.paste(tile, (box[0], box[1]))


def render_sheet(
    puzzle: Puzzle, image_of: ImageOf, cell: int = 80, gap: int | None = None
) -> Image.Image:
    """The puzzle as a greyscale (``L``) image; the key is not marked."""
    layout = sheet_layout(puzzle, cell, gap)
    sheet = Image.new("L", layout.size, PAPER)
    draw = ImageDraw.Draw(sheet)
    for row_keys, row_boxes in zip(puzzle.context, layout.context, strict=False):
        for key, box in zip(row_keys, row_boxes, strict=False):
            _frame(draw, box)
            _paste(sheet, draw, box, image_of(key))
    if layout.question is not None:
        _frame(draw, layout.question)
        _centred_text(draw, layout.question, "?", max(10, cell * 3 // 5))
    if layout.separator is not None:
        draw.line((0, layout.separator, layout.size[0] - 1, layout.separator), fill=SEPARATOR)
    for i, (key, box) in enumerate(zip(puzzle.answers, layout.answers, strict=True)):
        _frame(draw, box)
        _paste(sheet, draw, box, image_of(key))
        _centred_text(draw, layout.numbers[i], str(i + 1), max(9, cell // 5))
    return sheet


def sheet_png(puzzle: Puzzle, image_of: ImageOf, cell: int = 80, gap: int | None = None) -> bytes:
    """``render_sheet`` as PNG bytes: no time or text chunks, so equal inputs give equal bytes."""
    buf = io.BytesIO()
    render_sheet(puzzle, image_of, cell, gap).save(buf, "PNG")
    return buf.getvalue()


__all__ = ["SheetLayout", "render_sheet", "sheet_layout", "sheet_png"]
