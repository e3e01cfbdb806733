from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from studio.core.keys import GlyphKey, normalise_font_id

fonts = st.from_regex(r"[a-z0-9][a-z0-9_.-]{0,12}", fullmatch=True)


@given(st.integers(0, 0x10FFFF), fonts)
def test_key_text_round_trip(cp: int, font: str) -> None:
    key = GlyphKey(cp, font)
    assert GlyphKey.parse(str(key)) == key
    assert GlyphKey.from_csv(key.hex, key.font) == key


def test_key_format_matches_design() -> None:
    assert str(GlyphKey(0x25CC, "symbola")) == "U+25CC@symbola"
    assert GlyphKey(0x29, "symbola").hex == "29"
    assert GlyphKey.parse("U+1F341@symbola").codepoint == 0x1F341


@pytest.mark.parametrize("bad", ["25CC@symbola", "U+25CC", "U+XYZ@symbola", "U+25CC@Symbola"])
def test_malformed_keys_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="glyph key"):
        GlyphKey.parse(bad)


def test_out_of_range_code_point() -> None:
    with pytest.raises(ValueError, match="outside Unicode"):
        GlyphKey(0x110000, "symbola")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Symbola", "symbola"),
        ("Symbola_hint", "symbola"),
        ("Noto Sans Yi", "notosansyi"),
        ("NotoSansYi-Regular", "notosansyi"),
        ("Noto Sans Bamum Bold", "notosansbamumbold"),
    ],
)
def test_font_ids(name: str, expected: str) -> None:
    assert normalise_font_id(name) == expected
