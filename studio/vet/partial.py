"""Can part of the context find the key? An exact symbolic solver for each partial view (issue 24).

UA's founding idea is that a glyph is polysemic and the salient concept only reveals itself
given the whole context. A puzzle whose key can be found from the answers and ONE row is a
defect as much as an invalid one: on the shared UA set the first row alone found the key of
43 % of the default split's held-out puzzles (chance 25 %), because the foils took values the
row never shows.

Two views of a matrix puzzle (two-row or 3×3; a one-row sequence has no partial row, nor has an
odd-one-out group, whose answers are its whole context):

- ``row1``, **the first row alone** (and the answers). The rows hidden from the solver could be
  anything; an answer *fits* a reading — a (rule, concept) — when row 1 instantiates that rule
  over that concept and some open row under the puzzle's own reading (row 2 repeating row 1's
  instantiation without shift; any instantiation with shift, dist3 excepted) could end in the
  answer's value. Without shift: constant and progression ask for row 1's value (its last),
  dist3 for any of row 1's three values, union for both of row 1's united values.
- ``row2``, **the incomplete row alone** (its visible cells and the answers): an answer fits a
  reading when the visible cells and the answer instantiate that rule over that concept.

Two views of an analogy, A : A′ :: B : ? (VASR's partial inputs, vasr.txt §4, Table 3 R10–R13):

- ``pair``, **the example pair alone** (A, A′ and the answers): the pair shows its change, a
  concept whose values differ between A and A′; an answer fits that reading when it carries
  A′'s values of the concept and none that only A carries — as B′ would, whatever B is.
- ``probe``, **B alone** (B and the answers): an answer fits a reading ("change", d) when it and
  B carry different values of d and agree on every other concept both carry (the foil judge's
  leniency, :func:`studio.vet.analogy.agrees_outside`): it could be B′ for some change of d.

The solver scores each answer by the readings it fits, counting only the readings the split
actually tests (a benchmark's card lists its (rule, concept) tuples, so a solver may know
them), and picks the best, ties split evenly. Its expected accuracy is ``1/|ties|`` when the key
is among the best, else 0. A **decoy** for a view is a foil scoring as high as the key there:
to that view it is as good an answer. The generator prefers decoys among the valid foils
(:mod:`studio.families.glyph_pmp.generator`); this module measures what they achieved, per
view and per (rule, concept) tuple — the *floor* the annotations allowed that split — for the
split's statistics, ``generate``'s summary, the board and the dataset card.

Counting readings treats every reading alike, and a split need not: where a foil fits a sum
of the incomplete row's two visible cells by chance far more often than a constant, "it fits a
constant" names the key more often than "it fits a sum". The **weighted solver** knows that: it
scores each answer by how often, in the other half of the split, an answer fitting exactly the
same tested readings was the key, and picks the best (halves by puzzle id, each scored by the
other: no puzzle teaches its own key). On random polysemic sets it reads 5–16 points over the
counting solver. A third, ``relative``, weighs the same way a signature that also says whether
the answer fits the most readings of its puzzle's answers, and whether the fewest (an
outside review's, which recovered half of what the choice of contexts gained on the
incomplete row while the generator judged by the plain signature). The generator now judges
its contexts by this solver's running shares (:class:`RunningShares`), the counting one's,
and a logit it learns as it draws (:class:`RunningLogit`); ``weighted`` is the solver it
does not aim at. A fourth, ``aware``, is the
relative one knowing what the answers say of the concept: the concepts they could be a set
of, each answer carrying a value and no two the same (:func:`answer_concepts`), and only the
readings over those. Where the answers are a set over the intended concept alone they name
it, and a decoy fitting a reading over another concept fools no one: on the image-feature set (4,000
puzzles, seed 5, sets of two to four) this solver read 0.91 and 0.88 where the relative one
read 0.60 and 0.47 (chance 0.35), until the generator drew its answers to be a set over a
second concept too. A fifth, ``logit``, is a conditional logit over each answer's readings
(each on its own, with how many other answers fit it, and per rule it fits, how many other
answers fit a reading of that rule) and its own tags, fitted on one half
and scoring the other: where the others key on whole signatures it weighs readings one by
one, and an outside review's such logit read 3 to 7 points over them. The reports' floor is
the highest of the five.

A decoy is still a foil: the validity and strict checks judge it under the whole context
exactly as before, so it completes nothing there. Values only, no images: the image-feature
warnings and the trained partial baselines (``partial-row1``) measure the rest.
"""

from __future__ import annotations

import math
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.core.tagindex import TagIndex
from studio.vet.analogy import CHANGE, agrees_outside
from studio.vet.emergent import _shared_concepts
from studio.vet.rules import NONE, Rule, RuleBook, RuleContext, row_instantiations

