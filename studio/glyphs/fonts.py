"""Installed and user-supplied fonts: which code points each covers, and which font stands in.

A font is identified by its *font id* (``symbola``, ``notosansbamumbold``): the normalised
family name plus the style when the style is not the regular one. Glyph keys carry that id
(``U+25CC@symbola``), so the id must come out the same on every machine that has the font,
whatever its file is called. The family and style are read from the font's ``name`` table —
the typographic names (IDs 16/17) when present, otherwise the legacy ones (IDs 1/2) — and the
file name is used only for a font that has no names at all.

Coverage comes from the font's best Unicode ``cmap`` subtable (fontTools' preference order),
falling back to a (3,0) "symbol" subtable for old symbol fonts.

``sha256`` identifies the *face* for the render cache: for a single-face file (.ttf/.otf) it is
the hex digest of the file's bytes; for a face inside a collection (.ttc/.otc) it is
``f"{digest}#{index}"`` — always, also for face 0 — because the faces of one file draw
different glyphs and must not share cached images.

Scanning ~300 fonts reads ~100 MB and takes about a second; :meth:`FontCatalog.scan` therefore
keeps one small JSON file per font file in a cache folder, keyed by the file's path and
validated by its size and modification time, so that a later scan only stats the files. A
font that cannot be read is cached as such too (it is reported again without re-reading).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs
from fontTools.ttLib import TTFont, TTLibError
from fontTools.ttLib.sfnt import readTTCHeader

from studio.core.errors import FontError
from studio.core.fileio import atomic_write_bytes
from studio.core.keys import normalise_font_id
from studio.glyphs.render import check_renderable
from studio.glyphs.unicode import blocks, is_private_use

__all__ = [
    "FONT_DIRS_ENV",
    "FONT_SUFFIXES",
    "SOURCES",
    "FontCatalog",
    "FontInfo",
    "default_font_cache_dir",
    "face_sha256",
    "font_id_for",
    "read_font",
    "system_font_dirs",
]

FONT_SUFFIXES = (".ttf", ".otf", ".ttc", ".otc")
COLLECTION_SUFFIXES = (".ttc", ".otc")
#: Font sources in priority order: when two faces get the same id, the earlier source wins.
SOURCES = ("project", "user", "system")
_SOURCE_RANK = {s: i for i, s in enumerate(SOURCES)}
_REGULAR_STYLES = ("Regular", "Book", "Normal", "")
_CACHE_VERSION = 1

ProgressCallback = Callable[[int, int, Path], None]


@dataclass(frozen=True)
class FontInfo:
    """One face of one font file, as the catalog knows it.

    ``id`` is what glyph keys use; ``sha256`` identifies the exact face for caches (see the
    module docstring for collections); ``source`` is ``"system"``, ``"user"`` or ``"project"``.
    """

    id: str
    family: str
    style: str
    path: Path
    index: int
    sha256: str
    num_codepoints: int
    source: str


def font_id_for(family: str, style: str) -> str:
    """The font id for a family and style: the style is appended unless it is the regular one."""
    style = style.strip()
    name = family if style in _REGULAR_STYLES else f"{family} {style}"
    return normalise_font_id(name)


def default_font_cache_dir() -> Path:
    """Where scans cache font coverage unless told otherwise."""
    return Path(platformdirs.user_cache_dir("analogy-studio")) / "fonts"


#: Folders (``os.pathsep``-separated) to take the system's fonts from instead of the usual
#: ones: a lab that wants its renders to depend on a chosen set of fonts only, and the suite
#: (tests/fontenv.py), which must not depend on the fonts a machine happens to have.
FONT_DIRS_ENV = "ANALOGY_STUDIO_FONT_DIRS"


def system_font_dirs() -> list[Path]:
    """The usual Linux font folders that exist on this machine, system ones first; only the
    folders ``ANALOGY_STUDIO_FONT_DIRS`` names when it is set."""
    chosen = os.environ.get(FONT_DIRS_ENV)
    if chosen is not None:
        return [Path(p) for p in chosen.split(os.pathsep) if p and Path(p).is_dir()]
    home = Path.home()
    candidates = [
        Path("/usr/share/fonts"),
        Path("/usr/local/share/fonts"),
        home / ".local" / "share" / "fonts",
        home / ".fonts",
    ]
    return [p for p in candidates if p.is_dir()]


# --------------------------------------------------------------------------- reading one file


def _runs(cps: np.ndarray) -> list[list[int]]:
    """Sorted code points as ``[start, length]`` runs: compact in JSON (a cmap is mostly runs)."""
    if cps.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(cps) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [cps.size]))
    return [[int(cps[s]), int(e - s)] for s, e in zip(starts, ends, strict=True)]


def _from_runs(runs: Sequence[Sequence[int]]) -> np.ndarray:
    if not runs:
        return np.zeros(0, dtype=np.uint32)
    return np.concatenate([np.arange(s, s + n, dtype=np.uint32) for s, n in runs])


def _face_names(tt: TTFont, path: Path) -> tuple[str, str]:
    family = style = None
    if "name" in tt:
        names = tt["name"]
        family = names.getDebugName(16) or names.getDebugName(1)
        style = names.getDebugName(17) or names.getDebugName(2)
    if not family:
        family = path.stem
    return family.strip(), (style or "Regular").strip()


def _best_cmap(tt: TTFont) -> dict[int, str]:
    cmap = tt.getBestCmap()
    if cmap is None:
        # Old symbol fonts only have a (3,0) subtable; its codes are what the font covers.
        table = tt["cmap"].getcmap(3, 0)
        cmap = table.cmap if table is not None else None
    if cmap is None:
        raise ValueError("has no Unicode character map (cmap subtable)")
    return cmap


def _check_table_bounds(tt: TTFont, size: int) -> None:
    reader = tt.reader
    if reader.flavor is not None:  # WOFF/WOFF2 tables are compressed; sizes differ
        return
    for tag, entry in reader.tables.items():
        end = entry.offset + entry.length
        if end > size:
            raise ValueError(
                f"truncated: table {str(tag).strip()!r} ends at byte {end:,} "
                f"but the file has only {size:,} bytes"
            )


def _read_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise FontError("is a folder, not a font file", path) from None
    except OSError as e:
        raise FontError(f"cannot be read ({e.strerror or e})", path) from e
    if not data:
        raise FontError("is an empty file, not a font", path)
    return data


def _face_count(data: bytes, path: Path) -> int:
    if data[:4] != b"ttcf":
        return 1
    try:
        header = readTTCHeader(io.BytesIO(data))
    except (TTLibError, AssertionError, struct.error) as e:
        raise FontError(f"is a damaged font collection ({e})", path) from e
    return int(getattr(header, "numFonts2", header.numFonts))


def _read_face(
    data: bytes, digest: str, path: Path, index: int, collection: bool, source: str
) -> tuple[FontInfo, np.ndarray]:
    """Parse one face from the file's bytes; every failure becomes a FontError naming ``path``."""
    where = f"face {index}: " if collection else ""
    try:
        tt = TTFont(io.BytesIO(data), fontNumber=index, lazy=True)
    except TTLibError as e:
        text = str(e)
        if "not enough data" in text:
            raise FontError(f"{where}truncated ({text})", path) from e
        if "bad sfntVersion" in text or "Not a Font Collection" in text:
            raise FontError("is not a font file (no TrueType/OpenType header)", path) from e
        raise FontError(f"{where}cannot be read as a font ({text})", path) from e
    except (struct.error, AssertionError, EOFError, ValueError, KeyError, IndexError) as e:
        raise FontError(f"{where}is damaged ({type(e).__name__}: {e})", path) from e
    try:
        _check_table_bounds(tt, len(data))
        if "cmap" not in tt:
            raise ValueError("has no character map (cmap table)")
        cmap = _best_cmap(tt)
        family, style = _face_names(tt, path)
    except ValueError as e:
        raise FontError(f"{where}{e}", path) from e
    except (TTLibError, struct.error, AssertionError, EOFError, KeyError, IndexError) as e:
        raise FontError(f"{where}is damaged ({type(e).__name__}: {e})", path) from e
    finally:
        tt.close()
    cps = np.array(sorted(cmap), dtype=np.uint32)
    info = FontInfo(
        id=font_id_for(family, style),
        family=family,
        style=style,
        path=path,
        index=index,
        sha256=f"{digest}#{index}" if collection else digest,
        num_codepoints=int(cps.size),
        source=source,
    )
    return info, cps


