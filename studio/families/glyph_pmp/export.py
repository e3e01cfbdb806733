"""Write a generated split to a folder, and read it back.

A split directory (one fold) holds::

    puzzles.jsonl     DESIGN.md's puzzle record, one line per puzzle (glyph keys keep the
                      annotation's font id)
    sheets/<id>.png   the puzzle as people see it (studio.generate.sheet; the key not marked)
    npz/<id>.npz      UA-compatible arrays (below)
    annotations.csv   the annotation rows the split was generated from (exchange CSV)
    schema.json       the concept schema, so the split can be re-vetted without the project
    report.json       split statistics (studio.vet.balance) and per-puzzle verdicts
    split.json        every parameter, the seed, the generator's summary, the schema id and
                      version, the glyph count and the studio version

With ``folds > 1`` each fold is such a directory, ``fold-<k>/`` (k from 0, as the generator's
``fold`` and each puzzle's ``params.fold``), and the top level holds a ``split.json`` naming them.

**The .npz files.** ``images`` is ``uint8`` of shape ``(frames, 80, 80)``: for ``two-row`` the 5
context frames (row 1, then row 2 without its last frame) and then the 4 answers — UA's
9 × 80 × 80; for other layouts the context frames in reading order, then the answers. Pixel
values follow UA's arrays, not the studio's renders: **0 = paper, 1 = ink** (the render's
0-ink/255-paper picture inverted and binarised at 128). A glyph without an image gives an
all-paper frame. ``target`` is the key's index (``int64``, 0-d) and ``probtype`` is UA's problem
type ``<rule>_<concept>_shift|noshift`` (a 0-d unicode array), so UA solvers load them unchanged.

**Byte for byte.** Nothing written depends on the time, the machine's paths or dict order:
JSON is written with sorted keys; ``.npz`` files are zip archives built here with fixed entry
dates (1980-01-01) and attributes, each entry ``numpy.lib.format.write_array`` output, because
``np.savez_compressed`` leaves such details to numpy; PNGs carry no time chunk. Timings from
the generator's summary are left out. The same command therefore re-creates the same bytes.

Every file is written atomically (temp file + rename). ``split.json`` is written last: a
folder without it is an unfinished split, and ``read_split`` says so. The folder protocol
(where a split may go, ``split.json`` last, reading it back) is :mod:`studio.core.splitdir`'s,
shared with the stimulus splits; a glyph split may be written again over an earlier one
(``is_split_entry`` says what it may replace), and then drops what the earlier one left.
"""

from __future__ import annotations

import io
import os
import shutil
import zipfile
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from studio import __version__
from studio.core.annotations import TagRow, format_annotation_csv
from studio.core.errors import StudioError
from studio.core.fileio import atomic_write_bytes, atomic_write_text
from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle, write_jsonl
from studio.core.schema import Schema
from studio.core.splitdir import SPLIT_JSON, SplitFormat, check_target, is_temp_file, read_records
from studio.core.verdict import Verdict
from studio.families.glyph_pmp.split import SplitResult
from studio.generate.params import SplitParams
from studio.generate.sheet import sheet_png

SPLIT_FORMAT = "analogy-studio.split"
SPLIT_FORMAT_VERSION = 1
GLYPH_SPLIT = SplitFormat(SPLIT_FORMAT, SPLIT_FORMAT_VERSION)
FRAME_SIZE = 80
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
INK_THRESHOLD = 128
WRITERS = min(4, (os.cpu_count() or 1) + 1)  # threads writing sheets and npz files
WINDOW = 64  # puzzles in flight at most

PUZZLES = "puzzles.jsonl"
REPORT_JSON = "report.json"
ANNOTATIONS_CSV = "annotations.csv"
SCHEMA_JSON = "schema.json"
SHEETS = "sheets"
NPZ = "npz"
#: what `analogy-studio baseline` adds to a split (its report and charts); a split written
#: again drops it, since it describes the puzzles that were replaced
BASELINES = "baselines"
_SPLIT_ENTRIES = {
    PUZZLES,
    SPLIT_JSON,
    REPORT_JSON,
    ANNOTATIONS_CSV,
    SCHEMA_JSON,
    SHEETS,
    NPZ,
    BASELINES,
}