#: the partial views, in the order reports list them (a matrix's two, then an analogy's two)
VIEWS = ("row1", "row2", "pair", "probe")
VIEW_NAMES = {
    "row1": "the first row alone",
    "row2": "the incomplete row alone",
    "pair": "the example pair alone",
    "probe": "B alone",
}
#: layouts with a first row and an incomplete row (a sequence's one row is the whole context)
VIEW_LAYOUTS = ("two-row", "matrix-3x3")
#: the analogy layout (A : A′ :: B : ?), whose views are the pair and B
ANALOGY_LAYOUT = "analogy"
#: what the partial views are, in a sentence for people (the card, the statistics panel)
EXPLANATION = (
    "An exact symbolic solver that sees the answers and part of the context (ONE row of a "
    "matrix: the first, or the incomplete one; an analogy's example pair, or B) picks the "
    "answer fitting the most readings this set tests (ties split evenly); a decoy is a foil "
    "it finds as good as the key. Weighted solvers weigh each reading by how often an answer "
    "fitting it was the key elsewhere in the split (one also compares each answer's count "
    "with the other answers', one also reads which concepts the answers could be a set of); "
    "a view's floor is the highest of them. Near chance, the whole context is needed."
)
#: points over chance past which a tuple's view is named in the reports' lines
NAMED_POINTS = 10.0
#: points over chance past which ``generate`` warns of a view (:func:`partial_warnings`)
WARN_POINTS = 30.0
#: points by which the weighted solver must beat the counting one for its reason to be given
WEAK_POINTS = 5.0

Reading = tuple[str, str]  # (rule, concept)
#: an answer's readings, and whether it fits the most and the fewest of its puzzle's answers
Signature = tuple[frozenset[Reading], bool, bool]
#: what an answer must carry to end an open row (:func:`first_row_needs`)
Needs = list[tuple[str, frozenset[str]]]

__all__ = [
    "ANALOGY_LAYOUT",
    "EXPLANATION",
    "NAMED_POINTS",
    "SOLVERS",
    "VIEWS",
    "VIEW_LAYOUTS",
    "VIEW_NAMES",
    "OpenRowView",
    "PairView",
    "ProbeView",
    "RowView",
    "RunningLogit",
    "RunningShares",
    "answer_concepts",
    "aware_readings",
    "exp_same_everywhere",
    "first_row_needs",
    "floor_of",
    "floor_points",
    "judge_features",
    "logit_accuracies",
    "meets",
    "open_row_fits",
    "partial_gap",
    "partial_lines",
    "partial_signatures",
    "partial_views",
    "partial_warnings",
    "puzzle_views",
    "reading_features",
    "relative_signatures",
    "solver_accuracy",
    "weighted_accuracies",
]


def _last_cells(rc: RuleContext, inst: Any) -> list[frozenset[str]]:
    """What the open row's last cell must carry for the open row to repeat ``inst``."""
    if rc.rule is Rule.UNION:
        return [frozenset(inst)]
    if rc.rule is Rule.DIST3:
        return [frozenset((v,)) for v in inst]
    if isinstance(inst, tuple):
        return [frozenset((inst[-1],))]
    return [frozenset((inst,))]


class RowView:
    """The first row alone: the readings it instantiates and, for each, what an answer must
    carry to end an open row under the puzzle's reading. Built once per puzzle (or per
    context a generator draws); :meth:`readings` is then a few set tests per answer."""

    def __init__(
        self, row: Sequence[GlyphKey], annotations: TagIndex, book: RuleBook, shift: bool
    ) -> None:
        self.annotations = annotations
        #: per reading, what the answer must carry: ("all", values) every one of them, or
        #: ("any", values) one of them
        self.needs: list[tuple[RuleContext, Needs]] = []
        for concept in _shared_concepts(row, annotations):
            sets = [annotations.values(g, concept) for g in row]
            for rc in book.rules_of(concept):
                insts = row_instantiations(rc, sets)
                if not insts:
                    continue
                needs = first_row_needs(rc, insts, shift)
                if needs:
                    self.needs.append((rc, needs))

    def readings(self, answer: GlyphKey) -> frozenset[Reading]:
        mine = self.annotations.by_glyph.get(answer, {})
        out = set()
        for rc, needs in self.needs:
            vals = mine.get(rc.concept)
            if vals and meets(needs, vals):
                out.add((rc.rule.value, rc.concept))
        return frozenset(out)


def first_row_needs(rc: RuleContext, insts: frozenset[Any], shift: bool) -> Needs:
    """What an answer must carry of ``rc``'s concept to end an open row under the reading
    ``rc`` that a first row instantiating ``insts`` shows: ("all", values) every one of them,
    or ("any", values) one of them; empty when the row shows no value. Shared with the
    generator, which aims a first row at foils (:meth:`GlyphPMPGenerator._decoy_plan`)."""
    if shift and rc.rule is not Rule.DIST3:
        return _shifted_needs(rc, insts)
    if rc.rule is Rule.CONSTANT:  # a row of `none` repeated shows no value
        insts = frozenset(i for i in insts if i != NONE)
    cells = {c for i in insts for c in _last_cells(rc, i)}
    return [("all", c) for c in sorted(cells, key=sorted)]


def meets(needs: Needs, values: frozenset[str]) -> bool:
    """Do an answer's values of the concept meet one of :func:`first_row_needs`' needs?"""
    return any((need <= values) if mode == "all" else bool(need & values) for mode, need in needs)


