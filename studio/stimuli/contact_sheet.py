"""Contact sheets: every polyomino or polycube of a size on one PNG, for eyeballing an enumeration.

2D shapes are filled squares with outlines; 3D shapes are drawn isometrically with Pillow (three
shaded visible faces per cube, painted back to front), which draws about a thousand polycubes in
well under a second without any 3D renderer. Chiral shapes carry a small "C".

The sheet is bounded: at most :data:`MAX_SHAPES` shapes are drawn (the first ones in canonical
order) and the heading says how many of how many are shown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from studio.stimuli import polycube, polyomino
from studio.stimuli.polyomino import Equivalence

#: Most shapes drawn on one sheet; the heading says when there were more.
MAX_SHAPES = 2000
#: Largest sizes the enumeration is offered for (the counts grow about 4× and 7× per cell).
MAX_CELLS = {2: 12, 3: 8}

_INK = (40, 40, 40)
_FILL_2D = (120, 160, 225)
_CHIRAL_INK = (200, 40, 40)
# Shades of the visible faces of an isometric cube: top (+z), right (+x), left (+y).
_TOP, _RIGHT, _LEFT = (170, 200, 245), (105, 145, 215), (65, 100, 170)
_COS30, _SIN30 = math.cos(math.pi / 6), 0.5


@dataclass(frozen=True)
class Enumeration:
    """The shapes of one size and equivalence, with which of them are chiral."""

    dims: int
    cells: int
    equivalence: str
    shapes: np.ndarray  # (count, cells, dims), canonical forms in canonical order
    chiral: np.ndarray  # (count,) bool

    @property
    def count(self) -> int:
        return len(self.shapes)


def enumerate_shapes(cells: int, dims: int, equivalence: Equivalence) -> Enumeration:
    """All shapes of ``cells`` cells in ``dims`` (2 or 3) dimensions, and their chirality."""
    if dims == 2:
        group, rotations, reflection = (
            polyomino.group_2d(equivalence),
            polyomino.ROTATIONS_2D,
            polyomino.MIRROR_2D,
        )
    elif dims == 3:
        group, rotations, reflection = (
            polycube.group_3d(equivalence),
            polycube.ROTATIONS_3D,
            polycube.MIRROR_3D,
        )
    else:
        raise ValueError(f"dims must be 2 or 3, not {dims}")
    shapes = polyomino.enumerate_animals(cells, dims, group)
    return Enumeration(
        dims, cells, equivalence, shapes, polyomino.chiral_mask(shapes, rotations, reflection)
    )


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    try:
        return ImageFont.load_default(size=size)
    except (OSError, TypeError):  # Pillow without FreeType
        return ImageFont.load_default()


def _iso(x: float, y: float, z: float) -> tuple[float, float]:
    """Isometric projection seen from +(1, 1, 1), z up; screen y grows downwards.

    The screen x axis is (y − x), not (x − y): the other sign would draw every shape mirrored,
    which matters for chiral shapes."""
    return (y - x) * _COS30, (x + y) * _SIN30 - z


def _cube_faces(c: Sequence[int]) -> list[tuple[list[tuple[float, float]], tuple[int, int, int]]]:
    x, y, z = c
    top = [(x, y, z + 1), (x + 1, y, z + 1), (x + 1, y + 1, z + 1), (x, y + 1, z + 1)]
    right = [(x + 1, y, z), (x + 1, y + 1, z), (x + 1, y + 1, z + 1), (x + 1, y, z + 1)]
    left = [(x, y + 1, z), (x + 1, y + 1, z), (x + 1, y + 1, z + 1), (x, y + 1, z + 1)]
    return [
        ([_iso(*p) for p in top], _TOP),
        ([_iso(*p) for p in right], _RIGHT),
        ([_iso(*p) for p in left], _LEFT),
    ]


def _iso_bounds(shape: np.ndarray) -> tuple[float, float, float, float]:
    corners = (shape[:, None, :] + np.array(list(np.ndindex(2, 2, 2)))[None]).reshape(-1, 3)
    sx = (corners[:, 1] - corners[:, 0]) * _COS30
    sy = (corners[:, 0] + corners[:, 1]) * _SIN30 - corners[:, 2]
    return float(sx.min()), float(sy.min()), float(sx.max()), float(sy.max())


def draw_polycube(
    draw: ImageDraw.ImageDraw,
    shape: Sequence[Sequence[int]],
    origin: tuple[float, float],
    unit: float,
) -> None:
    """Draw one polycube isometrically; ``origin`` is where world (0, 0, 0) lands on screen.

    Cubes are painted in increasing x + y + z, which is a correct painter's order for the
    isometric view: cubes with equal x + y + z project to hexagons that only share edges."""
    ox, oy = origin
    for c in sorted((tuple(int(v) for v in c) for c in shape), key=lambda c: (sum(c), c)):
        for pts, fill in _cube_faces(c):
            draw.polygon([(ox + u * unit, oy + v * unit) for u, v in pts], fill=fill, outline=_INK)


def draw_polyomino(
    draw: ImageDraw.ImageDraw,
    shape: Sequence[Sequence[int]],
    origin: tuple[float, float],
    unit: float,
) -> None:
    """Draw one polyomino as filled unit squares with outlines; y grows upwards like in maths."""
    ox, oy = origin
    height = max(int(c[1]) for c in shape) + 1
    for x, y in ((int(c[0]), int(c[1])) for c in shape):
        x0, y0 = ox + x * unit, oy + (height - 1 - y) * unit
        draw.rectangle([x0, y0, x0 + unit, y0 + unit], fill=_FILL_2D, outline=_INK)


def contact_sheet(enum: Enumeration, max_shapes: int = MAX_SHAPES) -> Image.Image:
    """A grid of the first ``max_shapes`` shapes of ``enum`` with a one-line heading."""
    shown = enum.shapes[:max_shapes]
    n = enum.cells
    if enum.dims == 2:
        unit = max(3, min(14, 84 // n))
        tile_w = tile_h = n * unit + 2 * 6
        bounds = None
    else:
        bounds = [_iso_bounds(s) for s in shown] or [(0.0, 0.0, 1.0, 1.0)]
        span_w = max(b[2] - b[0] for b in bounds)
        span_h = max(b[3] - b[1] for b in bounds)
        unit = max(4.0, min(16.0, 96.0 / max(span_w, span_h)))
        tile_w = math.ceil(span_w * unit) + 12
        tile_h = math.ceil(span_h * unit) + 12
    count = len(shown)
    cols = max(1, min(count, math.ceil(math.sqrt(count * tile_h / tile_w))))
    rows = max(1, math.ceil(count / cols))
    heading = (
        f"{enum.dims}D {enum.equivalence} {'polyominoes' if enum.dims == 2 else 'polycubes'} "
        f"of {n} cells: {enum.count} shapes"
        + (f" (first {count} shown)" if count < enum.count else "")
        + f"; {int(enum.chiral.sum())} chiral, marked C"
    )
    head_h = 28
    head_font = _font(14)
    width = max(cols * tile_w, 16 + math.ceil(head_font.getlength(heading)))
    sheet = Image.new("RGB", (width, head_h + rows * tile_h), "white")
    draw = ImageDraw.Draw(sheet)
    draw.text((8, 6), heading, fill=_INK, font=head_font)
    mark = _font(max(9, min(14, tile_h // 6)))
    for i, shape in enumerate(shown):
        r, c = divmod(i, cols)
        x0, y0 = c * tile_w, head_h + r * tile_h
        draw.rectangle([x0, y0, x0 + tile_w - 1, y0 + tile_h - 1], outline=(225, 225, 225))
        if enum.dims == 2:
            w = (int(shape[:, 0].max()) + 1) * unit
            h = (int(shape[:, 1].max()) + 1) * unit
            draw_polyomino(draw, shape, (x0 + (tile_w - w) / 2, y0 + (tile_h - h) / 2), unit)
        else:
            assert bounds is not None
            bx0, by0, bx1, by1 = bounds[i]
            ox = x0 + (tile_w - (bx1 - bx0) * unit) / 2 - bx0 * unit
            oy = y0 + (tile_h - (by1 - by0) * unit) / 2 - by0 * unit
            draw_polycube(draw, shape, (ox, oy), unit)
        if enum.chiral[i]:
            draw.text((x0 + 3, y0 + 1), "C", fill=_CHIRAL_INK, font=mark)
    return sheet
