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

**Cheap per puzzle.** A writing process is handed the glyphs' renders once and then only each
puzzle's id and glyph indices; it draws sheets with :class:`~studio.generate.sheet.SheetPainter`
(a template per layout, tiles per glyph, Pillow's own PNG filters and deflate: ``sheet_png``'s
bytes) and assembles each ``.npz`` directly (:func:`fast_npz_bytes`: ``npz_bytes``'s bytes,
checked against it once per process). What remains per puzzle is mostly the two deflates.

**Crash-safe at disk speed.** The split is first written, with plain writes, into a staging
folder inside OUT_DIR (``.split-….tmp``); sheets and ``.npz`` files are drawn on every core
(a process pool, :func:`default_workers`; in-process for small splits), and the bytes are the
same for any number of processes, since each file depends on its puzzle and the glyphs'
pictures alone. The staging folder is then made durable once (one ``syncfs``, not an fsync
per file: :func:`studio.core.fileio.sync_tree`), the earlier split's ``split.json`` removed,
its entries moved aside, the staged ones renamed in, and ``split.json`` written last. Killed at
any moment, OUT_DIR holds either the earlier split, whole, or a folder without ``split.json``
that ``read_split`` and ``vet`` refuse; a cancel or an error before the move leaves the
earlier split as it was. A hidden ``.split-….tmp`` left by a kill is removed by the next write.
Records are streamed (``puzzles.jsonl``, the verdicts of ``report.json``), and at most a few
tasks of pictures are in flight, so memory stays flat however large the split.

The folder protocol (where a split may go, ``split.json`` last, reading it back) is
:mod:`studio.core.splitdir`'s, shared with the stimulus splits; a glyph split may be written
again over an earlier one (``is_split_entry`` says what it may replace), and then drops what
the earlier one left (its ``baselines/`` too), but never a ``fold-<k>`` folder holding files
a split does not write.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import multiprocessing.context
import os
import shutil
import struct
import tempfile
import zipfile
import zlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from studio import __version__
from studio.core.annotations import TagRow, format_annotation_csv
from studio.core.errors import StudioError
from studio.core.fileio import fsync_dir, sync_tree, write_file
from studio.core.keys import GlyphKey
from studio.core.procs import pool_context, pool_worker_start, usable_cores
from studio.core.puzzle import Puzzle
from studio.core.schema import Schema
from studio.core.splitdir import (
    SPLIT_JSON,
    SplitFormat,
    check_target,
    is_temp_file,
    parse_record,
    read_frames_npz,
    record_lines,
)
from studio.core.verdict import Verdict
from studio.families.glyph_pmp.split import SplitResult
from studio.generate.params import MAX_ANSWERS, SplitParams
from studio.generate.sheet import SheetPainter

SPLIT_FORMAT = "analogy-studio.split"
SPLIT_FORMAT_VERSION = 1
GLYPH_SPLIT = SplitFormat(SPLIT_FORMAT, SPLIT_FORMAT_VERSION)
FRAME_SIZE = 80
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
INK_THRESHOLD = 128
#: fewer puzzles than this are drawn in-process: starting a pool would cost more than it saves
POOL_MIN_PUZZLES = 200
CHUNK = 32  # puzzles per task of a writing process
#: the staging folder inside OUT_DIR (and the old split's, while it is replaced): a temp name
#: (``is_temp_file``), so a write killed half-way leaves nothing a later one may not remove
STAGING_PREFIX = ".split-"

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


#: Answer frames an ``.npz`` holds at least (outside odd-one-out, whose answers are its group):
#: UA's loader shuffles exactly four answers, so a set of fewer (``min_answers``, issue 24) is
#: padded with blank frames after its own. They are never the target; the record
#: (``puzzles.jsonl``) says how many answers the puzzle has, and the studio's loaders read
#: that many.
NPZ_ANSWERS = MAX_ANSWERS


def npz_answer_slots(layout: str, answers: int) -> int:
    """Answer frames in a puzzle's ``.npz`` (:data:`NPZ_ANSWERS`)."""
    return answers if layout == "odd-one-out" else max(answers, NPZ_ANSWERS)


def npz_frame_count(puzzle: Puzzle) -> int:
    """Frames in a puzzle's ``.npz``: its context, then its answer slots."""
    return len(puzzle.context_keys) + npz_answer_slots(puzzle.layout, len(puzzle.answers))


