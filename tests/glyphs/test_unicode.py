"""Unicode names, blocks, scripts and the glyph browser's search."""

from __future__ import annotations

import itertools

import pytest

from studio.glyphs import unicode as uc


def test_names_of_named_and_unnamed_code_points() -> None:
    assert uc.char_name(0x25CC) == "DOTTED CIRCLE"
    assert uc.char_name(0x1F341) == "MAPLE LEAF"
    assert uc.char_name(0x4E00) == "CJK UNIFIED IDEOGRAPH-4E00"  # derived names work too
    assert uc.char_name(0xE049) == "<private use U+E049>"
    assert uc.char_name(0xF0000) == "<private use U+F0000>"
    assert uc.char_name(0x0378) == "<unassigned U+0378>"
    assert uc.char_name(0x0000) == "<control U+0000>"
    assert uc.char_name(0xD800) == "<surrogate U+D800>"
    assert uc.char_name(0xFFFF) == "<noncharacter U+FFFF>"


def test_names_are_cached_for_the_browser() -> None:
    cps = range(0x2000, 0x2000 + 20_000)
    for cp in cps:
        uc.char_name(cp)
    before = uc.char_name.cache_info().hits
    names = [uc.char_name(cp) for cp in cps]
    assert uc.char_name.cache_info().hits - before == 20_000
    assert all(names)


def test_blocks_scripts() -> None:
    assert uc.block(0x25CC) == "Geometric Shapes"
    assert uc.block(0x41) == "Basic Latin"
    assert uc.script(0x41) == "Latn"
    assert uc.script_name(0x41) == "Latin"
    assert uc.script(0x25CC) == "Zyyy"
    assert uc.script_name(0x25CC) == "Common"
    assert uc.script_name(0xA500) == "Vai"


def test_blocks_are_ordered_and_disjoint() -> None:
    table = uc.blocks()
    assert table[0] == (0x0000, 0x007F, "Basic Latin")
    assert len(table) > 300
    for (lo1, hi1, _), (lo2, hi2, _) in itertools.pairwise(table):
        assert lo1 <= hi1 < lo2 <= hi2
    assert "Geometric Shapes" in {name for *_, name in table}
    assert uc.block_range("geometric shapes") == (0x25A0, 0x25FF)


@pytest.mark.parametrize(
    ("cp", "expected"),
    [
        (0xE000, True),
        (0xF8FF, True),
        (0xF0000, True),
        (0x10FFFD, True),
        (0xDFFF, False),
        (0xF900, False),
        (0x41, False),
        (0xEFFFF, False),
    ],
)
def test_private_use(cp: int, expected: bool) -> None:
    assert uc.is_private_use(cp) is expected


@pytest.mark.parametrize(
    "query", ["dotted", "DOTTED CIRCLE", "25CC", "U+25CC", "u+25cc", "0x25CC", "◌", "geometric"]
)
def test_search_matches_name_code_point_literal_and_block(query: str) -> None:
    assert uc.matches(0x25CC, query)


@pytest.mark.parametrize("query", ["", "   ", "arrow", "U+25CD", "25CD", "latin"])
def test_search_rejects_non_matches(query: str) -> None:
    assert not uc.matches(0x25CC, query)


def test_search_filters_in_order() -> None:
    cps = list(range(0x2190, 0x2200))
    found = uc.search(cps, "leftwards arrow")
    assert found[0] == 0x2190
    assert found == sorted(found)
    assert all("LEFTWARDS ARROW" in uc.char_name(cp) for cp in found)
    assert uc.search(cps, "U+2192") == [0x2192]


def test_parse_codepoint() -> None:
    assert uc.parse_codepoint("1F341") == 0x1F341
    assert uc.parse_codepoint("U+41") == 0x41
    assert uc.parse_codepoint("7") == 0x37  # one character is always literal
    assert uc.parse_codepoint("face") == 0xFACE  # four hex digits: also a name search
    assert uc.parse_codepoint("hello") is None
    assert uc.parse_codepoint("U+110000") is None


def test_out_of_range_code_point_is_an_error() -> None:
    with pytest.raises(ValueError, match="code point"):
        uc.char_name(0x110000)
    with pytest.raises(ValueError):
        uc.block(-1)
