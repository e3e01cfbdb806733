"""Glyph keys: a character image is identified by code point and font, e.g. ``U+25CC@symbola``."""

from __future__ import annotations

import re
from dataclasses import dataclass

_KEY_RE = re.compile(r"^U\+([0-9A-Fa-f]{1,6})@([a-z0-9][a-z0-9_.-]*)$")
_FONT_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
MAX_CODEPOINT = 0x10FFFF


def normalise_font_id(name: str) -> str:
    """Turn a family or file name into a font id: lower case letters and digits only.

    ``"Noto Sans Yi"`` and ``"NotoSansYi-Regular"`` both become ``notosansyi``, so a key written
    by hand and one made from a font file agree.
    """
    base = re.sub(r"[-_ ]?(regular|hint)$", "", name.strip(), flags=re.IGNORECASE)
    return re.sub(r"[^a-z0-9]", "", base.lower())


@dataclass(frozen=True, order=True, slots=True)
class GlyphKey:
    codepoint: int
    font: str

    def __post_init__(self) -> None:
        if not 0 <= self.codepoint <= MAX_CODEPOINT:
            raise ValueError(f"code point {self.codepoint:#x} is outside Unicode")
        if not _FONT_RE.match(self.font):
            raise ValueError(f"font id {self.font!r} must be lower case letters, digits, _ . -")

    @classmethod
    def parse(cls, text: str) -> GlyphKey:
        """Parse ``U+25CC@symbola``; raises ValueError naming the text when it is malformed."""
        m = _KEY_RE.match(text.strip())
        if not m:
            raise ValueError(f"{text!r} is not a glyph key like U+25CC@symbola")
        return cls(int(m.group(1), 16), m.group(2))

    @classmethod
    def from_csv(cls, codepoint_hex: str, font: str) -> GlyphKey:
        """Build from the exchange CSV's columns: hex without prefix and a font id."""
        text = codepoint_hex.strip()
        if text[:2].lower() in ("0x", "u+"):
            text = text[2:]
        if not text or not re.fullmatch(r"[0-9A-Fa-f]{1,6}", text):
            raise ValueError(f"code point {codepoint_hex!r} is not hexadecimal")
        return cls(int(text, 16), font.strip())

    @property
    def hex(self) -> str:
        """Upper-case hex without prefix, as in the CSV (``25CC``, ``1F341``)."""
        return f"{self.codepoint:X}"

    @property
    def char(self) -> str:
        return chr(self.codepoint)

    def __str__(self) -> str:
        return f"U+{self.codepoint:04X}@{self.font}"
