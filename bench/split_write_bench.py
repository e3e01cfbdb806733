"""Benchmark the glyph split writer's CPU per puzzle: ``write_split`` of one 10,000-puzzle fold,
now and as it was before issue 15's CPU work (kept here as the reference), in the same run.

Set-up (untimed, reported): a new project from the shared UA CSV, its glyphs rendered into a
fresh cache, one balanced fold generated, vetted (strict) and summarised, as ``generate`` does.

Timed, every split written into a fresh folder of the same temporary directory (its file
system is reported), in the order reference, new, reference, new:

- **wall** — ``write_split`` with the default number of writing processes (every core):
  ``write_s`` (now) and ``reference_write_s`` (before), ``write_ratio`` = reference / now.
- **cpu** — the same, in this process (``workers=1``): CPU seconds of the whole write
  (``time.process_time``: sheets, ``.npz`` files, text files, the sync) per puzzle,
  ``cpu_ms_per_puzzle`` and ``reference_cpu_ms_per_puzzle``, ``cpu_ratio``. The writing
  processes of a pool are the fork server's children, whose CPU this process cannot count, so
  the CPU figures come from the in-process writes.
- **parts** — the CPU of one puzzle's sheet and ``.npz`` alone (500 puzzles): ``sheet_png`` /
  ``puzzle_npz`` (Pillow, ``zipfile``: the reference) against ``SheetPainter.png`` /
  ``fast_npz_bytes`` (templates and tiles; the archive assembled directly), and what the
  deflate itself costs at the fixed settings (the floor while the bytes may not change), with
  the sizes and CPU other PNG / deflate levels would give (``levels``: a proposal only; the
  default bytes are unchanged).

The reference (:class:`ReferencePictureWriter`) is the writer's picture stage before this
work: whole ``Puzzle`` objects pickled to the pool in tasks of 32, each sheet drawn and encoded
by Pillow (``sheet_png``), each ``.npz`` built with ``zipfile`` and ``write_array``
(``puzzle_npz``); everything else of ``write_split`` (text files, one sync, the move into place)
is shared. ``same_bytes``: every file of the four folders is the same.

``load_average_1min`` says how busy the machine was (others may be running tests): compare
the ratios, not the seconds. No GPU is involved. Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import tempfile
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from common import ua_csv


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _filesystem(path: Path) -> str:
    """The type of the file system holding ``path`` (Linux; "unknown" elsewhere)."""
    best, kind = "", "unknown"
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                _dev, mount, fstype, *_ = line.split()
                if str(path.resolve()).startswith(mount) and len(mount) > len(best):
                    best, kind = mount, fstype
    except OSError:
        pass
    return kind


# ---- the reference: the picture stage before issue 15's CPU work -----------------------------
_ref_images: dict[Any, Any] | None = None
_ref_frames: dict[Any, Any] = {}


def _ref_init(images: dict[Any, Any]) -> None:
    global _ref_images
    _ref_images = images
    _ref_frames.clear()


def _ref_write(folder: str, puzzles: Sequence[Any]) -> None:
    """The old ``_write_pictures``: Pillow's sheet and ``zipfile``'s ``.npz`` per puzzle."""
    from studio.core.fileio import write_file
    from studio.families.glyph_pmp.export import NPZ, SHEETS, puzzle_npz, ua_frame
    from studio.generate.sheet import sheet_png

    images = _ref_images
    assert images is not None

    def frame_of(key: Any) -> Any:
        f = _ref_frames.get(key)
        if f is None:
            f = _ref_frames[key] = ua_frame(images.get(key))
        return f

    base = Path(folder)
    for p in puzzles:
        write_file(base / SHEETS / f"{p.id}.png", sheet_png(p, images.get))
        write_file(base / NPZ / f"{p.id}.npz", puzzle_npz(p, frame_of))


class ReferencePictureWriter:
    """``export._PictureWriter`` as it was: the images handed to each process once, then
    whole puzzles pickled per task of 32, at most 4 tasks per process in flight."""

    def __init__(self, pictures: Any, workers: int) -> None:
        from studio.families.glyph_pmp.export import _mp_context

        self.images = dict(zip(pictures.keys, pictures.images, strict=True))
        self.pool: ProcessPoolExecutor | None = None
        if workers > 1:
            self.pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=_mp_context(),
                initializer=_ref_init,
                initargs=(self.images,),
            )
        self.window = 4 * workers

    def write(self, folder: Path, puzzles: Sequence[Any], step: Callable[[int], None]) -> None:
        chunks = [puzzles[i : i + 32] for i in range(0, len(puzzles), 32)]
        if self.pool is None:
            _ref_init(self.images)
            for chunk in chunks:
                _ref_write(str(folder), chunk)
                step(len(chunk))
            return
        pending: deque[tuple[Future[None], int]] = deque()
        for chunk in chunks:
            pending.append((self.pool.submit(_ref_write, str(folder), chunk), len(chunk)))
            if len(pending) >= self.window:
                future, size = pending.popleft()
                future.result()
                step(size)
        while pending:
            future, size = pending.popleft()
            future.result()
            step(size)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def reference_writer() -> Iterator[None]:
    """``write_split`` with the reference picture stage for the duration."""
    from studio.families.glyph_pmp import export

    saved = export._PictureWriter
    export._PictureWriter = ReferencePictureWriter  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        export._PictureWriter = saved  # type: ignore[misc]


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of ``fn()``."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (a real disk)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        tmp = Path(d)
        os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
        result = run(tmp, ua_csv(), args.n, args.seed)
    print(json.dumps(result))
    return 0 if result["same_bytes"] else 1


def _levels(sheets: Sequence[bytes], npys: Sequence[bytes]) -> dict[str, Any]:
    """Mean bytes and CPU ms per puzzle of the sheet's deflate (PNG's settings but the level)
    and the ``.npz`` entries' deflate at other levels: what a level option would buy."""
    out: dict[str, Any] = {}
    for level in (1, 3, 6, 9):
        c0 = time.process_time()
        png_size = 0
        for rows in sheets:
            z = zlib.compressobj(level, zlib.DEFLATED, 15, 9, zlib.Z_FILTERED)
            png_size += len(z.compress(rows) + z.flush())
        c1 = time.process_time()
        npz_size = 0
        for data in npys:
            z = zlib.compressobj(level, zlib.DEFLATED, -15)
            npz_size += len(z.compress(data) + z.flush())
        c2 = time.process_time()
        out[str(level)] = {
            "sheet_deflate_ms": round((c1 - c0) / len(sheets) * 1e3, 3),
            "sheet_idat_bytes": round(png_size / len(sheets)),
            "npz_deflate_ms": round((c2 - c1) / len(npys) * 1e3, 3),
            "npz_images_bytes": round(npz_size / len(npys)),
        }
    return out