def open_row_fits(
    rc: RuleContext, visible: Sequence[frozenset[str]], values: frozenset[str], shift: bool
) -> bool:
    """Do an incomplete row's visible cells (their values of ``rc``'s concept) and an answer
    carrying ``values`` instantiate ``rc``? (A row of `none` completes nothing, but for a
    negated concept under shift, where the hidden rows may show a value.)"""
    insts = row_instantiations(rc, [*visible, values])
    if rc.rule is Rule.CONSTANT and not (shift and rc.negate):
        insts = frozenset(i for i in insts if i != NONE)
    return bool(insts)


def _shifted_needs(rc: RuleContext, insts: frozenset[Any]) -> Needs:
    """With shift the hidden open row takes an instantiation of its own: a union's answer
    carries two values; a constant's any value, `none` too where the concept is negated and
    row 1 shows a value (only rows that are all `none` complete nothing); another rule's any
    value it allows."""
    allowed = frozenset(rc.allowed)
    if rc.rule is Rule.UNION:
        values = sorted(allowed)
        return [("all", frozenset((a, b))) for a in values for b in values if a < b]
    if rc.rule is Rule.CONSTANT:
        shows = any(i != NONE for i in insts)
        return [("any", allowed if (shows and rc.negate) else allowed - {NONE})]
    return [("any", allowed)]


class OpenRowView:
    """The incomplete row alone: the readings under which its visible cells and an answer
    instantiate a rule (the hidden rows could then follow)."""

    def __init__(
        self,
        visible: Sequence[GlyphKey],
        annotations: TagIndex,
        book: RuleBook,
        shift: bool = False,
    ) -> None:
        self.annotations = annotations
        self.book = book
        # with shift, a negated concept's row of `none` completes when another row shows a
        # value (the hidden rows may); without, a row of `none` completes nothing
        self.shift = shift
        self.rows: list[tuple[str, list[frozenset[str]]]] = [
            (c, [annotations.values(g, c) for g in visible])
            for c in _shared_concepts(visible, annotations)
        ]

    def readings(self, answer: GlyphKey) -> frozenset[Reading]:
        mine = self.annotations.by_glyph.get(answer, {})
        out = set()
        for concept, sets in self.rows:
            vals = mine.get(concept)
            if not vals:
                continue
            for rc in self.book.rules_of(concept):
                if open_row_fits(rc, sets, vals, self.shift):
                    out.add((rc.rule.value, rc.concept))
        return frozenset(out)


class PairView:
    """The example pair alone (A, A′): the changes it shows, and what B′ must then carry."""

    def __init__(self, a: GlyphKey, a2: GlyphKey, annotations: TagIndex) -> None:
        self.annotations = annotations
        ta = annotations.by_glyph.get(a, {})
        tb = annotations.by_glyph.get(a2, {})
        #: per concept the pair changes: the values only A′ carries, and those only A carries
        self.changes = [
            (c, tb.get(c, frozenset()) - ta.get(c, frozenset()), ta.get(c, frozenset()))
            for c in sorted(ta.keys() | tb.keys())
            if ta.get(c, frozenset()) != tb.get(c, frozenset())
        ]

    def readings(self, answer: GlyphKey) -> frozenset[Reading]:
        mine = self.annotations.by_glyph.get(answer, {})
        out = set()
        for c, into, before in self.changes:
            vals = mine.get(c, frozenset())
            if into and into <= vals and not (vals & (before - into)):
                out.add((CHANGE, c))
        return frozenset(out)


class ProbeView:
    """B alone: the concepts over which an answer could be B after one change."""

    def __init__(self, b: GlyphKey, annotations: TagIndex) -> None:
        self.annotations = annotations
        self.b = b
        self.mine = annotations.by_glyph.get(b, {})

    def readings(self, answer: GlyphKey) -> frozenset[Reading]:
        theirs = self.annotations.by_glyph.get(answer, {})
        return frozenset(
            (CHANGE, d)
            for d, vals in self.mine.items()
            if theirs.get(d) not in (None, vals)
            and agrees_outside(self.annotations, self.b, answer, d)
        )


View = RowView | OpenRowView | PairView | ProbeView


def views_of(puzzle: Puzzle, annotations: TagIndex, book: RuleBook) -> dict[str, View]:
    """The partial views' solvers for one puzzle (empty for a layout without partial views)."""
    if puzzle.layout == ANALOGY_LAYOUT:
        if len(puzzle.context) != 2:
            return {}
        first, second = puzzle.context
        if len(first) != 2 or len(second) != 1:
            return {}
        return {
            "pair": PairView(first[0], first[1], annotations),
            "probe": ProbeView(second[0], annotations),
        }
    if puzzle.layout not in VIEW_LAYOUTS or len(puzzle.context) < 2:
        return {}
    return {
        "row1": RowView(puzzle.context[0], annotations, book, puzzle.shift),
        "row2": OpenRowView(puzzle.context[-1], annotations, book, puzzle.shift),
    }


def puzzle_views(
    puzzle: Puzzle, annotations: TagIndex, book: RuleBook
) -> dict[str, list[frozenset[Reading]]]:
    """Per view, the readings each answer fits."""
    return {
        name: [view.readings(a) for a in puzzle.answers]
        for name, view in views_of(puzzle, annotations, book).items()
    }


def score(readings: frozenset[Reading], focus: frozenset[Reading] | None) -> int:
    """How many of the tested readings an answer fits (all readings without ``focus``)."""
    return len(readings if focus is None else readings & focus)