ImageOf = Callable[[GlyphKey], "np.ndarray | None"]
Progress = Callable[[int, int], None]


# ---- arrays ---------------------------------------------------------------------------------
def ua_frame(img: np.ndarray | None, size: int = FRAME_SIZE) -> np.ndarray:
    """A render (0 ink, 255 paper) as UA's frame: ``uint8``, 1 ink, 0 paper; blank if None."""
    if img is None:
        return np.zeros((size, size), np.uint8)
    arr = np.asarray(img)
    if arr.shape != (size, size):
        from PIL import Image

        arr = np.asarray(
            Image.fromarray(arr.astype(np.uint8)).resize((size, size), Image.Resampling.NEAREST)
        )
    return (arr < INK_THRESHOLD).astype(np.uint8)


def puzzle_frames(puzzle: Puzzle, frame_of: Callable[[GlyphKey], np.ndarray]) -> np.ndarray:
    """The frames of a puzzle in npz order: context in reading order, then the answers."""
    return np.stack([frame_of(k) for k in (*puzzle.context_keys, *puzzle.answers)])


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An ``.npz`` archive (deflated) that ``np.load`` reads, with the same bytes every time:
    entries in the given order, fixed dates and attributes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o600 << 16
            data = io.BytesIO()
            np.lib.format.write_array(data, np.asanyarray(arr), allow_pickle=False)
            zf.writestr(info, data.getvalue())
    return buf.getvalue()


def puzzle_npz(puzzle: Puzzle, frame_of: Callable[[GlyphKey], np.ndarray]) -> bytes:
    """UA's arrays for one puzzle: ``images``, ``target``, ``probtype``."""
    return npz_bytes(
        {
            "images": puzzle_frames(puzzle, frame_of),
            "target": np.array(puzzle.key, dtype=np.int64),
            "probtype": np.array(puzzle.probtype),
        }
    )


# ---- writing --------------------------------------------------------------------------------
def is_split_entry(name: str) -> bool:
    """Is ``name`` something a glyph split writes at its top level (a file or folder of a
    fold, a fold folder, a leftover temp file)? Only such entries may be written over or
    removed when a split is written again (``check_target(out, is_split_entry)``)."""
    return name in _SPLIT_ENTRIES or name.startswith("fold-") or is_temp_file(name)


def _is_split_dir(folder: Path) -> bool:
    """A folder holding nothing but what a fold writes (safe to remove as stale)."""
    return folder.is_dir() and all(
        p.name in _SPLIT_ENTRIES or is_temp_file(p.name) for p in folder.iterdir()
    )


def _remove_stale(folder: Path, keep: set[str]) -> None:
    if folder.is_dir():
        for p in folder.iterdir():
            if p.is_file() and p.name not in keep:
                p.unlink()


def _as_per_fold(items: Any, n: int) -> list[Any] | None:
    """Verdicts or stats given for one fold (a flat list / one dict) or per fold (a list)."""
    if items is None:
        return None
    if isinstance(items, Mapping) or (items and isinstance(items[0], Verdict)):
        items = [items]
    elif not items:
        items = [[] for _ in range(n)]
    items = list(items)
    if len(items) != n:
        raise ValueError(f"expected verdicts/stats for {n} fold(s), got {len(items)}")
    return items