def _padded(frames: np.ndarray, layout: str, answers: int) -> np.ndarray:
    blank = npz_answer_slots(layout, answers) - answers
    if blank <= 0:
        return frames
    pad = np.zeros((blank, *frames.shape[1:]), frames.dtype)
    return np.concatenate([frames, pad])


def puzzle_frames(puzzle: Puzzle, frame_of: Callable[[GlyphKey], np.ndarray]) -> np.ndarray:
    """The frames of a puzzle in npz order: context in reading order, then the answers (and
    blank frames up to :data:`NPZ_ANSWERS`)."""
    frames = np.stack([frame_of(k) for k in (*puzzle.context_keys, *puzzle.answers)])
    return _padded(frames, puzzle.layout, len(puzzle.answers))


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


_ZIP_DOSDATE = (ZIP_DATE[0] - 1980) << 9 | ZIP_DATE[1] << 5 | ZIP_DATE[2]
_ZIP_DOSTIME = ZIP_DATE[3] << 11 | ZIP_DATE[4] << 5 | ZIP_DATE[5] // 2
_ZIP_ATTR = 0o600 << 16
#: zipfile's local and central headers, and what is the same in every entry of ours
#: (signature, versions 2.0 made on Unix, no flags, deflated, the fixed date)
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_CENTRAL_HEADER = struct.Struct("<4s4B4HL2L5H2L")
_LOCAL_FIXED = (b"PK\x03\x04", 20, 0, 0, zipfile.ZIP_DEFLATED, _ZIP_DOSTIME, _ZIP_DOSDATE)
_CENTRAL_FIXED = (b"PK\x01\x02", 20, 3, 20, 0, 0, zipfile.ZIP_DEFLATED, _ZIP_DOSTIME, _ZIP_DOSDATE)
#: archives larger than this are left to zipfile (which adds ZIP64 records near 2 GiB)
_DIRECT_NPZ_LIMIT = 2**30
_npy_headers: dict[tuple[str, tuple[int, ...]], bytes] = {}
#: small entries (``target``, ``probtype``) already deflated: their CRC and deflated bytes
_small_entries: dict[bytes, tuple[int, bytes]] = {}


def _npy_bytes(arr: np.ndarray) -> bytes:
    """``np.lib.format.write_array``'s bytes for ``arr``, the header built once per dtype and
    shape (C-ordered arrays of plain dtypes; others go through ``write_array``)."""
    arr = np.asanyarray(arr)
    if arr.dtype.hasobject or not arr.flags.c_contiguous or type(arr) is not np.ndarray:
        data = io.BytesIO()
        np.lib.format.write_array(data, arr, allow_pickle=False)
        return data.getvalue()
    sig = (arr.dtype.str, arr.shape)
    head = _npy_headers.get(sig)
    if head is None:
        data = io.BytesIO()
        np.lib.format.write_array(data, arr, allow_pickle=False)
        whole = data.getvalue()
        head = _npy_headers[sig] = whole[: len(whole) - arr.nbytes]
    return head + arr.tobytes()


def _npz_bytes_direct(arrays: Mapping[str, np.ndarray]) -> bytes:
    """:func:`npz_bytes`'s archive assembled here (local headers, deflated entries, central
    directory) without ``zipfile``'s per-entry machinery: the same bytes, checked once per
    process against :func:`npz_bytes` before it is used (:func:`fast_npz_bytes`)."""
    parts: list[bytes] = []
    central: list[bytes] = []
    offset = 0
    for name, arr in arrays.items():
        fname = f"{name}.npy".encode("ascii")
        data = _npy_bytes(arr)
        entry = _small_entries.get(data)
        if entry is None:
            z = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
            entry = (zlib.crc32(data) & 0xFFFFFFFF, z.compress(data) + z.flush())
            if len(data) <= 1024 and len(_small_entries) < 4096:
                _small_entries[data] = entry  # a target or a problem type: few values
        crc, packed = entry
        local = _LOCAL_HEADER.pack(*_LOCAL_FIXED, crc, len(packed), len(data), len(fname), 0)
        central.append(
            _CENTRAL_HEADER.pack(
                *_CENTRAL_FIXED,
                crc,
                len(packed),
                len(data),
                len(fname),
                0,
                0,
                0,
                0,
                _ZIP_ATTR,
                offset,
            )
            + fname
        )
        parts += (local, fname, packed)
        offset += len(local) + len(fname) + len(packed)
    directory = b"".join(central)
    end = struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, len(central), len(central), len(directory), offset, 0
    )
    return b"".join(parts) + directory + end