def solver_accuracy(
    per_answer: Sequence[frozenset[Reading]], key: int, focus: frozenset[Reading] | None = None
) -> float:
    """The expected accuracy of the view's solver on one puzzle: the best-scoring answers tie,
    and the solver picks one of them at random."""
    scores = [score(r, focus) for r in per_answer]
    best = max(scores)
    ties = [i for i, s in enumerate(scores) if s == best]
    return 1.0 / len(ties) if key in ties else 0.0


#: the solvers besides counting whose accuracies every view reports; its floor is the best
SOLVERS = ("weighted", "relative", "aware", "logit")


def _row(
    acc: float, chance: float, n: int, decoyed: int, solvers: Mapping[str, float]
) -> dict[str, Any]:
    """A view's figures: the counting solver's ``accuracy``, each of :data:`SOLVERS`', and
    the ``floor``, the best of them all."""
    floor = max(acc, *solvers.values())
    return {
        "accuracy": round(acc, 4),
        **{name: round(solvers[name], 4) for name in SOLVERS},
        "floor": round(floor, 4),
        "chance": round(chance, 4),
        "points_over_chance": round(100 * (acc - chance), 1),
        "floor_points_over_chance": round(100 * (floor - chance), 1),
        "puzzles": n,
        "decoyed": round(decoyed / n, 4) if n else 0.0,
    }


def _score(keys: int, fits: int, readings: frozenset[Reading]) -> tuple[float, int]:
    """The weighted solver's score of an answer: the share of keys among the answers with its
    signature (smoothed towards one half), then how many readings it fits."""
    return ((keys + 0.5) / (fits + 1.0), len(readings))


def relative_signatures(per_answer: Sequence[frozenset[Reading]]) -> list[Signature]:
    """Each answer's readings with how its count compares with the other answers': whether
    it fits the most of them, and whether the fewest (:func:`weighted_accuracies`,
    ``relative``)."""
    counts = [len(r) for r in per_answer]
    top, bottom = max(counts), min(counts)
    return [(r, n == top, n == bottom) for r, n in zip(per_answer, counts, strict=True)]


def answer_concepts(
    answers: Sequence[GlyphKey], annotations: TagIndex, concepts: Iterable[str]
) -> frozenset[str]:
    """The concepts these answers could be a set of: each answer carries a value of it, and no
    two answers share one — what a symmetric answer set is over its intended concept. A
    solver seeing the answers knows these; where only the intended concept qualifies, the
    answers name it, and a decoy fitting a reading over another concept is seen through."""
    out = []
    for c in concepts:
        vals = [annotations.values(a, c) for a in answers]
        if all(vals) and sum(len(v) for v in vals) == len(frozenset().union(*vals)):
            out.append(c)
    return frozenset(out)


def aware_readings(
    answers: Sequence[GlyphKey], annotations: TagIndex, tested: frozenset[Reading]
) -> frozenset[Reading]:
    """The tested readings a solver reading these answers weighs (the ``aware`` solver): those
    over the concepts the answers could be a set of, all of them where there is none. The
    generator judges its contexts by the same (one helper, so that it never optimises a view
    the reports do not measure)."""
    named = answer_concepts(answers, annotations, sorted({c for _, c in tested}))
    return frozenset(r for r in tested if r[1] in named) if named else tested


def reading_features(
    per_answer: Sequence[frozenset[Reading]],
    narrow: frozenset[Reading],
    tags: Sequence[Iterable[tuple[str, str]]] | None = None,
) -> list[list[str]]:
    """What the logit solver reads of each answer in one view: each tested reading it fits
    and each the answers' concepts allow (:func:`aware_readings`), each with how many other
    answers fit it too; each rule it fits a reading of, with how many other answers fit a
    reading of that rule; how many it fits and whether the most and the fewest of its
    puzzle's answers, both ways of counting; over which of the answers' concepts it fits a
    reading; and its own tags (``tags``), which alone say nothing of the key but with the
    readings do (an answer carrying 5 that fits a progression, say)."""
    aware = [r & narrow for r in per_answer]
    counts, acounts = [len(r) for r in per_answer], [len(r) for r in aware]
    named = sorted({c for _, c in narrow})
    out = []
    for j, (r, a) in enumerate(zip(per_answer, aware, strict=True)):
        f = []
        for kind, mine, every in (("fit", r, per_answer), ("aware", a, aware)):
            for x in sorted(mine):
                shared = sum(x in b for i, b in enumerate(every) if i != j)
                f += [f"{kind}:{x[0]}/{x[1]}", f"{kind}-shared:{x[0]}/{x[1]}:{shared}"]
            for rule in sorted({x[0] for x in mine}):
                # how many other answers fit a reading of the same rule, over any concept:
                # a key and the one decoy aimed by its rule would share it (outside review)
                alike = sum(any(y[0] == rule for y in b) for i, b in enumerate(every) if i != j)
                f.append(f"{kind}-rule-shared:{rule}:{alike}")
        f += [f"count:{counts[j]}", f"most:{counts[j] == max(counts)}"]
        f += [f"fewest:{counts[j] == min(counts)}", f"acount:{acounts[j]}"]
        f += [f"amost:{acounts[j] == max(acounts)}", f"afewest:{acounts[j] == min(acounts)}"]
        f += [f"named:{c}:{any(x[1] == c for x in a)}" for c in named]
        if tags is not None:
            f += [f"tag:{c}={v}" for c, v in sorted(tags[j])]
        out.append(f)
    return out


