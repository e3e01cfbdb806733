"""Listing installed fonts with the Unicode blocks they cover (the Add font dialog's data).

Exact counts come from fonts built here (a folder of them stands in for the font folders);
the real-folder test uses only Symbola, which set-up installs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from studio.glyphs.system_fonts import (
    BlockCount,
    block_counts,
    codepoints_in_blocks,
    list_system_fonts,
    search_fonts,
)

from .conftest import SYMBOLA, make_font, need

GEOMETRIC = range(0x25A0, 0x2600)  # 96 code points


def test_block_counts_count_each_block_in_code_point_order() -> None:
    cps = [0x41, 0x42, 0x25CB, 0x25CF, 0x2190, 0xE000]
    assert block_counts(cps) == (
        BlockCount("Basic Latin", 0x0, 0x7F, 2),
        BlockCount("Arrows", 0x2190, 0x21FF, 1),
        BlockCount("Geometric Shapes", 0x25A0, 0x25FF, 2),
        BlockCount("Private Use Area", 0xE000, 0xF8FF, 1),
    )
    assert block_counts(np.array([], dtype=np.uint32)) == ()
    # a code point outside every block (U+2FE0 lies in a gap between blocks) counts nowhere
    assert sum(b.count for b in block_counts([0x2FE0, 0x41])) == 1


def test_codepoints_in_blocks_keeps_only_the_named_blocks() -> None:
    cps = [0x41, 0x25CB, 0x2190, 0x25A0]
    assert codepoints_in_blocks(cps, ["geometric shapes"]) == [0x25A0, 0x25CB]
    assert codepoints_in_blocks(cps, ["Arrows", "Basic Latin"]) == [0x41, 0x2190]
    assert codepoints_in_blocks(cps, []) == []


def test_list_system_fonts_reads_family_path_and_blocks(tmp_path: Path) -> None:
    fonts_dir = tmp_path / "fonts"
    make_font(fonts_dir / "Shapes.ttf", "Test Shapes", cps=[*GEOMETRIC, 0x41, 0x42, 0x43])
    make_font(
        fonts_dir / "sub" / "ArrowsBold.ttf", "Test Arrows", "Bold", cps=range(0x2190, 0x21A0)
    )
    (fonts_dir / "broken.ttf").write_bytes(b"not a font")

    fonts = list_system_fonts([fonts_dir], cache_dir=tmp_path / "cache")

    assert [(f.label, f.id, f.path.name) for f in fonts] == [
        ("Test Arrows Bold", "testarrowsbold", "ArrowsBold.ttf"),
        ("Test Shapes", "testshapes", "Shapes.ttf"),
    ]
    shapes = fonts[1]
    assert shapes.family == "Test Shapes" and shapes.style == "Regular"
    assert shapes.num_codepoints == 99
    assert [(b.name, b.count) for b in shapes.blocks] == [
        ("Basic Latin", 3),
        ("Geometric Shapes", 96),
    ]
    assert [(b.name, b.count) for b in fonts[0].blocks] == [("Arrows", 16)]


def test_search_fonts_matches_name_file_and_block(tmp_path: Path) -> None:
    fonts_dir = tmp_path / "fonts"
    make_font(fonts_dir / "Shapes.ttf", "Test Shapes", cps=GEOMETRIC)
    make_font(fonts_dir / "ArrowsBold.ttf", "Test Arrows", "Bold", cps=range(0x2190, 0x21A0))
    fonts = list_system_fonts([fonts_dir], cache_dir=tmp_path / "cache")

    assert [f.id for f in search_fonts(fonts, "")] == ["testarrowsbold", "testshapes"]
    assert [f.id for f in search_fonts(fonts, "arrows BOLD")] == ["testarrowsbold"]
    assert [f.id for f in search_fonts(fonts, "shapes.ttf")] == ["testshapes"]
    assert [f.id for f in search_fonts(fonts, "geometric")] == ["testshapes"]
    assert search_fonts(fonts, "no such font") == []


def test_symbola_is_listed_with_its_geometric_shapes(tmp_path: Path) -> None:
    need(SYMBOLA)
    fonts = list_system_fonts(cache_dir=tmp_path / "cache")
    symbola = next(f for f in fonts if f.id == "symbola")
    assert symbola.family == "Symbola"
    blocks = {b.name: b.count for b in symbola.blocks}
    assert blocks["Geometric Shapes"] == 96
    assert sum(blocks.values()) <= symbola.num_codepoints


@pytest.mark.parametrize("text", ["symbola", "Symbola", "SYMB"])
def test_search_finds_symbola_by_name(tmp_path: Path, text: str) -> None:
    need(SYMBOLA)
    fonts = list_system_fonts(cache_dir=tmp_path / "cache")
    assert "symbola" in [f.id for f in search_fonts(fonts, text)]