_direct_npz_ok: bool | None = None


def fast_npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """:func:`npz_bytes`, byte for byte, at a fraction of its CPU (one deflate per entry and
    little else). The direct assembly is compared with :func:`npz_bytes` on the first call in a
    process; where this Python's ``zipfile`` writes anything else, for archives of over 1 GiB
    (ZIP64 territory) and for names that are not ASCII, :func:`npz_bytes` is used."""
    global _direct_npz_ok
    big = sum(np.asanyarray(a).nbytes for a in arrays.values()) > _DIRECT_NPZ_LIMIT
    if big or not all(name.isascii() for name in arrays):  # zipfile flags UTF-8 names
        return npz_bytes(arrays)
    if _direct_npz_ok is None:
        _direct_npz_ok = _npz_bytes_direct(arrays) == npz_bytes(arrays)
    if not _direct_npz_ok:
        return npz_bytes(arrays)
    return _npz_bytes_direct(arrays)


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


# ---- the pictures: sheets and .npz files, on every core ------------------------------------
class _Job(NamedTuple):
    """What a writing process needs of one puzzle: its id, and its glyphs as indices into the
    split's glyph list (:class:`_Pictures`), so a task pickles a few numbers per puzzle."""

    id: str
    layout: str
    context: tuple[tuple[int, ...], ...]
    answers: tuple[int, ...]
    key: int
    probtype: str


class _Pictures:
    """What the sheets and ``.npz`` files of a split are drawn from: the render (or None) of
    each glyph the puzzles use, by index. Handed to every writing process once (the pool's
    initializer); each process then builds its UA frames (one array) and its sheet painter
    (:class:`~studio.generate.sheet.SheetPainter`: per-layout templates, per-glyph tiles)."""

    def __init__(self, images: Mapping[GlyphKey, np.ndarray | None]) -> None:
        self.keys = list(images)
        self.images = [images[k] for k in self.keys]
        self.index = {k: i for i, k in enumerate(self.keys)}
        self._frames: np.ndarray | None = None
        self._painter: SheetPainter | None = None

    def job(self, p: Puzzle) -> _Job:
        ix = self.index
        return _Job(
            p.id,
            p.layout,
            tuple(tuple(ix[k] for k in row) for row in p.context),
            tuple(ix[k] for k in p.answers),
            p.key,
            p.probtype,
        )

    @property
    def frames(self) -> np.ndarray:
        """Every glyph's UA frame, ``(glyphs, 80, 80)`` ``uint8``, in index order."""
        if self._frames is None:
            self._frames = np.stack(
                [ua_frame(img) for img in self.images]
                or [np.zeros((FRAME_SIZE, FRAME_SIZE), np.uint8)]
            )
        return self._frames

    @property
    def painter(self) -> SheetPainter:
        if self._painter is None:
            self._painter = SheetPainter(self.images.__getitem__)
        return self._painter

    def sheet(self, job: _Job) -> bytes:
        """``sheet_png`` of the puzzle, byte for byte."""
        return self.painter.png(job)

    def npz(self, job: _Job) -> bytes:
        """``puzzle_npz`` of the puzzle, byte for byte."""
        order = [i for row in job.context for i in row] + list(job.answers)
        return fast_npz_bytes(
            {
                "images": _padded(self.frames[order], job.layout, len(job.answers)),
                "target": np.array(job.key, dtype=np.int64),
                "probtype": np.array(job.probtype),
            }
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Pictures, (dict(zip(self.keys, self.images, strict=True)),))


# A writing process's pictures (set once by the pool's initializer).
_process_pictures: _Pictures | None = None

#: what one task of a writing process returns: None, or ``(problem, path)`` of a file that
#: could not be written (a StudioError loses its path when pickled across processes)
_TaskOutcome = tuple[str, str] | None


def _init_writer(pictures: _Pictures) -> None:
    global _process_pictures
    pool_worker_start()
    _process_pictures = pictures