def logit_accuracies(
    seen: Sequence[tuple[str, Sequence[Sequence[str]], int]], l2: float = 1.0
) -> list[float]:
    """The logit solver on each puzzle of one view: a conditional logit over each answer's
    features (:func:`reading_features`), fitted on one half of the puzzles (the same CRC
    halves as :func:`weighted_accuracies`) and scoring the other; the best-scoring answers
    tie. A solver that weighs each reading on its own, where the weighted ones key on whole
    signatures: an outside review's logit over the readings beat them by 3 to 7 points."""
    from scipy import optimize, sparse

    n = len(seen)
    width = max((len(per) for _, per, _ in seen), default=0)
    if not n or not width:
        return []
    half = np.array([zlib.crc32(pid.encode()) & 1 for pid, _, _ in seen])
    index: dict[str, int] = {}
    rows, cols = [], []
    mask = np.zeros((n, width), dtype=bool)
    for i, (_, per, _) in enumerate(seen):
        for j, feats in enumerate(per):
            mask[i, j] = True
            for f in feats:
                rows.append(i * width + j)
                cols.append(index.setdefault(f, len(index)))
    x = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n * width, max(len(index), 1)))
    keys = np.array([key for _, _, key in seen], dtype=np.int64)
    out = np.zeros(n)
    for h in (0, 1):
        fit, score = np.flatnonzero(half != h), np.flatnonzero(half == h)
        if not len(score):
            continue
        if len(fit) < 8 or not index:
            out[score] = 1.0 / mask[score].sum(axis=1)
            continue
        cells = (fit[:, None] * width + np.arange(width)).ravel()
        xf, mf, kf = x[cells], mask[fit], keys[fit]
        xt = xf.T.tocsr()
        y = np.zeros((len(fit), width))
        y[np.arange(len(fit)), kf] = 1.0

        def loss(w: np.ndarray, xf: Any = xf, xt: Any = xt, mf: Any = mf, y: Any = y) -> Any:
            s = np.where(mf, (xf @ w).reshape(mf.shape), -np.inf)
            m = s.max(axis=1, keepdims=True)
            e = np.exp(s - m)
            z = e.sum(axis=1, keepdims=True)
            value = float((np.log(z[:, 0]) + m[:, 0]).sum() - s[y > 0].sum())
            grad = xt @ (e / z - y).ravel()
            return value + 0.5 * l2 * w @ w, grad + l2 * w

        w = optimize.minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x
        cells = (score[:, None] * width + np.arange(width)).ravel()
        s = np.where(mask[score], (x[cells] @ w).reshape(len(score), width), -np.inf)
        ties = np.isclose(s, s.max(axis=1, keepdims=True), rtol=0.0, atol=1e-9) & mask[score]
        out[score] = ties[np.arange(len(score)), keys[score]] / ties.sum(axis=1)
    return [float(a) for a in out]


def weighted_accuracies(
    seen: Sequence[tuple[str, Sequence[frozenset[Reading]], int]], relative: bool = False
) -> list[float]:
    """The weighted solver (module docstring) on each puzzle of one view: ``seen`` gives, per
    puzzle, its id, the tested readings each answer fits and the key. An answer's score is the
    share of keys among the other half's answers fitting exactly its readings (smoothed
    towards one half, so that a signature seen once says little), then how many it fits (as
    the counting solver); the best score wins, ties split evenly. ``relative``: an answer's
    signature also says whether it fits the most readings of its puzzle's answers and whether
    the fewest (:func:`relative_signatures`) — what a solver comparing the answers reads (an
    outside review's solver recovered half of the generator's gain on the incomplete row
    while contexts were judged by the plain signature; they are now judged by this one's
    shares, :class:`RunningShares`)."""
    half = [zlib.crc32(pid.encode()) & 1 for pid, _, _ in seen]
    keys: list[dict[Any, int]] = [defaultdict(int), defaultdict(int)]
    fits: list[dict[Any, int]] = [defaultdict(int), defaultdict(int)]
    signed = [
        relative_signatures(per_answer) if relative else list(per_answer)
        for _, per_answer, _ in seen
    ]
    for h, sigs, (_, _, key) in zip(half, signed, seen, strict=True):
        for j, sig in enumerate(sigs):
            fits[h][sig] += 1
            keys[h][sig] += j == key
    out = []
    for h, sigs, (_, per_answer, key) in zip(half, signed, seen, strict=True):
        other = 1 - h
        # the share first, then the readings' count (what an unseen signature falls back on)
        shares = [
            _score(keys[other].get(sig, 0), fits[other].get(sig, 0), r)
            for sig, r in zip(sigs, per_answer, strict=True)
        ]
        best = max(shares)
        ties = [j for j, x in enumerate(shares) if x == best]
        out.append(1.0 / len(ties) if key in ties else 0.0)
    return out


