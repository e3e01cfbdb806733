"""Per-concept models over the glyph space, and the ranked, diverse suggestion list.

For one value ``v`` of a concept the model is fitted on the current tags in well under a
second: the *positives* are the glyphs tagged ``v``, the *negatives* the glyphs tagged with the
concept's other values (and not ``v``) and the glyphs an annotator already answered "none of
these" for (``rejected``). Two scores, averaged:

- nearest neighbours: the mean cosine similarity to the ``k`` most similar positives (``k`` up
  to 3). With one tagged glyph this is just its nearest neighbours, which is what a concept with
  one tagged glyph gets;
- a logistic regression (L2-regularised, scipy's L-BFGS), fitted once the value has two
  positives: positives against the negatives plus a seeded sample of untagged glyphs weighted
  lightly (most untagged glyphs do not carry ``v``: without them the model would only learn
  what separates ``v`` from its siblings, and rank a glyph unlike all of them high).

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
#: weight of one untagged glyph as a negative in the logistic regression
BACKGROUND_WEIGHT = 0.1
#: untagged glyphs sampled as light negatives
BACKGROUND_SAMPLE = 2000
L2 = 1.0


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


def _nearest(vectors: np.ndarray, cand: np.ndarray, pos: np.ndarray, k: int = 3) -> np.ndarray:
    sims = vectors[cand] @ vectors[pos].T
    k = min(k, len(pos))
    if k == 1:
        return sims[:, 0] if sims.shape[1] == 1 else sims.max(axis=1)
    top = np.partition(sims, sims.shape[1] - k, axis=1)[:, -k:]
    return top.mean(axis=1)


def _logistic(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = L2
) -> tuple[np.ndarray, float]:
    from scipy.optimize import minimize

    d = x.shape[1]

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        coef, b = theta[:d], theta[d]
        z = x @ coef + b
        # log(1 + e^z) - y z, stably
        lse = np.logaddexp(0.0, z)
        f = float(np.sum(w * (lse - y * z)) + 0.5 * l2 * coef @ coef)
        p = 1.0 / (1.0 + np.exp(-z))
        g = w * (p - y)
        grad = np.concatenate([x.T @ g + l2 * coef, [g.sum()]])
        return f, grad

    res = minimize(loss, np.zeros(d + 1), jac=True, method="L-BFGS-B", options={"maxiter": 200})
    return res.x[:d], float(res.x[d])


def value_scores(
    space: GlyphSpace,
    cand: np.ndarray,
    pos: np.ndarray,
    neg: np.ndarray,
    background: np.ndarray,
) -> np.ndarray:
    """The scores of the candidate rows ``cand`` for one value (module docstring); ``pos``,
    ``neg`` and ``background`` are rows of ``space``."""
    v = space.vectors.astype(np.float64)
    nn = _nearest(v, cand, pos)
    if len(pos) < 2:
        return nn
    rows = np.concatenate([pos, neg, background])
    y = np.concatenate([np.ones(len(pos)), np.zeros(len(neg) + len(background))])
    w = np.concatenate(
        [
            np.full(len(pos), 1.0),
            np.full(len(neg), 1.0),
            np.full(len(background), BACKGROUND_WEIGHT),
        ]
    )
    # positives and negatives weigh the same in all, however many each has
    wpos = w[: len(pos)].sum()
    wneg = w[len(pos) :].sum()
    if wneg > 0:
        w[len(pos) :] *= wpos / wneg
    coef, b = _logistic(v[rows], y, w)
    p = 1.0 / (1.0 + np.exp(-(v[cand] @ coef + b)))
    return 0.5 * p + 0.5 * nn


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
    seed: int = 0,
) -> list[Suggestion]:
    """The ``n`` suggestions for ``values`` of ``concept`` (module docstring). Candidates
    are the glyphs of ``space`` with no tag of the concept, not in ``exclude`` nor
    ``rejected``. Pure: reads ``annotations``, writes nothing."""
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
    cand = np.array([i for i, k in enumerate(space.keys) if k not in skip], dtype=np.int64)
    if len(cand) == 0 or n <= 0:
        return []
    rng = np.random.default_rng(seed)
    bg = cand if len(cand) <= BACKGROUND_SAMPLE else rng.choice(cand, BACKGROUND_SAMPLE, False)
    bg = np.sort(bg)
    best = np.full(len(cand), -np.inf)
    guess = np.full(len(cand), -1, dtype=np.int64)
    targets = [v for v in values if space.rows(tagged.get(v, [])).size]
    for t, value in enumerate(targets):
        pos_keys = set(tagged[value])
        pos = space.rows(sorted(pos_keys))
        neg_keys = {k for other, ks in tagged.items() if other != value for k in ks} - pos_keys
        neg = space.rows(sorted(neg_keys | rejected))
        s = value_scores(space, cand, pos, neg, bg)
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