def _write_pictures(
    folder: str, jobs: Sequence[_Job], pictures: _Pictures | None = None
) -> _TaskOutcome:
    """Write the sheet and the ``.npz`` of each puzzle into ``folder`` (plain writes: the
    folder is staged and synced as a whole). Each file's bytes depend on its puzzle and the
    pictures alone, so which process writes it, and in which order, changes nothing."""
    pics = pictures if pictures is not None else _process_pictures
    if pics is None:
        raise RuntimeError("a split-writing process was started without its pictures")
    sheets, npzs = os.path.join(folder, SHEETS, ""), os.path.join(folder, NPZ, "")
    for job in jobs:
        path = f"{sheets}{job.id}.png"
        try:
            write_file(path, pics.sheet(job))
            path = f"{npzs}{job.id}.npz"
            write_file(path, pics.npz(job))
        except OSError as e:
            return f"cannot be written: {e.strerror or e}", path
    return None


def _raise_outcome(outcome: _TaskOutcome) -> None:
    if outcome is not None:
        raise StudioError(outcome[0], outcome[1])


def _mp_context() -> multiprocessing.context.BaseContext:
    return pool_context([__name__])


def default_workers(puzzles: int) -> int:
    """How many processes write ``puzzles`` sheets and ``.npz`` files: every core the process
    may use, or 1 (in-process) below :data:`POOL_MIN_PUZZLES`, where starting a pool costs
    more than it saves."""
    if puzzles < POOL_MIN_PUZZLES:
        return 1
    return usable_cores()


class _PictureWriter:
    """Writes the pictures of a split's folds: in-process with one worker, else on a process
    pool started once for the whole split. At most 4 tasks per process of ``CHUNK`` puzzles are
    in flight, so memory does not grow with the split."""

    def __init__(self, pictures: _Pictures, workers: int) -> None:
        self.pictures = pictures
        self.pool: ProcessPoolExecutor | None = None
        if workers > 1:
            try:
                self.pool = ProcessPoolExecutor(
                    max_workers=workers,
                    mp_context=_mp_context(),
                    initializer=_init_writer,
                    initargs=(pictures,),
                )
            except (OSError, ImportError, NotImplementedError):
                self.pool = None  # no process pools here (no semaphores): write in-process
        self.window = 4 * workers

    def write(self, folder: Path, puzzles: Sequence[Puzzle], step: Callable[[int], None]) -> None:
        job = self.pictures.job
        chunks = ([job(p) for p in puzzles[i : i + CHUNK]] for i in range(0, len(puzzles), CHUNK))
        if self.pool is None:
            for chunk in chunks:
                _raise_outcome(_write_pictures(str(folder), chunk, self.pictures))
                step(len(chunk))
            return
        pending: deque[tuple[Future[_TaskOutcome], int]] = deque()

        def collect() -> None:
            future, size = pending.popleft()
            try:
                outcome = future.result()
            except BrokenProcessPool:
                raise StudioError(
                    "a process writing the split's sheets stopped unexpectedly "
                    "(out of memory?); nothing was replaced",
                    folder,
                ) from None
            _raise_outcome(outcome)
            step(size)

        for chunk in chunks:
            pending.append((self.pool.submit(_write_pictures, str(folder), chunk), len(chunk)))
            if len(pending) >= self.window:
                collect()
        while pending:
            collect()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


# ---- the text files, streamed ---------------------------------------------------------------
def _json_at(value: Any, depth: int) -> bytes:
    """``value`` as the split's JSON spells it (:meth:`SplitFormat.json_bytes`) when it stands
    ``depth`` levels deep (JSON strings hold no raw newline, so re-indenting is safe)."""
    text = json.dumps(value, indent=1, sort_keys=True, ensure_ascii=GLYPH_SPLIT.ascii_json)
    return text.replace("\n", "\n" + " " * depth).encode("utf-8")


def _write_report(
    path: Path, report: Mapping[str, Any], verdicts: Sequence[Verdict] | None
) -> None:
    """``report.json``: the same bytes as ``GLYPH_SPLIT.json_bytes({**report, "verdicts":
    [v.to_puzzle_json() …]})``, but the verdicts are encoded one at a time, never all held as
    JSON objects at once."""
    keys = sorted([*report, *(["verdicts"] if verdicts is not None else [])])
    with open(path, "wb") as f:
        f.write(b"{\n")
        for i, key in enumerate(keys):
            f.write(b" " + _json_at(key, 1) + b": ")
            if key == "verdicts" and verdicts is not None:
                if not verdicts:
                    f.write(b"[]")
                else:
                    f.write(b"[\n")
                    last = len(verdicts) - 1
                    for j, v in enumerate(verdicts):
                        f.write(b"  " + _json_at(v.to_puzzle_json(), 2))
                        f.write(b",\n" if j < last else b"\n")
                    f.write(b" ]")
            else:
                f.write(_json_at(report[key], 1))
            f.write(b",\n" if i < len(keys) - 1 else b"\n")
        f.write(b"}\n")