def split_info(
    params: SplitParams,
    annotations_rows: Sequence[TagRow],
    schema: Schema | None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What every ``split.json`` says besides its fold's summary."""
    info: dict[str, Any] = {
        **GLYPH_SPLIT.header(),
        "studio_version": __version__,
        "params": params.to_json(),
        "seed": params.seed,
        "folds": params.folds,
        "glyphs": len({r.key for r in annotations_rows}),
        "annotation_rows": len(annotations_rows),
        "npz": {"frame": [FRAME_SIZE, FRAME_SIZE], "paper": 0, "ink": 1},
    }
    if schema is not None:
        info["schema"] = {"id": schema.id, "version": schema.version, "file": SCHEMA_JSON}
    if extra:
        info.update({k: v for k, v in extra.items() if k not in info})
    return info


def _write_fold(
    folder: Path,
    result: SplitResult,
    info: Mapping[str, Any],
    csv_text: str,
    schema: Schema | None,
    frame_of: Callable[[GlyphKey], np.ndarray],
    image_of: ImageOf,
    verdicts: Sequence[Verdict] | None,
    stats: Mapping[str, Any] | None,
    step: Callable[[], None],
) -> None:
    ids = [p.id for p in result.puzzles]
    if len(set(ids)) != len(ids):
        raise StudioError(f"fold {result.fold}: puzzle ids repeat; cannot name files by id")
    GLYPH_SPLIT.begin(folder)

    def write_one(p: Puzzle) -> None:
        atomic_write_bytes(folder / SHEETS / f"{p.id}.png", sheet_png(p, image_of))
        atomic_write_bytes(folder / NPZ / f"{p.id}.npz", puzzle_npz(p, frame_of))

    (folder / SHEETS).mkdir(parents=True, exist_ok=True)
    (folder / NPZ).mkdir(parents=True, exist_ok=True)
    # Compression and fsync release the GIL: a few threads overlap them. Each file's bytes do
    # not depend on the order, and at most WINDOW writes are pending at a time.
    pool = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="split-writer")
    try:
        pending: deque[Future[None]] = deque()
        for p in result.puzzles:
            pending.append(pool.submit(write_one, p))
            if len(pending) >= WINDOW:
                pending.popleft().result()
                step()
        while pending:
            pending.popleft().result()
            step()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    _remove_stale(folder / SHEETS, {f"{i}.png" for i in ids})
    _remove_stale(folder / NPZ, {f"{i}.npz" for i in ids})
    atomic_write_text(folder / ANNOTATIONS_CSV, csv_text)
    if schema is not None:
        atomic_write_text(folder / SCHEMA_JSON, schema.dumps())
    report: dict[str, Any] = {
        "fold": result.fold,
        "summary": result.summary(timing=False),
    }
    if stats is not None:
        report["stats"] = stats
    if verdicts is not None:
        report["verdicts"] = [v.to_puzzle_json() for v in verdicts]
        report["valid"] = sum(1 for v in verdicts if v.valid)
        report["invalid"] = sum(1 for v in verdicts if not v.valid)
        report["with_warnings"] = sum(1 for v in verdicts if v.warnings)
    GLYPH_SPLIT.write_json(folder / REPORT_JSON, report)
    atomic_write_text(folder / PUZZLES, write_jsonl(result.puzzles))
    split = dict(info)
    split["fold"] = result.fold
    split["puzzles"] = len(result.puzzles)
    split["summary"] = result.summary(timing=False)
    GLYPH_SPLIT.finish(folder, split)


