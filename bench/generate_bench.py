"""Benchmark `generate`: a 10,000-puzzle glyph split from the shared UA annotations, fully vetted.

Set-up (untimed, reported): a new project from the shared UA CSV (as ``bench/import_bench.py``
does), its glyphs rendered into a fresh cache, and the split inputs read back
(``studio.splits.split_inputs``: the annotations of the glyphs that have an image, and the
images).

Timed, one pass each, in one process:

- **pipeline** — what ``analogy-studio generate`` does before writing files:
  ``generate_from`` (the glyph PMP generator: every foil candidate checked against every rule
  over every concept the glyphs share), the image-feature index of every glyph
  (``feature_index``), ``vet`` of every puzzle (``vet_puzzle``: structure, the key, emergent
  rules, image-feature warnings) and ``split_stats``. ``puzzles_per_s`` = n / their sum;
  ``vet_us_per_puzzle`` = the vetting alone (without the feature index) per puzzle.
- **reference** — UA's naive approach on the same generator: foils drawn from the concept's
  other folders with no emergent check (``foil_rejection`` always accepts), and no vetting.
  ``ratio`` = pipeline puzzles/s over reference puzzles/s. The reference's puzzles are then vetted
  (untimed) to show what the checks buy: ``reference_invalid`` puzzles would have a second
  defensible answer. With the single-tag shared CSV and no context shift there are none (a foil
  carries no value of any other concept), so a fifth-size split *with* context shift is made
  both ways and vetted too (``reference_shift_invalid`` against ``ours_shift_invalid``).

Memory: the 10,000 puzzles are kept with their frames as one ``uint8`` array
(n × 9 × 80 × 80, UA's 0/1 pixels, 576 MB); ``peak_rss_mb`` is the process's peak resident set
(``resource.getrusage``), rendering workers excluded (they are separate processes).

Sampling is ``balanced``: with the shared CSV (one tag per glyph, so few distinct rule–values–
answer instantiations) a ``diverse`` 10,000-puzzle split runs dry.

Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from common import ua_csv


def _rss_mb() -> float:
    # ru_maxrss is in KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
        result = run(tmp, ua_csv(), args.n, args.seed)
    print(json.dumps(result))
    ok = result["invalid"] == 0 and result["puzzles"] == args.n
    return 0 if ok else 1


def run(tmp: Path, source: Path, n: int, seed: int) -> dict:
    from studio.app import Studio
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.families.glyph_pmp.export import ua_frame
    from studio.families.glyph_pmp.generator import GlyphPMPGenerator
    from studio.generate.params import SplitParams
    from studio.splits import feature_index, generate_from, split_inputs, vet
    from studio.store.project import Project
    from studio.vet.balance import split_stats
    from studio.vet.rules import RuleBook

    t0 = time.perf_counter()
    studio = Studio(Project.create(tmp / "bench.studio", load_schema(bundled_schema_path())))
    studio.import_annotations(source)
    for _ in studio.render_all():
        pass
    t1 = time.perf_counter()
    inputs = split_inputs(studio)
    t2 = time.perf_counter()
    studio.close()
    rss_setup = _rss_mb()

    params = SplitParams(n=n, seed=seed, sampling="balanced")
    book = RuleBook(inputs.schema)

    # ---- pipeline: generate, feature index, vet every puzzle, statistics ---------------------
    g0 = time.perf_counter()
    [result] = generate_from(inputs.annotations, inputs.schema, params)
    g1 = time.perf_counter()
    features = feature_index(inputs.images)
    g2 = time.perf_counter()
    verdicts = vet(result.puzzles, inputs.annotations, book, features)
    g3 = time.perf_counter()
    stats = split_stats(result.puzzles, inputs.annotations, inputs.schema)
    g4 = time.perf_counter()
    pipeline_s = g4 - g0

    # ---- the puzzles with their frames, as one uint8 array -----------------------------------
    frames_of: dict = {}
    frames = np.empty((len(result.puzzles), 9, 80, 80), dtype=np.uint8)
    for i, p in enumerate(result.puzzles):
        for j, k in enumerate((*p.context_keys, *p.answers)):
            f = frames_of.get(k)
            if f is None:
                f = frames_of[k] = ua_frame(inputs.images.get(k))
            frames[i, j] = f
    frames_mb = frames.nbytes / 2**20
    peak_with_frames = _rss_mb()

    # ---- reference: UA's naive foils, no emergent check, no vetting --------------------------
    class NaiveGenerator(GlyphPMPGenerator):
        def foil_rejection(self, context, candidate, shift, rc):  # type: ignore[override]
            return None  # UA: any glyph of the concept's other folders

    r0 = time.perf_counter()
    naive = NaiveGenerator(params, inputs.annotations, inputs.schema).generate()
    r1 = time.perf_counter()
    reference_s = r1 - r0
    naive_verdicts = vet(naive.puzzles, inputs.annotations, book)
    naive_kinds = Counter(f.check for v in naive_verdicts for f in v.errors)
    # with context shift, UA's foils may complete the rule (untimed; a fifth of the size)
    shift_params = SplitParams(n=max(1, n // 5), seed=seed, sampling="balanced", shift=True)
    naive_shift = NaiveGenerator(shift_params, inputs.annotations, inputs.schema).generate()
    shift_verdicts = vet(naive_shift.puzzles, inputs.annotations, book)
    shift_kinds = Counter(f.check for v in shift_verdicts for f in v.errors)
    ours_shift = generate_from(inputs.annotations, inputs.schema, shift_params)[0]
    ours_shift_invalid = sum(
        1 for v in vet(ours_shift.puzzles, inputs.annotations, book) if not v.valid
    )

    rate = n / pipeline_s
    ref_rate = n / reference_s
    peak = _rss_mb()
    every = stats["all"]
    return {
        "name": "generate",
        "source": str(source),
        "puzzles": len(result.puzzles),
        "layout": params.layout,
        "sampling": params.sampling,
        "sampling_note": (
            "balanced: with the shared CSV (one tag per glyph) a diverse 10,000-puzzle split "
            "runs dry"
        ),
        "holdout": params.holdout,
        "rules": list(params.rules),
        "glyphs_with_image": len(inputs.images),
        "glyphs_without_image": len(inputs.without_image),
        "puzzles_per_s": round(rate, 1),
        "pipeline_s": round(pipeline_s, 3),
        "generate_s": round(g1 - g0, 3),
        "feature_index_s": round(g2 - g1, 3),
        "vet_s": round(g3 - g2, 3),
        "stats_s": round(g4 - g3, 3),
        "vet_us_per_puzzle": round((g3 - g2) / n * 1e6, 1),
        "vet_with_features_us_per_puzzle": round((g3 - g1) / n * 1e6, 1),
        "valid": sum(1 for v in verdicts if v.valid),
        "invalid": sum(1 for v in verdicts if not v.valid),
        "with_feature_warnings": sum(1 for v in verdicts if v.warnings),
        "rejections": dict(sorted(result.rejections.items())),
        "answer_position_p": every["answer_position"]["p"],
        "foil_value_min_p": every["foil_values"]["min_p"],
        "reference": "UA's naive foils (concept's other folders, no emergent check), no vetting",
        "reference_puzzles_per_s": round(ref_rate, 1),
        "ratio": round(rate / ref_rate, 3),
        "reference_invalid": sum(1 for v in naive_verdicts if not v.valid),
        "reference_findings": dict(sorted(naive_kinds.items())),
        "reference_note": (
            "without shift no foil of a single-tag glyph can complete another rule, so UA's "
            "naive foils are valid there; with context shift they are not:"
        ),
        "shift_check_puzzles": shift_params.n,
        "reference_shift_invalid": sum(1 for v in shift_verdicts if not v.valid),
        "reference_shift_findings": dict(sorted(shift_kinds.items())),
        "ours_shift_invalid": ours_shift_invalid,
        "ours_shift_rejections": dict(sorted(ours_shift.rejections.items())),
        "frames_shape": list(frames.shape),
        "frames_mb": round(frames_mb, 1),
        "rss_after_setup_mb": round(rss_setup, 1),
        "peak_rss_with_frames_mb": round(peak_with_frames, 1),
        "peak_rss_mb": round(peak, 1),
        "setup_import_render_s": round(t1 - t0, 3),
        "setup_inputs_s": round(t2 - t1, 3),
        "target_puzzles_per_s": 1000,
        "target_peak_mb": 1024,
        "meets_targets": rate >= 1000 and peak < 1024,
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "python": sys.version.split()[0],
    }


if __name__ == "__main__":
    raise SystemExit(main())