def partial_views(
    puzzles: Iterable[Puzzle],
    annotations: TagIndex,
    book: RuleBook,
    focus: Iterable[Reading] | None = None,
) -> dict[str, Any]:
    """Each view's solver over these puzzles, JSON-ready: ``views`` (per view: accuracy,
    chance, points over chance, puzzles, the share with a decoy) and ``tuples`` (the same per
    ``rule/concept``). ``focus``: the readings the split tests (default: those of these
    puzzles). Empty ``views`` when no puzzle has partial views."""
    seen = [(p, views_of(p, annotations, book)) for p in puzzles]
    seen = [(p, v) for p, v in seen if v]
    tested = (
        frozenset(focus) if focus is not None else frozenset((p.rule, p.concept) for p, _ in seen)
    )
    acc: dict[tuple[str, str], list[float]] = defaultdict(list)
    # per solver of SOLVERS, per (tuple, view): each puzzle's accuracy
    solved: dict[str, dict[tuple[str, str], list[float]]] = {
        name: defaultdict(list) for name in SOLVERS
    }
    by_aware: dict[str, list[tuple[str, list[frozenset[Reading]], int]]] = defaultdict(list)
    by_feats: dict[str, list[tuple[str, list[list[str]], int]]] = defaultdict(list)
    chance: dict[str, list[float]] = defaultdict(list)
    decoyed: dict[tuple[str, str], int] = defaultdict(int)
    by_view: dict[str, list[tuple[str, list[frozenset[Reading]], int]]] = defaultdict(list)
    named: dict[str, list[str]] = defaultdict(list)
    for p, views in seen:
        name = f"{p.rule}/{p.concept}"
        chance[name].append(1.0 / len(p.answers))
        narrow = aware_readings(p.answers, annotations, tested)
        tags = [annotations.tags_of(a) for a in p.answers]
        for view, solver in views.items():
            per_answer = [solver.readings(a) & tested for a in p.answers]
            by_aware[view].append((p.id, [r & narrow for r in per_answer], p.key))
            by_feats[view].append((p.id, reading_features(per_answer, narrow, tags), p.key))
            acc[(name, view)].append(solver_accuracy(per_answer, p.key))
            key_score = score(per_answer[p.key], None)
            if any(score(r, None) >= key_score for i, r in enumerate(per_answer) if i != p.key):
                decoyed[(name, view)] += 1
            by_view[view].append((p.id, per_answer, p.key))
            named[view].append(name)
    for view, got in by_view.items():
        plain, compared = weighted_accuracies(got), weighted_accuracies(got, relative=True)
        knowing = weighted_accuracies(by_aware[view], relative=True)
        fitted = logit_accuracies(by_feats[view])
        results = dict(zip(SOLVERS, (plain, compared, knowing, fitted), strict=True))
        for solver, accuracies in results.items():
            for name, a in zip(named[view], accuracies, strict=True):
                solved[solver][(name, view)].append(a)
    out: dict[str, Any] = {"views": {}, "tuples": {}}
    names = sorted(chance)
    all_chance = [c for n in names for c in chance[n]]
    for view in VIEWS:
        got = [a for n in names for a in acc[(n, view)]]
        if got:
            d = sum(decoyed[(n, view)] for n in names)
            each = {s: _mean([a for n in names for a in solved[s][(n, view)]]) for s in SOLVERS}
            out["views"][view] = _row(sum(got) / len(got), _mean(all_chance), len(got), d, each)
    for n in names:
        out["tuples"][n] = {
            view: _row(
                _mean(acc[(n, view)]),
                _mean(chance[n]),
                len(chance[n]),
                decoyed[(n, view)],
                {s: _mean(solved[s][(n, view)]) for s in SOLVERS},
            )
            for view in VIEWS
            if acc[(n, view)]
        }
    return out


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def floor_of(row: Mapping[str, Any]) -> float:
    """A view's floor: the better of its solvers (a family's own views have one)."""
    return float(row.get("floor", row["accuracy"]))


def floor_points(row: Mapping[str, Any]) -> float:
    """A view's floor in points over chance."""
    return float(row.get("floor_points_over_chance", row["points_over_chance"]))


def partial_warnings(report: Mapping[str, Any], prefix: str = "") -> list[str]:
    """A warning per view whose floor is more than :data:`WARN_POINTS` over chance: such a
    split's puzzles can mostly be solved from part of the context, which ``generate`` must
    say where it is seen, not only in the lines (issue 24's "nothing tells the user")."""
    names = {**VIEW_NAMES, **(report.get("names") or {})}
    out = []
    for view, row in (report.get("views") or {}).items():
        if floor_points(row) > WARN_POINTS:
            out.append(
                f"{prefix}{names.get(view, view)} finds the key of "
                f"{floor_of(row):.0%} of the puzzles at best (chance {row['chance']:.0%}): "
                "they can be solved from part of their context (the partial views above say "
                "which tuples and why)"
            )
    return out


