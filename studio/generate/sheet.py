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

**Many sheets.** :class:`SheetPainter` gives :func:`sheet_png`'s bytes for a split's thousands of
sheets at a fraction of the CPU: a split uses the same few layouts over and over, so each layout's
blank sheet (frames, "?", separator, numbers) is drawn once by :func:`render_sheet` itself, and a
sheet is that array with the glyph tiles copied in. Its PNG is Pillow's, byte for byte: the same
row filters chosen the same way (Pillow's adaptive choice among none, up, sub and Paeth, the
first of the smallest sum of absolute signed bytes), where each tile's filtered rows, which
depend only on the tile and the frame around it, are computed once per glyph; then the same
deflate (level 6, ``Z_FILTERED``, window 15, memory level 9) and the same chunks. A layout the
shortcut cannot reproduce exactly (text or frames over a tile, tiles touching, a sheet over
64 KiB compressed) is drawn and encoded by Pillow as before.
"""

from __future__ import annotations

import io
import struct
import threading
import zlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from studio.core.keys import GlyphKey

ImageOf = Callable[[GlyphKey], "np.ndarray | None"]


class SheetPuzzle(Protocol):
    """What a sheet is drawn from: a :class:`~studio.core.puzzle.Puzzle`, or anything with its
    layout, context rows and answers (glyph keys, or whatever ``image_of`` takes)."""

    @property
    def layout(self) -> str: ...

    @property
    def context(self) -> Sequence[Sequence[Any]]: ...

    @property
    def answers(self) -> Sequence[Any]: ...


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


def sheet_layout(puzzle: SheetPuzzle, cell: int = 80, gap: int | None = None) -> SheetLayout:
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
    puzzle: SheetPuzzle,
    image_of: Callable[[Any], np.ndarray | None],
    cell: int = 80,
    gap: int | None = None,
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


def sheet_png(
    puzzle: SheetPuzzle,
    image_of: Callable[[Any], np.ndarray | None],
    cell: int = 80,
    gap: int | None = None,
) -> bytes:
    """``render_sheet`` as PNG bytes: no time or text chunks, so equal inputs give equal bytes."""
    buf = io.BytesIO()
    render_sheet(puzzle, image_of, cell, gap).save(buf, "PNG")
    return buf.getvalue()


# ---- many sheets: sheet_png's bytes from per-layout templates and per-glyph tiles ----------------
#: Pillow's PNG filter bytes, in the order its encoder tries them (a later one wins only when
#: its sum is strictly smaller): none, up, sub, Paeth
_FILTER_BYTES = np.array([0, 2, 1, 4], np.uint8)
#: Pillow writes the deflated rows in pieces of this many bytes (one IDAT chunk each); a sheet
#: that compresses to more is left to Pillow
_PIL_BLOCK = 65536
#: a painter keeps the tiles and filtered tiles of at most this many glyphs (about 30 KiB
#: each at 80 px), then starts again: memory stays bounded however many glyphs a split uses
_CACHE_LIMIT = 2048


def png_filter_candidates(block: np.ndarray) -> np.ndarray:
    """The four PNG filters Pillow tries (none, up, sub, Paeth, in that order) applied to every
    row of ``block`` (``uint8``, 2-D, one byte per pixel), as ``(4, H, W)`` ``uint8``; the row
    above the first and the pixel left of the first column count as 0, as in a PNG."""
    a = block.astype(np.int16)
    up_ = np.zeros_like(a)
    up_[1:] = a[:-1]
    left = np.zeros_like(a)
    left[:, 1:] = a[:, :-1]
    corner = np.zeros_like(a)
    corner[1:, 1:] = a[:-1, :-1]
    pa = np.abs(up_ - corner)
    pb = np.abs(left - corner)
    pc = np.abs(left + up_ - 2 * corner)
    paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up_, corner))
    return np.stack([a, a - up_, a - left, a - paeth]).astype(np.uint8)


def _filter_costs(filtered: np.ndarray) -> np.ndarray:
    """Pillow's cost of each filtered row: the sum of the bytes' distances from 0 as signed
    bytes; ``(4, H, W)`` → ``(4, H)`` ``int64``."""
    signed = filtered.view(np.int8).astype(np.int16)
    costs: np.ndarray = np.abs(signed).sum(axis=2, dtype=np.int64)
    return costs


def png_rows(image: np.ndarray) -> bytes:
    """The filtered scanlines Pillow deflates for an ``L`` image (filter byte, then the row)."""
    cand = png_filter_candidates(image)
    choice = _filter_costs(cand).argmin(axis=0)
    out = np.empty((image.shape[0], image.shape[1] + 1), np.uint8)
    out[:, 0] = _FILTER_BYTES[choice]
    out[:, 1:] = cand[choice, np.arange(image.shape[0])]
    return out.tobytes()


def _deflate_png(rows: bytes | memoryview) -> bytes:
    """The zlib stream Pillow's PNG encoder makes of ``rows`` (its default settings)."""
    z = zlib.compressobj(6, zlib.DEFLATED, 15, 9, zlib.Z_FILTERED)
    return z.compress(rows) + z.flush()


