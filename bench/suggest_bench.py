"""Benchmark `suggest`: how many decisions an annotator spends per accepted tag with the
suggestion queue, against scrolling the grid (issue 30).

The project: the shared UA annotations imported, plus every glyph of Symbola (``--pool font``,
the default: about 10,000 glyphs to scroll, as in the tagger's grid) or only the UA glyphs
(``--pool ua``). The encoder is trained on every rendered glyph of it (timed, CPU).

The oracle: for each concept, half of each value's glyphs (seeded) are hidden — those glyphs
lose every tag of the concept and become untagged candidates — and the other half is what the
annotator starts from. A simulated annotator then spends ``--budget`` decisions per concept,
one per glyph shown (stopping early once every hidden glyph of the concept is found), in
three orders, same run:

- **queue**: the suggestion queue (:func:`studio.suggest.rank.rank_candidates`, 20 at a time,
  refitted after each batch on the tags accepted so far, "none of these" answers kept as
  negatives and never shown again);
- **code-point**: scrolling the grid in code-point order;
- **random**: a seeded random order.

A decision accepts (the glyph carries a hidden value of the concept: the annotator presses the
value's key) or answers "none of these". Reported: decisions per accepted tag per order (all
concepts pooled), the ratios against the queue, the (rule, concept) tuples of the default split
that were dry for lack of glyphs (the Needs report) before and are buildable after each
order's accepted tags, per 100 decisions (and the glyphs the Needs column asks for, before
and after), and per concept the recall at 20 and at 100
of the hidden glyphs in the first list the queue shows (before any answer), for the encoder's
space and for the image features alone. A glyph no annotator of UA tagged counts as "none of
these", even where it does carry the value (the oracle only knows UA's tags), which is
conservative for the queue: it is the queue that finds look-alikes UA never tagged.

``python bench/run.py suggest [--pool font|ua] [--budget 100] [--epochs 4] [--seed 0]``.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from common import ua_csv


def build_project(folder: Path, pool: str) -> Any:
    from studio.app import Studio
    from studio.core.keys import GlyphKey
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.project import Project

    studio = Studio(Project.create(folder / "bench.studio", load_schema(bundled_schema_path())))
    studio.import_annotations(ua_csv())
    if pool == "font":
        cps = sorted(studio.catalog.codepoints("symbola"))
        studio.add_glyphs(GlyphKey(c, "symbola") for c in cps)
    for _ in studio.render_all():
        pass
    return studio


def hide_half(
    oracle: Any, schema: Any, seed: int
) -> tuple[Any, dict[str, dict[Any, frozenset[str]]]]:
    """(the known tags, per concept the hidden glyphs and their values of it)."""
    from studio.core.tagindex import TagIndex

    rng = np.random.default_rng(seed)
    hidden: dict[str, dict[Any, frozenset[str]]] = {}
    for c in schema.concepts:
        chosen: set[Any] = set()
        for v in c.values:
            glyphs = sorted(oracle.folder(c.id, v.id))
            if len(glyphs) < 2:
                continue
            order = rng.permutation(len(glyphs))
            chosen.update(glyphs[int(i)] for i in order[: len(glyphs) // 2])
        if chosen:
            hidden[c.id] = {k: oracle.values(k, c.id) for k in sorted(chosen)}
    known = TagIndex.from_tags(
        (k, c, v)
        for k in oracle.glyphs()
        for c, v in sorted(oracle.tags_of(k))
        if k not in hidden.get(c, {})
    )
    return known, hidden


def with_tags(index: Any, extra: list[tuple[Any, str, str]]) -> Any:
    from studio.core.tagindex import TagIndex

    tags = [(k, c, v) for k in index.glyphs() for c, v in sorted(index.tags_of(k))]
    return TagIndex.from_tags(tags + extra)


Run = tuple[int, int, list[tuple[Any, str, str]]]  # decisions, accepted, the accepted tags


def queue_run(
    space: Any,
    known: Any,
    concept: str,
    values: list[str],
    hidden: dict[Any, Any],
    budget: int,
    batch: int,
) -> Run:
    from studio.suggest.rank import rank_candidates

    index, shown, rejected, extra = known, set(), set(), []
    decisions = accepted = 0
    while decisions < budget and accepted < len(hidden):
        found = rank_candidates(
            space,
            index,
            concept,
            values,
            min(batch, budget - decisions),
            exclude=shown,
            rejected=rejected,
        )
        if not found:
            break
        for s in found:
            decisions += 1
            shown.add(s.key)
            if s.key in hidden:
                accepted += 1
                extra.extend((s.key, concept, v) for v in sorted(hidden[s.key]))
            else:
                rejected.add(s.key)
        index = with_tags(known, extra)
    return decisions, accepted, extra


def scroll_run(order: list[Any], hidden: dict[Any, Any], budget: int, concept: str) -> Run:
    decisions = accepted = 0
    extra: list[tuple[Any, str, str]] = []
    for k in order[:budget]:
        if accepted == len(hidden):
            break
        decisions += 1
        if k in hidden:
            accepted += 1
            extra.extend((k, concept, v) for v in sorted(hidden[k]))
    return decisions, accepted, extra


def dry_tuples(annotations: Any, schema: Any) -> tuple[set[tuple[str, str]], int]:
    """(tuple, side) of the default split that are dry for lack of glyphs (the Needs
    report's tuples: what the annotators are asked to fill), and the glyphs the Needs column
    asks for in all."""
    from studio.families.glyph_pmp.needs import annotation_needs
    from studio.generate.params import SplitParams

    report = annotation_needs(SplitParams(), annotations, schema)
    return {(t.tuple, t.side) for t in report.tuples}, sum(report.per_value().values())


def recall(
    space: Any, known: Any, concept: str, values: list[str], hidden: dict[Any, Any]
) -> dict[str, float]:
    from studio.suggest.rank import rank_candidates

    top = [s.key for s in rank_candidates(space, known, concept, values, 100)]
    reachable = [k for k in hidden if k in space.index]
    if not reachable:
        return {}
    return {
        f"recall@{n}": round(len(set(top[:n]) & set(reachable)) / len(reachable), 3)
        for n in (20, 100)
    }


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else round(a / b, 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool", choices=("font", "ua"), default="font")
    parser.add_argument("--budget", type=int, default=100, help="decisions per concept")
    parser.add_argument("--batch", type=int, default=20, help="suggestions per refit")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    from studio.core.tagindex import TagIndex
    from studio.suggest.encoder import EncoderParams, embed_images, train_encoder
    from studio.suggest.space import project_images, space_from_images

    with tempfile.TemporaryDirectory() as tmp:
        studio = build_project(Path(tmp), args.pool)
        schema = studio.schema
        t0 = time.perf_counter()
        images = project_images(studio)
        render_s = time.perf_counter() - t0
        keys = sorted(images)
        stack = np.stack([images[k] for k in keys])
        params = EncoderParams(seed=args.seed)
        if args.epochs is not None:
            params = EncoderParams(seed=args.seed, epochs=args.epochs)
        trained = train_encoder(stack, params)
        t0 = time.perf_counter()
        emb = embed_images(stack, params, trained.weights)
        embed_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        space = space_from_images(images, dict(zip(keys, emb, strict=True)))
        space_s = time.perf_counter() - t0
        plain = space_from_images(images)
        oracle = TagIndex.from_tags(
            (t.key, t.concept, t.value) for t in studio.project.all_tags() if t.key in images
        )
        studio.close()
    known, hidden = hide_half(oracle, schema, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    totals = {"queue": [0, 0], "code-point": [0, 0], "random": [0, 0]}
    accepted_tags: dict[str, list[tuple[Any, str, str]]] = {name: [] for name in totals}
    per_concept: dict[str, Any] = {}
    t0 = time.perf_counter()
    for concept, hid in hidden.items():
        values = [v.id for v in schema.concept(concept).values]
        decided = {k for k in known.glyphs() if known.values(k, concept)}
        cands = [k for k in space.keys if k not in decided]
        by_cp = sorted(cands, key=lambda k: (k.codepoint, k.font))
        shuffled = [cands[int(i)] for i in rng.permutation(len(cands))]
        runs = {
            "queue": queue_run(space, known, concept, values, hid, args.budget, args.batch),
            "code-point": scroll_run(by_cp, hid, args.budget, concept),
            "random": scroll_run(shuffled, hid, args.budget, concept),
        }
        for name, (d, a, tags) in runs.items():
            totals[name][0] += d
            totals[name][1] += a
            accepted_tags[name] += tags
        per_concept[concept] = {
            "hidden": len(hid),
            "accepted": {name: a for name, (_, a, _) in runs.items()},
            **recall(space, known, concept, values, hid),
            "features_only": recall(plain, known, concept, values, hid),
        }
    sim_s = time.perf_counter() - t0
    # the default split's dry tuples before the annotator starts and after each order's tags
    t0 = time.perf_counter()
    dry_before, asked_before = dry_tuples(known, schema)
    buildable: dict[str, Any] = {}
    for name, tags in accepted_tags.items():
        dry_after, asked_after = dry_tuples(with_tags(known, tags), schema)
        mended = len(dry_before - dry_after)
        decisions = totals[name][0]
        per_100 = 100 / decisions if decisions else None
        buildable[name] = {
            "mended": mended,
            "per_100_decisions": round(mended * per_100, 2) if per_100 else None,
            "needs_left": asked_after,
            "needs_filled_per_100_decisions": (
                round((asked_before - asked_after) * per_100, 2) if per_100 else None
            ),
        }
    needs_s = time.perf_counter() - t0
    dpa = {name: (round(d / a, 2) if a else None) for name, (d, a) in totals.items()}
    r100 = [c.get("recall@100", 0.0) for c in per_concept.values()]
    r100f = [c["features_only"].get("recall@100", 0.0) for c in per_concept.values()]
    out = {
        "benchmark": "suggest",
        "annotations": str(ua_csv()),
        "pool": args.pool,
        "glyphs": len(keys),
        "concepts": len(per_concept),
        "budget_per_concept": args.budget,
        "decisions_per_accepted_tag": dpa,
        "accepted": {name: a for name, (_, a) in totals.items()},
        "fewer_decisions_than": {
            "code-point": ratio(dpa["code-point"], dpa["queue"]),
            "random": ratio(dpa["random"], dpa["queue"]),
        },
        "dry_tuples_before": len(dry_before),
        "needs_before": asked_before,
        "tuples_made_buildable": buildable,
        "recall@100_at_least_0.5": {
            "encoder": f"{sum(r >= 0.5 for r in r100)}/{len(r100)}",
            "features_only": f"{sum(r >= 0.5 for r in r100f)}/{len(r100f)}",
        },
        "median_recall@100": {
            "encoder": round(float(np.median(r100)), 3),
            "features_only": round(float(np.median(r100f)), 3),
        },
        "median_recall@20": round(
            float(np.median([c.get("recall@20", 0.0) for c in per_concept.values()])), 3
        ),
        "encoder": {
            "params": params.to_json(),
            "device": "cpu",
            "torch_threads": params.threads,
            "torch": torch.__version__,
            "train_s": round(trained.seconds, 1),
            "embed_s": round(embed_s, 1),
            "final_loss": trained.losses[-1],
        },
        "seconds": {
            "images": round(render_s, 1),
            "space": round(space_s, 1),
            "simulation": round(sim_s, 1),
            "needs": round(needs_s, 1),
        },
        "per_concept": per_concept,
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