def partial_lines(report: Mapping[str, Any], most: int = 5) -> list[str]:
    """What a curator reads: each view's accuracy against chance, then the tuples furthest
    over chance, with why and what would lower them. A report may name its own views
    (``names``: a stimulus family's, say) and say why its views stand where they do
    (``hints``); otherwise the glyph views' names and advice are used."""
    views = report.get("views") or {}
    if not views:
        return []
    names = {**VIEW_NAMES, **(report.get("names") or {})}
    hints = report.get("hints")
    chance = next(iter(views.values()))["chance"]
    two = any("weighted" in row for row in views.values())
    out = [
        f"partial views (exact solver{'s' if two else ''}; chance {chance:.0%}): "
        + "; ".join(
            f"{names.get(v, v)} finds the key {row['accuracy']:.0%}"
            + (f", at best {floor_of(row):.0%}" if "weighted" in row else "")
            + f" (a decoy in {row['decoyed']:.0%} of puzzles)"
            for v, row in views.items()
        )
    ]
    worst = []
    for name, per in (report.get("tuples") or {}).items():
        over = [(v, row) for v, row in per.items() if floor_points(row) > NAMED_POINTS]
        if over:
            worst.append((max(floor_points(row) for _, row in over), name, over))
    worst.sort(key=lambda x: (-x[0], x[1]))
    bare: set[str] = set()
    for _, name, over in worst[:most]:
        rule, concept = name.split("/", 1)
        said = ", ".join(f"{names.get(v, v)} {floor_of(row):.0%}" for v, row in over)
        lacking = [v for v, row in over if row["decoyed"] < 0.5]
        bare.update(lacking)
        weak = [v for v, row in over if floor_of(row) > row["accuracy"] + WEAK_POINTS / 100]
        if lacking:
            why = "no decoy in most puzzles"
        elif weak:
            why = (
                "decoys tie with the key by count, but the readings the key fits are keys "
                "more often in this split than its decoys' (decoys by chance fits, sums most)"
            )
        else:
            why = "decoys tie with the key, fewer than all its foils"
        out.append(f"{rule} × {concept}: {said} (chance {over[0][1]['chance']:.0%}; {why})")
    if len(worst) > most:
        out.append(f"… and {len(worst) - most} more tuples over chance by a partial view")
    if hints is not None:
        out += [str(h) for h in hints] if worst else []
    else:
        if bare & {"row1", "row2"}:
            out.append(
                "no decoy: no foil fits that row under another tested (rule, concept); glyphs "
                "that carry values of two tested concepts make decoys — tag them"
            )
        if "pair" in bare:
            out.append(
                "no decoy for the example pair: it names the key's value, and with one concept "
                "tagged per glyph a second answer carrying it would be a second B′; glyphs "
                "alike but for the changed concept that disagree on another concept make "
                "crossed answer sets, which halve what the pair alone finds — tag them"
            )
    return out


def partial_signatures(
    context: Sequence[Sequence[GlyphKey]],
    answers: Sequence[GlyphKey],
    shift: bool,
    annotations: TagIndex,
    book: RuleBook,
    tested: frozenset[Reading],
) -> list[list[frozenset[Reading]]]:
    """Per view (the first row alone, the incomplete row alone), the tested readings each
    answer fits: what both solvers read."""
    return [
        [view.readings(a) & tested for a in answers]
        for view in (
            RowView(context[0], annotations, book, shift),
            OpenRowView(context[-1], annotations, book, shift),
        )
    ]


class RunningShares:
    """The relative solver's shares while a split is drawn: per view (the first row, the
    incomplete row) and relative signature (the tested readings an answer fits, and whether
    it fits the most and the fewest of its puzzle's answers: :func:`relative_signatures`),
    how many answers had it and how many of those were keys. A generator judges each context
    it draws against the shares of the puzzles it made before (:func:`partial_gap`). Keyed
    by the plain readings, as the weighted solver is, the controller left the relative
    solver 2–6 points over the weighted one on the bench's three-concept set (the incomplete
    row, 0.43–0.44 against 0.38–0.41): decoys that outscored the key made "the answer
    fitting the fewest readings" a key."""

    def __init__(self) -> None:
        self.fits: list[dict[Signature, int]] = [defaultdict(int), defaultdict(int)]
        self.keys: list[dict[Signature, int]] = [defaultdict(int), defaultdict(int)]

    def add(self, signatures: Sequence[Sequence[frozenset[Reading]]], key: int = 0) -> None:
        """Count a puzzle made: per view, each answer's signature (``key``: the key's index)."""
        for view, per_answer in enumerate(signatures):
            for j, sig in enumerate(relative_signatures(per_answer)):
                self.fits[view][sig] += 1
                self.keys[view][sig] += j == key

    def accuracy(self, view: int, per_answer: Sequence[frozenset[Reading]], key: int = 0) -> float:
        """The relative solver's expected accuracy on one puzzle by these shares (the same
        score as :func:`weighted_accuracies` with ``relative``)."""
        fits, keys = self.fits[view], self.keys[view]
        scores = [
            _score(keys.get(sig, 0), fits.get(sig, 0), r)
            for sig, r in zip(relative_signatures(per_answer), per_answer, strict=True)
        ]
        best = max(scores)
        ties = [j for j, x in enumerate(scores) if x == best]
        return 1.0 / len(ties) if key in ties else 0.0


