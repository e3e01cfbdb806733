"""Per-concept models over the glyph space, and the ranked, diverse suggestion list.

For one value ``v`` of a concept the model is fitted on the current tags in well under a
second: the *positives* are the glyphs tagged ``v``, the *negatives* the glyphs tagged with the
concept's other values (and not ``v``) and the glyphs an annotator already answered "none of
these" for (``rejected``). A candidate's score is its cosine similarity to the nearest positive,
less half of what its nearest negative is nearer still (a glyph closer to a known "other value"
than to any ``v`` glyph drops). With one tagged glyph this is just that glyph's nearest
neighbours, which is what a concept with one tagged glyph gets.

Why nearest neighbours and not a logistic regression: on the ``suggest`` bench (UA's
annotations, half of each value hidden, every Symbola glyph a candidate) a one-vs-rest logistic
regression averaged with the neighbours, fitted against the negatives and a light sample of
untagged glyphs, cost 136 decisions per accepted tag; the mean similarity to the 3 nearest
positives 107; the nearest positive alone 87, and with the negatives' penalty 82. UA's values
are small, visually varied sets (a "circle" closure is a ring, a circled digit, a bullet), so a
glyph that looks like *one* tagged glyph is the best bet, and an average over them blurs it.

A glyph's score for the concept is its best score over the target values, and its *guess* that
value. The list is then drawn greedily from the best ``pool`` candidates by maximal marginal
relevance: each pick maximises ``score − diversity × (highest similarity to a glyph already
picked)``, so it is not twenty near-duplicates of one tagged glyph (the same shape in two fonts,
a sign and its circled twin).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from studio.core.keys import GlyphKey
from studio.core.tagindex import TagIndex
from studio.suggest.space import GlyphSpace

__all__ = ["DIVERSITY", "Suggestion", "rank_candidates", "value_scores"]

#: weight of the similarity penalty in the greedy max-min (MMR) draw
DIVERSITY = 0.3
#: how much of a nearer negative's lead is taken off a candidate's score
NEGATIVE_PENALTY = 0.5


@dataclass(frozen=True)
class Suggestion:
    """An untagged glyph the model thinks may carry ``value`` of ``concept`` (its guess,
    which a queue keeps hidden until the annotator answers). Never a tag."""

    key: GlyphKey
    concept: str
    value: str
    score: float

    def to_json(self) -> dict[str, Any]:
        return {
            "key": str(self.key),
            "concept": self.concept,
            "value": self.value,
            "score": round(self.score, 4),
        }


def _nearest(vectors: np.ndarray, cand: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Each candidate's cosine similarity to its nearest glyph of ``rows``."""
    out = np.full(len(cand), -np.inf)
    for i in range(0, len(rows), 1024):  # bounded memory for a value with many glyphs
        out = np.maximum(out, (vectors[cand] @ vectors[rows[i : i + 1024]].T).max(axis=1))
    return out


def value_scores(
    space: GlyphSpace,
    cand: np.ndarray,
    pos: np.ndarray,
    neg: np.ndarray,
) -> np.ndarray:
    """The scores of the candidate rows ``cand`` for one value (module docstring); ``pos``
    and ``neg`` are rows of ``space``."""
    v = space.vectors.astype(np.float64)
    near = _nearest(v, cand, pos)
    if len(neg) == 0:
        return near
    other = _nearest(v, cand, neg)
    return near - NEGATIVE_PENALTY * np.maximum(0.0, other - near)


def _diverse(
    space: GlyphSpace, cand: np.ndarray, score: np.ndarray, n: int, diversity: float, pool: int
) -> list[int]:
    """Indices into ``cand`` of ``n`` picks by maximal marginal relevance."""
    if n <= 0 or len(cand) == 0:
        return []
    order = np.argsort(-score, kind="stable")[: max(pool, n)]
    if diversity <= 0:
        return [int(i) for i in order[:n]]
    vec = space.vectors[cand[order]].astype(np.float64)
    s = score[order].astype(np.float64)
    picked: list[int] = []
    closest = np.full(len(order), -np.inf)
    avail = np.ones(len(order), dtype=bool)
    for _ in range(min(n, len(order))):
        gain = np.where(avail, s - diversity * np.maximum(closest, 0.0), -np.inf)
        j = int(np.argmax(gain))
        picked.append(j)
        avail[j] = False
        closest = np.maximum(closest, vec @ vec[j])
    return [int(order[j]) for j in picked]


def rank_candidates(
    space: GlyphSpace,
    annotations: TagIndex,
    concept: str,
    values: Sequence[str],
    n: int = 20,
    *,
    exclude: Iterable[GlyphKey] = (),
    rejected: Iterable[GlyphKey] = (),
    diversity: float = DIVERSITY,
    pool: int | None = None,
    only: Iterable[GlyphKey] | None = None,
) -> list[Suggestion]:
    """The ``n`` suggestions for ``values`` of ``concept`` (module docstring). Candidates
    are the glyphs of ``space`` with no tag of the concept, not in ``exclude`` nor
    ``rejected`` — and, given ``only`` (an annotator's assignment on a lab database), among
    those. Pure: reads ``annotations``, writes nothing."""
    tagged: dict[str, list[GlyphKey]] = {}
    decided: set[GlyphKey] = set()
    for k in annotations.glyphs():
        vals = annotations.values(k, concept)
        if vals:
            decided.add(k)
            for val in vals:
                tagged.setdefault(val, []).append(k)
    rejected = set(rejected)
    skip = decided | set(exclude) | rejected
    allowed = None if only is None else set(only)
    cand = np.array(
        [
            i
            for i, k in enumerate(space.keys)
            if k not in skip and (allowed is None or k in allowed)
        ],
        dtype=np.int64,
    )
    if len(cand) == 0 or n <= 0:
        return []
    best = np.full(len(cand), -np.inf)
    guess = np.full(len(cand), -1, dtype=np.int64)
    targets = [v for v in values if space.rows(tagged.get(v, [])).size]
    for t, value in enumerate(targets):
        pos_keys = set(tagged[value])
        pos = space.rows(sorted(pos_keys))
        neg_keys = {k for other, ks in tagged.items() if other != value for k in ks} - pos_keys
        neg = space.rows(sorted(neg_keys | rejected))
        s = value_scores(space, cand, pos, neg)
        better = s > best
        best[better] = s[better]
        guess[better] = t
    if not targets:
        return []
    picks = _diverse(space, cand, best, n, diversity, pool if pool is not None else 5 * n)
    return [
        Suggestion(space.keys[int(cand[i])], concept, targets[int(guess[i])], float(best[i]))
        for i in picks
    ]
