"""A two-row glyph puzzle and image-feature warnings of known grades (a low-grade ``img-ink``
constant, a high-grade ``img-holes`` one), for the tests of how warnings are ordered and named
(tests/test_curation.py, tests/gui/test_curator_board.py)."""

from __future__ import annotations

from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.core.verdict import WARNING, Finding
from studio.curation import FEATURE_SOURCE


def graded_puzzle() -> Puzzle:
    g = [GlyphKey(0x25A0 + i, "symbola") for i in range(9)]
    return Puzzle(
        id="train-00001", family="glyph-pmp", layout="two-row", rule="constant",
        concept="closure", shift=False, context=(tuple(g[:3]), tuple(g[3:5])),
        answers=tuple(g[5:9]), key=0, split="train", seed=1,
    )  # fmt: skip


def low_warning(answer: int) -> Finding:
    """Two rows of medium ink: common among glyphs, so low grade."""
    return Finding("emergent", False, severity=WARNING, answer=answer, rule="constant",
                   concept="img-ink", rows=(("medium",), ("medium",)),
                   source=FEATURE_SOURCE)  # fmt: skip


def high_warning(answer: int) -> Finding:
    """Two rows of two-hole glyphs: rare, so high grade."""
    return Finding("emergent", False, severity=WARNING, answer=answer, rule="constant",
                   concept="img-holes", rows=(("2",), ("2",)), source=FEATURE_SOURCE)  # fmt: skip