def judge_features(
    per_answer: Sequence[frozenset[Reading]],
    narrow: frozenset[Reading],
    tags: Sequence[Iterable[tuple[str, str]]],
) -> list[list[str]]:
    """What :class:`RunningLogit` reads of each answer in one view: the logit solver's
    features (:func:`reading_features`) and the aware solver's whole signature (the readings
    the answers' concepts allow, and whether the answer fits the most and the fewest of
    them, :func:`relative_signatures`), so that the one solver a generator learns stands for
    both of the reports' strongest."""
    feats = reading_features(per_answer, narrow, tags)
    for fs, sig in zip(feats, relative_signatures([r & narrow for r in per_answer]), strict=True):
        fs.append(f"asig:{','.join('/'.join(x) for x in sorted(sig[0]))}:{sig[1]}:{sig[2]}")
    return feats


_LN2 = 0.6931471805599453


def exp_same_everywhere(x: float) -> float:
    """e ** x for x ≤ 0 by IEEE +, ×, ÷ and ``ldexp`` alone, which round alike on every CPU:
    a libm's or numpy's ``exp`` may differ in the last bit between machines (numpy's AVX-512
    one did from libm's in 4.7 % of inputs; review), and a split's bytes follow from the
    shares :class:`RunningLogit` compares. Range reduction by ln 2, then the Taylor series
    to r ** 17 / 17! (its truncation under 1e-17 on [0, ln 2); within 1e-14 of libm's
    relative to the value on [-50, 0]). Under -700 it gives 0 (e ** -700 is about 1e-304,
    nothing beside the other answers' shares); the logit only asks it of a score minus the
    highest, never above 0."""
    if x < -700.0:
        return 0.0
    k = math.floor(x / _LN2)
    r = x - k * _LN2
    term = total = 1.0
    for i in range(1, 18):
        term *= r / i
        total += term
    return math.ldexp(total, k)


class RunningLogit:
    """The logit solver learnt while a split is drawn, for the generator to judge its contexts
    by: per view (the first row, the incomplete row), a conditional logit over
    :func:`judge_features`, one gradient step on each puzzle made. :class:`RunningShares`
    keys on whole signatures; the reports' floor was the logit's on the image-feature set
    (0.60–0.62 against a chance of 0.44), which weighs readings one by one, and contexts
    judged by the signatures alone left it there. Online and per random stream, as the
    shares are, so that a split is the same bytes made by one worker or several; computed
    in plain floats with exactly rounded sums (``math.fsum``) and
    :func:`exp_same_everywhere`, so that it is the same bytes on every machine too.

    ``rate`` 0.5: a sharded split's chunk has 250 puzzles, so the logit must learn in tens
    (0.2 read the same within noise, seed 3); ``l2`` a weak decay (a weight's half-life is
    about 1,400 steps) that keeps a feature seen once from weighing for ever."""

    def __init__(self, rate: float = 0.5, l2: float = 1e-3) -> None:
        self.weights: list[dict[str, float]] = [defaultdict(float), defaultdict(float)]
        self.rate, self.l2 = rate, l2

    def key_share(self, view: int, feats: Sequence[Sequence[str]], key: int = 0) -> float:
        """The probability this solver gives the key among the answers."""
        return self._probs(view, feats)[key]

    def _probs(self, view: int, feats: Sequence[Sequence[str]]) -> list[float]:
        w = self.weights[view]
        s = [math.fsum(w.get(f, 0.0) for f in fs) for fs in feats]
        top = max(s)
        e = [exp_same_everywhere(x - top) for x in s]
        z = math.fsum(e)
        return [x / z for x in e]

    def add(self, view: int, feats: Sequence[Sequence[str]], key: int = 0) -> None:
        """Learn from one puzzle made: a step of the conditional logit's gradient, with L2."""
        p = self._probs(view, feats)
        w = self.weights[view]
        shrink = 1.0 - self.rate * self.l2
        for f in w:
            w[f] *= shrink
        for j, fs in enumerate(feats):
            g = self.rate * ((j == key) - p[j])
            for f in fs:
                w[f] += g


def partial_gap(
    signatures: Sequence[Sequence[frozenset[Reading]]],
    shares: RunningShares | None = None,
) -> tuple[float, float]:
    """How far from chance the views' solvers would be on a puzzle whose answers (the key
    first) fit these readings in each view (:func:`partial_signatures`; empty for a context of
    one row, which has no partial view). A generator keeps the context with the smallest
    (issue 24).

    Without ``shares``: (the largest view's distance from chance, the sum over views), the
    counting solver's. With ``shares`` (the relative solver's so far in this split): the sum
    over views and both solvers of their distance from chance, then the largest. A context in
    which a solver would pick a decoy over the key counts by its distance under chance, no
    longer as a gain that offsets the other view: a split of such puzzles teaches "the answer
    fitting fewer readings", which the relative solver and the logit read. (Signed excesses,
    on the bench's three-concept set, left the incomplete row's counting solver 7.6–7.8
    points under chance and the relative one about 10 over; distances were worse while
    four-answer sets' rows could clash, by 5–13 points on the first row. Now a trade:
    docs/decisions.md.)"""
    if not signatures:
        return (0.0, 0.0)
    chance = 1.0 / len(signatures[0])
    if shares is None:
        gaps = [abs(solver_accuracy(per, 0) - chance) for per in signatures]
        return (max(gaps), sum(gaps))
    off = [
        abs(solver_accuracy(per, 0) - chance) + abs(shares.accuracy(view, per) - chance)
        for view, per in enumerate(signatures)
    ]
    return (sum(off), max(off))