def _tile_of(img: np.ndarray | None, cell: int) -> np.ndarray | None:
    """What :func:`render_sheet` pastes into a cell for ``img`` (None: a missing image)."""
    if img is None:
        return None
    arr = np.asarray(img, dtype=np.uint8)
    tile = Image.fromarray(arr, mode="L") if arr.ndim == 2 else Image.fromarray(arr).convert("L")
    if tile.size != (cell, cell):
        tile = tile.resize((cell, cell), Image.Resampling.NEAREST)
    return np.asarray(tile, dtype=np.uint8)


def _missing_tile(cell: int) -> np.ndarray:
    """The crossed box :func:`render_sheet` draws for a missing image, as a cell."""
    tile = Image.new("L", (cell, cell), PAPER)
    _paste(tile, ImageDraw.Draw(tile), (0, 0, cell, cell), None)
    return np.asarray(tile, dtype=np.uint8)


class _Template:
    """One sheet geometry: the blank sheet, its filtered rows, where the tiles go."""

    def __init__(self, puzzle: SheetPuzzle, cell: int, gap: int | None) -> None:
        self.cell = cell
        layout = sheet_layout(puzzle, cell, gap)
        w, h = layout.size
        paper = np.full((cell, cell), PAPER, np.uint8)
        ink = np.full((cell, cell), INK, np.uint8)
        blank = render_sheet(puzzle, lambda _k: paper, cell, gap)
        inked = np.asarray(render_sheet(puzzle, lambda _k: ink, cell, gap), dtype=np.uint8)
        self.base = np.asarray(blank, dtype=np.uint8).copy()
        # the boxes render_sheet fills, in its order (context rows as zipped, then answers)
        boxes = [
            box
            for row_keys, row_boxes in zip(puzzle.context, layout.context, strict=False)
            for _key, box in zip(row_keys, row_boxes, strict=False)
        ]
        boxes += list(layout.answers)
        self.context_rows = [len(b) for b in layout.context]
        self.boxes = boxes
        self.ok = self._exact(boxes, inked, w, h)
        buf = io.BytesIO()
        blank.save(buf, "PNG")
        png = buf.getvalue()
        at = png.find(b"IDAT") - 4
        self.head = png[:at]
        self.tail = b"".join(_chunks(png)[1]) if self.ok else b""
        if not self.ok:
            return
        filtered = png_filter_candidates(self.base)  # (4, H, W)
        costs = _filter_costs(filtered)
        for x0, y0, _x1, _y1 in boxes:  # the rows' costs outside every tile's reach
            ext = filtered[:, y0 : y0 + cell + 1, x0 : x0 + cell + 1]
            costs[:, y0 : y0 + cell + 1] -= _filter_costs(ext)
        self.costs = costs
        # row y filtered by filter i, its filter byte first, at row 4 * y + i: a sheet's
        # scanlines are one np.take of these
        lines = np.empty((h, 4, w + 1), np.uint8)
        lines[:, :, 0] = _FILTER_BYTES
        lines[:, :, 1:] = filtered.transpose(1, 0, 2)
        self.lines = lines.reshape(4 * h, w + 1)
        self.row_at = 4 * np.arange(h)
        self.reach_at = 4 * np.arange(cell + 1)  # the same for the rows of a tile's reach

    def _exact(self, boxes: list[Box], inked: np.ndarray, w: int, h: int) -> bool:
        """Can a sheet be this template with tiles copied in, and its filtered rows be the
        template's with each tile's reach replaced? Nothing drawn over a cell, every cell a
        full square inside the sheet with a pixel of frame or paper all round it, no tile's
        reach (its cell, the column right and the row below) touching another's."""
        c = self.cell
        owner = np.zeros((h, w), np.int32)
        for i, (x0, y0, x1, y1) in enumerate(boxes, start=1):
            if (x1 - x0, y1 - y0) != (c, c) or x0 < 1 or y0 < 1 or x1 >= w or y1 >= h:
                return False
            if (self.base[y0:y1, x0:x1] != PAPER).any() or (inked[y0:y1, x0:x1] != INK).any():
                return False
            ring = owner[y0 - 1 : y1 + 1, x0 - 1 : x1 + 1]
            if ring.any():
                return False
            ring[...] = i
        return True

    def tile_filtered(self, tile: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A tile's filtered reach (its cell plus the column right and the row below, as each
        filter makes them with the frame around it; row r filtered by filter i at 4 * r + i)
        and those rows' costs ``(4, cell + 1)``. Every cell of this
        template has the same surround (checked by the caller through ``surround``)."""
        x0, y0, x1, y1 = self.boxes[0]
        block = self.base[y0 - 1 : y1 + 1, x0 - 1 : x1 + 1].copy()
        block[1:-1, 1:-1] = tile
        cand = png_filter_candidates(block)[:, 1:, 1:]
        c = self.cell + 1
        return cand.transpose(1, 0, 2).reshape(4 * c, c).copy(), _filter_costs(cand)

    def surround(self, box: Box) -> bytes:
        x0, y0, x1, y1 = box
        ring = self.base[y0 - 1 : y1 + 1, x0 - 1 : x1 + 1].copy()
        ring[1:-1, 1:-1] = 0
        return ring.tobytes()


def _chunks(png: bytes) -> tuple[list[bytes], list[bytes]]:
    """A PNG's IDAT chunks and the chunks after them (each whole: length, type, data, CRC)."""
    idat: list[bytes] = []
    after: list[bytes] = []
    at = 8
    while at < len(png):
        (n,) = struct.unpack(">I", png[at : at + 4])
        chunk = png[at : at + 12 + n]
        if chunk[4:8] == b"IDAT":
            idat.append(chunk)
        elif idat:
            after.append(chunk)
        at += 12 + n
    return idat, after