def run(tmp: Path, source: Path, n: int, seed: int) -> dict[str, Any]:
    from studio.app import Studio
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.families.glyph_pmp.export import (
        _npy_bytes,
        _Pictures,
        default_workers,
        puzzle_frames,
        puzzle_npz,
        ua_frame,
        write_split,
    )
    from studio.generate.params import SplitParams
    from studio.generate.sheet import SheetPainter, png_rows, render_sheet, sheet_png
    from studio.splits import feature_index, generate_from, split_inputs, vet
    from studio.store.project import Project
    from studio.vet.balance import split_stats

    t0 = time.perf_counter()
    studio = Studio(Project.create(tmp / "bench.studio", load_schema(bundled_schema_path())))
    studio.import_annotations(source)
    for _ in studio.render_all():
        pass
    try:
        inputs = split_inputs(studio)
    finally:
        studio.close()
    params = SplitParams(n=n, seed=seed, sampling="balanced")
    [result] = generate_from(inputs.annotations, inputs.schema, params)
    verdicts = vet(
        result.puzzles,
        inputs.annotations,
        inputs.schema,
        feature_index(inputs.images),
        params.strict,
    )
    stats = split_stats(result.puzzles, inputs.annotations, inputs.schema)
    setup_s = time.perf_counter() - t0

    def write(out: Path, workers: int | None) -> None:
        write_split(
            out,
            [result],
            params,
            inputs.rows,
            inputs.image_of,
            [verdicts],
            [stats],
            schema=inputs.schema,
            workers=workers,
        )

    def reference(out: Path, workers: int | None) -> None:
        with reference_writer():
            write(out, workers)

    ref_wall, _ = _timed(lambda: reference(tmp / "ref", None))
    new_wall, _ = _timed(lambda: write(tmp / "new", None))
    _, ref_cpu = _timed(lambda: reference(tmp / "ref1", 1))
    _, new_cpu = _timed(lambda: write(tmp / "new1", 1))
    want = _files(tmp / "ref")
    same = all(_files(tmp / f) == want for f in ("new", "ref1", "new1"))

    # ---- one puzzle's sheet and .npz, reference and now --------------------------------------
    sample = result.puzzles[:500]
    keys = sorted({k for p in result.puzzles for k in (*p.context_keys, *p.answers)})
    pictures = _Pictures({k: inputs.image_of(k) for k in keys})
    jobs = [pictures.job(p) for p in sample]
    frames: dict[Any, Any] = {}

    def frame_of(key: Any) -> Any:
        f = frames.get(key)
        if f is None:
            f = frames[key] = ua_frame(inputs.image_of(key))
        return f

    painter = SheetPainter(inputs.image_of)
    painter.png(sample[0])  # the template, once
    for j in jobs:
        pictures.sheet(j)
        pictures.npz(j)  # per-glyph tiles and frames, as a writing process has them

    def per_puzzle(fn: Callable[[], Any]) -> float:
        return round(_timed(fn)[1] / len(sample) * 1e3, 3)

    ref_sheet = per_puzzle(lambda: [sheet_png(p, inputs.image_of) for p in sample])
    ref_npz = per_puzzle(lambda: [puzzle_npz(p, frame_of) for p in sample])
    new_sheet = per_puzzle(lambda: [pictures.sheet(j) for j in jobs])
    new_npz = per_puzzle(lambda: [pictures.npz(j) for j in jobs])
    rows = [png_rows(np.asarray(render_sheet(p, inputs.image_of))) for p in sample]
    npys = [_npy_bytes(puzzle_frames(p, frame_of)) for p in sample]
    levels = _levels(rows, npys)

    return {
        "name": "split_write",
        "puzzles": len(result.puzzles),
        "write_workers": default_workers(n),
        "write_s": round(new_wall, 3),
        "reference_write_s": round(ref_wall, 3),
        "write_ratio": round(ref_wall / new_wall, 3),
        "write_puzzles_per_s": round(n / new_wall, 1),
        "cpu_ms_per_puzzle": round(new_cpu / n * 1e3, 3),
        "reference_cpu_ms_per_puzzle": round(ref_cpu / n * 1e3, 3),
        "cpu_ratio": round(ref_cpu / new_cpu, 3),
        "same_bytes": same,
        "sheet_cpu_ms": new_sheet,
        "reference_sheet_cpu_ms": ref_sheet,
        "npz_cpu_ms": new_npz,
        "reference_npz_cpu_ms": ref_npz,
        "deflate_floor_ms": round(
            levels["6"]["sheet_deflate_ms"] + levels["6"]["npz_deflate_ms"], 3
        ),
        "levels": levels,
        "reference": "picture stage before issue 15's CPU work: Pillow sheets, zipfile npz, "
        "whole puzzles pickled per task",
        "peak_rss_mb": round(_rss_mb(), 1),
        "setup_s": round(setup_s, 3),
        "filesystem": _filesystem(tmp),
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "python": sys.version.split()[0],
    }


if __name__ == "__main__":
    raise SystemExit(main())
