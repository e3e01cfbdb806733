"""Unicode facts about code points: names, blocks, scripts, and the glyph browser's search.

Everything comes from ``fontTools.unicodedata`` (backed by ``unicodedata2`` when installed, so
the data follow the newest Unicode version rather than the one Python was built with). Names
are cached because the browser asks for the same few thousand names again and again while the
user scrolls and types; the first lookup of 20,000 code points costs a few tens of
milliseconds, every later one a dict lookup.

Code points that have no character name (controls, private use, surrogates, noncharacters,
unassigned) get a *label* in angle brackets instead, e.g. ``<private use U+E049>``, so that a
list of names never shows an empty cell and a label can never be mistaken for a real name.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from functools import cache, lru_cache

from fontTools import unicodedata as _ud
from fontTools.unicodedata import Blocks as _Blocks

__all__ = [
    "block",
    "block_range",
    "blocks",
    "char_name",
    "is_private_use",
    "matches",
    "parse_codepoint",
    "script",
    "script_name",
    "search",
]

MAX_CODEPOINT = 0x10FFFF

_PRIVATE_USE_RANGES: tuple[tuple[int, int], ...] = (
    (0xE000, 0xF8FF),  # Private Use Area (BMP)
    (0xF0000, 0xFFFFD),  # Supplementary Private Use Area-A (plane 15)
    (0x100000, 0x10FFFD),  # Supplementary Private Use Area-B (plane 16)
)

# "25CC", "U+25CC", "u+25cc", "0x25CC", "U+1F341". Four to six hex digits for the bare form so
# that ordinary words ("face", "bad") stay name searches; prefixed forms accept one to six.
_BARE_HEX_RE = re.compile(r"^[0-9A-Fa-f]{4,6}$")
_PREFIXED_HEX_RE = re.compile(r"^(?:[Uu]\+|0[xX])([0-9A-Fa-f]{1,6})$")


def _check(cp: int) -> int:
    if not isinstance(cp, int) or not 0 <= cp <= MAX_CODEPOINT:
        raise ValueError(f"{cp!r} is not a Unicode code point (0..10FFFF)")
    return cp


def is_private_use(cp: int) -> bool:
    """True for the private-use areas (U+E000–F8FF, planes 15 and 16).

    Their meaning is defined by each font, not by Unicode, which is why font substitution
    refuses them.
    """
    return any(lo <= cp <= hi for lo, hi in _PRIVATE_USE_RANGES)


def _label(cp: int) -> str:
    """The angle-bracket label for a code point without a character name."""
    category = _ud.category(chr(cp))
    if category == "Cc":
        kind = "control"
    elif category == "Co" or is_private_use(cp):
        kind = "private use"
    elif category == "Cs":
        kind = "surrogate"
    elif (0xFDD0 <= cp <= 0xFDEF) or (cp & 0xFFFE) == 0xFFFE:
        kind = "noncharacter"
    elif category == "Cn":
        kind = "unassigned"
    else:  # assigned but unnamed: should not happen with current data; say so honestly
        kind = "unnamed"
    return f"<{kind} U+{cp:04X}>"


@cache
def char_name(cp: int) -> str:
    """The Unicode character name (``DOTTED CIRCLE``) or a label such as ``<unassigned U+0378>``.

    Cached without limit: there are at most ~300k named code points and the browser only
    ever asks about those it shows.
    """
    _check(cp)
    name = _ud.name(chr(cp), None)
    return name if name else _label(cp)


@cache
def _name_lower(cp: int) -> str:
    return char_name(cp).lower()


def block(cp: int) -> str:
    """The Unicode block name (``Geometric Shapes``); ``No_Block`` outside any block."""
    return _ud.block(chr(_check(cp)))


def script(cp: int) -> str:
    """The ISO 15924 script code of the code point (``Latn``, ``Zyyy`` for Common, ``Zzzz``)."""
    return _ud.script(chr(_check(cp)))


def script_name(cp: int) -> str:
    """The human name of the code point's script (``Latin``, ``Common``, ``Unknown``)."""
    return _ud.script_name(script(cp), default=script(cp))


@lru_cache(maxsize=1)
def _blocks() -> tuple[tuple[int, int, str], ...]:
    starts = _Blocks.RANGES
    values = _Blocks.VALUES
    out: list[tuple[int, int, str]] = []
    for i, (start, value) in enumerate(zip(starts, values, strict=True)):
        if value == "No_Block":
            continue
        end = (starts[i + 1] - 1) if i + 1 < len(starts) else MAX_CODEPOINT
        out.append((start, end, value))
    return tuple(out)


def blocks() -> list[tuple[int, int, str]]:
    """Every Unicode block as ``(first, last, name)``, in code point order (gaps left out)."""
    return list(_blocks())


@lru_cache(maxsize=1)
def _block_starts() -> list[int]:
    return [b[0] for b in _blocks()]


def block_range(name: str) -> tuple[int, int] | None:
    """First and last code point of the block called ``name`` (exact, case-insensitive)."""
    wanted = name.strip().lower()
    for lo, hi, value in _blocks():
        if value.lower() == wanted:
            return lo, hi
    return None


def _block_fast(cp: int) -> str:
    table = _blocks()
    i = bisect_right(_block_starts(), cp) - 1
    if i >= 0 and table[i][0] <= cp <= table[i][1]:
        return table[i][2]
    return "No_Block"


def parse_codepoint(text: str) -> int | None:
    """Read a code point written as ``25CC``, ``U+25CC``, ``0x25CC`` or the character itself.

    Returns None when the text is none of these (or names a value beyond U+10FFFF). A single
    character is always taken literally, so ``"7"`` is U+0037, not U+0007.
    """
    if len(text) == 1:
        return ord(text)
    text = text.strip()
    m = _PREFIXED_HEX_RE.match(text)
    digits = m.group(1) if m else (text if _BARE_HEX_RE.match(text) else None)
    if digits is None:
        return None
    value = int(digits, 16)
    return value if value <= MAX_CODEPOINT else None


class _Query:
    """A search query parsed once, then tested against many code points."""

    __slots__ = ("codepoint", "text", "wanted_cps")

    def __init__(self, query: str) -> None:
        self.text = query.strip().lower()
        wanted: set[int] = set()
        if len(query) == 1:  # a literal character, including a space typed on purpose
            wanted.add(ord(query))
        stripped = query.strip()
        if stripped:
            cp = parse_codepoint(stripped)
            if cp is not None:
                wanted.add(cp)
        self.wanted_cps = frozenset(wanted)
        self.codepoint = next(iter(wanted)) if len(wanted) == 1 else None

    def __call__(self, cp: int) -> bool:
        if cp in self.wanted_cps:
            return True
        if not self.text:
            return False
        return self.text in _name_lower(cp) or self.text in _block_fast(cp).lower()


def matches(cp: int, query: str) -> bool:
    """True when ``query`` finds ``cp`` in the glyph browser's search.

    A query matches when it is a case-insensitive substring of the character name or of the
    block name, or when it denotes the code point itself (``25CC``, ``U+25CC``, ``0x25CC``, or
    the literal character). An empty query matches nothing; filter with :func:`search` to
    test many code points against one query without re-parsing it.
    """
    return _Query(query)(_check(cp))


def search(cps: Iterable[int], query: str) -> list[int]:
    """The code points of ``cps`` (in their order) that :func:`matches` ``query``."""
    q = _Query(query)
    return [cp for cp in cps if q(cp)]