def _idat(data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + b"IDAT"
        + data
        + struct.pack(">I", zlib.crc32(b"IDAT" + data) & 0xFFFFFFFF)
    )


class SheetPainter:
    """:func:`render_sheet` and :func:`sheet_png` for many puzzles: the same pixels and the same
    bytes, drawn from per-layout templates and per-glyph tiles (module docstring). Tiles are
    cached by glyph key (:data:`_CACHE_LIMIT` glyphs at most), so ``image_of`` must give the
    same image for a key every time. One painter per thread (it caches arrays it reuses);
    cheap to make, costly only per new layout and new glyph."""

    def __init__(
        self, image_of: Callable[[Any], np.ndarray | None], cell: int = 80, gap: int | None = None
    ) -> None:
        self.image_of = image_of
        self.cell = cell
        self.gap = gap
        self._templates: dict[Hashable, _Template] = {}
        self._tiles: dict[Hashable, np.ndarray] = {}
        self._filtered: dict[tuple[Hashable, Hashable], tuple[np.ndarray, np.ndarray]] = {}
        self._surround: dict[Hashable, bool] = {}

    def _template(self, puzzle: SheetPuzzle) -> tuple[Hashable, _Template]:
        shape = (puzzle.layout, tuple(len(r) for r in puzzle.context), len(puzzle.answers))
        t = self._templates.get(shape)
        if t is None:
            t = self._templates[shape] = _Template(puzzle, self.cell, self.gap)
            if t.ok:
                rings = {t.surround(b) for b in t.boxes}
                t.ok = len(rings) == 1  # one surround for every cell: tiles filter alike
            if t.ok:  # and this Pillow encodes as the shortcut assumes: checked once
                t.ok = self._png(shape, t, puzzle) == sheet_png(
                    puzzle, self.image_of, self.cell, self.gap
                )
        return shape, t

    def _tile(self, key: Hashable) -> np.ndarray:
        tile = self._tiles.get(key)
        if tile is None:
            if len(self._tiles) >= _CACHE_LIMIT:
                self._tiles.clear()
            got = _tile_of(self.image_of(key), self.cell)
            tile = self._tiles[key] = _missing_tile(self.cell) if got is None else got
        return tile

    @staticmethod
    def _keys(puzzle: SheetPuzzle, t: _Template) -> list[Hashable]:
        """The glyphs of ``t.boxes``, in order (render_sheet's zips)."""
        keys: list[Hashable] = []
        for row_keys, n in zip(puzzle.context, t.context_rows, strict=False):
            keys.extend(row_keys[:n])
        keys.extend(puzzle.answers)
        return keys

    def uses_template(self, puzzle: SheetPuzzle) -> bool:
        """Is this puzzle's sheet drawn from a template (else Pillow draws it, as
        :func:`render_sheet` does)? Either way the pixels and bytes are the same."""
        return self._template(puzzle)[1].ok

    def pixels(self, puzzle: SheetPuzzle) -> np.ndarray:
        """``render_sheet(puzzle, image_of, cell, gap)`` as a ``uint8`` array (a new one)."""
        _shape, t = self._template(puzzle)
        if not t.ok:
            return np.asarray(render_sheet(puzzle, self.image_of, self.cell, self.gap)).copy()
        sheet = t.base.copy()
        for key, (x0, y0, x1, y1) in zip(self._keys(puzzle, t), t.boxes, strict=True):
            sheet[y0:y1, x0:x1] = self._tile(key)
        return sheet

    def png(self, puzzle: SheetPuzzle) -> bytes:
        """``sheet_png(puzzle, image_of, cell, gap)``, byte for byte."""
        shape, t = self._template(puzzle)
        if not t.ok:
            return sheet_png(puzzle, self.image_of, self.cell, self.gap)
        return self._png(shape, t, puzzle)

    def _png(self, shape: Hashable, t: _Template, puzzle: SheetPuzzle) -> bytes:
        c = t.cell
        reach: list[tuple[Box, tuple[np.ndarray, np.ndarray]]] = []
        costs = t.costs.copy()
        for key, box in zip(self._keys(puzzle, t), t.boxes, strict=True):
            f = self._filtered.get((shape, key))
            if f is None:
                if len(self._filtered) >= _CACHE_LIMIT:
                    self._filtered.clear()
                f = self._filtered[(shape, key)] = t.tile_filtered(self._tile(key))
            costs[:, box[1] : box[1] + c + 1] += f[1]
            reach.append((box, f))
        choice = costs.argmin(axis=0)
        out = np.take(t.lines, t.row_at + choice, axis=0)  # (H, W + 1): filter byte, row
        for (x0, y0, _x1, _y1), (cand, _cost) in reach:
            pick = t.reach_at + choice[y0 : y0 + c + 1]
            out[y0 : y0 + c + 1, x0 + 1 : x0 + c + 2] = np.take(cand, pick, axis=0)
        data = _deflate_png(out.data)  # C-contiguous: deflated without a copy
        if len(data) >= _PIL_BLOCK:
            return sheet_png(puzzle, self.image_of, self.cell, self.gap)
        return t.head + _idat(data) + t.tail


__all__ = [
    "SheetLayout",
    "SheetPainter",
    "SheetPuzzle",
    "png_filter_candidates",
    "png_rows",
    "render_sheet",
    "sheet_layout",
    "sheet_png",
]