def write_split(
    out_dir: str | Path,
    results: Sequence[SplitResult],
    params: SplitParams,
    annotations_rows: Sequence[TagRow],
    image_of: ImageOf,
    verdicts: Sequence[Verdict] | Sequence[Sequence[Verdict]] | None = None,
    stats: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
    *,
    schema: Schema | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``results`` (one per fold) as a split directory (see the module docstring).

    ``verdicts`` and ``stats`` go into ``report.json``: per fold (a list with one entry per
    result), or for a single fold as one list / one dict. ``schema`` is copied to
    ``schema.json`` and named in ``split.json``; ``extra`` adds entries to ``split.json``
    (JSON-serialisable, reproducible). ``progress(done, total)`` counts puzzles written.
    Returns the folder."""
    out = Path(out_dir)
    check_target(out, is_split_entry)
    if not results:
        raise StudioError("nothing to write: no folds were generated")
    per_fold_verdicts = _as_per_fold(verdicts, len(results))
    per_fold_stats = _as_per_fold(stats, len(results))
    info = split_info(params, annotations_rows, schema, extra)
    csv_text = format_annotation_csv(annotations_rows)
    frames: dict[GlyphKey, np.ndarray] = {}

    def frame_of(key: GlyphKey) -> np.ndarray:
        f = frames.get(key)
        if f is None:
            f = frames[key] = ua_frame(image_of(key))
        return f

    total = sum(len(r.puzzles) for r in results)
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None and (done % 25 == 0 or done == total):
            progress(done, total)

    multi = len(results) > 1
    if multi:
        GLYPH_SPLIT.begin(out)
    for i, result in enumerate(results):
        folder = out / f"fold-{result.fold}" if multi else out
        _write_fold(
            folder,
            result,
            info,
            csv_text,
            schema,
            frame_of,
            image_of,
            per_fold_verdicts[i] if per_fold_verdicts else None,
            per_fold_stats[i] if per_fold_stats else None,
            step,
        )
        stale = folder / BASELINES
        if stale.is_dir():
            shutil.rmtree(stale)
    fold_names = {f"fold-{r.fold}" for r in results} if multi else set()
    if out.is_dir():
        for p in sorted(out.iterdir()):
            if p.name.startswith("fold-") and p.name not in fold_names and _is_split_dir(p):
                shutil.rmtree(p)
            elif multi and p.name in _SPLIT_ENTRIES - {SPLIT_JSON}:
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    if multi:
        top = dict(info)
        top["fold_dirs"] = [f"fold-{r.fold}" for r in results]
        top["puzzles"] = total
        top["summaries"] = [r.summary(timing=False) for r in results]
        GLYPH_SPLIT.finish(out, top)
    if progress is not None and total == 0:
        progress(0, 0)
    return out


# ---- reading --------------------------------------------------------------------------------
def read_split_json(split_dir: str | Path) -> dict[str, Any]:
    """The ``split.json`` of a split folder (or fold folder), checked
    (:meth:`~studio.core.splitdir.SplitFormat.read_split_json`, and it holds the split's
    parameters); StudioError naming the file when it is missing or damaged."""
    data = GLYPH_SPLIT.read_split_json(split_dir)
    if not isinstance(data.get("params"), dict):
        raise StudioError("damaged: it has no split parameters", Path(split_dir) / SPLIT_JSON)
    return data


def split_params(data: Mapping[str, Any], path: str | Path) -> SplitParams:
    try:
        return SplitParams.from_json(data["params"])
    except StudioError as e:
        raise StudioError(f"damaged: {e}", path) from None
    except (TypeError, ValueError) as e:
        raise StudioError(f"damaged: bad split parameters ({e})", path) from None


def fold_dirs(split_dir: str | Path) -> list[Path]:
    """The fold folders of a split: the folder itself for one fold, else ``fold-<k>/``."""
    folder = Path(split_dir)
    data = read_split_json(folder)
    names = data.get("fold_dirs")
    if not names:
        return [folder]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise StudioError("damaged: fold_dirs is not a list of folder names", folder / SPLIT_JSON)
    return [folder / n for n in names]


def read_fold(folder: str | Path) -> tuple[dict[str, Any], list[Puzzle]]:
    """One fold folder's ``split.json`` and puzzles, checked against each other."""
    folder = Path(folder)
    data = read_split_json(folder)
    path = folder / PUZZLES
    if not path.exists():
        raise StudioError("missing: the split has no puzzle file", path)
    puzzles = read_records(path, Puzzle.from_json)
    want = data.get("puzzles")
    if isinstance(want, int) and want != len(puzzles):
        raise StudioError(f"damaged: holds {len(puzzles)} puzzles but split.json says {want}", path)
    return data, puzzles


def read_split(split_dir: str | Path) -> tuple[SplitParams, list[Puzzle]]:
    """The parameters and puzzles of a split folder (every fold's, in fold order). Raises
    StudioError naming the file when something is missing or damaged."""
    folder = Path(split_dir)
    data = read_split_json(folder)
    params = split_params(data, folder / SPLIT_JSON)
    puzzles: list[Puzzle] = []
    for d in fold_dirs(folder):
        _, ps = read_fold(d)
        puzzles.extend(ps)
    return params, puzzles


def read_npz_frames(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of one exported ``.npz`` (StudioError naming the file when damaged)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise StudioError("missing", path) from None
    except OSError as e:
        raise StudioError(f"cannot be read: {e}", path) from None
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise StudioError(f"damaged: not a readable .npz ({e})", path) from None


__all__ = [
    "SPLIT_FORMAT",
    "SPLIT_FORMAT_VERSION",
    "fold_dirs",
    "is_split_entry",
    "npz_bytes",
    "puzzle_frames",
    "puzzle_npz",
    "read_fold",
    "read_npz_frames",
    "read_split",
    "read_split_json",
    "split_info",
    "split_params",
    "ua_frame",
    "write_split",
]
