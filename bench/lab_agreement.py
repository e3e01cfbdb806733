"""The agreement part of ``bench/run.py lab``: agreement over 100,000 tags (aim ≤ 1 s).

``measure()`` builds realistic synthetic ratings over the UA schema: every glyph has a few true
tags (concepts drawn by a skewed popularity, as in UA where a few concepts carry most tags);
glyphs are dealt to annotators, a share of them to two or three people; each person misses,
swaps and adds tags at small rates. It times :func:`studio.core.agreement.agreement_report`
(every concept, every value, every pair, 1,000 bootstrap replicates), and as the reference
the obvious way to get the same intervals: per replicate, resample the glyphs and call
``krippendorff.alpha`` on each concept's and each value's reliability matrix, for a few
replicates, extrapolated to all of them. Run as a script it prints one JSON object.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studio.core.agreement import Rating, agreement_report
from studio.core.schema import NONE_VALUE, Schema, bundled_schema_path, load_schema


def synthetic_ratings(
    schema: Schema,
    n_tags: int,
    annotators: int,
    rng: np.random.Generator,
    *,
    overlap: float = 0.2,
    triple: float = 0.05,
    miss: float = 0.1,
    swap: float = 0.1,
    extra: float = 0.1,
) -> tuple[list[Rating], list[tuple[int, str]]]:
    """(ratings, annotated) with about ``n_tags`` tags; ``overlap`` of the glyphs go to two
    people, ``triple`` of them to three."""
    concepts = [c for c in schema.concepts if any(v != NONE_VALUE for v in c.value_ids)]
    values = [[v for v in c.value_ids if v != NONE_VALUE] for c in concepts]
    popularity = 1.0 / np.arange(1, len(concepts) + 1) ** 0.8
    popularity /= popularity.sum()
    people = [f"annotator{i:02d}" for i in range(annotators)]
    ratings: list[Rating] = []
    annotated: list[tuple[int, str]] = []
    glyph = 0
    while len(ratings) < n_tags:
        glyph += 1
        k = min(1 + rng.poisson(2.0), len(concepts))
        truth = [
            (int(c), values[int(c)][rng.integers(len(values[int(c)]))])
            for c in rng.choice(len(concepts), size=k, replace=False, p=popularity)
        ]
        share = rng.random()
        n_people = 3 if share < triple else 2 if share < triple + overlap else 1
        for person in rng.choice(annotators, size=min(n_people, annotators), replace=False):
            name = people[int(person)]
            annotated.append((glyph, name))
            tags: set[tuple[int, str]] = set()
            for c, v in truth:
                u = rng.random()
                if u < miss:
                    continue
                if u < miss + swap and len(values[c]) > 1:
                    v = values[c][rng.integers(len(values[c]))]
                tags.add((c, v))
            if rng.random() < extra:
                c = int(rng.choice(len(concepts), p=popularity))
                tags.add((c, values[c][rng.integers(len(values[c]))]))
            ratings.extend((glyph, name, concepts[c].id, v) for c, v in sorted(tags))
    return ratings[:n_tags], annotated


def _reference_seconds_per_replicate(
    ratings: list[Rating],
    annotated: list[tuple[int, str]],
    schema: Schema,
    replicates: int,
    rng: np.random.Generator,
) -> float:
    """Seconds per replicate of the naive bootstrap: resample the glyphs annotated by two or
    more people, then one ``krippendorff.alpha`` call per concept and per value."""
    import krippendorff

    people = sorted({a for _, a in annotated} | {r[1] for r in ratings})
    person = {p: i for i, p in enumerate(people)}
    sets: dict[tuple[int, str], dict[str, set[str]]] = {}
    for g, a in annotated:
        sets.setdefault((g, a), {})
    for g, a, c, v in ratings:
        if v != NONE_VALUE:
            sets.setdefault((g, a), {}).setdefault(c, set()).add(v)
    by_glyph: dict[int, list[str]] = {}
    for g, a in sets:
        by_glyph.setdefault(g, []).append(a)
    glyphs = sorted(g for g, who in by_glyph.items() if len(who) >= 2)
    column = {g: i for i, g in enumerate(glyphs)}
    matrices: list[np.ndarray] = []
    for c in schema.concepts:
        codes: dict[frozenset[str], int] = {}
        concept = np.full((len(people), len(glyphs)), np.nan)
        per_value = {
            v: np.full((len(people), len(glyphs)), np.nan) for v in c.value_ids if v != NONE_VALUE
        }
        for (g, a), tags in sets.items():
            if g not in column:
                continue
            chosen = frozenset(tags.get(c.id, set()))
            concept[person[a], column[g]] = codes.setdefault(chosen, len(codes))
            for v, m in per_value.items():
                m[person[a], column[g]] = float(v in chosen)
        matrices.append(concept)
        matrices.extend(per_value.values())
    start = time.perf_counter()
    for _ in range(replicates):
        pick = rng.integers(0, len(glyphs), size=len(glyphs))
        for m in matrices:
            sample = m[:, pick]
            # one category only raises (undefined, as in the studio's report)
            with contextlib.suppress(ValueError), np.errstate(divide="ignore", invalid="ignore"):
                krippendorff.alpha(reliability_data=sample, level_of_measurement="nominal")
    return (time.perf_counter() - start) / replicates


def measure(
    n_tags: int = 100_000,
    annotators: int = 10,
    seed: int = 0,
    *,
    n_boot: int = 1000,
    overlap: float = 0.2,
    repeats: int = 3,
    reference_replicates: int = 20,
) -> dict[str, Any]:
    """Time ``agreement_report`` on ``n_tags`` synthetic UA tags (best of ``repeats``; the first
    run also imports scipy.sparse) against the naive per-replicate loop, extrapolated from
    ``reference_replicates`` replicates. ``overlap``: the share of glyphs given to two people
    (5 % more go to three)."""
    schema = load_schema(bundled_schema_path())
    rng = np.random.default_rng(seed)
    ratings, annotated = synthetic_ratings(schema, n_tags, annotators, rng, overlap=overlap)
    times = []
    report = None
    for _ in range(repeats):
        t = time.perf_counter()
        report = agreement_report(ratings, annotated, schema, n_boot=n_boot, seed=seed)
        times.append(time.perf_counter() - t)
    assert report is not None
    t = time.perf_counter()
    agreement_report(ratings, annotated, schema, n_boot=0, seed=seed)
    no_boot_s = time.perf_counter() - t
    per_replicate = (
        _reference_seconds_per_replicate(ratings, annotated, schema, reference_replicates, rng)
        if reference_replicates
        else None
    )
    reference_s = per_replicate * n_boot if per_replicate is not None else None
    alphas = [c.alpha.value for c in report.concepts if c.alpha.value is not None]
    return {
        "tags": len(ratings),
        "annotators": annotators,
        "overlap": overlap,
        "glyphs": report.glyphs,
        "pairable_glyphs": report.pairable_glyphs,
        "concepts": len(report.concepts),
        "values": sum(len(c.values) for c in report.concepts),
        "annotator_pairs": len(report.pairs),
        "n_boot": n_boot,
        "agreement_s": round(min(times), 3),
        "agreement_s_runs": [round(x, 3) for x in times],
        "agreement_s_first_run": round(times[0], 3),
        "agreement_no_bootstrap_s": round(no_boot_s, 3),
        "aim_s": 1.0,
        "reference_replicates_timed": reference_replicates,
        "reference_s_per_replicate": round(per_replicate, 4) if per_replicate else None,
        "reference_s_extrapolated": round(reference_s, 1) if reference_s else None,
        "speedup_vs_reference": round(reference_s / min(times), 1) if reference_s else None,
        "median_concept_alpha": round(float(np.median(alphas)), 3) if alphas else None,
    }


def main() -> int:
    args = sys.argv[1:]
    n_tags = int(args[0]) if args else 100_000
    annotators = int(args[1]) if len(args) > 1 else 10
    print(json.dumps(measure(n_tags, annotators)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
