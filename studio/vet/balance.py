"""Split statistics: what a split is made of, and whether its answers give anything away.

``split_stats(puzzles, annotations, schema)`` returns, per part (``train``, ``val``, ``test``
and ``all``), plain JSON-serialisable numbers:

- ``puzzles``; counts ``per_rule``, ``per_concept``, ``per_rule_concept`` (keys
  ``"<rule>/<concept>"``), ``per_layout`` and ``per_shift`` (``shift`` / ``noshift``);
- ``answer_position``: the histogram of the key's slot (0-based) and a chi-square test against
  a uniform key position (DESIGN.md "Bias checks"). When puzzles of a part have different
  numbers of answers (odd-one-out groups of another size), the expected count of a slot is the
  sum of ``1 / len(answers)`` over the puzzles that have that slot;
- ``foil_values``: for each concept, how often each of its values is carried by a *foil* of a
  puzzle over that concept (a foil carrying several values counts once for each), a chi-square
  test against a uniform spread over the values seen, and the largest share of one value; a
  foil with no value of the concept is counted as ``untagged`` and left out of the test. Over
  concepts: ``min_p`` (and its concept) and ``max_share`` (and its ``concept=value``);
- ``audit``: the answer-set audit (:func:`studio.vet.audit.audit_puzzles`): can the key be
  found from the answers alone? Key rate per (concept, value) against the answer rate with
  G-tests and the values furthest off (with their puzzle ids), the "answers sharing my value"
  distribution of the key against the foils, and the key's position balance.

A p-value is ``null`` where the test says nothing (fewer than two categories, or no counts).
Everything is ordered (schema order for concepts and values, sorted otherwise), so the same
puzzles give the same JSON text.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from studio.core.puzzle import SPLITS, Puzzle
from studio.core.schema import RULE_IDS, Schema
from studio.core.tagindex import TagIndex

PARTS = (*SPLITS, "all")
UNTAGGED = "untagged"


def _p(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def chi_square_uniform(
    observed: Sequence[float], expected: Sequence[float] | None = None
) -> dict[str, float | None]:
    """Chi-square goodness of fit of counts against uniform (or ``expected``, rescaled to the
    same total). ``{"chi2": …, "p": …}``; both ``None`` with fewer than two categories or no
    counts."""
    obs = [float(x) for x in observed]
    total = sum(obs)
    if len(obs) < 2 or total <= 0:
        return {"chi2": None, "p": None}
    exp = None
    if expected is not None:
        e_total = float(sum(expected))
        if e_total <= 0 or any(e <= 0 for e in expected):
            return {"chi2": None, "p": None}
        exp = [e * total / e_total for e in expected]
    from scipy.stats import chisquare  # here: scipy.stats takes a second to import

    result = chisquare(obs, exp)
    return {"chi2": _p(result.statistic), "p": _p(result.pvalue)}


def _ordered(counter: Counter[str], order: Sequence[str] = ()) -> dict[str, int]:
    rank = {k: i for i, k in enumerate(order)}
    keys = sorted(counter, key=lambda k: (rank.get(k, len(rank)), k))
    return {k: int(counter[k]) for k in keys}


def answer_positions(puzzles: Sequence[Puzzle]) -> dict[str, Any]:
    """The key's slot histogram and its chi-square test against uniform."""
    if not puzzles:
        return {"histogram": [], "chi2": None, "p": None}
    slots = max(len(p.answers) for p in puzzles)
    hist = [0] * slots
    expected = [0.0] * slots
    for p in puzzles:
        hist[p.key] += 1
        n = len(p.answers)
        for i in range(n):
            expected[i] += 1.0 / n
    same = all(len(p.answers) == slots for p in puzzles)
    test = chi_square_uniform(hist, None if same else expected)
    return {"histogram": hist, **test}