def _write_jsonl(path: Path, puzzles: Sequence[Puzzle]) -> None:
    """``puzzles.jsonl`` (:func:`studio.core.puzzle.write_jsonl`'s bytes), line by line."""
    with open(path, "wb") as f:
        for p in puzzles:
            f.write(p.dumps().encode("utf-8") + b"\n")


# ---- a split: staged, synced once, moved into place ------------------------------------------
def _stage_fold(
    folder: Path,
    result: SplitResult,
    csv_bytes: bytes,
    schema: Schema | None,
    writer: _PictureWriter,
    verdicts: Sequence[Verdict] | None,
    stats: Mapping[str, Any] | None,
    step: Callable[[int], None],
) -> None:
    """Every file of one fold but its ``split.json``, plainly, into a staging folder."""
    ids = [p.id for p in result.puzzles]
    if len(set(ids)) != len(ids):
        raise StudioError(f"fold {result.fold}: puzzle ids repeat; cannot name files by id")
    (folder / SHEETS).mkdir(parents=True)
    (folder / NPZ).mkdir()
    writer.write(folder, result.puzzles, step)
    write_file(folder / ANNOTATIONS_CSV, csv_bytes)
    if schema is not None:
        write_file(folder / SCHEMA_JSON, schema.dumps().encode("utf-8"))
    report: dict[str, Any] = {
        "fold": result.fold,
        "summary": result.summary(timing=False),
    }
    if stats is not None:
        report["stats"] = stats
    if verdicts is not None:
        report["valid"] = sum(1 for v in verdicts if v.valid)
        report["invalid"] = sum(1 for v in verdicts if not v.valid)
        report["with_warnings"] = sum(1 for v in verdicts if v.warnings)
    _write_report(folder / REPORT_JSON, report, verdicts)
    _write_jsonl(folder / PUZZLES, result.puzzles)


def _fold_meta(info: Mapping[str, Any], result: SplitResult) -> dict[str, Any]:
    split = dict(info)
    split["fold"] = result.fold
    split["puzzles"] = len(result.puzzles)
    split["summary"] = result.summary(timing=False)
    return {**split, **GLYPH_SPLIT.header()}


def _check_fold_folders(out: Path, fold_names: set[str]) -> None:
    """A ``fold-<k>`` entry that holds more than a fold writes is a person's: it is left alone,
    and a split that needs its name is refused (before any work is written)."""
    for name in sorted(fold_names):
        p = out / name
        if p.exists() and not _is_split_dir(p):
            raise StudioError(
                "holds files a split does not write; a split may not replace it: "
                "move them, or choose an empty or new folder",
                p,
            )


