"""The split writer's shortcuts give the reference functions' bytes: ``SheetPainter`` (per-layout
templates, per-glyph tiles, PNG filters chosen as Pillow chooses them) against ``render_sheet`` /
``sheet_png`` (Pillow draws and encodes every sheet), and ``fast_npz_bytes`` against ``npz_bytes``
(``zipfile``), on every layout, cell size and gap, with missing images and images of other sizes
and modes; a geometry the shortcut cannot reproduce falls back to Pillow, still the same bytes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.families.glyph_pmp.export import _npz_bytes_direct, fast_npz_bytes, npz_bytes
from studio.generate import sheet
from studio.generate.sheet import SheetPainter, png_rows, render_sheet, sheet_png

LAYOUTS = ("two-row", "matrix-3x3", "sequence", "analogy", "odd-one-out")


@dataclass(frozen=True)
class Sheet:
    """A puzzle as far as a sheet sees it (``SheetPuzzle``), glyphs named by number."""

    layout: str
    context: tuple[tuple[int, ...], ...]
    answers: tuple[int, ...]


def glyph_images(seed: int, count: int, cell: int) -> list[np.ndarray | None]:
    """Renders of ``count`` glyphs: mostly cell-sized ink on paper, some of other sizes, some
    RGB, some grey levels, some missing."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray | None] = []
    for i in range(count):
        kind = i % 6
        if kind == 4:
            out.append(None)
            continue
        size = cell if kind < 3 else int(rng.integers(5, 2 * cell))
        img = np.full((size, size), 255, np.uint8)
        blob = rng.random((size, size)) < 0.2
        img[blob] = 0 if kind != 2 else rng.integers(0, 255, int(blob.sum()), dtype=np.uint8)
        out.append(np.stack([img] * 3, axis=2) if kind == 5 else img)
    return out


@st.composite
def sheets(draw: st.DrawFn, glyphs: int) -> Sheet:
    layout = draw(st.sampled_from(LAYOUTS))
    pick = st.integers(0, glyphs - 1)
    rows = draw(st.lists(st.lists(pick, min_size=1, max_size=4), min_size=1, max_size=3))
    answers = draw(st.lists(pick, min_size=1, max_size=6))
    return Sheet(layout, tuple(tuple(r) for r in rows), tuple(answers))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    cell=st.sampled_from([80, 40, 24]),
    gap=st.sampled_from([None, 0, 1, 2, 6]),
    data=st.data(),
)
def test_painter_gives_render_sheet_and_sheet_png(
    seed: int, cell: int, gap: int | None, data: st.DataObject
) -> None:
    images = glyph_images(seed, 12, cell)
    painter = SheetPainter(images.__getitem__, cell, gap)
    for _ in range(4):  # several puzzles per painter: templates and tiles are reused
        puzzle = data.draw(sheets(12))
        assert painter.png(puzzle) == sheet_png(puzzle, images.__getitem__, cell, gap)
        want = np.asarray(render_sheet(puzzle, images.__getitem__, cell, gap))
        assert np.array_equal(painter.pixels(puzzle), want)


def test_the_shortcut_is_taken_for_the_usual_layouts() -> None:
    """Not a fallback in disguise: the default geometry is drawn from templates (and the bytes
    are still Pillow's); tiles that would touch (gap 0) are left to Pillow."""
    images = glyph_images(3, 12, 80)
    usual = [
        Sheet("two-row", ((0, 1, 2), (3, 5)), (6, 7, 8, 9)),
        Sheet("matrix-3x3", ((0, 1, 2), (3, 5, 6), (7, 8)), (9, 10, 11, 0, 1, 2, 3, 4)),
        Sheet("sequence", ((0, 1, 2, 3),), (4, 5, 6, 7)),
        Sheet("analogy", ((0, 1), (2,)), (3, 4, 5, 6)),
        Sheet("odd-one-out", (), (0, 1, 2, 3, 4)),
    ]
    painter = SheetPainter(images.__getitem__)
    for puzzle in usual:
        assert painter.uses_template(puzzle), puzzle.layout
        assert painter.png(puzzle) == sheet_png(puzzle, images.__getitem__)
    touching = SheetPainter(images.__getitem__, gap=0)
    assert not touching.uses_template(usual[0])
    assert touching.png(usual[0]) == sheet_png(usual[0], images.__getitem__, gap=0)


def test_a_painter_over_its_cache_limit_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """More glyphs than the painter keeps: its caches are emptied and refilled, same bytes."""
    monkeypatch.setattr(sheet, "_CACHE_LIMIT", 3)
    images = glyph_images(5, 12, 40)
    painter = SheetPainter(images.__getitem__, 40)
    for first in range(0, 12, 2):
        puzzle = Sheet("two-row", ((first, 1, 2), (3, 4)), (5, 6, 7, first))
        assert painter.uses_template(puzzle)
        assert painter.png(puzzle) == sheet_png(puzzle, images.__getitem__, 40)
        assert len(painter._tiles) <= 3 and len(painter._filtered) <= 3


@settings(max_examples=40, deadline=None)
@given(
    h=st.integers(1, 30),
    w=st.integers(1, 30),
    seed=st.integers(0, 2**16),
    paper=st.floats(0, 1),
)
def test_png_rows_are_pillows_filtered_scanlines(h: int, w: int, seed: int, paper: float) -> None:
    import zlib
    from io import BytesIO

    from PIL import Image

    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w), dtype=np.uint8)
    img[rng.random((h, w)) < paper] = 255
    buf = BytesIO()
    Image.fromarray(img, mode="L").save(buf, "PNG")
    png = buf.getvalue()
    at = png.index(b"IDAT")
    n = int.from_bytes(png[at - 4 : at], "big")
    assert zlib.decompress(png[at + 4 : at + 4 + n]) == png_rows(img)


def _arrays(draw: st.DrawFn) -> dict[str, Any]:
    dtype = draw(st.sampled_from([np.uint8, np.int64, np.float32, np.bool_]))
    shape = tuple(draw(st.lists(st.integers(0, 9), max_size=3)))
    seed = draw(st.integers(0, 2**16))
    values: np.ndarray = np.random.default_rng(seed).integers(0, 3, shape).astype(dtype)
    probtype = draw(st.text(max_size=40))
    return {
        "images": values,
        "target": np.array(draw(st.integers(-(2**40), 2**40)), dtype=np.int64),
        "probtype": np.array(probtype),
    }


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_fast_npz_bytes_are_npz_bytes(data: st.DataObject) -> None:
    arrays = data.draw(st.composite(_arrays)())
    assert _npz_bytes_direct(arrays) == npz_bytes(arrays)  # the shortcut itself
    assert fast_npz_bytes(arrays) == npz_bytes(arrays)


def test_fast_npz_bytes_of_other_arrays_still_match() -> None:
    """Fortran-ordered and non-contiguous arrays go through ``write_array``, non-ASCII names
    through ``zipfile``: same bytes."""
    base = np.arange(60, dtype=np.uint8).reshape(6, 10)
    for arr in (np.asfortranarray(base), base[:, ::2], base.T):
        arrays = {"images": arr, "target": np.array(1)}
        assert fast_npz_bytes(arrays) == npz_bytes(arrays)
    named = {"bilder-ä": base, "target": np.array(1)}
    assert fast_npz_bytes(named) == npz_bytes(named)