def _is_collection(path: Path, data: bytes) -> bool:
    return data[:4] == b"ttcf" or path.suffix.lower() in COLLECTION_SUFFIXES


def _read_faces(path: Path, source: str) -> list[tuple[FontInfo, np.ndarray]]:
    """Every face of the file at ``path`` with its sorted code points; raises FontError."""
    data = _read_bytes(path)
    digest = hashlib.sha256(data).hexdigest()
    collection = _is_collection(path, data)
    count = _face_count(data, path)
    return [_read_face(data, digest, path, i, collection, source) for i in range(count)]


def face_sha256(path: str | Path, index: int = 0) -> str:
    """The ``sha256`` a :class:`FontInfo` for this face would carry (see the module docstring)."""
    path = Path(path)
    data = _read_bytes(path)
    digest = hashlib.sha256(data).hexdigest()
    return f"{digest}#{index}" if _is_collection(path, data) else digest


def read_font(
    path: str | Path, index: int = 0, source: str = "user"
) -> tuple[FontInfo, frozenset[int]]:
    """Read one face: its identity and the code points its best Unicode cmap covers.

    Raises :class:`FontError` naming the file and the problem: empty file, not a font,
    truncated, damaged, no cmap, or a face index the collection doesn't have.
    """
    if source not in _SOURCE_RANK:
        raise ValueError(f"source must be one of {SOURCES}, not {source!r}")
    path = Path(path)
    data = _read_bytes(path)
    count = _face_count(data, path)
    if not 0 <= index < count:
        raise FontError(f"has no face {index} (it has {count})", path)
    digest = hashlib.sha256(data).hexdigest()
    info, cps = _read_face(data, digest, path, index, _is_collection(path, data), source)
    return info, frozenset(cps.tolist())


