"""Answers-only shortcut probes: a conditional logit over what each answer carries (numpy/scipy).

Why: the context-blind CNN learns from pixels and misses a leak that lives in the answer set's
*tags* — the key's value of the intended concept is never shared by another answer, some values
only ever sit on foils, some only on keys. A careful reviewer finds these with a tiny model that
never sees the context, so the studio runs that model itself (issue 11; I-RAVEN and RAVEN-FAIR
measured RAVEN's answer-set bias the same way).

**The model** (:func:`fit_answers_only_probe`). Each answer is described by *attributes*
(attribute → the values it carries: a glyph's annotation tags, its image pseudo-tags, or the
fields of a stimulus family's symbolic record). Its features:

- ``X=v``: the answer carries value ``v`` of attribute ``X`` (one-hot; the vocabulary is what the
  fitting puzzles show, so a value never seen there weighs nothing);
- with ``sharing`` (comparing answers with each other, the odd-one-out giveaway):
  ``X shared by k`` — ``k`` of the *other* answers share a value of ``X`` with it (``0..A-1``);
  ``only answer with X`` — it carries ``X`` and no other answer does; ``no X while others
  have one`` — the reverse.

The score of an answer is ``w · features``; the probabilities are the softmax over the answers of
one puzzle (a conditional logit), fitted by L-BFGS on the cross-entropy of the key plus
``l2 / 2 · |w|²``. 10,000 four-answer puzzles with a few hundred features fit in a few seconds.

**Held-out for every puzzle**, as :mod:`studio.baselines.run` does for trained models: one fit
on the whole train part predicts val and test; the train part is halved at random (seeded) and
each half is predicted by the fit on the other half. A puzzle's probabilities therefore never come
from a model that saw its key.

**Reasons.** For each puzzle the features that lift the chosen answer's score above the mean of
the others (weight × (its feature − the others' mean)), the two largest, in words: "the key is
the only answer with a value of intersection-quantity (+2.1); the key carries closure=triangle
(+0.9)".

:class:`ProbeTags` and :class:`ProbeImage` are the baselines registered as ``probe-tags`` and
``probe-image`` (training-free units of :mod:`studio.baselines.run`: they cross-fit inside).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, sparse

Attributes = Mapping[str, frozenset[str]]

#: default L2 penalty on the weights (the loss is summed over the fitting puzzles)
L2 = 1.0
#: reasons name at most this many features, each lifting the score by at least MIN_LIFT
REASON_FEATURES = 2
MIN_LIFT = 0.05
#: weights reported per model (the largest in size)
REPORT_WEIGHTS = 30
#: too few fitting puzzles for a fit: the probe predicts uniformly instead
MIN_FIT = 8

_VALUE, _SHARE, _ONLY, _MISSING = "v", "s", "o", "m"
#: partial-view features (relation of an answer to ONE visible row of the context)
_ROW_SEEN, _ROW_LACKS = "r", "n"


@dataclass
class ProbeResult:
    """What an answers-only probe found.

    ``probs``: (N, A) held-out probabilities for every puzzle (val/test from the fit on train,
    train cross-fitted on halves); ``reasons``: per puzzle, the features that carry its
    prediction, in words; ``weights``: feature (in words) → weight of the fit on the whole train
    part; ``choices``: ``probs.argmax(axis=1)``."""

    probs: np.ndarray
    reasons: list[str]
    weights: dict[str, float]
    choices: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


# ---- features ------------------------------------------------------------------------------------
Feature = tuple[str, str, str]  # (kind, attribute, value or count)


def row_features(mine: Mapping[str, frozenset[str]], row: Sequence[Attributes]) -> list[Feature]:
    """How an answer relates to one visible row (the partial-view probes, issue 24): per
    attribute it carries, in how many of the row's glyphs one of its values appears
    (``X seen in k``: 0 is "a value row 1 never shows", all is "the row's constant"); per
    attribute the row shows and the answer lacks, ``X lacking``."""
    row_sets = [{x: frozenset(vs) for x, vs in g.items() if vs} for g in row]
    feats: list[Feature] = []
    for x, vs in sorted(mine.items()):
        seen = sum(1 for g in row_sets if x in g and g[x] & vs)
        feats.append((_ROW_SEEN, x, str(seen)))
    shown = sorted({x for g in row_sets for x in g} - set(mine))
    feats += [(_ROW_LACKS, x, "") for x in shown]
    return feats


def answer_features(
    answers: Sequence[Attributes],
    *,
    sharing: bool = True,
    row: Sequence[Attributes] | None = None,
) -> list[list[Feature]]:
    """The features of each answer of one puzzle (module docstring); with ``row`` (the
    attributes of one visible context row's glyphs) also :func:`row_features`."""
    sets = [{x: frozenset(vs) for x, vs in a.items() if vs} for a in answers]
    out: list[list[Feature]] = []
    names = sorted({x for s in sets for x in s})
    for j, mine in enumerate(sets):
        feats: list[Feature] = [
            (_VALUE, x, v) for x, vs in sorted(mine.items()) for v in sorted(vs)
        ]
        if sharing:
            for x in names:
                others = [s[x] for k, s in enumerate(sets) if k != j and x in s]
                if x in mine:
                    shared = sum(1 for o in others if o & mine[x])
                    feats.append((_SHARE, x, str(shared)))
                    if not others:
                        feats.append((_ONLY, x, ""))
                elif others:
                    feats.append((_MISSING, x, ""))
        if row is not None:
            feats += row_features(mine, row)
        out.append(feats)
    return out


def feature_name(f: Feature) -> str:
    """A feature in words (the report's weights)."""
    kind, x, v = f
    if kind == _VALUE:
        return f"{x}={v}"
    if kind == _SHARE:
        return f"{x} shared by {v} other answer{'' if v == '1' else 's'}"
    if kind == _ONLY:
        return f"only answer with a value of {x}"
    if kind == _ROW_SEEN:
        return f"its value of {x} seen in {v} glyph{'' if v == '1' else 's'} of the row"
    if kind == _ROW_LACKS:
        return f"no value of {x} while the row shows one"
    return f"no value of {x} while others have one"


def _describe(f: Feature, subject: str, carried: bool) -> str:
    """Why feature ``f`` lifts ``subject`` (the chosen answer) over the others; ``carried``: the
    chosen answer has it (else the others have it and it lowers theirs)."""
    kind, x, v = f
    if kind == _VALUE:
        if carried:
            return f"{subject} carries {x}={v}"
        return f"the other answers carry {x}={v}, which lowers theirs"
    if kind == _SHARE:
        if carried:
            if v == "0":
                return f"no other answer shares {subject}'s value of {x}"
            return f"{v} other answer{'' if v == '1' else 's'} share {subject}'s value of {x}"
        return f"other answers have a value of {x} shared by {v} other(s), which lowers theirs"
    if kind == _ONLY:
        if carried:
            return f"{subject} is the only answer with a value of {x}"
        return f"another answer is the only one with a value of {x}, which lowers it"
    if kind == _ROW_SEEN:
        where = f"in {v} glyph{'' if v == '1' else 's'} of the visible row"
        if carried:
            return f"{subject}'s value of {x} is seen {where}"
        return f"the other answers' values of {x} are seen {where}, which lowers theirs"
    if kind == _ROW_LACKS:
        if carried:
            return f"{subject} has no value of {x} while the visible row shows one"
        return f"other answers lack the visible row's {x}, which lowers theirs"
    if carried:
        return f"{subject} is the only answer without a value of {x}"
    return f"other answers lack a value of {x}, which lowers theirs"


# ---- the conditional logit -----------------------------------------------------------------------
class _Design:
    """Per puzzle and answer, the feature ids (over the distinct features of all puzzles)."""

    def __init__(
        self,
        attrs: Sequence[Sequence[Attributes]],
        sharing: bool,
        rows: Sequence[Sequence[Attributes]] | None = None,
    ) -> None:
        self.n = len(attrs)
        # a puzzle may hold fewer answers than the most any holds (a glyph split's
        # min_answers): its missing slots carry no feature and are masked out of its softmax
        self.counts = np.array([len(a) for a in attrs], dtype=np.int64)
        self.a = int(self.counts.max()) if len(attrs) else 0
        index: dict[Feature, int] = {}
        self.rows: list[np.ndarray] = []  # per puzzle: answer row of each entry
        self.cols: list[np.ndarray] = []  # per puzzle: feature id of each entry
        for i, answers in enumerate(attrs):
            r, c = [], []
            row = None if rows is None else rows[i]
            for j, feats in enumerate(answer_features(answers, sharing=sharing, row=row)):
                for f in feats:
                    r.append(j)
                    c.append(index.setdefault(f, len(index)))
            self.rows.append(np.array(r, dtype=np.int64))
            self.cols.append(np.array(c, dtype=np.int64))
        self.features: list[Feature] = list(index)

    def matrix(self, idx: np.ndarray, vocab: np.ndarray) -> sparse.csr_matrix:
        """(len(idx) · A, len(vocab)) 0/1 features of these puzzles over ``vocab`` (feature
        ids; others are dropped)."""
        where = np.full(len(self.features), -1, np.int64)
        where[vocab] = np.arange(len(vocab))
        rr, cc = [], []
        for k, i in enumerate(idx):
            col = where[self.cols[i]]
            keep = col >= 0
            rr.append(k * self.a + self.rows[i][keep])
            cc.append(col[keep])
        r = np.concatenate(rr) if rr else np.zeros(0, np.int64)
        c = np.concatenate(cc) if cc else np.zeros(0, np.int64)
        m = sparse.csr_matrix(
            (np.ones(len(r)), (r, c)), shape=(len(idx) * self.a, len(vocab)), dtype=np.float64
        )
        m.sum_duplicates()
        m.data[:] = 1.0
        return m

    def vocab(self, idx: np.ndarray) -> np.ndarray:
        """Feature ids that occur in these puzzles and differ between the answers of at least
        one of them (a feature every answer carries cannot move a softmax)."""
        seen = np.zeros(len(self.features), bool)
        for i in idx:
            cols = self.cols[i]
            if len(cols) == 0:
                continue
            ids, counts = np.unique(cols, return_counts=True)
            seen[ids[counts < self.counts[i]]] = True
        return np.flatnonzero(seen)

    def mask(self, idx: np.ndarray) -> np.ndarray:
        """(len(idx), A) bool: each puzzle's own answer slots."""
        return np.arange(self.a)[None, :] < self.counts[np.asarray(idx, dtype=np.int64)][:, None]


def _softmax(scores: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    z = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _fit(
    x: sparse.csr_matrix, keys: np.ndarray, a: int, l2: float, mask: np.ndarray | None = None
) -> np.ndarray:
    """Weights of the conditional logit (L-BFGS on cross-entropy + l2/2 |w|²); ``mask``
    (n, a): each puzzle's own answer slots (the others take no part in its softmax)."""
    n = len(keys)
    y = np.zeros((n, a))
    y[np.arange(n), keys] = 1.0
    xt = x.T.tocsr()

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        s = (x @ w).reshape(n, a)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        m = s.max(axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(s - m).sum(axis=1))
        p = np.exp(s - lse[:, None])
        value = float(lse.sum() - s[np.arange(n), keys].sum() + 0.5 * l2 * w @ w)
        grad = xt @ (p - y).ravel() + l2 * w
        return value, grad

    w0 = np.zeros(x.shape[1])
    res = optimize.minimize(loss, w0, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return np.asarray(res.x, dtype=np.float64)


def fit_answers_only_probe(
    attrs: Sequence[Sequence[Attributes]],
    keys: np.ndarray,
    parts: np.ndarray,
    seed: int,
    *,
    sharing: bool = True,
    l2: float = L2,
    rows: Sequence[Sequence[Attributes]] | None = None,
) -> ProbeResult:
    """Fit the answers-only probe (module docstring) and predict every puzzle held out.

    ``attrs[i][j]``: what answer ``j`` of puzzle ``i`` carries; ``keys``: the key's index per
    puzzle; ``parts``: train / val / test per puzzle; ``seed``: the train part's halving.
    ``sharing=False`` leaves the between-answer features out (odd-one-out: comparing the
    answers is the task itself, not a shortcut). ``rows[i]``: the attributes of the glyphs of
    the one context row the probe may see (a partial-view probe, :func:`row_features`); None:
    answers only. Puzzles outside the train part are predicted by
    the fit on it; train puzzles by the fit on the other half of it. Without enough train
    puzzles to fit (fewer than :data:`MIN_FIT`), the probabilities are uniform."""
    keys = np.asarray(keys, dtype=np.int64)
    parts = np.asarray(parts)
    if len(attrs) != len(keys) or len(parts) != len(keys):
        raise ValueError(f"{len(attrs)} puzzles' attributes, {len(keys)} keys, {len(parts)} parts")
    if rows is not None and len(rows) != len(keys):
        raise ValueError(f"{len(rows)} puzzles' rows for {len(keys)} keys")
    design = _Design(attrs, sharing, rows)
    n, a = design.n, max(design.a, 1)
    probs = (
        design.mask(np.arange(n)) / np.maximum(design.counts, 1)[:, None] if n else np.zeros((0, a))
    )
    train = np.flatnonzero(parts == "train")
    held = np.flatnonzero(parts != "train")
    weights_of: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (predicted, vocab, w)

    def fit_predict(fit_on: np.ndarray, predict_on: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        vocab = design.vocab(fit_on)
        if len(fit_on) < MIN_FIT or len(vocab) == 0:
            w = np.zeros(len(vocab))
        else:
            w = _fit(design.matrix(fit_on, vocab), keys[fit_on], a, l2, design.mask(fit_on))
        if len(predict_on):
            s = (design.matrix(predict_on, vocab) @ w).reshape(len(predict_on), a)
            probs[predict_on] = _softmax(s, design.mask(predict_on))
            weights_of.append((predict_on, vocab, w))
        return vocab, w

    main_vocab, main_w = fit_predict(train, held)
    if len(train) >= 2 * MIN_FIT:
        order = np.random.default_rng([int(seed), 1]).permutation(train)
        halves = (np.sort(order[: len(order) // 2]), np.sort(order[len(order) // 2 :]))
        fit_predict(halves[0], halves[1])
        fit_predict(halves[1], halves[0])
    choices = probs.argmax(axis=1)
    reasons = [""] * n
    for predicted, vocab, w in weights_of:
        wfull = np.zeros(len(design.features))
        wfull[vocab] = w
        for i in predicted:
            reasons[i] = _reason(design, i, int(choices[i]), int(keys[i]), wfull)
    weights = {
        feature_name(design.features[f]): round(float(v), 4)
        for f, v in sorted(zip(main_vocab, main_w, strict=True), key=lambda t: -abs(t[1]))
    }
    return ProbeResult(probs=probs, reasons=reasons, weights=weights, choices=choices)


def _reason(design: _Design, i: int, chosen: int, key: int, w: np.ndarray) -> str:
    """The features lifting answer ``chosen`` of puzzle ``i`` over the others' mean, in words."""
    a = int(design.counts[i])
    rows, cols = design.rows[i], design.cols[i]
    if a < 2 or len(cols) == 0:
        return "no feature separates the answers"
    mine = set(cols[rows == chosen].tolist())
    others: dict[int, int] = {}
    for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
        if r != chosen:
            others[c] = others.get(c, 0) + 1
    lifts = []
    for f in mine | set(others):
        diff = (1.0 if f in mine else 0.0) - others.get(f, 0) / (a - 1)
        lift = float(w[f]) * diff
        if lift >= MIN_LIFT:
            lifts.append((lift, f, f in mine))
    if not lifts:
        return "no feature separates the answers"
    # one feature per attribute ("shared by 0" on the chosen answer and "shared by 2" on the
    # others say the same thing); what the chosen answer itself carries reads best, so it is
    # preferred when it lifts at least half as much as the attribute's strongest feature
    by_attr: dict[str, list[tuple[float, int, bool]]] = {}
    for t in lifts:
        by_attr.setdefault(design.features[t[1]][1], []).append(t)
    picked = []
    for group in by_attr.values():
        best = max(group, key=lambda t: (t[0], -t[1]))
        own = [t for t in group if t[2] and t[0] >= 0.5 * best[0]]
        picked.append((best[0], max(own, key=lambda t: (t[0], -t[1])) if own else best))
    picked.sort(key=lambda t: (-t[0], t[1][1]))
    subject = "the key" if chosen == key else f"answer {chosen + 1} (a foil)"
    parts = [
        f"{_describe(design.features[f], subject, carried)} ({lift:+.2f})"
        for _, (lift, f, carried) in picked[:REASON_FEATURES]
    ]
    return "; ".join(parts)


# ---- attributes of a source ----------------------------------------------------------------------
def image_attributes(answers_u8: np.ndarray) -> list[list[dict[str, frozenset[str]]]]:
    """The image pseudo-tags (:func:`studio.vet.features.feature_tags`) of every answer frame of
    (N, A, 80, 80) ``uint8`` ink × 255; each distinct frame is described once."""
    from studio.baselines.training_free import HAND_INK, unique_frames
    from studio.vet.features import compute_features_batch, feature_tags

    n, a = answers_u8.shape[:2]
    flat = answers_u8.reshape(n * a, *answers_u8.shape[2:])
    uniq, inverse = unique_frames(flat)
    paper = np.where(uniq > HAND_INK * 255, 0, 255).astype(np.uint8)
    tags = [feature_tags(f) for f in compute_features_batch(paper)] if len(uniq) else []
    return [[dict(tags[inverse[i * a + j]]) for j in range(a)] for i in range(n)]


def bank_image_attributes(
    frames_u8: np.ndarray, answer_ids: np.ndarray
) -> list[list[dict[str, frozenset[str]]]]:
    """:func:`image_attributes` from the frame bank: each bank row an answer names is
    described once, and no stack of answer frames is gathered (0.26 GB on 10,000 puzzles)."""
    rows = np.unique(answer_ids)
    described = image_attributes(frames_u8[rows][None])[0] if len(rows) else []
    by_row = dict(zip(rows.tolist(), described, strict=True))
    return [[dict(by_row[int(r)]) for r in puzzle] for puzzle in answer_ids]


# ---- the baselines -------------------------------------------------------------------------------
class _AnswersProbe:
    """A training-free unit of :mod:`studio.baselines.run` that cross-fits inside: ``prepare``
    fits (cached per source), ``predict`` reads the held-out probabilities, ``explain`` gives the
    report its per-puzzle reasons and the fitted weights."""

    id = ""
    trained = False
    seed = 0

    def __init__(self) -> None:
        self.result: ProbeResult | None = None

    def attributes(self, data: Any, cache: dict[str, Any]) -> list[list[dict[str, Any]]] | None:
        raise NotImplementedError

    def visible_rows(self, data: Any) -> list[list[dict[str, Any]]] | None:
        """Per puzzle, the attributes of the one context row the probe sees (None: none)."""
        return None

    def applies(self, data: Any) -> str | None:
        if data.n_answers < 2:
            return "needs at least two answers"
        if not (data.parts == "train").any():
            return "no train puzzles to fit on"
        return None

    def prepare(self, data: Any, cache: dict[str, Any]) -> None:
        """Fit on the source's train part (cross-fitted, see :func:`fit_answers_only_probe`)."""
        name = f"probe:{self.id}"
        if name not in cache:
            attrs = self.attributes(data, cache)
            if attrs is None:
                attrs = [[{} for _ in range(data.n_answers)] for _ in range(data.n)]
            # each puzzle's own answers: a short set's blank slots are no answers to compare
            counts = data.counts
            attrs = [list(a)[: int(k)] for a, k in zip(attrs, counts, strict=True)]
            cache[name] = fit_answers_only_probe(
                attrs,
                data.keys,
                data.parts,
                self.seed,
                sharing=data.layout != "odd-one-out",
                rows=self.visible_rows(data),
            )
        self.result = cache[name]

    def predict(self, data: Any, idx: np.ndarray) -> np.ndarray:
        """(len(idx), A) held-out probabilities."""
        assert self.result is not None, "prepare() first"
        probs = self.result.probs[np.asarray(idx, dtype=np.int64)]
        short = data.n_answers - probs.shape[1]  # every set shorter than the slots
        return np.pad(probs, ((0, 0), (0, short))) if short > 0 else probs

    def explain(self) -> dict[str, Any]:
        """``{"why": [reason per puzzle], "features": {feature: weight}}`` (largest weights)."""
        assert self.result is not None, "prepare() first"
        top = dict(list(self.result.weights.items())[:REPORT_WEIGHTS])
        return {"why": list(self.result.reasons), "features": top}

    def embed(self, frames_u8: np.ndarray) -> np.ndarray:
        """Pooled ink, for the perception probe (the probe has no image encoder of its own)."""
        from studio.baselines.training_free import pooled

        return pooled(np.asarray(frames_u8))


class ProbeTags(_AnswersProbe):
    """Answers-only probe over the annotations (glyph tags; stimulus families' symbolic
    records): ``data.answer_attributes``."""

    id = "probe-tags"

    def applies(self, data: Any) -> str | None:
        if getattr(data, "answer_attributes", None) is None:
            return "the source carries no annotations or symbolic records of its answers"
        return super().applies(data)

    def attributes(self, data: Any, cache: dict[str, Any]) -> list[list[dict[str, Any]]] | None:
        return data.answer_attributes


class ProbeRow1(ProbeTags):
    """Partial-view probe over the tags (issue 24): the answers and the FIRST context row's
    glyphs, never the rest — "the answer whose value row 1 shows" finds a dist3 key whose foils
    take values row 1 never shows."""

    id = "probe-row1"
    #: which row of ``data.row_indices()`` the probe sees
    row = 0

    def applies(self, data: Any) -> str | None:
        if getattr(data, "context_attributes", None) is None:
            return "the source carries no annotations of its context"
        if len(data.rows) < 2:
            return "the context is one row: one row would be the whole context"
        return super().applies(data)

    def visible_rows(self, data: Any) -> list[list[dict[str, Any]]] | None:
        idx = data.row_indices()[self.row]
        return [[ctx[i] for i in idx] for ctx in data.context_attributes]


class ProbeRow2(ProbeRow1):
    """Partial-view probe over the tags: the answers and the incomplete row (the answer's own
    row) only — a foil completing that row under another reading than row 1's is a decoy; a
    key that alone completes it is a shortcut."""

    id = "probe-row2"
    row = -1


class ProbeImage(_AnswersProbe):
    """Answers-only probe over the image pseudo-tags of the answer frames (no annotations)."""

    id = "probe-image"

    def attributes(self, data: Any, cache: dict[str, Any]) -> list[list[dict[str, Any]]] | None:
        if "image-attributes" not in cache:
            cache["image-attributes"] = bank_image_attributes(data.frames_u8, data.answer_ids)
        return cache["image-attributes"]


__all__ = [
    "Attributes",
    "ProbeImage",
    "ProbeResult",
    "ProbeRow1",
    "ProbeRow2",
    "ProbeTags",
    "answer_features",
    "feature_name",
    "fit_answers_only_probe",
    "image_attributes",
    "row_features",
]