def foil_values(
    puzzles: Sequence[Puzzle], annotations: TagIndex, schema: Schema | None = None
) -> dict[str, Any]:
    """Per concept: counts of the values carried by the foils of puzzles over that concept."""
    per: dict[str, Counter[str]] = {}
    for p in puzzles:
        counts = per.setdefault(p.concept, Counter())
        for i in p.foils:
            values = annotations.values(p.answers[i], p.concept)
            if not values:
                counts[UNTAGGED] += 1
            for v in values:
                counts[v] += 1
    concept_order = [c.id for c in schema.concepts] if schema is not None else []
    rank = {c: i for i, c in enumerate(concept_order)}
    out: dict[str, Any] = {}
    min_p: float | None = None
    min_p_concept: str | None = None
    max_share = 0.0
    max_share_value: str | None = None
    for concept in sorted(per, key=lambda c: (rank.get(c, len(rank)), c)):
        counts = per[concept]
        value_order: Sequence[str] = ()
        if schema is not None and schema.has_concept(concept):
            value_order = schema.concept(concept).value_ids
        tagged = Counter({v: n for v, n in counts.items() if v != UNTAGGED})
        ordered = _ordered(tagged, value_order)
        total = sum(ordered.values())
        test = chi_square_uniform(list(ordered.values()))
        share = max(ordered.values()) / total if total else 0.0
        top = max(ordered, key=lambda v: (ordered[v], v)) if ordered else None
        out[concept] = {
            "counts": ordered,
            "untagged": int(counts[UNTAGGED]),
            "values_seen": len(ordered),
            "chi2": test["chi2"],
            "p": test["p"],
            "max_share": share,
            "max_share_value": top,
        }
        if test["p"] is not None and (min_p is None or test["p"] < min_p):
            min_p, min_p_concept = test["p"], concept
        if share > max_share:
            max_share, max_share_value = share, f"{concept}={top}"
    return {
        "per_concept": out,
        "min_p": min_p,
        "min_p_concept": min_p_concept,
        "max_share": max_share,
        "max_share_value": max_share_value,
    }


def part_stats(
    puzzles: Sequence[Puzzle],
    annotations: TagIndex,
    schema: Schema | None = None,
    tested: Iterable[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """The statistics of one part (any list of puzzles). With a schema, also its partial
    views (:func:`studio.vet.partial.partial_views`; ``tested``: the (rule, concept)
    readings of the whole split, default this part's)."""
    concept_order = [c.id for c in schema.concepts] if schema is not None else []
    rule_order = RULE_IDS
    extra: dict[str, Any] = {}
    if schema is not None:
        from studio.vet.partial import partial_views
        from studio.vet.rules import RuleBook

        views = partial_views(puzzles, annotations, RuleBook(schema), tested)
        if views["views"]:
            extra["partial_views"] = views
    return {
        "puzzles": len(puzzles),
        "per_rule": _ordered(Counter(p.rule for p in puzzles), rule_order),
        "per_concept": _ordered(Counter(p.concept for p in puzzles), concept_order),
        "per_rule_concept": _ordered(Counter(f"{p.rule}/{p.concept}" for p in puzzles)),
        "per_layout": _ordered(Counter(p.layout for p in puzzles)),
        "per_shift": _ordered(
            Counter("shift" if p.shift else "noshift" for p in puzzles), ("noshift", "shift")
        ),
        "answer_position": answer_positions(puzzles),
        "foil_values": foil_values(puzzles, annotations, schema),
        "audit": _audit(puzzles, annotations),
        **extra,
    }


def split_stats(
    puzzles: Iterable[Puzzle], annotations: TagIndex, schema: Schema | None = None
) -> dict[str, Any]:
    """``{part: part_stats}`` for ``train``, ``val``, ``test`` and ``all`` (see the module)."""
    puzzles = list(puzzles)
    by_part: dict[str, list[Puzzle]] = {s: [] for s in SPLITS}
    for p in puzzles:
        by_part.setdefault(p.split, []).append(p)
    tested = {(p.rule, p.concept) for p in puzzles}
    out = {part: part_stats(ps, annotations, schema, tested) for part, ps in by_part.items()}
    out["all"] = part_stats(puzzles, annotations, schema, tested)
    return out


def rejection_summary(rejections: Mapping[str, int]) -> dict[str, int]:
    """Rejection counts by reason, sorted (for reports and the statistics panel)."""
    return {k: int(v) for k, v in sorted(rejections.items())}


__all__ = [
    "PARTS",
    "answer_positions",
    "chi_square_uniform",
    "foil_values",
    "part_stats",
    "rejection_summary",
    "split_stats",
]


def _audit(puzzles: Sequence[Puzzle], annotations: TagIndex) -> dict[str, Any]:
    """:func:`studio.vet.audit.audit_puzzles`, imported when first needed (it imports
    scipy.stats, which generation workers never need)."""
    from studio.vet.audit import audit_puzzles

    return audit_puzzles(puzzles, annotations)
