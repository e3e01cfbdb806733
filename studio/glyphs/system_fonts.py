"""The fonts installed on this machine, as the Add font dialog lists them: family, style, file,
and the Unicode blocks each covers with a count of code points per block.

Qt-free. The list comes from :meth:`studio.glyphs.fonts.FontCatalog.scan` over the usual font
folders (:func:`studio.glyphs.fonts.system_font_dirs`), so it shares the catalog's per-file
coverage cache: after the first scan, listing ~300 fonts only stats their files. Block counts
are computed with one ``searchsorted`` per font over the block table of
``fontTools.unicodedata``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from studio.glyphs.fonts import FontCatalog, FontInfo
from studio.glyphs.unicode import blocks

__all__ = [
    "BlockCount",
    "SystemFont",
    "block_counts",
    "codepoints_in_blocks",
    "list_system_fonts",
    "search_fonts",
]


@dataclass(frozen=True)
class BlockCount:
    """A Unicode block, its code point range and how many of its code points a font covers."""

    name: str
    first: int
    last: int
    count: int


@dataclass(frozen=True)
class SystemFont:
    """One installed face: ``id`` is the font id glyph keys use (``symbola``)."""

    id: str
    family: str
    style: str
    path: Path
    index: int
    num_codepoints: int
    blocks: tuple[BlockCount, ...] = field(repr=False)

    @property
    def label(self) -> str:
        """``"DejaVu Sans Bold"``: family plus the style when it is not the regular one."""
        regular = self.style in ("Regular", "Book", "Normal", "")
        return self.family if regular else f"{self.family} {self.style}"


@lru_cache(maxsize=1)
def _block_table() -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    table = blocks()
    starts = np.array([b[0] for b in table], dtype=np.int64)
    ends = np.array([b[1] for b in table], dtype=np.int64)
    return starts, ends, tuple(b[2] for b in table)


def block_counts(codepoints: Iterable[int] | np.ndarray) -> tuple[BlockCount, ...]:
    """How many of ``codepoints`` fall in each Unicode block, in code point order; blocks with
    none are left out, and so are code points outside every block."""
    cps = np.asarray(
        codepoints if isinstance(codepoints, np.ndarray) else list(codepoints), dtype=np.int64
    )
    if cps.size == 0:
        return ()
    starts, ends, names = _block_table()
    idx = np.searchsorted(starts, cps, side="right") - 1
    inside = (idx >= 0) & (cps <= ends[np.clip(idx, 0, None)])
    counts = np.bincount(idx[inside], minlength=len(names))
    return tuple(
        BlockCount(names[i], int(starts[i]), int(ends[i]), int(counts[i]))
        for i in np.flatnonzero(counts)
    )


def codepoints_in_blocks(codepoints: Iterable[int], block_names: Iterable[str]) -> list[int]:
    """The code points (sorted) that lie in one of the named blocks (names exact, any case)."""
    wanted = {b.lower() for b in block_names}
    starts, ends, names = _block_table()
    ranges = [(int(starts[i]), int(ends[i])) for i, n in enumerate(names) if n.lower() in wanted]
    return sorted(cp for cp in codepoints if any(lo <= cp <= hi for lo, hi in ranges))


def _system_font(info: FontInfo, cps: np.ndarray) -> SystemFont:
    return SystemFont(
        id=info.id,
        family=info.family,
        style=info.style,
        path=info.path,
        index=info.index,
        num_codepoints=int(cps.size),
        blocks=block_counts(cps),
    )


def list_system_fonts(
    dirs: Iterable[str | Path] | None = None,
    *,
    catalog: FontCatalog | None = None,
    cache_dir: str | Path | None = None,
) -> list[SystemFont]:
    """Every installed face with at least one code point, sorted by label then path.

    ``dirs`` defaults to the usual font folders. A ``catalog`` already built (the studio's)
    is reused instead of scanning again; its system faces are listed. Fonts that cannot be
    read are left out (the catalog lists them in ``errors``).
    """
    if catalog is None:
        catalog = FontCatalog.scan(dirs=dirs, cache_dir=cache_dir)
    out = []
    for info in catalog.fonts:
        if info.source != "system":
            continue
        cps = catalog.codepoint_array(info.id)
        if cps.size:
            out.append(_system_font(info, cps))
    out.sort(key=lambda f: (f.label.lower(), str(f.path), f.index))
    return out


def search_fonts(fonts: Sequence[SystemFont], text: str) -> list[SystemFont]:
    """The fonts whose label, id, file name or one of whose blocks contains ``text`` (any case);
    every font for an empty text."""
    needle = text.strip().lower()
    if not needle:
        return list(fonts)
    return [
        f
        for f in fonts
        if needle in f.label.lower()
        or needle in f.id
        or needle in f.path.name.lower()
        or any(needle in b.name.lower() for b in f.blocks)
    ]