# --------------------------------------------------------------------------- the disk cache


class _CoverageCache:
    """One JSON file per font file: ``<sha1 of the path>.json``, validated by size + mtime."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def _file(self, path: Path) -> Path:
        assert self.root is not None
        return self.root / (hashlib.sha1(str(path).encode("utf-8")).hexdigest() + ".json")

    def load(self, path: Path, stat: os.stat_result, source: str) -> Any:
        """The cached faces (list) or FontError, or None when absent, stale or unreadable."""
        if self.root is None:
            return None
        try:
            entry = json.loads(self._file(path).read_bytes())
            if (
                entry.get("version") != _CACHE_VERSION
                or entry["path"] != str(path)
                or entry["size"] != stat.st_size
                or entry["mtime_ns"] != stat.st_mtime_ns
            ):
                return None
            if entry.get("error") is not None:
                return FontError(entry["error"], path)
            faces = []
            for face in entry["faces"]:
                cps = _from_runs(face["runs"])
                info = FontInfo(
                    id=font_id_for(face["family"], face["style"]),
                    family=face["family"],
                    style=face["style"],
                    path=path,
                    index=int(face["index"]),
                    sha256=face["sha256"],
                    num_codepoints=int(cps.size),
                    source=source,
                )
                faces.append((info, cps))
            return faces
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or corrupt entry: read the font again

    def store(
        self,
        path: Path,
        stat: os.stat_result,
        result: list[tuple[FontInfo, np.ndarray]] | FontError,
    ) -> None:
        if self.root is None:
            return
        entry: dict[str, Any] = {
            "version": _CACHE_VERSION,
            "path": str(path),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
        }
        if isinstance(result, FontError):
            entry["error"] = result.problem
        else:
            entry["faces"] = [
                {
                    "family": info.family,
                    "style": info.style,
                    "index": info.index,
                    "sha256": info.sha256,
                    "runs": _runs(cps),
                }
                for info, cps in result
            ]
        # A read-only cache folder only costs speed, never correctness.
        with contextlib.suppress(OSError):
            atomic_write_bytes(self._file(path), json.dumps(entry).encode("utf-8"))


# --------------------------------------------------------------------------- the catalog


def _priority(info: FontInfo) -> tuple[int, str, int]:
    return (_SOURCE_RANK.get(info.source, len(SOURCES)), str(info.path), info.index)


def _walk_font_files(dirs: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for root in dirs:
        root = Path(root)
        if root.is_file():
            found.append(root)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                if name.lower().endswith(FONT_SUFFIXES):
                    found.append(Path(dirpath) / name)
    return found


class FontCatalog:
    """The fonts a session can render with, their coverage, and substitution between them.

    Faces are identified by font id. When two faces get the same id, the one first in
    priority order wins — project files, then user files, then system files; within a
    source, path order, then face index — and the others are kept in :attr:`shadowed`.
    Fonts that could not be read are listed in :attr:`errors`; they never stop a scan.

    Not thread-safe for concurrent mutation (:meth:`add_file`); reads may be shared once
    built.
    """

    def __init__(self, cache_dir: Path | None = None) -> None:
        self.errors: list[FontError] = []
        self.shadowed: list[FontInfo] = []
        self._cache = _CoverageCache(cache_dir)
        self._faces: list[tuple[FontInfo, np.ndarray]] = []  # every face read, any order
        self._by_id: dict[str, FontInfo] = {}
        self._cps: dict[str, np.ndarray] = {}
        self._frozen: dict[str, frozenset[int]] = {}
        self._index: tuple[np.ndarray, np.ndarray, list[str]] | None = None

    # ---- building

    @classmethod
    def scan(
        cls,
        dirs: Iterable[str | Path] | None = None,
        extra_files: Iterable[str | Path | tuple[str | Path, str]] = (),
        cache_dir: str | Path | None = None,
        progress: ProgressCallback | None = None,
        *,
        use_cache: bool = True,
    ) -> FontCatalog:
        """Build a catalog from font folders (source ``"system"``) and extra files.

        ``dirs`` defaults to :func:`system_font_dirs`. ``extra_files`` are paths (source
        ``"user"``) or ``(path, source)`` pairs. Collections contribute all their faces.
        ``progress(done, total, path)`` is called after each file, on the calling thread.
        Coverage is cached under ``cache_dir`` (default :func:`default_font_cache_dir`);
        ``use_cache=False`` reads every file.
        """
        cache_root: Path | None = None
        if use_cache:
            cache_root = Path(cache_dir) if cache_dir is not None else default_font_cache_dir()
        catalog = cls(cache_root)
        planned: list[tuple[Path, str]] = []
        for item in extra_files:
            if isinstance(item, tuple):
                path, source = item
            else:
                path, source = item, "user"
            if source not in _SOURCE_RANK:
                raise ValueError(f"source must be one of {SOURCES}, not {source!r}")
            planned.append((Path(path), source))
        font_dirs = system_font_dirs() if dirs is None else [Path(d) for d in dirs]
        planned.extend((p, "system") for p in _walk_font_files(font_dirs))

        # The same file reached twice (a symlink, or an extra file inside a scanned folder)
        # counts once, with its highest-priority source.
        seen: dict[Path, int] = {}
        unique: list[tuple[Path, str]] = []
        for path, source in planned:
            try:
                real = path.resolve()
            except OSError:
                real = path
            if real in seen:
                j = seen[real]
                if _SOURCE_RANK[source] < _SOURCE_RANK[unique[j][1]]:
                    unique[j] = (unique[j][0], source)
                continue
            seen[real] = len(unique)
            unique.append((path, source))

        total = len(unique)
        for done, (path, source) in enumerate(unique, start=1):
            result = catalog._load_file(path, source)
            if isinstance(result, FontError):
                catalog.errors.append(result)
            else:
                catalog._faces.extend(result)
            if progress is not None:
                progress(done, total, path)
        catalog._rebuild()
        return catalog

    def _load_file(self, path: Path, source: str) -> list[tuple[FontInfo, np.ndarray]] | FontError:
        try:
            stat = path.stat()
        except OSError as e:
            return FontError(f"cannot be read ({e.strerror or e})", path)
        cached = self._cache.load(path, stat, source)
        if cached is not None:
            return cached
        try:
            result: list[tuple[FontInfo, np.ndarray]] | FontError = _read_faces(path, source)
        except FontError as e:
            result = e
        self._cache.store(path, stat, result)
        return result

    def _rebuild(self) -> None:
        self._faces.sort(key=lambda face: _priority(face[0]))
        self._by_id = {}
        self._cps = {}
        self.shadowed = []
        for info, cps in self._faces:
            if info.id in self._by_id:
                self.shadowed.append(info)
            else:
                self._by_id[info.id] = info
                self._cps[info.id] = cps
        self._frozen = {}
        self._index = None

    def add_file(
        self, path: str | Path, source: str = "user", index: int | None = None
    ) -> FontInfo:
        """Add a font file (all faces, or only ``index``) and return the (first) added face.

        Raises :class:`FontError` when the file cannot be read or (for a user or project font)
        FreeType cannot draw one of its glyphs; the catalog is then unchanged.
        The returned face may be shadowed if a higher-priority face has the same id.
        """
        if source not in _SOURCE_RANK:
            raise ValueError(f"source must be one of {SOURCES}, not {source!r}")
        path = Path(path)
        result = self._load_file(path, source)
        if isinstance(result, FontError):
            raise result
        if index is not None:
            result = [face for face in result if face[0].index == index]
            if not result:
                raise FontError(f"has no face {index}", path)
        if source != "system":
            # a damaged glyph is refused now, naming its code point, not at render time
            for info, cps in result:
                check_renderable(path, cps.tolist(), info.index)
        present = {(str(i.path), i.index) for i, _ in self._faces}
        self._faces.extend(f for f in result if (str(f[0].path), f[0].index) not in present)
        self._rebuild()
        return result[0][0]

    # ---- queries

    @property
    def fonts(self) -> list[FontInfo]:
        """The winning face of every font id, sorted by id."""
        return [self._by_id[k] for k in sorted(self._by_id)]

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, font_id: object) -> bool:
        return font_id in self._by_id

    def get(self, font_id: str) -> FontInfo | None:
        """The face that renders ``font_id``, or None when no installed font has that id."""
        return self._by_id.get(font_id)

    def codepoints(self, font_id: str) -> frozenset[int]:
        """Every code point the font's cmap covers; KeyError naming the id when unknown."""
        frozen = self._frozen.get(font_id)
        if frozen is None:
            if font_id not in self._cps:
                raise KeyError(f"no font with id {font_id!r} in the catalog")
            frozen = frozenset(self._cps[font_id].tolist())
            self._frozen[font_id] = frozen
        return frozen

    def codepoint_array(self, font_id: str) -> np.ndarray:
        """The covered code points as a sorted uint32 array (read-only view; cheap)."""
        arr = self._cps[font_id].view()
        arr.flags.writeable = False
        return arr

    def covers(self, font_id: str, cp: int) -> bool:
        """True when the font's cmap maps ``cp``; False for an unknown font id too."""
        arr = self._cps.get(font_id)
        if arr is None or arr.size == 0:
            return False
        i = int(np.searchsorted(arr, cp))
        return i < arr.size and int(arr[i]) == cp

    def _inverted(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """All (code point, font) pairs sorted by code point, fonts in id order within one."""
        if self._index is None:
            ids = sorted(self._cps)
            if ids:
                cps = np.concatenate([self._cps[i] for i in ids])
                owners = np.concatenate(
                    [np.full(self._cps[i].size, n, dtype=np.int32) for n, i in enumerate(ids)]
                )
                order = np.argsort(cps, kind="stable")
                self._index = (cps[order], owners[order], ids)
            else:
                self._index = (np.zeros(0, np.uint32), np.zeros(0, np.int32), [])
        return self._index

    def _covering_ids(self, cp: int) -> list[str]:
        cps, owners, ids = self._inverted()
        lo = int(np.searchsorted(cps, cp, side="left"))
        hi = int(np.searchsorted(cps, cp, side="right"))
        return [ids[k] for k in owners[lo:hi].tolist()]

    def covering(self, cp: int) -> list[FontInfo]:
        """Every catalogued font (winners only) whose cmap covers ``cp``, sorted by id."""
        return [self._by_id[i] for i in self._covering_ids(cp)]

    def substitute(self, font_id: str, cps: Iterable[int]) -> dict[int, str | None]:
        """Choose, for each code point, an installed font id to render it with.

        When ``font_id`` is installed and covers a code point, it renders it itself. Otherwise
        candidates are ranked by how many of the requested code points they cover (most
        first), then by id, and each code point goes to the best-ranked candidate covering it,
        so a set of glyphs stays in as few fonts as possible. A private-use code point is never
        substituted (its meaning is font-specific) and maps to None, as does a code point that
        no font covers.
        """
        wanted = list(dict.fromkeys(cps))
        own = font_id in self._by_id
        result: dict[int, str | None] = {}
        open_cps: list[int] = []
        for cp in wanted:
            if own and self.covers(font_id, cp):
                result[cp] = font_id
            elif is_private_use(cp):
                result[cp] = None
            else:
                open_cps.append(cp)
        covering = {cp: self._covering_ids(cp) for cp in open_cps}
        counts: dict[str, int] = {}
        for ids in covering.values():
            for i in ids:
                counts[i] = counts.get(i, 0) + 1
        for cp in open_cps:
            ids = covering[cp]
            result[cp] = min(ids, key=lambda i: (-counts[i], i)) if ids else None
        return {cp: result[cp] for cp in wanted}

    def coverage_by_block(self, font_id: str) -> list[tuple[str, int]]:
        """How many code points of each Unicode block the font covers (blocks it touches only)."""
        arr = self._cps[font_id]
        table = blocks()
        starts = np.array([b[0] for b in table], dtype=np.int64)
        ends = np.array([b[1] for b in table], dtype=np.int64)
        pos = np.searchsorted(starts, arr.astype(np.int64), side="right") - 1
        inside = (pos >= 0) & (arr <= ends[np.clip(pos, 0, None)])
        counts = np.bincount(pos[inside], minlength=len(table))
        return [(table[k][2], int(c)) for k, c in enumerate(counts.tolist()) if c]
