"""Benchmark `answersets`: can a solver that never sees the context pick the key? (issue 11)

Set-up (untimed, reported): a project from the shared UA annotations with the bundled UA schema
(as ``bench/generate_bench.py``), every glyph rendered, the split inputs read back
(``studio.splits.split_inputs``: the annotations of the glyphs with an image, and the images).

Two annotation sets:

- **ua**: the shared UA annotations (mostly one tag per glyph);
- **three-concept** (not run by default): every rendered glyph carries three UA concepts
  (dots, sides, solid components) each with probability 0.8, values at random — a polysemic
  set we build, where the partial views can have a decoy in nearly every puzzle;
- **polysemic**: every rendered glyph's image pseudo-tags (``studio.vet.features.feature_tags``
  over ``FEATURE_SCHEMA``: components, holes, aspect, size, ink, mirror and rotation symmetry;
  several tags per glyph, ambiguous ones carry two neighbouring values).

For each set and each answer-set design — ``ua`` (UA's foil pool, the published design: before)
and ``symmetric`` (the default: after, sets of two to four answers; ``symmetric:3`` or
``symmetric:4`` for sets of at least that many, issue 24's ``min_answers``) — a balanced two-row
split of ``--n`` puzzles is generated with ``studio.splits.generate_from`` (no files) and fully
vetted with ``studio.splits.vet`` (strict, as the split is: ``strict_findings`` counts
shifted-reading foils; for the UA set with the image-feature warnings, whose index build is
timed once and counted in each pipeline, as in the ``generate`` bench). ``puzzles_per_s`` = n /
(generation + vetting); ``invalid`` counts puzzles with a vet error and ``findings`` the error
kinds.

Then each answers-only probe (``studio.baselines.probes.fit_answers_only_probe``: a conditional
logit over each answer's features, never the context; fitted on the train part, val and test
predicted held out) and each partial-view probe (the same over the tags plus how each answer
relates to ONE context row: ``probe-row1``, the first; ``probe-row2``, the incomplete one) is
scored on the held-out puzzles, with a Wilson 95% interval (``hybrid-row1`` / ``hybrid-row2``:
the exact solver of that view with its ties broken by that probe, the strongest of them):

- ``probe-tags``: over the annotation set's tags of each answer glyph (the TagIndex);
- ``probe-image``: over the image pseudo-tags of each answer's 80×80 UA frame (what the worker's
  probe computes from the split's frames).

With ``--families``: 2,000-item splits (``--family-n``) of each non-glyph family, probed with
``probe-tags`` over each item's symbolic record (``studio.stimuli.symbolic.answer_attributes``),
under the family's default design (``balanced``) and its published one (KiVA's option set,
polycube rotation's odd candidate, composition's scaled twin, cube nets' distractors), and,
where a family's design was replaced without an option keeping the old one, that old design as
a same-run reference (``BEFORE``: shape-count's design at cb375c3, its counts unbalanced, as
``shape-count / before (cb375c3)``). Where a generator offers ``records()`` (KiVA, polycube
rotation) the records are made without rendering, as the probe reads nothing else; the others
go through ``items()`` as ``generate`` makes them.

Each glyph split also reports its ``partial_views`` (issue 24): the exact symbolic solvers of
``studio.vet.partial`` (the answers and the first row alone, ``solver-row1``; the answers and
the incomplete row's visible cells alone, ``solver-row2``), scored on the held-out puzzles
knowing the split's tested (rule, concept) readings, with the share of puzzles that hold a decoy
— the floors the generator reached on those annotations — and the weighted solver's
(``weighted-row1`` / ``weighted-row2``: each reading weighed by how often an answer fitting it
was the key in the other half of the held-out puzzles) and the relative solver's
(``relative-row1`` / ``relative-row2``: the same, each answer's readings with whether it fits
the most and the fewest of its puzzle's answers; the generator judges its contexts by this
one's running shares, so ``weighted`` and the logit are the solvers it does not aim at). A design
ending in ``/plain`` (``symmetric/plain``) is the same generator with one context draw per
puzzle, i.e. no decoys: the same-run reference for both the partial views and the speed;
``/values`` (analogies, ``--layout analogy``) draws symmetric sets as before issue 24's variant
sets — foils carrying the set's other values, most like B — the reference for those. Glyph
splits are generated in one process (``workers=1``) so that the two compare.

With ``--all-puzzles`` each glyph split also reports ``partial_views_all``: the same views
over every puzzle, train included (about three times the held-out puzzles, so two designs'
floors compare with less noise; the solvers that learn are cross-fitted as on the held-out
ones).

``partial_views_by_decoys`` gives the same views apart on the puzzles whose answers are a set
over another tested concept too (``possible``: a decoy can fool every solver, the aware one
included) and on the rest (``none``: the answers name their concept), the two halves of the
issue's aim ("within 5 points of chance where a decoy exists, within 10 overall"); the table
prints every view's floor and each half's.

Each symmetric split of a run that also has the ``ua`` design reports ``pool_extra``: the
held-out tuples UA's pool makes that it does not, and how often an answers-only rule (an
answer whose value could be the key of that tuple on that side) finds their key, beside the
same rule on the tuples both make — what the pool's extra breadth is made of.

Each glyph split also reports its ``coverage`` (issue 24): the (rule, concept) tuples per part
and in all, the rules per part, and how many coverage warnings ``generate`` would print.
``--seed-sweep K`` generates the default split (symmetric, balanced, disjoint hold-out; no
vetting) of each set for seeds 1..K and counts the seeds that fail outright and how many
tuples test covers for the others.

Prints a table on stderr and one JSON object on stdout; ``--out PATH`` also writes the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import types
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from common import ua_csv

DESIGNS = ("ua", "symmetric")
#: the ``three-concept`` set: every glyph with an image carries each of these UA concepts (with
#: probability ``THREE_CONCEPT_P``), values at random — the polysemy UA's founding idea asks for,
#: on which a decoy is possible in almost every puzzle (tests/vet/test_partial.py's set, on
#: the bench's glyphs)
THREE_CONCEPTS = {
    "stroke-dot-quantity": ("1", "2", "3", "4", "5"),
    "shape-sides": ("1", "2", "3", "4", "5"),
    "components-solid": ("1", "2", "3", "4"),
}
THREE_CONCEPT_P = 0.8
#: an analogy's rows seen alone: its example pair (A, A′) and B
ANALOGY_VIEWS = {"row1": "pair", "row2": "probe"}
#: the aim of issue 11: every probe within this many points of chance
WITHIN_POINTS = 3.0


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="puzzles per glyph split")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--sets",
        default="ua,polysemic",
        help="annotation sets to run (ua, polysemic, three-concept)",
    )
    parser.add_argument("--designs", default=",".join(DESIGNS), help="answer-set designs")
    parser.add_argument(
        "--layout",
        default="two-row",
        help="the glyph splits' layout (two-row, matrix-3x3, analogy, …)",
    )
    parser.add_argument("--families", action="store_true", help="also the non-glyph families")
    parser.add_argument("--family-n", type=int, default=2_000, help="items per family split")
    parser.add_argument("--out", metavar="PATH", help="also write the JSON report here")
    parser.add_argument(
        "--all-puzzles",
        action="store_true",
        help="also the partial views over every puzzle of each glyph split, train included "
        "(partial_views_all: about three times the puzzles of the held-out figures, so less "
        "noise between two designs' floors)",
    )
    parser.add_argument(
        "--seed-sweep",
        type=int,
        default=0,
        metavar="K",
        help="also generate the default split of each set for seeds 1..K: failures and test "
        "coverage",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
        result = run(
            tmp,
            ua_csv(),
            args.n,
            args.seed,
            sets=[s for s in args.sets.split(",") if s],
            designs=[s for s in args.designs.split(",") if s],
            families=args.families,
            family_n=args.family_n,
            seed_sweep=args.seed_sweep,
            layout=args.layout,
            all_puzzles=args.all_puzzles,
        )
    for line in table(result):
        _say(line)
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.out:
        from studio.core.fileio import atomic_write_text

        atomic_write_text(Path(args.out), text + "\n")
    print(json.dumps(result))
    return 0


# ---- scoring ----------------------------------------------------------------------------------
def score(
    name: str,
    attrs: Sequence[Sequence[Mapping[str, frozenset[str]]]],
    keys: np.ndarray,
    parts: np.ndarray,
    seed: int,
    *,
    sharing: bool = True,
    rows: Sequence[Sequence[Mapping[str, frozenset[str]]]] | None = None,
    keep: list[Any] | None = None,
) -> dict[str, Any]:
    """Fit one probe and score it on the held-out puzzles (val and test); ``rows``: the one
    context row a partial-view probe sees, per puzzle; ``keep`` gets the fit."""
    from studio.baselines.metrics import binomial_p_value, wilson_interval
    from studio.baselines.probes import fit_answers_only_probe

    t0 = time.perf_counter()
    found = fit_answers_only_probe(attrs, keys, parts, seed, sharing=sharing, rows=rows)
    fit_s = time.perf_counter() - t0
    if keep is not None:
        keep.append(found)
    held = np.flatnonzero(parts != "train")
    # each puzzle's own chance (a ``symmetric:k`` design's sets hold 2 to 4 answers)
    chance = float(np.mean([1.0 / len(attrs[i]) for i in held])) if len(held) else 0.0
    right = found.choices[held] == keys[held]
    acc = float(right.mean()) if len(held) else 0.0
    lo, hi = wilson_interval(acc, len(held))
    return {
        "probe": name,
        "held_out": len(held),
        "accuracy": round(acc, 4),
        "ci95": [round(lo, 4), round(hi, 4)],
        "chance": round(chance, 4),
        "points_over_chance": round(100 * (acc - chance), 2),
        "p_value": float(f"{binomial_p_value(right.sum(), len(held), chance):.4g}"),
        "within_aim": bool(abs(acc - chance) * 100 <= WITHIN_POINTS),
        "fit_s": round(fit_s, 3),
        "top_features": [[f, w] for f, w in list(found.weights.items())[:8]],
    }


def _coverage(result: Any) -> dict[str, Any]:
    """Tuples and rules per part (issue 24), as ``generate`` prints them."""
    from studio.vet.coverage import coverage

    cov = coverage(result.puzzles, result.params.counts(), result.params.rules, result.dry)
    return {
        "tuples": {part: len(e["tuples"]) for part, e in cov["parts"].items()},
        "tuples_all": cov["all"]["tuples"],
        "rules": {part: sorted(e["rules"]) for part, e in cov["parts"].items()},
        "warnings": len(cov["warnings"]),
    }


def seed_sweep_run(
    annotations: Any, schema: Any, n: int, seeds: int, design: str = "symmetric"
) -> dict[str, Any]:
    """The default split (balanced, disjoint hold-out) for seeds 1..``seeds``: how many fail
    outright, and how many tuples test covers when it does not (issue 24's "no seed of the
    default split fails")."""
    from studio.core.errors import StudioError
    from studio.generate.params import SplitParams
    from studio.splits import generate_from

    failed: list[int] = []
    test_tuples: list[int] = []
    for seed in range(1, seeds + 1):
        params = SplitParams(n=n, seed=seed, sampling="balanced", answer_sets=design)
        try:
            [result] = generate_from(annotations, schema, params)
        except StudioError:
            failed.append(seed)
            continue
        test_tuples.append(_coverage(result)["tuples"]["test"])
    return {
        "design": design,
        "n": n,
        "seeds": seeds,
        "failed": failed,
        "test_tuples": dict(sorted(Counter(test_tuples).items())),
    }


def _parts(puzzles: Sequence[Any]) -> np.ndarray:
    return np.array([p.split for p in puzzles], dtype=object)


# ---- glyph splits -------------------------------------------------------------------------------
def glyph_run(
    label: str,
    design: str,
    annotations: Any,
    schema: Any,
    n: int,
    seed: int,
    image_tags: Mapping[Any, Mapping[str, frozenset[str]]],
    features: Any,
    features_s: float,
    layout: str = "two-row",
    keep: dict[str, Any] | None = None,
    all_puzzles: bool = False,
) -> dict[str, Any]:
    """Generate, vet and probe one split (module docstring); ``keep`` gets the generation's
    result and parameters under the design's name (for :func:`pool_extra`); with
    ``all_puzzles``, the partial views over every puzzle too (``partial_views_all``)."""
    import studio.families.glyph_pmp.analogy as analogy_generator
    import studio.families.glyph_pmp.generator as glyph_generator
    from studio.core.errors import StudioError
    from studio.generate.params import DEFAULT_MIN_ANSWERS, SplitParams
    from studio.splits import generate_from, vet
    from studio.vet.rules import RuleBook

    design, values, _ = design.partition("/values")
    design, plain, _ = design.partition("/plain")
    plain_run = bool(plain)
    values_run = bool(values)  # analogies: foils carrying the set's values, most like B
    sets, _, least = design.partition(":")  # symmetric:2 — sets of at least two answers
    params = SplitParams(
        n=n,
        seed=seed,
        sampling="balanced",
        answer_sets=sets,
        min_answers=int(least) if least else DEFAULT_MIN_ANSWERS,
        layout=layout,
    )
    out: dict[str, Any] = {
        "set": label,
        "design": design + ("/plain" if plain_run else "") + ("/values" if values_run else ""),
        "n": n,
    }
    draws = glyph_generator.DECOY_DRAWS
    g0 = time.perf_counter()
    try:
        # /plain: one context per puzzle, no decoys (the reference of issue 24's speed aim)
        glyph_generator.DECOY_DRAWS = 1 if plain_run else draws
        analogy_generator.VARIANT_SETS = not values_run
        [result] = generate_from(annotations, schema, params, workers=1)
    except StudioError as e:
        out["error"] = str(e).splitlines()[0]
        dry = getattr(e, "dry", None)
        if dry:
            out["dry_tuples"] = dict(sorted(dry.items()))
        return out
    finally:
        glyph_generator.DECOY_DRAWS = draws
        analogy_generator.VARIANT_SETS = True
    g1 = time.perf_counter()
    if keep is not None:
        keep[out["design"]] = (result, params)
    book = RuleBook(schema)
    verdicts = vet(result.puzzles, annotations, book, features, params.strict)
    g2 = time.perf_counter()
    puzzles = result.puzzles
    pipeline = (g1 - g0) + (g2 - g1) + features_s
    kinds = Counter(f.check for v in verdicts for f in v.errors)
    dry = {k: dict(v) for k, v in getattr(result, "dry", {}).items() if v}
    out.update(
        {
            "puzzles": len(puzzles),
            "generate_s": round(g1 - g0, 3),
            "vet_s": round(g2 - g1, 3),
            "feature_index_s": round(features_s, 3),
            "puzzles_per_s": round(len(puzzles) / pipeline, 1) if pipeline > 0 else None,
            "invalid": sum(1 for v in verdicts if not v.valid),
            # foils completing a rule under a shifted reading (errors: the split is strict)
            "strict_findings": kinds.get("shifted-reading", 0),
            "findings": dict(sorted(kinds.items())),
            "with_warnings": sum(1 for v in verdicts if v.warnings),
            "rejections": dict(sorted(result.rejections.items())),
            "dry_tuples": dry,
            "coverage": _coverage(result),
        }
    )
    # the exact partial-view solvers (issue 24) on the held-out puzzles, knowing the split's
    # tested readings; per view and the tuples furthest over chance
    from studio.vet.partial import partial_lines, partial_views

    tested = {(p.rule, p.concept) for p in result.puzzles}
    held_out = [p for p in result.puzzles if p.split != "train"]
    views = partial_views(held_out, annotations, book, tested)
    out["partial_views"] = views["views"]
    out["partial_lines"] = partial_lines(views)
    out["partial_views_by_decoys"] = decoy_split(held_out, annotations, book, tested)
    if all_puzzles:
        out["partial_views_all"] = partial_views(result.puzzles, annotations, book, tested)["views"]
    keys = np.array([p.key for p in puzzles], dtype=np.int64)
    parts = _parts(puzzles)
    sharing = params.layout != "odd-one-out"
    tag_attrs = [[dict(annotations.by_glyph.get(k, {})) for k in p.answers] for p in puzzles]
    img_attrs = [[dict(image_tags.get(k, {})) for k in p.answers] for p in puzzles]
    out["probes"] = [
        score("probe-tags", tag_attrs, keys, parts, seed, sharing=sharing),
        score("probe-image", img_attrs, keys, parts, seed, sharing=sharing),
    ]
    if all(len(p.context) >= 2 for p in puzzles):  # the partial views (issue 24)
        for name, r in (("probe-row1", 0), ("probe-row2", -1)):
            rows = [[dict(annotations.by_glyph.get(k, {})) for k in p.context[r]] for p in puzzles]
            fits: list[Any] = []
            out["probes"].append(
                score(name, tag_attrs, keys, parts, seed, sharing=sharing, rows=rows, keep=fits)
            )
            view = "row1" if r == 0 else "row2"
            out["probes"].append(
                hybrid_score(view, puzzles, fits[0].probs, annotations, book, tested)
            )
    return out


def decoy_split(
    puzzles: Sequence[Any], annotations: Any, book: Any, tested: set[tuple[str, str]]
) -> dict[str, Any]:
    """The partial views (issue 24) apart on the puzzles where a decoy is possible — the
    answers are a set over another tested concept as well, so a reading over it could make a
    foil a decoy to every solver, the aware one too (whether the glyphs allow such a row is
    not checked: the group is a superset of the puzzles with a decoy) — and on those where
    none is (the answers name their concept: what the annotations allow). The issue's aim
    reads "within 5 points of chance where a decoy exists, within 10 overall"."""
    from studio.vet.partial import answer_concepts, partial_views

    concepts = {c for _, c in tested}
    groups: dict[str, list[Any]] = {"possible": [], "none": []}
    for p in puzzles:
        crossed = answer_concepts(p.answers, annotations, concepts - {p.concept})
        groups["possible" if crossed else "none"].append(p)
    return {
        name: partial_views(ps, annotations, book, tested)["views"]
        for name, ps in groups.items()
        if ps
    }


def pool_extra(pool: Any, symmetric: Any, annotations: Any, schema: Any) -> dict[str, Any]:
    """The breadth UA's pool has beyond a symmetric design, and what it is made of: the
    pool's (part, rule, concept) tuples the symmetric split did not make, how many of the
    pool's puzzles they hold, and how often an answers-only rule finds their key — pick an
    answer whose value of the concept could be the key of that (rule, concept) on that side
    of the hold-out, at random among them. A tuple no symmetric set builds has one such value
    (or rows that leave no glyph of the other for its foil), so the rule reads its keys; on
    the tuples both designs make it is the baseline beside it."""
    from studio.families.glyph_pmp.generator import GlyphPMPGenerator
    from studio.vet.rules import RuleBook

    (pool_result, _), (sym_result, sym_params) = pool, symmetric
    made = {(p.split, p.rule, p.concept) for p in sym_result.puzzles}
    gen = GlyphPMPGenerator(sym_params, annotations, schema, 0)
    book = RuleBook(schema)
    found: Counter[str] = Counter()
    count: Counter[str] = Counter()
    extra_tuples: dict[str, set[tuple[str, str]]] = {}
    for p in pool_result.puzzles:
        if p.split == "train":
            continue  # held-out puzzles, as every probe here
        group = "shared" if (p.split, p.rule, p.concept) in made else "extra"
        if group == "extra":
            extra_tuples.setdefault(p.split, set()).add((p.rule, p.concept))
        rc = book.get(p.concept, p.rule)
        keyable = set(gen.key_values(rc, "eval", p.shift)) if rc is not None else set()
        cands = [i for i, g in enumerate(p.answers) if annotations.values(g, p.concept) & keyable]
        cands = cands or list(range(len(p.answers)))
        found[group] += (p.key in cands) / len(cands)
        count[group] += 1
    return {
        "tuples": {part: len(t) for part, t in sorted(extra_tuples.items())},
        "held_out_puzzles": dict(count),
        "keyable_rule_accuracy": {g: round(found[g] / count[g], 3) for g in count},
    }


def hybrid_score(
    view: str,
    puzzles: Sequence[Any],
    probs: np.ndarray,
    annotations: Any,
    book: Any,
    tested: set[tuple[str, str]],
) -> dict[str, Any]:
    """The strongest partial-view attacker fitted on train: the exact solver of ``view``
    (:mod:`studio.vet.partial`, the tested readings each answer fits), its ties broken by the
    probe of the same row (``probs``). A decoy that the solver finds as good as the key but
    that the tags tell apart shows here and not in either alone. Held-out puzzles only. An
    analogy's first row is its example pair and its last is B: their views are VASR's
    (``pair``, ``probe``). Not bound to beat the solver: the solver's figure is an expectation
    over its ties, and answers the probe scores alike go to the first of them."""
    from studio.baselines.metrics import wilson_interval
    from studio.vet.partial import puzzle_views
    from studio.vet.partial import score as fitted

    focus = frozenset(tested)
    hits, chance = [], []
    for i, p in enumerate(puzzles):
        if p.split == "train":
            continue
        views = puzzle_views(p, annotations, book)
        per = views.get(view) or views.get(ANALOGY_VIEWS[view])
        if per is None:
            continue  # a layout without this partial view
        scores = [fitted(readings, focus) for readings in per]
        best = max(scores)
        tied = [j for j, sc in enumerate(scores) if sc == best]
        hits.append(max(tied, key=lambda j: probs[i, j]) == p.key)
        chance.append(1.0 / len(p.answers))
    acc = float(np.mean(hits)) if hits else 0.0
    lo, hi = wilson_interval(acc, len(hits))
    return {
        "probe": f"hybrid-{view}",
        "held_out": len(hits),
        "accuracy": round(acc, 4),
        "ci95": [round(lo, 4), round(hi, 4)],
        "chance": round(float(np.mean(chance)) if chance else 0.0, 4),
        "points_over_chance": round(100 * (acc - float(np.mean(chance or [0.0]))), 2),
    }


def frame_tags(images: Mapping[Any, np.ndarray]) -> dict[Any, dict[str, frozenset[str]]]:
    """Each glyph's image pseudo-tags from its 80×80 UA frame, as the worker's probe-image
    computes them from a split's frames."""
    from studio.baselines.probes import image_attributes
    from studio.families.glyph_pmp.export import ua_frame

    keys = sorted(images)
    if not keys:
        return {}
    frames = np.stack([ua_frame(images[k]) for k in keys]).astype(np.uint8) * 255
    attrs = image_attributes(frames[:, None])
    return {k: a[0] for k, a in zip(keys, attrs, strict=True)}


# ---- non-glyph families --------------------------------------------------------------------------
def family_runs(n: int, seed: int) -> list[dict[str, Any]]:
    """probe-tags on each non-glyph family's symbolic records (module docstring)."""
    try:
        from studio.stimuli.symbolic import answer_attributes, symbolic_families
    except ImportError:
        return [{"error": "studio.stimuli.symbolic is not installed"}]
    from studio.plugins import family as family_of
    from studio.stimuli.split import assign_parts, make_generator, stimulus_families

    out = []
    for family in stimulus_families():
        if family not in symbolic_families():
            out.append({"family": family, "error": "no symbolic reader"})
            continue
        variants: list[tuple[str, dict[str, Any]]] = [("default", {})]
        fam = family_of(family)
        design = next((o for o in fam.options if o.name == "design"), None)
        if design is not None:
            variants += [(d, {"design": d}) for d in design.choices if d != design.default]
        modes = next((o.choices for o in fam.options if o.name == "mode"), ())
        variants += [(f"{m} / {v}", {**o, "mode": m}) for m in modes[1:] for v, o in list(variants)]
        before = BEFORE.get(family)
        if before is not None:
            variants.append((before[0], {}))
        for variant, options in variants:
            _say(f"{family} ({variant}): {n} items …")
            t0 = time.perf_counter()
            generator = make_generator(family, options)
            if before is not None and variant == before[0]:
                generator._record = types.MethodType(before[1], generator)
            if hasattr(generator, "records"):  # the symbolic records alone, without rendering
                records = list(generator.records(n, seed))
            else:
                records = [item.to_json() for item in generator.items(n, seed)]
            gen_s = time.perf_counter() - t0
            parts = np.array(assign_parts(len(records), (0.7, 0.1, 0.2), seed), dtype=object)
            attrs = [answer_attributes(family, r) for r in records]
            keys = np.array([_family_key(family, r) for r in records], dtype=np.int64)
            invalid = sum(1 for r in records if not (r.get("verdict") or {}).get("valid", True))
            out.append(
                {
                    "family": family,
                    "design": variant,
                    "items": len(records),
                    "generate_s": round(gen_s, 2),
                    "items_per_s": round(len(records) / gen_s, 1) if gen_s > 0 else None,
                    "invalid": invalid,
                    "probes": [score("probe-tags", attrs, keys, parts, seed)],
                }
            )
            if fam.partial_views is not None:  # the exact solver's floors, held-out items
                held = [r for r, part in zip(records, parts, strict=True) if part != "train"]
                out[-1]["partial_views"] = fam.load("partial_views")(held)["views"]
    return out


def _shape_count_record_cb375c3(self: Any, rng: np.random.Generator) -> dict[str, Any]:
    """The shape-count plugin's ``_record`` at cb375c3, its counts unbalanced: the key's count
    ends a row (3-9 under progression) while the foil's is any other of 1-9 (1 and 2 only ever
    foils)."""
    from shape_count.generator import MAX_COUNT, row_counts, shape_id

    picks = rng.choice(len(self.shapes), size=4, replace=False)
    shapes = [[list(map(int, c)) for c in self.shapes[int(i)]] for i in picks]
    top = MAX_COUNT - (2 if self.rule == "progression" else 0)
    rows = []
    for r in range(3):
        counts = row_counts(self.rule, int(rng.integers(1, top + 1)))
        rows.append({"shape": shapes[r], "shape_id": shape_id(shapes[r]), "counts": counts})
    key_count = rows[2]["counts"][2]
    rows[2]["counts"] = rows[2]["counts"][:2]
    foil_count = int(rng.choice([n for n in range(1, MAX_COUNT + 1) if n != key_count]))
    cands = [(shapes[2], key_count), (shapes[2], foil_count), (shapes[3], key_count),
             (shapes[3], foil_count)]  # fmt: skip
    order = [int(k) for k in rng.permutation(4)]
    return {
        "rule": self.rule,
        "cells": self.cells,
        "design": "balanced",
        "rows": rows,
        "candidates": [
            {"shape": cands[k][0], "shape_id": shape_id(cands[k][0]), "count": cands[k][1]}
            for k in order
        ],
        "key": order.index(0),
        "size": self.size,
    }


#: family → (variant, its generator's ``_record`` before a change of design that left no option
#: to ask for the old one): the same-run reference of that change
BEFORE: dict[str, tuple[str, Callable[[Any, np.random.Generator], dict[str, Any]]]] = {
    "shape-count": ("before (cb375c3)", _shape_count_record_cb375c3),
}


def _family_key(family: str, record: Mapping[str, Any]) -> int:
    if family == "kiva":
        ext = next(q for q in record["questions"] if q.get("id") == "extrapolate")
        return int(ext["key"])
    return int(record["key"])


# ---- the whole run -------------------------------------------------------------------------------
def run(
    tmp: Path,
    source: Path,
    n: int,
    seed: int,
    *,
    sets: Sequence[str] = ("ua", "polysemic"),
    designs: Sequence[str] = DESIGNS,
    families: bool = False,
    family_n: int = 2_000,
    seed_sweep: int = 0,
    layout: str = "two-row",
    all_puzzles: bool = False,
) -> dict[str, Any]:
    from studio.app import Studio
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.splits import feature_index, split_inputs
    from studio.store.project import Project
    from studio.vet.features import FEATURE_SCHEMA

    t0 = time.perf_counter()
    studio = Studio(Project.create(tmp / "bench.studio", load_schema(bundled_schema_path())))
    studio.import_annotations(source)
    for _ in studio.render_all():
        pass
    inputs = split_inputs(studio)
    studio.close()
    setup_s = time.perf_counter() - t0
    f0 = time.perf_counter()
    features = feature_index(inputs.images)
    features_s = time.perf_counter() - f0
    image_tags = frame_tags(inputs.images)

    glyph = []
    sweeps = []
    for label in sets:
        if label == "ua":
            annotations, schema, warn, warn_s = (
                inputs.annotations,
                inputs.schema,
                features,
                (features_s),
            )
        elif label == "polysemic":
            annotations, schema, warn, warn_s = features, FEATURE_SCHEMA, None, 0.0
        elif label == "three-concept":
            annotations = three_concept_tags(sorted(inputs.images), seed)
            schema, warn, warn_s = inputs.schema, None, 0.0
        else:
            raise SystemExit(f"unknown annotation set {label!r} (ua, polysemic, three-concept)")
        if seed_sweep:
            _say(f"{label}: seeds 1..{seed_sweep} of the default split …")
            sweeps.append({"set": label, **seed_sweep_run(annotations, schema, n, seed_sweep)})
        kept: dict[str, Any] = {}
        runs = []
        for design in designs:
            _say(f"{label} / {design}: {n} puzzles …")
            runs.append(
                glyph_run(
                    label,
                    design,
                    annotations,
                    schema,
                    n,
                    seed,
                    image_tags,
                    warn,
                    warn_s,
                    layout,
                    keep=kept,
                    all_puzzles=all_puzzles,
                )
            )
        for r in runs:
            if r.get("design", "").startswith("symmetric") and "ua" in kept and r["design"] in kept:
                r["pool_extra"] = pool_extra(kept["ua"], kept[r["design"]], annotations, schema)
        glyph += runs
    result: dict[str, Any] = {
        "name": "answersets",
        "source": str(source),
        "n": n,
        "seed": seed,
        "layout": layout,
        "sampling": "balanced",
        "glyphs_with_image": len(inputs.images),
        "glyphs_without_image": len(inputs.without_image),
        "polysemic_tags_per_glyph": round(
            float(np.mean([len(features.tags_of(k)) for k in features.glyphs()] or [0])), 2
        ),
        "setup_s": round(setup_s, 2),
        "aim": f"every probe within {WITHIN_POINTS:g} points of chance; 0 invalid; "
        ">= 1,400 puzzles/s with full vetting",
        "glyph": glyph,
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "python": sys.version.split()[0],
    }
    if sweeps:
        result["seed_sweep"] = sweeps
    if families:
        result["families"] = family_runs(family_n, seed)
    return result


def three_concept_tags(glyphs: Sequence[Any], seed: int) -> Any:
    """The ``three-concept`` annotation set over these glyphs (:data:`THREE_CONCEPTS`), drawn
    from ``seed``: tags that have nothing to do with the pictures, so only the symbolic
    views and probes mean anything on it."""
    import random

    from studio.core.tagindex import TagIndex

    rnd = random.Random(seed)
    return TagIndex.from_tags(
        (g, c, rnd.choice(values))
        for g in glyphs
        for c, values in THREE_CONCEPTS.items()
        if rnd.random() < THREE_CONCEPT_P
    )


def table(result: Mapping[str, Any]) -> list[str]:
    """The report as a table: one line per (split, probe)."""
    head = (
        f"{'split':<30} {'probe':<12} {'held':>5} {'acc':>6}  {'95% CI':<15} {'chance':>6} "
        f"{'puz/s':>7} {'invalid':>7}"
    )
    lines = [head, "-" * len(head)]
    rows = [(f"{g['set']} / {g['design']}", g) for g in result.get("glyph", [])]
    rows += [
        (f"{f.get('family', '?')} / {f.get('design', '-')}", f) for f in result.get("families", [])
    ]
    for label, g in rows:
        if "error" in g:
            lines.append(f"{label:<30} {g['error']}")
            continue
        speed = g.get("puzzles_per_s", g.get("items_per_s"))
        for view, v in (g.get("partial_views") or {}).items():
            lines.append(
                f"{label:<30} {'solver-' + view:<12} {v['puzzles']:>5} {v['accuracy']:>6.3f}  "
                f"{'decoys ' + format(v['decoyed'], '.0%'):<15} {v['chance']:>6.3f} "
                f"{speed if speed is not None else '-':>7} {g.get('invalid', '-'):>7}"
            )
            for solver in ("weighted", "relative", "aware", "logit", "floor"):
                if solver in v:
                    lines.append(
                        f"{label:<30} {solver + '-' + view:<12} {v['puzzles']:>5} "
                        f"{v[solver]:>6.3f}  {'':<15} {v['chance']:>6.3f}"
                    )
            for group, views in (g.get("partial_views_by_decoys") or {}).items():
                if view in views:
                    w = views[view]
                    lines.append(
                        f"{label:<30} {'floor-' + view:<12} {w['puzzles']:>5} "
                        f"{w['floor']:>6.3f}  {'decoy ' + group:<15} {w['chance']:>6.3f}"
                    )
        extra = g.get("pool_extra")
        if extra:
            acc = extra["keyable_rule_accuracy"]
            lines.append(
                f"{label:<30} UA's pool beyond it: held-out tuples {extra['tuples']}, "
                f"{extra['held_out_puzzles'].get('extra', 0)} puzzles, whose keys an answers-"
                f"only rule finds {acc.get('extra', float('nan')):.3f} "
                f"({acc.get('shared', float('nan')):.3f} on the tuples both make)"
            )
        for p in g.get("probes", []):
            ci = f"[{p['ci95'][0]:.3f}, {p['ci95'][1]:.3f}]"
            lines.append(
                f"{label:<30} {p['probe']:<12} {p['held_out']:>5} {p['accuracy']:>6.3f}  "
                f"{ci:<15} {p['chance']:>6.3f} {speed if speed is not None else '-':>7} "
                f"{g.get('invalid', '-'):>7}"
            )
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
