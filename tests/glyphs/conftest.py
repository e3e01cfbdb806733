"""Fixtures for the glyph tests: the real Symbola font, and tiny fonts built on the fly.

Symbola is UA's main font; tests that need it are skipped (saying why) where it is not
installed. The synthetic fonts (fontTools FontBuilder) give exact control over cmaps and
outlines — which code point maps to .notdef, which glyph is empty — that no installed font
guarantees.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

import pytest
from fontTools.fontBuilder import FontBuilder
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fontTools.ttLib.tables._g_l_y_f import Glyph
from fontTools.ttLib.tables.DefaultTable import DefaultTable

SYMBOLA = Path("/usr/share/fonts/truetype/ancient-scripts/Symbola_hint.ttf")
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
BAMUM_BOLD = Path("/usr/share/fonts/truetype/noto/NotoSansBamum-Bold.ttf")
WQY = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")


def need(path: Path) -> Path:
    """Skip the calling test, naming the file, when a system font is not installed."""
    if not path.exists():
        pytest.skip(f"{path} is not installed (Debian: fonts-symbola / fonts-noto / fonts-wqy)")
    return path


@pytest.fixture(scope="session")
def symbola() -> Path:
    return need(SYMBOLA)


def _box(x0: int, y0: int, x1: int, y1: int) -> Glyph:
    pen = TTGlyphPen(None)
    pen.moveTo((x0, y0))
    pen.lineTo((x0, y1))
    pen.lineTo((x1, y1))
    pen.lineTo((x1, y0))
    pen.closePath()
    return pen.glyph()


def make_font(
    path: Path,
    family: str,
    style: str = "Regular",
    cps: Iterable[int] = (),
    *,
    empty: Iterable[int] = (),
    to_notdef: Iterable[int] = (),
    tiny: Iterable[int] = (),
) -> Path:
    """Write a TrueType font: ``cps`` get a solid box, ``empty`` an outline-less glyph, ``tiny``
    a 2-pixel speck (no ink at 80 px), ``to_notdef`` are mapped to glyph 0."""
    order = [".notdef"]
    glyphs = {".notdef": _box(50, 0, 450, 700)}
    cmap: dict[int, str] = {}

    def add(cp: int, glyph: object) -> None:
        name = f"uni{cp:04X}" if cp <= 0xFFFF else f"u{cp:05X}"
        order.append(name)
        glyphs[name] = glyph
        cmap[cp] = name

    for cp in cps:
        add(cp, _box(100, 100, 500, 600))
    for cp in empty:
        add(cp, TTGlyphPen(None).glyph())
    for cp in tiny:
        add(cp, _box(300, 300, 305, 305))

    fb = FontBuilder(1000, isTTF=True)
    fb.setupGlyphOrder(order)
    fb.setupCharacterMap(cmap)
    fb.setupGlyf(glyphs)
    fb.setupHorizontalMetrics({name: (600, getattr(glyphs[name], "xMin", 0)) for name in order})
    fb.setupHorizontalHeader(ascent=800, descent=-200)
    fb.setupNameTable({"familyName": family, "styleName": style})
    fb.setupOS2(sTypoAscender=800, sTypoDescender=-200, usWinAscent=800, usWinDescent=200)
    fb.setupPost()
    zeros = sorted(set(to_notdef))
    if zeros:
        # fontTools drops mappings to glyph 0 when it compiles a cmap, so write this one by hand.
        gids = {cp: order.index(name) for cp, name in cmap.items()}
        gids.update({cp: 0 for cp in zeros})
        raw = DefaultTable("cmap")
        raw.data = _format4_cmap(gids)
        fb.font["cmap"] = raw
    path.parent.mkdir(parents=True, exist_ok=True)
    fb.save(str(path))
    return path


def _format4_cmap(gids: dict[int, int]) -> bytes:
    """A cmap table with one (3,1) format-4 subtable: one segment per code point (BMP only)."""
    codes = [*sorted(c for c in gids if c < 0xFFFF), 0xFFFF]
    seg = len(codes)
    deltas = [*((gids[c] - c) & 0xFFFF for c in codes[:-1]), 1]
    search = 2 ** (seg.bit_length() - 1)
    sub = struct.pack(
        ">7H",
        4,
        16 + 8 * seg,
        0,
        2 * seg,
        2 * search,
        search.bit_length() - 1,
        2 * seg - 2 * search,
    )
    sub += struct.pack(f">{seg}H", *codes) + b"\0\0" + struct.pack(f">{seg}H", *codes)
    sub += struct.pack(f">{seg}H", *deltas) + struct.pack(f">{seg}H", *([0] * seg))
    return struct.pack(">HHHHL", 0, 1, 3, 1, 12) + sub
