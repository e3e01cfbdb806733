"""Benchmark writing a glyph split: end to end ``generate`` of 10,000 puzzles, and the write alone
against the per-file-fsync writer it replaced, in the same run.

Set-up (untimed, reported): a new project from the shared UA CSV, its glyphs rendered into a
fresh cache (as ``bench/generate_bench.py``).

Timed, one pass each, in one process, every split written into a fresh folder of the same
temporary directory (its file system is reported: fsync costs nothing on a tmpfs):

- **end_to_end** — ``studio.splits.generate_to_dir``, what ``analogy-studio generate PROJECT OUT
  --n N --sampling balanced`` does after rendering: read the inputs, generate, the image-feature
  index, strict vetting, statistics, and writing the folder (staged, one sync, moved into
  place; sheets and ``.npz`` files on every core).
- **pipeline** — the same steps before writing, timed one by one on the same inputs
  (``generate_from``, ``feature_index``, ``vet``, ``split_stats``).
- **write** — ``write_split`` of that fold: ``write_s`` with the default number of processes,
  ``write_in_process_s`` with one; ``reference_write_s`` — the writer before issue 15, kept
  here as :func:`reference_write`: each file written atomically with an fsync (temp file, fsync,
  rename), sheets and ``.npz`` files on a few threads. ``write_ratio`` = reference / write;
  ``reference_end_to_end_s`` = end_to_end - write + reference write (the old command's time,
  estimated from the same run). ``same_bytes``: both writers' folders hold the same bytes.
- **cpu** — the CPU of one puzzle's sheet and ``.npz`` (200 puzzles, in-process), the floor of
  the write: with the bytes fixed (PNG and deflate at zlib level 6), N puzzles cost at least
  N x that over the cores.

``peak_rss_mb`` is the process's peak resident set (writing processes excluded). The machine
may be shared: ``load_average_1min`` says how busy it was; compare the ratios, not the seconds.
Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

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


def reference_write(
    out: Path, result: Any, params: Any, inputs: Any, verdicts: Any, stats: Any
) -> None:
    """The writer before issue 15, for one fold: every file atomically with an fsync, sheets
    and ``.npz`` files on ``min(4, cores + 1)`` threads, 64 puzzles in flight, ``split.json``
    last. Same bytes as ``write_split``."""
    from studio.core.annotations import format_annotation_csv
    from studio.core.fileio import atomic_write_bytes, atomic_write_text
    from studio.core.puzzle import write_jsonl
    from studio.families.glyph_pmp.export import (
        GLYPH_SPLIT,
        NPZ,
        PUZZLES,
        REPORT_JSON,
        SCHEMA_JSON,
        SHEETS,
        puzzle_npz,
        split_info,
        ua_frame,
    )
    from studio.generate.sheet import sheet_png

    frames: dict[Any, Any] = {}

    def frame_of(key: Any) -> Any:
        f = frames.get(key)
        if f is None:
            f = frames[key] = ua_frame(inputs.image_of(key))
        return f

    def write_one(p: Any) -> None:
        atomic_write_bytes(out / SHEETS / f"{p.id}.png", sheet_png(p, inputs.image_of))
        atomic_write_bytes(out / NPZ / f"{p.id}.npz", puzzle_npz(p, frame_of))

    (out / SHEETS).mkdir(parents=True, exist_ok=True)
    (out / NPZ).mkdir(parents=True, exist_ok=True)
    pool = ThreadPoolExecutor(max_workers=min(4, (os.cpu_count() or 1) + 1))
    try:
        pending: deque[Future[None]] = deque()
        for p in result.puzzles:
            pending.append(pool.submit(write_one, p))
            if len(pending) >= 64:
                pending.popleft().result()
        while pending:
            pending.popleft().result()
    finally:
        pool.shutdown(wait=True)
    atomic_write_text(out / "annotations.csv", format_annotation_csv(inputs.rows))
    atomic_write_text(out / SCHEMA_JSON, inputs.schema.dumps())
    report: dict[str, Any] = {"fold": result.fold, "summary": result.summary(timing=False)}
    report["stats"] = stats
    report["verdicts"] = [v.to_puzzle_json() for v in verdicts]
    report["valid"] = sum(1 for v in verdicts if v.valid)
    report["invalid"] = sum(1 for v in verdicts if not v.valid)
    report["with_warnings"] = sum(1 for v in verdicts if v.warnings)
    GLYPH_SPLIT.write_json(out / REPORT_JSON, report)
    atomic_write_text(out / PUZZLES, write_jsonl(result.puzzles))
    split = dict(split_info(params, inputs.rows, inputs.schema, None))
    split.update(fold=result.fold, puzzles=len(result.puzzles))
    split["summary"] = result.summary(timing=False)
    GLYPH_SPLIT.finish(out, split)


def _files(folder: Path, names: Sequence[str]) -> dict[str, bytes]:
    out = {}
    for name in names:
        p = folder / name
        targets = sorted(p.iterdir()) if p.is_dir() else [p]
        for t in targets:
            out[str(t.relative_to(folder))] = t.read_bytes()
    return out


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


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


def run(tmp: Path, source: Path, n: int, seed: int) -> dict[str, Any]:
    from studio.app import Studio
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.families.glyph_pmp.export import (
        ANNOTATIONS_CSV,
        NPZ,
        PUZZLES,
        REPORT_JSON,
        SCHEMA_JSON,
        SHEETS,
        SPLIT_JSON,
        default_workers,
        puzzle_npz,
        ua_frame,
        write_split,
    )
    from studio.generate.params import SplitParams
    from studio.generate.sheet import sheet_png
    from studio.splits import feature_index, generate_from, generate_to_dir, split_inputs, vet
    from studio.store.project import Project
    from studio.vet.balance import split_stats

    t0 = time.perf_counter()
    studio = Studio(Project.create(tmp / "bench.studio", load_schema(bundled_schema_path())))
    studio.import_annotations(source)
    for _ in studio.render_all():
        pass
    setup_s = time.perf_counter() - t0
    params = SplitParams(n=n, seed=seed, sampling="balanced")
    try:
        # ---- end to end, as the CLI's generate ---------------------------------------------
        summary, end_to_end_s = _timed(lambda: generate_to_dir(studio, params, tmp / "e2e"))
        inputs = split_inputs(studio)
    finally:
        studio.close()
    shutil.rmtree(tmp / "e2e")

    # ---- the pipeline before writing, step by step ------------------------------------------
    [result], generate_s = _timed(lambda: generate_from(inputs.annotations, inputs.schema, params))
    features, features_s = _timed(lambda: feature_index(inputs.images))
    verdicts, vet_s = _timed(
        lambda: vet(result.puzzles, inputs.annotations, inputs.schema, features, params.strict)
    )
    stats, stats_s = _timed(lambda: split_stats(result.puzzles, inputs.annotations, inputs.schema))

    # ---- the write alone: new (every core, one process) and the reference --------------------
    def new_write(out: Path, workers: int | None) -> None:
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

    _, write_s = _timed(lambda: new_write(tmp / "new", None))
    _, write_in_process_s = _timed(lambda: new_write(tmp / "one", 1))
    _, reference_write_s = _timed(
        lambda: reference_write(tmp / "ref", result, params, inputs, verdicts, stats)
    )
    names = [SHEETS, NPZ, PUZZLES, REPORT_JSON, ANNOTATIONS_CSV, SCHEMA_JSON, SPLIT_JSON]
    same = _files(tmp / "new", names) == _files(tmp / "ref", names)
    same = same and _files(tmp / "one", names) == _files(tmp / "ref", names)

    # ---- the CPU floor of one puzzle's pictures ----------------------------------------------
    sample = result.puzzles[:200]
    c0 = time.process_time()
    for p in sample:
        sheet_png(p, inputs.image_of)
    c1 = time.process_time()
    for p in sample:
        puzzle_npz(p, lambda k: ua_frame(inputs.image_of(k)))
    c2 = time.process_time()
    sheet_ms = (c1 - c0) / len(sample) * 1e3
    npz_ms = (c2 - c1) / len(sample) * 1e3

    cores = default_workers(10**9)
    return {
        "name": "split_write",
        "puzzles": summary["puzzles"],
        "sampling": params.sampling,
        "strict": params.strict,
        "end_to_end_s": round(end_to_end_s, 3),
        "end_to_end_puzzles_per_s": round(n / end_to_end_s, 1),
        "reference_end_to_end_s": round(end_to_end_s - write_s + reference_write_s, 3),
        "end_to_end_ratio": round((end_to_end_s - write_s + reference_write_s) / end_to_end_s, 3),
        "generate_s": round(generate_s, 3),
        "feature_index_s": round(features_s, 3),
        "vet_s": round(vet_s, 3),
        "stats_s": round(stats_s, 3),
        "write_s": round(write_s, 3),
        "write_workers": default_workers(n),
        "write_in_process_s": round(write_in_process_s, 3),
        "reference_write_s": round(reference_write_s, 3),
        "reference": "per-file atomic writes with an fsync each, min(4, cores + 1) threads",
        "write_ratio": round(reference_write_s / write_s, 3),
        "write_puzzles_per_s": round(n / write_s, 1),
        "same_bytes": same,
        "sheet_cpu_ms": round(sheet_ms, 3),
        "npz_cpu_ms": round(npz_ms, 3),
        "write_cpu_floor_s": round(n * (sheet_ms + npz_ms) / 1e3 / cores, 3),
        "peak_rss_mb": round(_rss_mb(), 1),
        "setup_import_render_s": round(setup_s, 3),
        "filesystem": _filesystem(tmp),
        "cpu_count": os.cpu_count(),
        "cores_used": cores,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "python": sys.version.split()[0],
    }


if __name__ == "__main__":
    raise SystemExit(main())
