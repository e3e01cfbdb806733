"""Glyph images the way Unicode Analogies made them: a 500×500 master, then N×N binarised.

The rule (every image the studio renders, previews and exports follows it exactly):

1. **Master canvas.** 500×500 pixels, mode ``L``, white paper (255), black ink (0).
2. **Font.** Pillow ``ImageFont.truetype(path, 400, index=face, layout_engine=Layout.BASIC)``
   (BASIC because raqm fails on U+000D and U+2029, and single code points need no shaping).
3. **Placement.** The glyph is rasterised by FreeType at anchor ``la`` with no fractional
   offset; its ink box — exactly ``font.getbbox(char)``, which equals the box of the rendered
   mask — is centred on the canvas: its top-left corner goes to ``((500 - w) // 2,
   (500 - h) // 2)`` (integer pixels, floor), where ``w × h`` is the box size. The glyph is
   drawn like ``ImageDraw.text`` draws it (``draw_bitmap`` with ink 0).
4. **Fitting, never clipping.** If ``w`` or ``h`` exceeds ``500 - 2 × 10`` (a 10 px margin each
   side), the font size is reduced to ``400 × 480 // max(w, h)`` and then one point at a time
   until the box fits; the glyph is then centred as in 3. About 290 Symbola glyphs need this.
5. **Downscale.** ``Image.resize((N, N), Image.Resampling.BOX)``.
6. **Binarise.** A pixel is ink when its grey value is < 128 (at least half covered).

Output arrays are ``uint8`` of shape ``(N, N)``: 0 = ink, 255 = paper, like UA's PNGs.

Speed: for sizes where 500/N is a binary fraction (80, 100, 64, 125, 250 …) the renderer does
not resize the whole 500×500 canvas: it resizes only the smallest block-aligned region that
holds the glyph (``resize(..., box=region)``; blocks of 25 px ↔ 4 output px at N = 80) and
pastes it into a white N×N image. Pillow's BOX weights depend only on a pixel's offset inside
its block, and those offsets are exact in floating point, so the result is byte-identical to
resizing the full master (checked exhaustively for every aligned region at N = 80, and by the
tests and ``bench/render_bench.py``). Cropping first and resizing the crop is *not* identical:
Pillow may then run its vertical pass first on tall crops, rounding differently. Other sizes
take the full-canvas path.

Missing glyphs. A glyph that would not show what its code point means is reported with one of
these reasons, checked in this order: ``"not-in-cmap"`` (the font's best Unicode cmap does not
list the code point; FreeType would draw the .notdef box), ``"notdef"`` (the cmap lists it but
maps it to glyph 0 — fontTools drops such entries when it decompiles a cmap, so the raw
subtable is read for them),
``"empty-outline"`` (the glyph has no contours or components — a space; read with fontTools:
glyf ``numberOfContours == 0`` or a CFF charstring without bounds), ``"zero-ink"`` (an outline
exists but nothing is left after binarising at the requested size), ``"render-error"``
(FreeType fails on the glyph: a damaged outline or hinting program — :meth:`GlyphRenderer.render`
raises :class:`FontError` naming the font file and the code point, and
:meth:`GlyphRenderer.render_or_reason` marks the glyph unrenderable instead). The outline check is
only needed, and only made, when the image came out blank; results are cached per glyph. A
user's font is checked when it is added (:func:`check_renderable`: every glyph drawn small), so
a damaged one is refused then, not at render time.

Batch rendering (:func:`render_batch`) runs in worker processes started with the
``forkserver`` method (``spawn`` where there is none): forking the studio itself would copy a
process that runs Qt threads, which can deadlock the child; the fork server is a clean, single
threaded process started once per session, with this module preloaded, so later pools start
in a few tens of milliseconds. Each worker keeps one :class:`GlyphRenderer` per font.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import multiprocessing
import struct
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from concurrent.futures import (
    FIRST_COMPLETED,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import platformdirs
from fontTools.ttLib import TTFont, TTLibError
from PIL import Image, ImageDraw, ImageFont

from studio.core.errors import FontError
from studio.core.fileio import atomic_write_bytes
from studio.core.procs import pool_context, pool_worker_start, usable_cores

__all__ = [
    "EMPTY_OUTLINE",
    "FONT_SIZE",
    "MARGIN",
    "MASTER_SIZE",
    "MISSING_REASONS",
    "NOTDEF",
    "NOT_IN_CMAP",
    "RENDER_ERROR",
    "THRESHOLD",
    "ZERO_INK",
    "BatchEvent",
    "GlyphRenderer",
    "RenderCache",
    "RenderJob",
    "RenderResult",
    "check_renderable",
    "default_render_cache_dir",
    "render_batch",
    "render_glyph",
]

MASTER_SIZE = 500
FONT_SIZE = 400
MARGIN = 10
THRESHOLD = 128
DEFAULT_SIZE = 80

NOT_IN_CMAP = "not-in-cmap"
NOTDEF = "notdef"
EMPTY_OUTLINE = "empty-outline"
ZERO_INK = "zero-ink"
#: FreeType could not draw the glyph (a damaged outline or hinting program): the glyph is
#: unrenderable in this font; :meth:`GlyphRenderer.render` raises FontError naming it.
RENDER_ERROR = "render-error"
MISSING_REASONS = (NOT_IN_CMAP, NOTDEF, EMPTY_OUTLINE, ZERO_INK, RENDER_ERROR)
#: What FreeType (through Pillow) raises for a damaged glyph: "invalid outline", "invalid
#: opcode", "raster overflow", "invalid reference", a division by zero in its scaler...
_FREETYPE_ERRORS = (OSError, ValueError, ZeroDivisionError, OverflowError)

_FIT_LIMIT = MASTER_SIZE - 2 * MARGIN
_SMALL_FONT_CACHE = 64  # reduced-size fonts kept per renderer (overflowing glyphs)
_MIN_POOLED_JOBS = 256  # fewer glyphs render faster in-process than a pool starts


def _block_period(size: int) -> tuple[int, int] | None:
    """(a, b): ``a`` master pixels map onto exactly ``b`` output pixels, if the crop is exact.

    Only when 500/size is a binary fraction are Pillow's BOX coefficients computed exactly, so
    that drawing and resizing one aligned region gives the same bytes as the whole canvas.
    """
    ratio = Fraction(MASTER_SIZE, size)
    a, b = ratio.numerator, ratio.denominator
    if b & (b - 1) or a >= MASTER_SIZE:
        return None
    return a, b


# fontTools' getBestCmap order: the subtable whose mapping we report on.
_CMAP_PREFERENCE = ((3, 10), (0, 6), (0, 4), (3, 1), (0, 3), (0, 2), (0, 1), (0, 0))


def _cmap_zero_entries(raw: bytes) -> frozenset[int]:
    """Code points that the preferred Unicode cmap subtable lists but maps to glyph 0.

    fontTools drops such entries when it decompiles a cmap (glyph 0 means "missing"), so
    they look exactly like unlisted code points; this reads the raw subtable (formats 4, 6,
    12, 13) to tell "the font claims the character but gives it .notdef" apart.
    """
    try:
        count = struct.unpack_from(">H", raw, 2)[0]
        records: dict[tuple[int, int], int] = {}
        for i in range(count):
            pid, eid, offset = struct.unpack_from(">HHL", raw, 4 + 8 * i)
            records.setdefault((pid, eid), offset)
        off = next((records[k] for k in _CMAP_PREFERENCE if k in records), None)
        if off is None:
            return frozenset()
        fmt = struct.unpack_from(">H", raw, off)[0]
        zero: set[int] = set()
        if fmt == 4:
            seg = struct.unpack_from(">H", raw, off + 6)[0] // 2
            ends = struct.unpack_from(f">{seg}H", raw, off + 14)
            starts = struct.unpack_from(f">{seg}H", raw, off + 16 + 2 * seg)
            deltas = struct.unpack_from(f">{seg}H", raw, off + 16 + 4 * seg)
            ro_at = off + 16 + 6 * seg
            offsets = struct.unpack_from(f">{seg}H", raw, ro_at)
            for i in range(seg):
                if starts[i] == 0xFFFF:
                    continue
                for c in range(starts[i], ends[i] + 1):
                    if offsets[i] == 0:
                        gid = (c + deltas[i]) & 0xFFFF
                    else:
                        at = ro_at + 2 * i + offsets[i] + 2 * (c - starts[i])
                        if at + 2 > len(raw):
                            continue
                        gid = struct.unpack_from(">H", raw, at)[0]
                        gid = (gid + deltas[i]) & 0xFFFF if gid else 0
                    if gid == 0:
                        zero.add(c)
        elif fmt == 6:
            first, n = struct.unpack_from(">HH", raw, off + 6)
            ids = struct.unpack_from(f">{n}H", raw, off + 10)
            zero.update(first + i for i, gid in enumerate(ids) if gid == 0)
        elif fmt in (12, 13):
            n = struct.unpack_from(">L", raw, off + 12)[0]
            for i in range(n):
                start, end, gid = struct.unpack_from(">3L", raw, off + 16 + 12 * i)
                if gid == 0:
                    zero.update(range(start, end + 1) if fmt == 13 else (start,))
        return frozenset(zero)
    except struct.error:
        return frozenset()  # a damaged subtable: fontTools' reading stands


def _check_size(size: int) -> int:
    if not isinstance(size, int) or not 1 <= size <= MASTER_SIZE:
        raise ValueError(f"size must be an integer from 1 to {MASTER_SIZE}, not {size!r}")
    return size


class GlyphRenderer:
    """Renders the code points of one font face; loads the font once.

    Not thread-safe (FreeType faces are not): use one renderer per thread or process.
    """

    def __init__(self, font_path: str | Path, index: int = 0) -> None:
        self.path = Path(font_path)
        self.index = index
        try:
            self._data = self.path.read_bytes()
        except OSError as e:
            raise FontError(f"cannot be read ({e.strerror or e})", self.path) from e
        try:
            self._font = ImageFont.truetype(
                io.BytesIO(self._data),
                FONT_SIZE,
                index=index,
                layout_engine=ImageFont.Layout.BASIC,
            )
        except _FREETYPE_ERRORS as e:
            raise FontError(f"cannot be opened for rendering ({e})", self.path) from e
        self._small: OrderedDict[int, ImageFont.FreeTypeFont] = OrderedDict()
        self._sha256: str | None = None
        self._tt: TTFont | None = None
        self._mapped: frozenset[int] | None = None
        self._to_notdef: frozenset[int] = frozenset()
        self._cmap: dict[int, str] = {}
        self._empty: dict[str, bool] = {}
        self._glyf: tuple[Any, bytes] | None = None
        self._zero_entries: frozenset[int] | None = None

    # ---- identity and fontTools facts (loaded lazily, once)

    @property
    def sha256(self) -> str:
        """The face's cache identity, equal to ``FontInfo.sha256`` for the same face."""
        if self._sha256 is None:
            digest = hashlib.sha256(self._data).hexdigest()
            collection = self._data[:4] == b"ttcf" or self.path.suffix.lower() in (".ttc", ".otc")
            self._sha256 = f"{digest}#{self.index}" if collection else digest
        return self._sha256

    def _load_cmap(self) -> None:
        try:
            # From memory: no file handle stays open for the renderer's lifetime.
            tt = TTFont(io.BytesIO(self._data), fontNumber=self.index, lazy=True)
            cmap = tt.getBestCmap()
            if cmap is None:
                table = tt["cmap"].getcmap(3, 0) if "cmap" in tt else None
                cmap = table.cmap if table is not None else {}
            notdef = tt.getGlyphOrder()[0]
        except (
            TTLibError,
            OSError,
            struct.error,
            AssertionError,
            KeyError,
            ValueError,
            EOFError,
            IndexError,
            TypeError,
        ) as e:
            raise FontError(f"cannot read the character map ({e})", self.path) from e
        self._tt = tt
        self._cmap = cmap
        self._mapped = frozenset(cp for cp, name in cmap.items() if name != notdef)
        self._to_notdef = frozenset(cp for cp, name in cmap.items() if name == notdef)
        self._zero_entries = None

    def _is_notdef(self, cp: int) -> bool:
        if cp in self._to_notdef:
            return True
        if self._zero_entries is None:
            tt = self._tt
            # The raw bytes: getTableData would recompile the loaded table without them.
            raw = tt.reader["cmap"] if tt is not None and "cmap" in tt.reader else b""
            self._zero_entries = _cmap_zero_entries(raw)
        return cp in self._zero_entries

    def in_cmap(self, cp: int) -> bool:
        """True when the font's best Unicode cmap maps ``cp`` to a real glyph (not glyph 0)."""
        if self._mapped is None:
            self._load_cmap()
        assert self._mapped is not None
        return cp in self._mapped

    def _outline_is_empty(self, cp: int) -> bool:
        name = self._cmap[cp]
        known = self._empty.get(name)
        if known is not None:
            return known
        tt = self._tt
        assert tt is not None
        empty = False
        try:
            if "glyf" in tt:
                # Read the glyph's header straight from the raw table: decompiling `glyf`
                # would split every glyph of the font (~30 ms for Symbola) for one answer.
                if self._glyf is None:
                    self._glyf = (tt["loca"], tt.reader["glyf"])
                loca, raw = self._glyf
                gid = tt.getGlyphID(name)
                start, end = loca[gid], loca[gid + 1]
                empty = end <= start or struct.unpack_from(">h", raw, start)[0] == 0
            elif "CFF " in tt or "CFF2" in tt:
                tag = "CFF " if "CFF " in tt else "CFF2"
                charstrings = tt[tag].cff.topDictIndex[0].CharStrings
                empty = charstrings[name].calcBounds(charstrings) is None
        except (
            KeyError, TTLibError, struct.error, AssertionError, IndexError, ValueError,
            EOFError, AttributeError, TypeError,
        ):  # fmt: skip
            empty = False  # cannot tell (a damaged table): let the ink decide ("zero-ink")
        self._empty[name] = empty
        return empty

    # ---- rasterising

    def _font_at(self, size: int) -> ImageFont.FreeTypeFont:
        font = self._small.get(size)
        if font is None:
            font = self._font.font_variant(size=size)
            self._small[size] = font
            if len(self._small) > _SMALL_FONT_CACHE:
                self._small.popitem(last=False)
        else:
            self._small.move_to_end(size)
        return font

    def _mask(self, cp: int) -> tuple[Any, int, int]:
        """The glyph's coverage mask and where its top-left goes on the master canvas.
        Raises FontError naming the file and the code point when FreeType cannot draw it."""
        try:
            return self._mask_unchecked(cp)
        except _FREETYPE_ERRORS as e:
            raise FontError(
                f"cannot draw U+{cp:04X}: {type(e).__name__}: {e} (the glyph is damaged)",
                self.path,
            ) from e

    def _mask_unchecked(self, cp: int) -> tuple[Any, int, int]:
        ch = chr(cp)
        font = self._font
        mask, _ = font.getmask2(ch, "L", anchor="la", start=(0.0, 0.0), stroke_filled=True)
        w, h = mask.size
        if w > _FIT_LIMIT or h > _FIT_LIMIT:
            size = max(1, FONT_SIZE * _FIT_LIMIT // max(w, h))
            while True:
                font = self._font_at(size)
                mask, _ = font.getmask2(ch, "L", anchor="la", start=(0.0, 0.0), stroke_filled=True)
                w, h = mask.size
                if (w <= _FIT_LIMIT and h <= _FIT_LIMIT) or size == 1:
                    break
                size -= 1
        return mask, (MASTER_SIZE - w) // 2, (MASTER_SIZE - h) // 2

    def master(self, cp: int) -> Image.Image:
        """The 500×500 master image (mode ``L``) of ``cp``, drawn whether or not it is missing."""
        mask, x, y = self._mask(cp)
        canvas = Image.new("L", (MASTER_SIZE, MASTER_SIZE), 255)
        if mask.size[0] and mask.size[1]:
            ImageDraw.Draw(canvas).draw.draw_bitmap((x, y), mask, 0)
        return canvas

    def render(self, cp: int, size: int = DEFAULT_SIZE) -> np.ndarray:
        """The binarised ``size``×``size`` image (uint8, 0 = ink, 255 = paper).

        Draws whatever FreeType draws, even for a missing glyph (usually the .notdef box);
        use :meth:`missing_reason` or :meth:`render_or_reason` to tell.
        """
        _check_size(size)
        period = _block_period(size)
        mask, x, y = self._mask(cp)
        w, h = mask.size
        out = np.full((size, size), 255, dtype=np.uint8)
        if not (w and h):
            return out
        canvas = Image.new("L", (MASTER_SIZE, MASTER_SIZE), 255)
        ImageDraw.Draw(canvas).draw.draw_bitmap((x, y), mask, 0)
        if period is None:
            out[np.asarray(canvas.resize((size, size), Image.Resampling.BOX)) < THRESHOLD] = 0
            return out
        a = period[0]
        x0, y0 = x // a * a, y // a * a
        x1, y1 = -(-(x + w) // a) * a, -(-(y + h) // a) * a
        ox, oy = x0 * size // MASTER_SIZE, y0 * size // MASTER_SIZE
        small_w, small_h = (x1 - x0) * size // MASTER_SIZE, (y1 - y0) * size // MASTER_SIZE
        small = canvas.resize((small_w, small_h), Image.Resampling.BOX, box=(x0, y0, x1, y1))
        region = out[oy : oy + small_h, ox : ox + small_w]
        region[np.asarray(small) < THRESHOLD] = 0
        return out

    def render_or_reason(
        self, cp: int, size: int = DEFAULT_SIZE
    ) -> tuple[np.ndarray | None, str | None]:
        """``(image, None)`` for a glyph that shows, ``(None, reason)`` for a missing one.

        One rasterisation at most: the cmap checks come first, the outline check only when the
        image is blank (an empty outline cannot leave ink).
        """
        _check_size(size)
        if not self.in_cmap(cp):
            return None, NOTDEF if self._is_notdef(cp) else NOT_IN_CMAP
        try:
            image = self.render(cp, size)
        except FontError as e:
            if not isinstance(e.__cause__, _FREETYPE_ERRORS):
                raise
            return None, RENDER_ERROR
        if image.min() == 255:
            return None, EMPTY_OUTLINE if self._outline_is_empty(cp) else ZERO_INK
        return image, None

    def missing_reason(self, cp: int, size: int = DEFAULT_SIZE) -> str | None:
        """Why ``cp`` would not show in this font at ``size`` (see module docstring), or None."""
        return self.render_or_reason(cp, size)[1]

    def close(self) -> None:
        """Drop the fontTools tables (they are reloaded if the renderer is used again)."""
        if self._tt is not None:
            self._tt.close()
        self._tt = None
        self._mapped = None
        self._glyf = None

    def __enter__(self) -> GlyphRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_renderable(
    font_path: str | Path,
    cps: Iterable[int],
    index: int = 0,
    *,
    size: int = 32,
    limit: int = 20_000,
) -> None:
    """Draw every code point of ``cps`` (evenly sampled down to ``limit``) at ``size`` pixels
    with FreeType, as the renderer would; raise FontError naming the file and the first code
    point it cannot draw. About 25,000 glyphs a second: for checking a font when it is added,
    so a damaged one is refused then rather than accepted and failing at render time."""
    path = Path(font_path)
    chosen = sorted(set(cps))
    if len(chosen) > limit:
        step = len(chosen) / limit
        chosen = [chosen[int(i * step)] for i in range(limit)]
    try:
        data = path.read_bytes()
        font = ImageFont.truetype(
            io.BytesIO(data), size, index=index, layout_engine=ImageFont.Layout.BASIC
        )
    except _FREETYPE_ERRORS as e:
        raise FontError(f"cannot be opened for rendering ({e})", path) from e
    for cp in chosen:
        try:
            font.getmask2(chr(cp), "L", anchor="la", start=(0.0, 0.0), stroke_filled=True)
        except _FREETYPE_ERRORS as e:
            raise FontError(
                f"cannot draw U+{cp:04X}: {type(e).__name__}: {e} (the font is damaged)", path
            ) from e


def render_glyph(
    font_path: str | Path, cp: int, size: int = DEFAULT_SIZE, index: int = 0
) -> np.ndarray:
    """One binarised glyph image; loads the font each call — use GlyphRenderer for many."""
    _check_size(size)
    renderer = GlyphRenderer(font_path, index)
    try:
        return renderer.render(cp, size)
    finally:
        renderer.close()


# --------------------------------------------------------------------------- the render cache


def default_render_cache_dir() -> Path:
    """Where rendered glyphs are cached unless told otherwise."""
    return Path(platformdirs.user_cache_dir("analogy-studio")) / "renders"


_CACHE_READ_ERRORS = (OSError, SyntaxError, ValueError, EOFError, struct.error, zlib.error)


class RenderCache:
    """Rendered glyphs on disk, keyed by (font face sha256, code point, size).

    Layout: ``root/<sha[:2]>/<sha>/<size>/<CP hex>.png`` (1-bit PNG) for an image and
    ``<CP hex>.missing`` (JSON ``{"reason": ...}``) for a missing verdict; a ``#`` in a
    collection face's sha256 becomes ``-`` in the folder name. Every file is written atomically,
    so readers never see half a file; a file that is corrupt anyway (disk trouble, a foreign
    file) reads as a miss and is overwritten by the next put. Safe to share between processes.
    """

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_render_cache_dir()

    def folder(self, sha256: str, size: int) -> Path:
        safe = sha256.replace("#", "-").replace("/", "_")
        return self.root / safe[:2] / safe / str(size)

    def image_path(self, sha256: str, cp: int, size: int) -> Path:
        return self.folder(sha256, size) / f"{cp:04X}.png"

    def missing_path(self, sha256: str, cp: int, size: int) -> Path:
        return self.folder(sha256, size) / f"{cp:04X}.missing"

    def get(self, sha256: str, cp: int, size: int) -> np.ndarray | None:
        """The cached image, or None when absent or unreadable (a corrupt file is a miss)."""
        try:
            with Image.open(self.image_path(sha256, cp, size)) as im:
                if im.format != "PNG" or im.size != (size, size) or im.mode not in ("1", "L"):
                    return None
                arr = np.asarray(im.convert("L"))
        except FileNotFoundError:
            return None
        except _CACHE_READ_ERRORS:
            return None
        if im.mode == "L" and not np.isin(arr, (0, 255)).all():
            return None
        return np.ascontiguousarray(arr, dtype=np.uint8)

    def put(self, sha256: str, cp: int, size: int, image: np.ndarray) -> None:
        """Store a binarised image (uint8, 0/255) as a 1-bit PNG, atomically."""
        if image.shape != (size, size) or image.dtype != np.uint8:
            raise ValueError(
                f"expected a {size}×{size} uint8 image, got {image.shape} {image.dtype}"
            )
        buf = io.BytesIO()
        Image.fromarray(image, "L").convert("1", dither=Image.Dither.NONE).save(buf, "PNG")
        atomic_write_bytes(self.image_path(sha256, cp, size), buf.getvalue())
        with contextlib.suppress(FileNotFoundError):
            self.missing_path(sha256, cp, size).unlink()

    def get_missing(self, sha256: str, cp: int, size: int) -> str | None:
        """The cached missing-glyph reason, or None when no (readable) verdict is cached."""
        try:
            reason = json.loads(self.missing_path(sha256, cp, size).read_bytes())["reason"]
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return reason if reason in MISSING_REASONS else None

    def put_missing(self, sha256: str, cp: int, size: int, reason: str) -> None:
        """Remember that the glyph is missing, so it is not rendered again."""
        if reason not in MISSING_REASONS:
            raise ValueError(f"unknown reason {reason!r}; expected one of {MISSING_REASONS}")
        data = json.dumps({"reason": reason}).encode("utf-8")
        atomic_write_bytes(self.missing_path(sha256, cp, size), data)

    def lookup(self, sha256: str, cp: int, size: int) -> np.ndarray | str | None:
        """The cached image, else the cached missing reason, else None (render it)."""
        image = self.get(sha256, cp, size)
        if image is not None:
            return image
        return self.get_missing(sha256, cp, size)


# --------------------------------------------------------------------------- batch rendering


class RenderJob(NamedTuple):
    """One glyph to render: the face (path, index, sha256 for the cache) and the code point."""

    font_path: str | Path
    index: int
    sha256: str
    codepoint: int


@dataclass(frozen=True, slots=True)
class RenderResult:
    """The outcome for one job: an image, or the reason the glyph is missing."""

    job: RenderJob
    image: np.ndarray | None
    missing: str | None
    from_cache: bool = False


class BatchEvent(NamedTuple):
    """Progress of :func:`render_batch`: ``done`` of ``total`` jobs, and this chunk's results."""

    done: int
    total: int
    results: list[RenderResult]


_FaceKey = tuple[str, int]

# Per-process state of batch workers (and of in-process batches): one renderer per face.
_worker_renderers: dict[_FaceKey, GlyphRenderer] = {}
_worker_cache: RenderCache | None = None


def _init_worker(cache_root: str | None) -> None:
    """Pool initializer: remember the cache; fonts are then loaded once per process on demand."""
    global _worker_cache
    pool_worker_start()
    _worker_cache = RenderCache(cache_root) if cache_root is not None else None


def _renderer_for(renderers: dict[_FaceKey, GlyphRenderer], path: str, index: int) -> GlyphRenderer:
    key = (path, index)
    renderer = renderers.get(key)
    if renderer is None:
        renderer = renderers[key] = GlyphRenderer(path, index)
    return renderer


def _render_cps(
    renderer: GlyphRenderer, sha256: str, cps: list[int], size: int, cache: RenderCache | None
) -> tuple[list[str | None], np.ndarray]:
    """Render a chunk: reasons (None = rendered) and the rendered images stacked, in order."""
    reasons: list[str | None] = []
    images: list[np.ndarray] = []
    for cp in cps:
        image, reason = renderer.render_or_reason(cp, size)
        reasons.append(reason)
        if image is not None:
            images.append(image)
    if cache is not None:
        _write_cache(cache, sha256, cps, size, reasons, images)
    stack = np.stack(images) if images else np.zeros((0, size, size), dtype=np.uint8)
    return reasons, stack


def _write_cache(
    cache: RenderCache,
    sha256: str,
    cps: list[int],
    size: int,
    reasons: list[str | None],
    images: list[np.ndarray],
) -> None:
    """Write a chunk's results; a few threads overlap the per-file fsyncs."""
    it = iter(images)
    tasks: list[tuple[Any, ...]] = []
    for cp, reason in zip(cps, reasons, strict=True):
        if reason is None:
            tasks.append((cache.put, sha256, cp, size, next(it)))
        else:
            tasks.append((cache.put_missing, sha256, cp, size, reason))
    with ThreadPoolExecutor(max_workers=4) as pool:
        for future in [pool.submit(*task) for task in tasks]:
            with contextlib.suppress(OSError):  # an unwritable cache costs speed only
                future.result()


_ChunkOutcome = tuple[list[str | None], np.ndarray] | tuple[str, str | None]


def _work_chunk(
    font_path: str, index: int, sha256: str, cps: list[int], size: int
) -> _ChunkOutcome:
    """Worker-process entry point: the chunk's results, or ``(problem, path)`` of a FontError.

    FontError is returned rather than raised because exceptions cross the process boundary by
    pickling their message alone, which would lose the error's ``path``.
    """
    try:
        renderer = _renderer_for(_worker_renderers, font_path, index)
        return _render_cps(renderer, sha256, cps, size, _worker_cache)
    except FontError as e:
        return e.problem, e.path


def _mp_context() -> multiprocessing.context.BaseContext:
    # workers fork with Pillow, numpy and fontTools already imported
    return pool_context(["studio.glyphs.render"])


def _results(
    chunk: list[RenderJob], reasons: list[str | None], stack: np.ndarray
) -> list[RenderResult]:
    out: list[RenderResult] = []
    k = 0
    for job, reason in zip(chunk, reasons, strict=True):
        if reason is None:
            out.append(RenderResult(job, stack[k], None))
            k += 1
        else:
            out.append(RenderResult(job, None, reason))
    return out


def _chunks(jobs: list[RenderJob], chunk_size: int) -> list[list[RenderJob]]:
    by_face: dict[tuple[str, int, str], list[RenderJob]] = {}
    for job in jobs:
        by_face.setdefault((str(job.font_path), job.index, job.sha256), []).append(job)
    chunks: list[list[RenderJob]] = []
    for face_jobs in by_face.values():
        for start in range(0, len(face_jobs), chunk_size):
            chunks.append(face_jobs[start : start + chunk_size])
    return chunks


def render_batch(
    jobs: Iterable[RenderJob],
    size: int = DEFAULT_SIZE,
    cache: RenderCache | None = None,
    workers: int | None = None,
    chunk_size: int | None = None,
) -> Iterator[BatchEvent]:
    """Render many glyphs on all cores, yielding a :class:`BatchEvent` as each chunk completes.

    Cached glyphs (images and missing verdicts) are served from ``cache`` first without
    rendering; the rest are grouped by face into chunks (64–256 code points unless
    ``chunk_size`` says otherwise) and rendered in worker processes. ``workers`` defaults to
    the cores this process may use (:func:`studio.core.procs.usable_cores`: a container's or
    ``taskset``'s limit, not the machine's count), except that fewer than 256 glyphs are
    rendered in this process (a pool costs more than they do); ``workers=1``, or a single
    chunk, always renders in this process.
    Fresh results are written to the cache by whoever rendered them. Within an event, results
    keep job order; events arrive in completion order. Images are byte-identical to
    :meth:`GlyphRenderer.render`.

    This is a generator: closing it (``close()``, or dropping it) cancels pending chunks and
    shuts the pool down, waiting at most for the chunks already running. It may be driven
    from any thread (the GUI runs it in a worker thread); events are produced on that thread.
    Font errors are raised as :class:`FontError` from the generator.
    """
    _check_size(size)
    jobs = list(jobs)
    total = len(jobs)
    done = 0
    pending: list[RenderJob] = []
    if cache is not None:
        hits: list[RenderResult] = []
        for job in jobs:
            found = cache.lookup(job.sha256, job.codepoint, size)
            if found is None:
                pending.append(job)
                continue
            if isinstance(found, str):
                hits.append(RenderResult(job, None, found, True))
            else:
                hits.append(RenderResult(job, found, None, True))
            if len(hits) >= 256:
                done += len(hits)
                yield BatchEvent(done, total, hits)
                hits = []
        if hits:
            done += len(hits)
            yield BatchEvent(done, total, hits)
    else:
        pending = jobs
    if not pending:
        return

    if workers is not None:
        n_workers = max(1, workers)
    elif len(pending) < _MIN_POOLED_JOBS:
        n_workers = 1  # less work than starting a pool costs
    else:
        n_workers = usable_cores()  # the cores this process may use, not the machine's
    if chunk_size is None:
        chunk_size = min(256, max(64, -(-len(pending) // (n_workers * 8))))
    chunks = _chunks(pending, chunk_size)
    n_workers = min(n_workers, len(chunks))

    if n_workers == 1:
        renderers: dict[_FaceKey, GlyphRenderer] = {}
        try:
            for chunk in chunks:
                first = chunk[0]
                renderer = _renderer_for(renderers, str(first.font_path), first.index)
                cps = [job.codepoint for job in chunk]
                reasons, stack = _render_cps(renderer, first.sha256, cps, size, cache)
                done += len(chunk)
                yield BatchEvent(done, total, _results(chunk, reasons, stack))
        finally:
            for renderer in renderers.values():
                renderer.close()
        return

    pool = ProcessPoolExecutor(
        max_workers=n_workers,
        mp_context=_mp_context(),
        initializer=_init_worker,
        initargs=(str(cache.root) if cache is not None else None,),
    )
    futures: dict[Future[_ChunkOutcome], list[RenderJob]] = {}
    try:
        for chunk in chunks:
            first = chunk[0]
            future = pool.submit(
                _work_chunk,
                str(first.font_path),
                first.index,
                first.sha256,
                [job.codepoint for job in chunk],
                size,
            )
            futures[future] = chunk
        remaining = set(futures)
        while remaining:
            finished, remaining = wait(remaining, return_when=FIRST_COMPLETED)
            for future in finished:
                chunk = futures[future]
                outcome = future.result()
                if isinstance(outcome[0], str):
                    raise FontError(outcome[0], outcome[1])
                reasons, stack = outcome
                done += len(chunk)
                yield BatchEvent(done, total, _results(chunk, reasons, stack))
    finally:
        for future in futures:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