def _move_into_place(out: Path, staging: Path, meta: Mapping[str, Any]) -> None:
    """Replace the split at ``out`` (if any) by the one in ``staging`` (synced already).

    ``split.json`` goes first (the folder reads as unfinished from then on), then what the old
    split wrote is moved aside, the staged entries are renamed in, and ``split.json`` is
    written last: killed at any moment, ``out`` holds either the old split or a folder without
    ``split.json``, which nothing reads as a split. A person's ``fold-<k>`` folder stays."""
    GLYPH_SPLIT.begin(out)
    fsync_dir(out)
    trash = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, suffix=".tmp", dir=out))
    try:
        for p in sorted(out.iterdir()):
            if p.name in (staging.name, trash.name, SPLIT_JSON) or not is_split_entry(p.name):
                continue
            if p.name.startswith("fold-") and not _is_split_dir(p):
                continue
            os.replace(p, trash / p.name)
        for p in sorted(staging.iterdir()):
            os.replace(p, out / p.name)
        fsync_dir(out)
        GLYPH_SPLIT.finish(out, meta)
        fsync_dir(out)
    finally:
        shutil.rmtree(trash, ignore_errors=True)


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
    workers: int | None = None,
) -> Path:
    """Write ``results`` (one per fold) as a split directory (see the module docstring).

    ``verdicts`` and ``stats`` go into ``report.json``: per fold (a list with one entry per
    result), or for a single fold as one list / one dict. ``schema`` is copied to
    ``schema.json`` and named in ``split.json``; ``extra`` adds entries to ``split.json``
    (JSON-serialisable, reproducible). ``progress(done, total)`` counts puzzles written; an
    exception it raises (a cancel) stops the write and leaves ``out_dir`` as it was.
    ``workers``: processes drawing sheets and ``.npz`` files (default
    :func:`default_workers`; 1 = in this process); the bytes are the same for any number.
    Returns the folder."""
    out = Path(out_dir)
    check_target(out, is_split_entry)
    if not results:
        raise StudioError("nothing to write: no folds were generated")
    multi = len(results) > 1
    _check_fold_folders(out, {f"fold-{r.fold}" for r in results} if multi else set())
    per_fold_verdicts = _as_per_fold(verdicts, len(results))
    per_fold_stats = _as_per_fold(stats, len(results))
    info = split_info(params, annotations_rows, schema, extra)
    csv_bytes = format_annotation_csv(annotations_rows).encode("utf-8")
    keys = sorted({k for r in results for p in r.puzzles for k in (*p.context_keys, *p.answers)})
    pictures = _Pictures({k: image_of(k) for k in keys})

    total = sum(len(r.puzzles) for r in results)
    done = 0

    def step(count: int) -> None:
        nonlocal done
        before, done = done, done + count
        if progress is not None and (done // 25 > before // 25 or done == total):
            progress(done, total)

    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, suffix=".tmp", dir=out))
    try:
        writer = _PictureWriter(pictures, default_workers(total) if workers is None else workers)
        try:
            for i, result in enumerate(results):
                folder = staging / f"fold-{result.fold}" if multi else staging
                _stage_fold(
                    folder,
                    result,
                    csv_bytes,
                    schema,
                    writer,
                    per_fold_verdicts[i] if per_fold_verdicts else None,
                    per_fold_stats[i] if per_fold_stats else None,
                    step,
                )
                if multi:
                    write_file(
                        folder / SPLIT_JSON, GLYPH_SPLIT.json_bytes(_fold_meta(info, result))
                    )
        finally:
            writer.close()
        if multi:
            top = dict(info)
            top["fold_dirs"] = [f"fold-{r.fold}" for r in results]
            top["puzzles"] = total
            top["summaries"] = [r.summary(timing=False) for r in results]
            meta = {**top, **GLYPH_SPLIT.header()}
        else:
            meta = _fold_meta(info, results[0])
        sync_tree(staging)
        _move_into_place(out, staging, meta)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
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
    data, path, lines = fold_record_lines(folder)
    puzzles = [parse_record(n, line, path, Puzzle.from_json) for n, line in lines]
    check_fold_count(data, len(puzzles), path)
    return data, puzzles


def fold_record_lines(folder: str | Path) -> tuple[dict[str, Any], Path, list[tuple[int, str]]]:
    """One fold folder's ``split.json``, its ``puzzles.jsonl`` and that file's numbered
    lines, not yet parsed: :func:`read_fold` parses them in this process; the baselines'
    loader (``studio.baselines.data``) parses a large split's lines in worker processes,
    each with :func:`studio.core.splitdir.parse_record`, and then calls
    :func:`check_fold_count` — the same checks and errors as :func:`read_fold`."""
    folder = Path(folder)
    data = read_split_json(folder)
    path = folder / PUZZLES
    if not path.exists():
        raise StudioError("missing: the split has no puzzle file", path)
    return data, path, record_lines(path)


def check_fold_count(data: Mapping[str, Any], count: int, path: Path) -> None:
    """The puzzles read from a fold's ``puzzles.jsonl`` (``path``) are as many as its
    ``split.json`` (``data``) says: a truncated file is damaged, not a smaller split."""
    want = data.get("puzzles")
    if isinstance(want, int) and want != count:
        raise StudioError(f"damaged: holds {count} puzzles but split.json says {want}", path)


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
    """The arrays of one exported ``.npz``, checked (:func:`studio.core.splitdir.read_frames_npz`:
    ``images`` of numbers, ``(N, 80, 80)``, all finite; ``target`` one integer). StudioError
    naming the file when it is damaged in any way (zlib and zip errors included)."""
    return read_frames_npz(path, None, FRAME_SIZE)


__all__ = [
    "SPLIT_FORMAT",
    "SPLIT_FORMAT_VERSION",
    "check_fold_count",
    "fast_npz_bytes",
    "fold_dirs",
    "fold_record_lines",
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
