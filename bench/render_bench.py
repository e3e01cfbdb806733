"""Benchmark `render`: glyphs per second of the 500→80 binarised pipeline vs a plain reference.

Workload: the first N (default 2,000) code points of Symbola, in cmap order, that render (the
missing ones — spaces and the like — are found in an untimed pre-pass and left out).

- **reference**: one process, the font loaded once with ``ImageFont.truetype(path, 400,
  layout_engine=BASIC)``; per glyph ``getbbox``, draw the character centred on a white 500×500
  ``L`` canvas with ``ImageDraw.text``, ``resize((80, 80), BOX)``, threshold < 128 with numpy.
  It applies the same fitting rule as the pipeline (a glyph whose box exceeds 480 px is drawn
  with the font size reduced to ``400 × 480 // max(w, h)``, then one point less until it fits;
  reduced fonts are kept in a dict), because without it overflowing glyphs would be clipped
  and the images could not be compared.
- **pipeline**: ``studio.glyphs.render.render_batch(jobs, cache=None)`` with the default
  number of workers (the CPU count), collected into arrays.

Both produce images for the same code points, and every pipeline image must equal the
reference's byte for byte (``differing_images`` must be 0).

Timing: the first pipeline call in this process is reported separately as
``pipeline_cold_glyphs_per_s`` (it starts the multiprocessing fork server, once per session).
After that, reference and pipeline runs alternate ``--repeats`` times and the best of each is
reported, so that a burst of load from other programs on a shared machine hurts neither side
more than the other. ``pipeline_in_process_glyphs_per_s`` (``workers=1``) shows the per-glyph
cost of the pipeline's own rendering on one core.

Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from PIL import Image, ImageDraw, ImageFont

SYMBOLA = Path("/usr/share/fonts/truetype/ancient-scripts/Symbola_hint.ttf")
MASTER, FONT_SIZE, LIMIT, THRESHOLD = 500, 400, 480, 128
T = TypeVar("T")


def reference_render(path: Path, cps: list[int], size: int) -> list[np.ndarray]:
    """The plain way: one process, one font, a full 500×500 canvas per glyph."""
    font = ImageFont.truetype(str(path), FONT_SIZE, layout_engine=ImageFont.Layout.BASIC)
    reduced: dict[int, ImageFont.FreeTypeFont] = {}
    out: list[np.ndarray] = []
    for cp in cps:
        ch = chr(cp)
        f = font
        x0, y0, x1, y1 = f.getbbox(ch)
        fs = FONT_SIZE
        while x1 - x0 > LIMIT or y1 - y0 > LIMIT:
            fs = FONT_SIZE * LIMIT // max(x1 - x0, y1 - y0) if fs == FONT_SIZE else fs - 1
            f = reduced.get(fs) or reduced.setdefault(
                fs,
                ImageFont.truetype(str(path), fs, layout_engine=ImageFont.Layout.BASIC),
            )
            x0, y0, x1, y1 = f.getbbox(ch)
        canvas = Image.new("L", (MASTER, MASTER), 255)
        origin = ((MASTER - (x1 - x0)) // 2 - x0, (MASTER - (y1 - y0)) // 2 - y0)
        ImageDraw.Draw(canvas).text(origin, ch, fill=0, font=f)
        grey = np.asarray(canvas.resize((size, size), Image.Resampling.BOX))
        out.append(np.where(grey < THRESHOLD, 0, 255).astype(np.uint8))
    return out


def pipeline_render(
    jobs: list[Any], size: int, workers: int | None
) -> tuple[list[np.ndarray | None], list[int]]:
    from studio.glyphs.render import render_batch

    images: dict[int, np.ndarray] = {}
    missing: list[int] = []
    for event in render_batch(jobs, size=size, cache=None, workers=workers):
        for r in event.results:
            if r.image is None:
                missing.append(r.job.codepoint)
            else:
                images[r.job.codepoint] = r.image
    return [images.get(job.codepoint) for job in jobs], missing


def first_rendering(path: Path, n: int, size: int) -> list[int]:
    """The first ``n`` code points of the font's cmap that render (untimed)."""
    from studio.glyphs.fonts import read_font
    from studio.glyphs.render import GlyphRenderer

    found: list[int] = []
    with GlyphRenderer(path) as renderer:
        for cp in sorted(read_font(path)[1]):
            if renderer.missing_reason(cp, size) is None:
                found.append(cp)
                if len(found) == n:
                    break
    return found


def timed(fn: Callable[..., T], *args: Any) -> tuple[float, T]:
    t = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - t, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--size", type=int, default=80)
    parser.add_argument("--workers", type=int, default=None, help="default: CPU count")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    if not SYMBOLA.exists():
        print(json.dumps({"name": "render", "skipped": f"{SYMBOLA} is not installed"}))
        return 0

    from studio.glyphs.fonts import face_sha256
    from studio.glyphs.render import RenderJob, _mp_context

    cps = first_rendering(SYMBOLA, args.n, args.size)
    sha = face_sha256(SYMBOLA)
    jobs = [RenderJob(str(SYMBOLA), 0, sha, cp) for cp in cps]
    workers = args.workers or os.cpu_count() or 1

    cold_s, _ = timed(pipeline_render, jobs, args.size, args.workers)
    in_process_s, _ = timed(pipeline_render, jobs, args.size, 1)
    ref_times: list[float] = []
    pipe_times: list[float] = []
    reference = pipeline = None
    missing: list[int] = []
    for _ in range(max(1, args.repeats)):
        dt, reference = timed(reference_render, SYMBOLA, cps, args.size)
        ref_times.append(dt)
        dt, (pipeline, missing) = timed(pipeline_render, jobs, args.size, args.workers)
        pipe_times.append(dt)
    assert reference is not None and pipeline is not None

    differing = sum(
        1 for a, b in zip(reference, pipeline, strict=True) if b is None or not np.array_equal(a, b)
    )
    n = len(cps)
    ref_rate = n / min(ref_times)
    pipe_rate = n / min(pipe_times)
    result = {
        "name": "render",
        "n": n,
        "size": args.size,
        "reference_glyphs_per_s": round(ref_rate, 1),
        "pipeline_glyphs_per_s": round(pipe_rate, 1),
        "ratio": round(pipe_rate / ref_rate, 3),
        "workers": workers,
        "identical_images": differing == 0,
        "differing_images": differing,
        "pipeline_missing": len(missing),
        "cpu_count": os.cpu_count(),
        "pipeline_cold_glyphs_per_s": round(n / cold_s, 1),
        "pipeline_in_process_glyphs_per_s": round(n / in_process_s, 1),
        "reference_runs_s": [round(t, 3) for t in ref_times],
        "pipeline_runs_s": [round(t, 3) for t in pipe_times],
        "timing": f"best of {len(ref_times)} alternating runs after one cold pipeline run",
        "start_method": _mp_context().get_start_method(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "target_ratio": 1.7,
        "python": sys.version.split()[0],
    }
    print(json.dumps(result))
    return 0 if differing == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
