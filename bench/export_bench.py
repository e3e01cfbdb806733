"""Benchmark `export-set`: publish a curated set of 10,000 approved puzzles, re-vetted.

Set-up (untimed, reported): a new project from the shared UA CSV (as ``bench/generate_bench.py``
does), its glyphs rendered into a fresh cache, a 10,000-puzzle split generated and vetted
(``studio.splits.generate_and_vet``) and imported as a puzzle set (``Curator.import_results``),
then every puzzle approved in one command (``Curator.set_status``), as a curator's bulk action
would.

Timed, one pass each, in one process, on the same project:

- **export** — :func:`studio.publish.export_set` (what ``analogy-studio export-set`` and the
  GUI's Export benchmark… run): read the approved puzzles and their curation log, read the
  annotations and renders, vet every puzzle again (image-feature warnings included), write the
  split folder (sheets, UA ``.npz``, annotations, schema, report, split.json), the records with
  their curation history, ``records.parquet``, ``README.md`` and ``croissant.json``. Seconds
  per stage come from its progress callback.
- **reference** — :func:`studio.splits.generate_to_dir` of the same 10,000 puzzles (the same
  parameters and seed: what ``analogy-studio generate`` does, generation and writing).

``ratio`` = export seconds / generate seconds. The aim (issue 13) is an export under 10 s.

Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from common import ua_csv

AIM_S = 10.0


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
    return 0 if result["exported"] == args.n else 1


def run(tmp: Path, source: Path, n: int, seed: int) -> dict:
    from studio.app import Studio
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.curation import Curator
    from studio.generate.params import SplitParams
    from studio.publish import export_set
    from studio.splits import generate_and_vet, generate_to_dir
    from studio.store.project import Project

    params = SplitParams(n=n, seed=seed, sampling="balanced")
    t0 = time.perf_counter()
    studio = Studio(
        Project.create(tmp / "bench.studio", load_schema(bundled_schema_path())), author="bench"
    )
    studio.import_annotations(source)
    for _ in studio.render_all():
        pass
    t1 = time.perf_counter()
    vetted = generate_and_vet(studio, params)
    curator = Curator(studio)
    [set_id] = curator.import_results("bench", params, vetted.results, vetted.all_verdicts)
    ids = [s.puzzle_id for s in studio.project.puzzle_summaries(set_id)]
    curator.set_status(ids, "approved", "bench: approved in bulk")
    t2 = time.perf_counter()

    # ---- export, with re-vetting --------------------------------------------------------------
    marks: list[tuple[str, float]] = []

    def progress(stage: str, done: int, total: int) -> None:
        if not marks or marks[-1][0] != stage:
            marks.append((stage, time.perf_counter()))

    e0 = time.perf_counter()
    summary = export_set(studio, set_id, tmp / "export", progress=progress)
    e1 = time.perf_counter()
    export_s = e1 - e0
    bounds = [*marks, ("end", e1)]
    stages = {name: round(bounds[i + 1][1] - start, 3) for i, (name, start) in enumerate(marks)}

    # ---- reference: generate the same 10,000 puzzles into a folder ------------------------
    g0 = time.perf_counter()
    gen = generate_to_dir(studio, params, tmp / "generated")
    g1 = time.perf_counter()
    generate_s = g1 - g0
    studio.close()

    size_mb = sum(p.stat().st_size for p in (tmp / "export").rglob("*") if p.is_file()) / 2**20
    return {
        "name": "export",
        "source": str(source),
        "puzzles": n,
        "exported": summary.exported,
        "dropped": len(summary.dropped),
        "with_warnings": summary.with_warnings,
        "export_s": round(export_s, 3),
        "export_puzzles_per_s": round(summary.exported / export_s, 1),
        "export_stages_s": stages,
        "aim_s": AIM_S,
        "under_aim": export_s < AIM_S,
        "reference": "generate_to_dir of the same 10,000 puzzles (same parameters and seed)",
        "generate_s": round(generate_s, 3),
        "generated": gen["puzzles"],
        "ratio": round(export_s / generate_s, 3),
        "export_mb": round(size_mb, 1),
        "cpu_count": os.cpu_count(),
        "setup_import_render_s": round(t1 - t0, 3),
        "setup_generate_import_approve_s": round(t2 - t1, 3),
    }


if __name__ == "__main__":
    raise SystemExit(main())
