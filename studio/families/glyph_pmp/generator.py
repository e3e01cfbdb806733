"""Glyph progressive matrices (UA §3.3), valid by construction.

For each puzzle a (rule, concept, shift) tuple is drawn, values are chosen for each row, glyphs
are drawn from the annotation folders of the split's side, and foils are vetted one by one
before they enter the foil pool: a candidate that would complete the intended rule, or *any*
other rule over *any* concept the glyphs share (``find_emergent_rules``' test), never enters it.
UA's own generator only kept foils out of the answer's folder; polysemic glyphs let foils through
that complete a rule over another concept. Every rejected candidate is counted by reason.

**Answer sets** (``params.answer_sets``). ``symmetric`` (the default) chooses the set of answer
values first — ``ANSWERS`` pairwise distinct values of the intended concept, among the values that
could each be the key of this (rule, concept) on this side — then the key's value uniformly
among them, then the context for it, then one foil per remaining value. So, as far as its own
tags go, every answer could have been the key: a value sits on the key 1/k of the times it sits
on an answer, the key is not the odd one out, and no value only ever appears as a foil. A draw
that fails (no glyph, a foil that would complete a rule) is retried with the *same* values and
key (``SET_TRIES`` times) before new values are drawn, so failures do not tilt the key rates. A
tuple with fewer than ``ANSWERS`` key-able values is dry (named with what it lacks, see
:func:`annotation_needs`), never filled with a biased set. ``ua`` keeps UA's foil pool (at most
three candidates per value of the concept, the key's value never among them — the key is then
the odd one out), only to reproduce UA. The key's position is uniform either way, and dist3 rows
are shuffled (never schema order).

**Strict vetting** (``params.strict``, on by default): in a split without context shift, a foil
that completes some rule under a *shifted* reading (row 2 with its own values) is a second
defensible answer to a solver who does not know the split is shift-free; it is rejected
(``foil-strict:<rule>``). Everything random comes from one ``numpy.random.Generator`` seeded by
(seed, fold), and every iteration order is fixed, so a seed gives the same split byte for byte.

When the annotations cannot supply a tuple (a union needs glyphs carrying two values; a
progression needs three stepped values with glyphs) the tuple is reported *dry* with the reason,
and generation continues with the others; if none is left before the count is reached,
``GenerationShortfall`` says which tuples ran dry.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, NamedTuple

import numpy as np

from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.core.schema import Rule, Schema, ValueKind
from studio.core.tagindex import TagIndex
from studio.families.glyph_pmp.split import (
    GlyphSide,
    PartLoop,
    QuotaGenerator,
    SplitResult,
    fold_group,
    hold_out,
    stable_fraction,
)
from studio.generate.params import SplitParams
from studio.vet.emergent import OpenRow, completions, completions_by_reading, key_completes
from studio.vet.partial import (
    RunningLogit,
    RunningShares,
    answer_concepts,
    aware_readings,
    first_row_needs,
    judge_features,
    meets,
    open_row_fits,
    partial_gap,
    partial_signatures,
)
from studio.vet.rules import (
    CARDINAL_CELLS,
    LAYOUT_RULES,
    NONE,
    RuleBook,
    RuleContext,
    complete,
    row_instantiations,
)

FOILS = 3
ANSWERS = FOILS + 1
POOL_PER_VALUE = 3
SET_TRIES = 6  # answer-value sets tried per puzzle, and glyph draws per set and key
ROW_TRIES = 12  # instantiations tried for one key value before it is taken as not admissible
#: admissibility checks spent finding one tuple's largest answer set on a side (a union over
#: 15 values keys about 105 pairs: every 4-set of them is 4.8 million; review of issue 24)
LARGEST_SET_CHECKS = 20_000
MEND_TRIES = 2  # contexts whose invalid foils are replaced, when none needs no replacement
#: an aim's rule is drawn with weight (how much more often keys than foils fitted it so far)
#: plus this: with 0.02 the controller took the rule most short nearly every time, and the
#: three-concept set's first row read 1.5 points higher on each of three seeds (each within
#: a seed's noise; docs/decisions.md)
RULE_FLOOR = 0.1
#: the difference of the rates is trusted by keys seen / (keys seen + this): after a chunk's
#: first puzzle it weighs a tenth, not all (review: 1.1 against 0.1 on one puzzle's word)
RULE_PRIOR = 10
#: how much the running logit's excess share of the key (:class:`RunningLogit`) weighs in a
#: context's judgement beside the signature solvers' distances from chance: 1 gained less
#: than 3, 8 no more (docs/decisions.md)
LOGIT_WEIGHT = 3.0
DECOY_DRAWS = 16  # contexts per symmetric puzzle; the one nearest chance in the views is kept
#: answer draws per symmetric puzzle looking for answers that are a set over a second concept
#: too (each a value of it, no two the same), so that they do not name the puzzle's concept
CROSS_DRAWS = 8
#: glyphs looked at per answer value in one such draw (the one keeping most concepts wins)
CROSS_SAMPLE = 16
MAX_TUPLE_FAILS = 80  # consecutive failed draws before a tuple is declared dry
OPPOSITE = {"N": "S", "S": "N", "E": "W", "W": "E", "NE": "SW", "SW": "NE", "NW": "SE", "SE": "NW"}

Tuple = tuple[str, str, bool]  # (rule, concept, shift)
Context = tuple[tuple[GlyphKey, ...], ...]  # the rows, the incomplete one without its key
ROW_REDRAWS = 4  # draws of the other partial row while it instantiates an aimed reading


class Aim(NamedTuple):
    """A context draw aimed at decoys (:meth:`GlyphPMPGenerator._decoy_plan`): the row (0, the
    first; -1, the incomplete one) whose cells should carry ``cells``' (concept, value) so
    that the row instantiates ``rc``'s reading, which each of ``foils`` ends."""

    row: int
    cells: list[tuple[str, str]]
    rc: RuleContext
    foils: tuple[GlyphKey, ...]


@dataclass
class RuleFits:
    """How often the keys and the foils of the puzzles made so far fitted each rule in one
    partial view (by the readings a solver seeing the answers weighs,
    :func:`studio.vet.partial.aware_readings`), for :meth:`GlyphPMPGenerator._rule_weights`."""

    keys: Counter[str] = field(default_factory=Counter)
    foils: Counter[str] = field(default_factory=Counter)
    keys_seen: int = 0
    foils_seen: int = 0

    def add(
        self, per_answer: Sequence[frozenset[tuple[str, str]]], narrow: frozenset[tuple[str, str]]
    ) -> None:
        """Count one puzzle's answers, the key first."""
        for j, readings in enumerate(per_answer):
            (self.foils if j else self.keys).update({rule for rule, _ in readings & narrow})
        self.keys_seen += 1
        self.foils_seen += len(per_answer) - 1

    def key_rate(self, rule: str) -> float:
        return self.keys[rule] / self.keys_seen if self.keys_seen else 0.0

    def foil_rate(self, rule: str) -> float:
        return self.foils[rule] / self.foils_seen if self.foils_seen else 0.0


def _cell_aims(aims: Sequence[Aim]) -> list[list[tuple[str, str]]]:
    """Per cell of a row, the (concept, value) pairs its aims ask of its glyph."""
    width = max(len(a.cells) for a in aims)
    return [[a.cells[j] for a in aims if j < len(a.cells)] for j in range(width)]


def tuple_name(t: Tuple) -> str:
    return f"{t[0]}/{t[1]}/{'shift' if t[2] else 'noshift'}"


class GlyphPMPGenerator(QuotaGenerator[Tuple]):
    """Builds one fold of a split. ``run()`` yields (done, total) between puzzles, so a GUI can
    show progress and cancel by closing the iterator; ``result`` holds the split afterwards."""

    name = staticmethod(tuple_name)
    max_fails = MAX_TUPLE_FAILS

    def __init__(
        self,
        params: SplitParams,
        annotations: TagIndex,
        schema: Schema,
        fold: int = 0,
        questions: Callable[[Puzzle, TagIndex, Schema], Sequence[Any]] | None = None,
    ) -> None:
        if params.layout not in LAYOUT_RULES:
            raise StudioError(f"layout {params.layout!r} is not made by the glyph-pmp generator")
        self.params = params
        self.ann = annotations
        self.schema = schema
        self.book = RuleBook(schema)
        self.fold = fold
        self.questions = questions
        self.rng = np.random.default_rng(np.random.SeedSequence([params.seed, fold]))
        self.result = SplitResult(params, fold)
        self._seen: set[tuple] = set()
        # per-split caches of value-level work (instantiations, options, admissibility)
        self._runs: dict[Any, Any] = {}
        self._sides = self._hold_out()
        self._tuples = self._tuples_by_part()
        # a symmetric draw that failed: its (answer values, key) wait for the tuple's next draw
        # on that side, so a key that is harder to build is not drawn less often (_build)
        self._pending: dict[tuple[Tuple, str], tuple[list[str], str]] = {}
        # per part, the relative partial solver's shares over the puzzles made so far in this
        # random stream: each drawn context is judged against them (partial_gap)
        self._shares: dict[str, RunningShares] = {}
        # per (part, answer count, view), the rules keys and foils fitted in the puzzles made
        # so far: aims follow them (_rule_weights)
        self._rule_fits: dict[tuple[str, int, int], RuleFits] = {}
        # per part, the logit solver learnt from the puzzles made so far (judges contexts)
        self._logits: dict[str, RunningLogit] = {}

    # ---- set-up ----------------------------------------------------------------------------
    def _hold_out(self) -> dict[str, GlyphSide]:
        p = self.params
        concepts = set(p.concepts) if p.concepts else {c.id for c in self.schema.concepts}
        folders = {cv: ks for cv, ks in self.ann.folders.items() if cv[0] in concepts}
        return hold_out(p, folders, self.fold, self.rng)

    def _tuples_by_part(self) -> dict[str, list[Tuple]]:
        p = self.params
        allowed_rules = set(p.rules) & set(LAYOUT_RULES[p.layout])
        concepts = set(p.concepts) if p.concepts else None
        pairs = [
            (r, c)
            for r, c in self.book.pairs()
            if r in allowed_rules and (concepts is None or c in concepts)
        ]
        shifts = (False, True) if p.shift and p.layout in ("two-row", "matrix-3x3") else (False,)
        train_pairs, eval_pairs = list(pairs), list(pairs)
        if p.extrapolation == "tuples":
            held = {pairs[i] for i in self._pick(len(pairs))}
            train_pairs = [x for x in pairs if x not in held]
            eval_pairs = [x for x in pairs if x in held]
        elif p.extrapolation == "tuple-folds":
            if len(pairs) < p.folds:
                raise StudioError(
                    f"extrapolation tuple-folds with {p.folds} folds needs at least {p.folds} "
                    f"rule–concept pairs; the rules and concepts asked for give {len(pairs)} "
                    f"({', '.join(f'{r} × {c}' for r, c in pairs) or 'none'})"
                )
            held = set(fold_group(self._buildable_first(pairs, shifts), p.seed, p.folds, self.fold))
            train_pairs = [x for x in pairs if x not in held]
            eval_pairs = [x for x in pairs if x in held]
        elif p.extrapolation == "concepts":
            cs = sorted({c for _, c in pairs})
            held_c = {cs[i] for i in self._pick(len(cs))}
            train_pairs = [x for x in pairs if x[1] not in held_c]
            eval_pairs = [x for x in pairs if x[1] in held_c]
        tr = [(r, c, s) for r, c in train_pairs for s in shifts]
        ev = [(r, c, s) for r, c in eval_pairs for s in shifts]
        self.result.tuples = {
            "train": [tuple_name(t) for t in tr],
            "val": [tuple_name(t) for t in ev],
            "test": [tuple_name(t) for t in ev],
        }
        return {"train": tr, "eval": ev}

    def _buildable_first(
        self, pairs: list[tuple[str, str]], shifts: tuple[bool, ...]
    ) -> list[tuple[str, str]]:
        """The pairs that every glyph of the annotations could build, then the others: dealt
        round in this order, each fold of UA's k-fold design tests as many buildable problem
        types as the others (to one), whichever pairs the schema lists but nobody tagged.
        Judged on all glyphs, so the order is the same in every fold."""
        self._sides["all"] = GlyphSide(dict(self.ann.folders))
        try:
            ok = [
                x
                for x in pairs
                if any(self._tuple_impossible((*x, s), "all") is None for s in shifts)
            ]
        finally:
            del self._sides["all"]
        return ok + [x for x in pairs if x not in ok]

    def _pick(self, n: int) -> list[int]:
        k = max(1, round(n * self.params.holdout_fraction)) if n > 1 else 0
        return sorted(self.rng.permutation(n)[:k].tolist())

    def _values_side(self, rule: str, concept: str, values: tuple[str, ...]) -> str:
        """Under values extrapolation (or hold-out none) each instantiation belongs to one side."""
        frac = stable_fraction(self.params.seed, self.fold, rule, concept, *values)
        return "eval" if frac < self.params.holdout_fraction else "train"

    @property
    def _values_disjoint(self) -> bool:
        p = self.params
        if p.extrapolation == "tuple-folds":
            # a fold's test pairs never appear in train: splitting their instantiations
            # between the sides would only throw the train side's away (review of issue 24)
            return False
        return p.extrapolation == "values" or p.holdout == "none"

    # ---- main loop -------------------------------------------------------------------------
    def _open_part(self, part: str, side_name: str) -> PartLoop[Tuple]:
        """The part's quota loop pieces (:func:`fill_quotas`): the tuples dry from the start,
        a draw of a puzzle of a tuple drawn uniformly among the live ones, and the retiring."""
        active = list(self._tuples[side_name])
        dry: dict[str, str] = {}
        for t in list(active):
            why = self._tuple_impossible(t, side_name)
            if why:
                dry[tuple_name(t)] = why
                active.remove(t)

        def draw(made: int) -> tuple[Puzzle | None, str, Tuple] | None:
            if not active:
                return None
            t = active[int(self.rng.integers(len(active)))]
            return (*self._build(t, part, side_name, made), t)

        return dry, draw, active.remove

    def _fresh_stream(self) -> None:
        self._pending.clear()
        self._shares.clear()
        self._rule_fits.clear()
        self._logits.clear()

    def generate(self) -> SplitResult:
        for _ in self.run():
            pass
        return self.result

    def tuples(self, side_name: str) -> list[Tuple]:
        """The (rule, concept, shift) tuples offered on a side (``train`` or ``eval``)."""
        return list(self._tuples[side_name])

    def side(self, part: str) -> GlyphSide:
        """The glyphs a part (train, val, test) draws from under the split's hold-out."""
        return self._sides["train" if part == "train" else "eval"]

    def draw_one(
        self, rule: str, concept: str, shift: bool, part: str, rng: np.random.Generator
    ) -> tuple[Puzzle | None, str]:
        """One attempt at a puzzle of this tuple in this part, drawn with ``rng`` (a curator's
        regenerate); ``(None, reason)`` when the draw failed."""
        self.rng = rng
        self._fresh_stream()  # a curator's redraw draws its key afresh
        side_name = "train" if part == "train" else "eval"
        return self._build((rule, concept, shift), part, side_name, 0)

    # ---- values per row ----------------------------------------------------------------------
    def _tuple_impossible(self, t: Tuple, side_name: str) -> str | None:
        """Why this tuple can build nothing on this side, or None; cached (asked when a part
        opens and again for the answer cap: the set search is the costly part)."""
        cache_key = ("impossible", t, side_name)
        if cache_key not in self._runs:
            self._runs[cache_key] = self._why_impossible(t, side_name)
        return self._runs[cache_key]  # type: ignore[no-any-return]

    def _why_impossible(self, t: Tuple, side_name: str) -> str | None:
        rule, concept, shift = t
        rc = self.book.get(concept, rule)
        side = self._sides[side_name]
        if rc is None:
            return "the schema does not allow this rule"
        if rule == "union":
            both = [
                (a, b)
                for a in sorted(rc.allowed)
                for b in sorted(rc.allowed)
                if a < b
                and side.folder_sets.get((concept, a), frozenset())
                & side.folder_sets.get((concept, b), frozenset())
            ]
            if not both:
                return f"no glyph carries two values of {concept} (union needs one)"
        if self.params.layout == "odd-one-out":
            odd = self._odd_options(rc, side_name)
            least = 2 if self._symmetric else 1
            if len(odd) < least:
                return (
                    f"{len(odd)} value(s) of {concept} have {self.params.group_size - 1} glyphs "
                    f"on this side; an odd-one-out needs {least}"
                )
            return None
        options = self._options(rc, side_name, shift)
        if not options:
            return f"no values of {concept} with enough glyphs for {rule} on this side"
        if self._symmetric:
            keys = self.key_values(rc, side_name, shift)
            least = self.params.min_answers
            if len(keys) < least:
                shown = ", ".join(keys) if keys else "none"
                return (
                    f"only {len(keys)} value(s) of {concept} can be the key of {rule} on this "
                    f"side ({shown}); a symmetric answer set needs {least}"
                )
            if not shift and self.set_shortfall(rc, side_name, keys) != Counter():
                return (
                    f"no {least} of the values of {concept} that can be the key of {rule} on "
                    f"this side ({', '.join(keys)}) can each be it with the others as foils "
                    f"(too few glyphs of a value for its rows and another's foil, or a value "
                    f"that would complete another's rows); a symmetric answer set needs {least}"
                )
        return None

    def set_shortfall(
        self, rc: RuleContext, side_name: str, keys: Sequence[str]
    ) -> Counter[str] | None:
        """What the cheapest symmetric set of ``min_answers`` of these key-able values lacks on
        this side, without shift: glyphs per value (empty when a set exists), or None when no
        count of glyphs mends it (every choice has a value completing another's rows). For
        the annotation-needs report: such a tuple has values enough, and one more glyph of
        the right value may be all it needs (a held-out 5 for progression × components-solid
        on the shared UA set); and :meth:`_tuple_impossible`'s exact test that a set exists
        (on the shared UA set three progression tuples failed every draw, never ran dry within
        a chunk of a sharded split and were reported nowhere)."""
        reading = self._strict_reading(False)
        best: Counter[str] | None = None
        for values in combinations(keys, self.params.min_answers):
            need: Counter[str] = Counter()
            for u in values:
                others = tuple(w for w in values if w != u)
                cheapest: Counter[str] | None = None
                for inst in self._ending_in(rc, side_name, False, u):
                    rows = self._plain_rows(rc, inst, u)
                    if any(self._value_completes(rc, rows, w, reading) for w in others):
                        continue
                    used = Counter(v for row in rows for v in row)
                    # a foil's glyph carries its value and none of the set's others
                    short = +Counter({
                        w: max(used[w] + 1 - self._carriers(rc, side_name, w),
                               1 - self._carriers(rc, side_name, w, values))
                        for w in others
                    })  # fmt: skip
                    if cheapest is None or short.total() < cheapest.total():
                        cheapest = short
                if cheapest is None:
                    break
                for w, n in cheapest.items():
                    need[w] = max(need[w], n)
            else:
                if not need:
                    return need  # a set exists
                if best is None or need.total() < best.total():
                    best = need
        return best

    def _plain_rows(
        self, rc: RuleContext, inst: tuple[str, ...], key: str
    ) -> list[tuple[str, ...]]:
        """The rows of values, without shift, whose last row is ``inst`` ending in ``key``
        (what :meth:`_rows_for_key` draws, but for a dist3 row's order, which no check reads)."""
        n = self._nrows()
        if rc.rule is Rule.DIST3:
            last = (*(v for v in inst if v != key), key)
            if self.params.layout == "matrix-3x3":
                return [last[r:] + last[:r] for r in (1, 2, 0)]
            return [last] * n
        return [inst] * n

    @property
    def _symmetric(self) -> bool:
        return self.params.answer_sets == "symmetric"

    def _nrows(self) -> int:
        return {"two-row": 2, "matrix-3x3": 3}.get(self.params.layout, 1)

    def _length(self) -> int:
        return self.params.sequence_length if self.params.layout == "sequence" else 3

    def requirement(self, rc: RuleContext, inst: tuple[str, ...], shift: bool) -> Counter[str]:
        """Glyphs each value needs on a side for a row instantiation ``inst`` to be usable: its
        count in the row, times the rows that repeat it (every row without shift; a dist3 row's
        values appear in every row either way). A union needs glyphs carrying both values."""
        per_row = Counter(inst)
        rows = self._nrows() if (not shift or rc.rule is Rule.DIST3) else 1
        return Counter({v: n * rows for v, n in per_row.items()})

    def candidate_instantiations(self, rc: RuleContext) -> list[tuple[str, ...]]:
        """Every row instantiation of this rule over the values the schema allows, whether or
        not the annotations have glyphs for it (the generator filters; the needs report reads
        what is missing). Cached per (concept, rule, row length)."""
        cache_key = (rc.concept, rc.rule.value, self._length())
        got = self._runs.get(cache_key)
        if got is not None:
            return got
        L = self._length()
        vals = sorted(rc.allowed)
        out: list[tuple[str, ...]] = []
        if rc.rule is Rule.CONSTANT:
            out = [(v,) * L for v in vals]
        elif rc.rule is Rule.PROGRESSION:
            coords = rc.coords
            pts = {v: coords[v] for v in vals if v in coords}
            if rc.kind is ValueKind.INTEGER:
                steps = [(1,), (2,), (-1,), (-2,)]
            elif rc.kind is ValueKind.CARDINAL:
                steps = [(dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy]
            else:
                steps = [(1,), (-1,)]
            where = {c: v for v, c in pts.items()}
            for v, c in sorted(pts.items()):
                for s in steps:
                    run = [v]
                    cur = c
                    for _ in range(L - 1):
                        cur = tuple(a + b for a, b in zip(cur, s, strict=True))
                        nxt = where.get(cur)
                        if nxt is None:
                            break
                        run.append(nxt)
                    if len(run) == L:
                        out.append(tuple(run))
        elif rc.rule is Rule.ARITHMETIC:
            ints = {v: rc.ints[v] for v in vals if v in rc.ints}
            by_int = {n: v for v, n in ints.items()}
            for a, na in sorted(ints.items()):
                for b, nb in sorted(ints.items()):
                    for nc in (na + nb, na - nb):
                        c = by_int.get(nc)
                        if c is None or (nb - na) == (nc - nb):
                            continue  # never a progression in disguise
                        out.append((a, b, c))
        elif rc.rule is Rule.DIST3:
            for i, a in enumerate(vals):
                for j, b in enumerate(vals[i + 1 :], i + 1):
                    for c in vals[j + 1 :]:
                        out.append((a, b, c))
        elif rc.rule is Rule.UNION:
            for i, a in enumerate(vals):
                for b in vals[i + 1 :]:
                    out.append((a, b))
        self._runs[cache_key] = out
        return out

    def _usable(self, rc: RuleContext, inst: tuple[str, ...], side: GlyphSide, shift: bool) -> bool:
        if rc.rule is Rule.UNION:
            a, b = inst
            both = side.folder_sets.get((rc.concept, a), frozenset()) & side.folder_sets.get(
                (rc.concept, b), frozenset()
            )
            return bool(both)
        need = self.requirement(rc, inst, shift)
        return all(len(side.folder(rc.concept, v)) >= n for v, n in need.items())

    def _options(self, rc: RuleContext, side_name: str, shift: bool) -> list[tuple[str, ...]]:
        """Row instantiations this side can build (glyphs enough, values on this side under
        values extrapolation, a constant without shift never ``none``); cached."""
        cache_key = ("options", rc.concept, rc.rule.value, side_name, shift, self._length())
        got = self._runs.get(cache_key)
        if got is not None:
            return got
        side = self._sides[side_name]
        out = [
            o
            for o in self.candidate_instantiations(rc)
            if self._usable(rc, o, side, shift)
            and (rc.negate or rc.rule is not Rule.CONSTANT or o[0] != NONE)
        ]
        if self._values_disjoint:
            out = [o for o in out if self._values_side(rc.rule.value, rc.concept, o) == side_name]
        if rc.rule is Rule.CONSTANT and not shift:
            out = [o for o in out if o[0] != NONE]
        self._runs[cache_key] = out
        return out

    def key_value(self, rc: RuleContext, inst: tuple[str, ...]) -> list[str]:
        """The values the key of a last row built from ``inst`` may carry: its last value, any
        of the three for dist3 (rows are shuffled), ``a+b`` for a union."""
        if rc.rule is Rule.UNION:
            return ["+".join(inst)]
        if rc.rule is Rule.DIST3:
            return list(inst)
        return [inst[-1]]

    def key_values(self, rc: RuleContext, side_name: str, shift: bool) -> list[str]:
        """Values that can be the key of this (rule, concept) on this side (``train`` or
        ``eval``), sorted: the values a symmetric answer set is drawn from."""
        return sorted(
            {v for o in self._options(rc, side_name, shift) for v in self.key_value(rc, o)}
        )

    def _row_values(
        self, rc: RuleContext, side_name: str, shift: bool
    ) -> list[tuple[str, ...]] | None:
        """Values for each row, UA's way: an instantiation first, the key's value follows."""
        rng = self.rng
        options = self._options(rc, side_name, shift)
        if not options:
            return None
        first = options[int(rng.integers(len(options)))]
        if rc.rule is Rule.DIST3:
            first = tuple(first[int(i)] for i in rng.permutation(3))  # never schema order
        return self._rows_ending(rc, options, first, shift)

    def _rows_for_key(
        self, rc: RuleContext, side_name: str, shift: bool, key: str, last: tuple[str, ...]
    ) -> list[tuple[str, ...]] | None:
        """Values for each row whose last row is the instantiation ``last`` with ``key`` as its
        last value (a symmetric answer set)."""
        rng = self.rng
        options = self._options(rc, side_name, shift)
        if rc.rule is Rule.DIST3:
            others = [v for v in last if v != key]
            order = rng.permutation(2)
            last = (others[int(order[0])], others[int(order[1])], key)
            if not shift and self.params.layout == "matrix-3x3":
                # a Latin square whose last row is ``last``: rows are rotations of it
                return [last[r:] + last[:r] for r in (1, 2, 0)]
        return self._rows_ending(rc, options, last, shift, last_given=True)

    def _rows_ending(
        self,
        rc: RuleContext,
        options: Sequence[tuple[str, ...]],
        given: tuple[str, ...],
        shift: bool,
        last_given: bool = False,
    ) -> list[tuple[str, ...]] | None:
        """Every row's values from one given row (the first, or the last with
        ``last_given``): the same in every row without shift, other instantiations with."""
        rng = self.rng
        nrows = self._nrows()
        if rc.rule is Rule.DIST3:
            if shift:  # UA: a shifted dist3 shuffles the order of the other rows
                rows = [tuple(given[int(i)] for i in rng.permutation(3)) for _ in range(nrows - 1)]
                return [*rows, given]
            if self.params.layout == "matrix-3x3" and not last_given:
                return [given[r:] + given[:r] for r in range(nrows)]  # a Latin square
            return [given] * nrows
        if not shift:
            return [given] * nrows
        rows = [given]
        for _r in range(1, nrows):
            if rc.rule is Rule.CONSTANT and rc.kind is ValueKind.CARDINAL and given[0] in OPPOSITE:
                other = (OPPOSITE[given[0]],) * len(given)
                if other in options and other not in rows:
                    rows.append(other)
                    continue
            others = [o for o in options if o not in rows]
            if rc.rule is Rule.CONSTANT and all(r0[0] == NONE for r0 in rows):
                others = [o for o in others if o[0] != NONE]
            if not others:
                return None
            rows.append(others[int(rng.integers(len(others)))])
        return rows[::-1] if last_given else rows

    # ---- one puzzle ----------------------------------------------------------------------------
    def _draw(
        self,
        pool: Sequence[GlyphKey],
        taken: set[GlyphKey],
        avoid: frozenset[GlyphKey] = frozenset(),
    ) -> GlyphKey | None:
        n = len(pool)
        if n == 0:
            return None
        start = int(self.rng.integers(n))
        for j in range(n):
            g = pool[(start + j) % n]
            if g not in taken and g not in avoid:
                return g
        return None

    def _cells(
        self,
        rc: RuleContext,
        rows: list[tuple[str, ...]],
        side: GlyphSide,
        key: GlyphKey | None = None,
        taken: set[GlyphKey] | None = None,
        aims: Sequence[Aim] = (),
    ) -> list[list[GlyphKey]] | None:
        """Glyphs for the rows; the last cell is ``key`` when given (drawn with the other
        answers), and no cell is one of ``taken``. ``aims`` (:meth:`_decoy_plan`): a row's
        glyphs should also carry given values of another concept where some do, and the other
        partial row should not instantiate that reading (it is redrawn a few times)."""
        taken = set() if taken is None else set(taken)
        n = len(rows)
        aimed: dict[int, list[Aim]] = {}
        for a in aims:
            aimed.setdefault(a.row % n, []).append(a)
        # the aims each partial row must not read: those made for the other one
        guards = {r: [a for q, got in aimed.items() if q != r for a in got] for r in {0, n - 1}}
        out = []
        c = rc.concept
        for r, values in enumerate(rows):
            last_row = r == n - 1
            if rc.rule is Rule.UNION:
                a, b = values
                fa, fb = (
                    side.folder_sets.get((c, a), frozenset()),
                    side.folder_sets.get((c, b), frozenset()),
                )
                both = sorted(fa & fb)
                ga = self._draw(side.folder(c, a), taken, fb)
                if ga is None:
                    return None
                taken.add(ga)
                gb = self._draw(side.folder(c, b), taken, fa)
                if gb is None:
                    return None
                taken.add(gb)
                gc = key if last_row and key is not None else self._draw(both, taken)
                if gc is None:
                    return None
                taken.add(gc)
                out.append([ga, gb, gc])
                continue
            against = guards.get(r, [])
            for _ in range(ROW_REDRAWS if against else 1):
                row = self._row_glyphs(
                    rc,
                    values,
                    side,
                    taken,
                    key if last_row else None,
                    _cell_aims(aimed[r]) if r in aimed else None,
                )
                if row is None:
                    return None
                if not any(self._row_reads(a, row, last_row) for a in against):
                    break
            taken.update(row)
            out.append(row)
        return out

    def _row_glyphs(
        self,
        rc: RuleContext,
        values: tuple[str, ...],
        side: GlyphSide,
        taken: set[GlyphKey],
        key: GlyphKey | None,
        aimed: Sequence[Sequence[tuple[str, str]]] | None,
    ) -> list[GlyphKey] | None:
        """One row's glyphs (``key`` in its last cell when given), none of ``taken``."""
        c = rc.concept
        others = frozenset().union(
            *(side.folder_sets.get((c, v), frozenset()) for v in set(values))
        )
        row: list[GlyphKey] = []
        mine = set(taken)
        for j, v in enumerate(values):
            if key is not None and j == len(values) - 1:
                row.append(key)
                continue
            # prefer glyphs that carry only this value of the row (UA's mutual exclusivity)
            excl = others - side.folder_sets.get((c, v), frozenset())
            g = None
            if aimed is not None and j < len(aimed):
                # every aim's value where some glyph carries them all, else the first aim's
                for wanted in (aimed[j], aimed[j][:1]):
                    g = self._draw(self._carrying(side, [(c, v), *wanted]), mine, excl)
                    if g is not None:
                        break
            if g is None:
                g = self._draw(side.folder(c, v), mine, excl)
            if g is None:
                g = self._draw(side.folder(c, v), mine)
            if g is None:
                return None
            mine.add(g)
            row.append(g)
        return row

    def _row_reads(self, aim: Aim, row: list[GlyphKey], last_row: bool) -> bool:
        """Does this row instantiate the aimed reading (the last row with its key, or with the
        aimed foil in the open cell)? It would then make the foil or the key complete it."""
        concept = aim.rc.concept
        sets = [self.ann.values(g, concept) for g in row]
        if not last_row:
            return bool(row_instantiations(aim.rc, sets))
        tails = [sets[-1], *(self.ann.values(f, concept) for f in aim.foils)]
        return any(t and row_instantiations(aim.rc, [*sets[:-1], t]) for t in tails)

    def _build(self, t: Tuple, part: str, side_name: str, index: int) -> tuple[Puzzle | None, str]:
        rule, concept, shift = t
        rc = self.book.get(concept, rule)
        assert rc is not None
        side = self._sides[side_name]
        if self.params.layout == "odd-one-out":
            return self._build_odd(rc, part, side, side_name, index)
        if not self._symmetric:
            rows = self._row_values(rc, side_name, shift)
            if rows is None:
                return None, "no-values"
            return self._finish(rc, t, part, side, index, rows, None)
        keys = self.key_values(rc, side_name, shift)
        if len(keys) < self.params.min_answers:
            return None, "no-values"
        pending = self._pending.pop((t, side_name), None)
        if pending is not None:
            values, key_value = pending
            rows = self._admissible_rows(rc, side_name, shift, key_value, values)
            if rows is None:  # the rows it had are not kept: draw them again next time
                self._pending[(t, side_name)] = pending
                return None, "asymmetric-values"
            return self._finish_symmetric(
                t, rc, part, side, side_name, index, rows, values, key_value
            )
        cap = self._answer_cap(rc.concept, side_name)
        for attempt in range(SET_TRIES):
            chosen = self._answer_values(rc, side_name, shift, keys)
            if chosen is None:
                self.result.rejections["asymmetric-values"] += 1
                continue
            values = self._capped(chosen[0], cap)
            plans = chosen[1]
            if len(values) < cap:
                # fewer answers than the concept's sets hold would name the rule: drawn again
                # (the last try keeps it, rather than leave a tuple dry that built before)
                if attempt < SET_TRIES - 1:
                    self.result.rejections["short-set"] += 1
                    continue
                self.result.rejections["short-set-kept"] += 1
            values = self._decoyable(rc, side, values)
            # every value of the set could be the key: now the key, uniformly
            key_value = values[int(self.rng.integers(len(values)))]
            rows = plans[key_value]
            return self._finish_symmetric(
                t, rc, part, side, side_name, index, rows, values, key_value
            )
        return None, "asymmetric-values"

    def _finish_symmetric(
        self,
        t: Tuple,
        rc: RuleContext,
        part: str,
        side: GlyphSide,
        side_name: str,
        index: int,
        rows: list[tuple[str, ...]],
        values: list[str],
        key_value: str,
    ) -> tuple[Puzzle | None, str]:
        """Glyphs for an answer set whose key is drawn: ``SET_TRIES`` tries, and when they all
        fail the same values and key wait for the tuple's next draw on this side. Drawing them
        afresh would tilt the key rates: a value whose puzzles fail more often would sit on
        the key less often than on an answer, a pattern an answers-only solver learns (on the
        UA set, progression × components-solid never keyed ``1`` in 134 puzzles, though it was
        an answer in all). A key that never builds leaves the tuple dry instead."""
        shift = t[2]
        reason = "no-glyphs"
        for _ in range(SET_TRIES):
            puzzle, reason = self._finish(rc, t, part, side, index, rows, values, key_value)
            if puzzle is not None:
                return puzzle, ""
            rows = self._admissible_rows(rc, side_name, shift, key_value, values) or rows
        self._pending[(t, side_name)] = (values, key_value)
        return None, reason

    def _answer_values(
        self, rc: RuleContext, side_name: str, shift: bool, keys: Sequence[str]
    ) -> tuple[list[str], dict[str, list[tuple[str, ...]]]] | None:
        """Up to ``ANSWERS`` values (at least ``min_answers``) that could each be the key with
        the others as foils, and rows for each as the key. Values are taken in a random order
        and kept while the set stays admissible; the key is chosen afterwards, so how the set
        was found says nothing about which of its values is the key."""
        chosen: list[str] = []
        plans: dict[str, list[tuple[str, ...]]] = {}
        for i in self.rng.permutation(len(keys)):
            trial = [*chosen, keys[int(i)]]
            trial_plans = {}
            for u in trial:
                rows = self._admissible_rows(rc, side_name, shift, u, trial)
                if rows is None:
                    break
                trial_plans[u] = rows
            else:
                chosen, plans = trial, trial_plans
                if len(chosen) == ANSWERS:
                    return sorted(chosen), plans
        if len(chosen) >= self.params.min_answers:
            return sorted(chosen), plans
        return None

    def _admissible_rows(
        self, rc: RuleContext, side_name: str, shift: bool, key: str, values: Sequence[str]
    ) -> list[tuple[str, ...]] | None:
        """Rows whose key is ``key`` and whose last row no other answer value completes (by
        the values alone; under a shifted reading too when the split is strict), leaving a
        glyph of every other value for its foil: the answer set can then hold every one of
        ``values``. None when none of the instantiations ending in ``key`` does, or when some
        value of the set has no glyph carrying it alone (its answer's glyph may carry no other
        value of the set: :meth:`_rivals`)."""
        if not self._each_carried(rc, side_name, values):
            return None
        reading = shift or self._strict_reading(shift)
        others = tuple(w for w in values if w != key)
        mine = self._ending_in(rc, side_name, shift, key)
        for i in self.rng.permutation(len(mine))[:ROW_TRIES]:
            rows = self._rows_for_key(rc, side_name, shift, key, mine[int(i)])
            if rows is not None and self._rows_admit(rc, side_name, rows, others, reading):
                return rows
        return None

    def _rows_admit(
        self,
        rc: RuleContext,
        side_name: str,
        rows: list[tuple[str, ...]],
        others: tuple[str, ...],
        reading: bool,
    ) -> bool:
        """Do these rows leave a glyph of every other answer value, and does none of those
        values complete them? Values only: cached."""
        cache_key = ("admit", rc.concept, rc.rule.value, side_name, tuple(rows), others, reading)
        got = self._runs.get(cache_key)
        if got is None:
            used = Counter(v for row in rows for v in row)
            got = all(self._carriers(rc, side_name, w) >= used[w] + 1 for w in others) and not any(
                self._value_completes(rc, rows, w, reading) for w in others
            )
            self._runs[cache_key] = got
        return bool(got)

    def _each_carried(self, rc: RuleContext, side_name: str, values: Sequence[str]) -> bool:
        """Has every value of the set a glyph on this side carrying it and none of the others
        (:meth:`_rivals`)? An answer set can hold no value without one."""
        return all(self._carriers(rc, side_name, w, values) >= 1 for w in values)

    def _ending_in(
        self, rc: RuleContext, side_name: str, shift: bool, key: str
    ) -> list[tuple[str, ...]]:
        """The instantiations whose key may be ``key`` on this side; cached."""
        cache_key = ("ending", rc.concept, rc.rule.value, side_name, shift, key)
        got = self._runs.get(cache_key)
        if got is None:
            got = self._runs[cache_key] = [
                o for o in self._options(rc, side_name, shift) if key in self.key_value(rc, o)
            ]
        return got

    def _carriers(
        self, rc: RuleContext, side_name: str, value: str, answer_values: Sequence[str] = ()
    ) -> int:
        """How many glyphs of this side carry an answer value (and none of ``answer_values``'
        others: :meth:`_rivals`); cached."""
        cache_key = ("carriers", rc.concept, side_name, value, tuple(answer_values))
        got = self._runs.get(cache_key)
        if got is None:
            side = self._sides[side_name]
            mine = self._value_glyphs(rc.concept, value, side)
            if answer_values:
                mine -= self._rivals(rc.concept, side, answer_values, value)
            got = self._runs[cache_key] = len(mine)
        return got  # type: ignore[return-value]

    def _value_completes(
        self, rc: RuleContext, rows: list[tuple[str, ...]], answer: str, shift: bool
    ) -> bool:
        """Would an answer carrying only the value ``answer`` complete these rows of values?
        (Values only, so the answer is the same every time: cached.)"""
        cache_key = ("completes", rc.concept, rc.rule.value, tuple(rows), answer, shift)
        got = self._runs.get(cache_key)
        if got is None:
            got = self._runs[cache_key] = self._values_complete(rc, rows, answer, shift)
        return bool(got)

    def _values_complete(
        self, rc: RuleContext, rows: list[tuple[str, ...]], answer: str, shift: bool
    ) -> bool:
        cells = [self._value_cells(rc, r) for r in rows]
        cells[-1][-1] = frozenset(answer.split("+")) if rc.rule is Rule.UNION else {answer}
        insts = [row_instantiations(rc, [frozenset(c) for c in row]) for row in cells]
        return complete(rc, insts, shift) is not None

    @staticmethod
    def _value_cells(rc: RuleContext, row: tuple[str, ...]) -> list[set[str]]:
        if rc.rule is Rule.UNION:
            a, b = row
            return [{a}, {b}, {a, b}]
        return [{v} for v in row]

    def _value_glyphs(self, concept: str, value: str, side: GlyphSide) -> frozenset[GlyphKey]:
        """Glyphs carrying an answer value (both values, for a union's ``a+b``)."""
        parts = value.split("+") if "+" in value else [value]
        sets = [side.folder_sets.get((concept, v), frozenset()) for v in parts]
        return frozenset.intersection(*sets)

    def _finish(
        self,
        rc: RuleContext,
        t: Tuple,
        part: str,
        side: GlyphSide,
        index: int,
        rows: list[tuple[str, ...]],
        answer_values: list[str] | None,
        key_value: str = "",
    ) -> tuple[Puzzle | None, str]:
        """Glyphs, foils and checks for rows of values; ``answer_values`` (symmetric sets) are
        the answers' values of the concept, ``key_value`` among them."""
        if answer_values is not None:
            return self._finish_set(rc, t, part, side, index, rows, answer_values, key_value)
        shift = t[2]
        cells = self._cells(rc, rows, side)
        if cells is None:
            return None, "no-glyphs"
        key_glyph = cells[-1][-1]
        context = (*tuple(tuple(r) for r in cells[:-1]), tuple(cells[-1][:-1]))
        if self._seen_before(t, rows, key_glyph):
            return None, "duplicate-instantiation"
        full_rows = [list(r) for r in cells]
        if not completions(full_rows, self.ann, self.book, shift, only=rc):
            return None, "key-does-not-complete"
        foils = self._foils(rc, context, key_glyph, side, shift, rows)
        if foils is None:
            return None, "too-few-valid-foils"
        return self._puzzle(t, part, index, rows, context, key_glyph, foils)

    def _finish_set(
        self,
        rc: RuleContext,
        t: Tuple,
        part: str,
        side: GlyphSide,
        index: int,
        rows: list[tuple[str, ...]],
        answer_values: list[str],
        key_value: str,
    ) -> tuple[Puzzle | None, str]:
        """A symmetric answer set's puzzle, answers first (issue 24). One glyph is drawn for
        every answer value the same way — the key's no differently from a foil's — so the
        answers alone say nothing of which is the key; the context comes last, and of
        ``DECOY_DRAWS`` contexts that the key completes, the one whose partial views
        (:mod:`studio.vet.partial`: the first row alone, the incomplete row alone) stay
        nearest chance is kept, by the counting solver and by the relative one with the
        shares of the part's puzzles made so far, and by the share above chance that a logit
        learnt from those puzzles gives the key (:class:`RunningLogit`): its rows make foils
        *decoys*, as good as the key to a solver that sees part of the context. Foils are
        then vetted under the whole context exactly as before; one the kept context makes
        invalid is replaced by a valid glyph of its value."""
        shift = t[2]
        answers = self._answer_glyphs(rc, side, answer_values)
        if answers is None:
            return None, "no-glyphs"
        key_glyph = answers[key_value]
        if self._seen_before(t, rows, key_glyph):
            return None, "duplicate-instantiation"
        first = [answers[v] for v in answer_values if v != key_value]
        tested = self._tested()
        narrow = aware_readings([key_glyph, *first], self.ann, tested)
        shares = self._shares.setdefault(part, RunningShares())
        shares_aware = self._shares.setdefault(part + "/aware", RunningShares())
        logit = self._logits.setdefault(part, RunningLogit())
        drawn_tags = [self.ann.tags_of(a) for a in [key_glyph, *first]]

        def judged(
            seen: list[list[frozenset[tuple[str, str]]]],
            narrow: frozenset[tuple[str, str]],
            tags: list[frozenset[tuple[str, str]]],
        ) -> tuple[tuple[float, float], list[list[list[str]]]]:
            # by every tested reading, and by those a solver reading the answers weighs
            # (:func:`aware_readings`): decoys for both kinds; then by how much more than
            # chance the logit learnt so far gives the key (one-sided: a context it would
            # get wrong is no better than one at chance). With the features the logit read,
            # which it learns from if the context is kept
            aware = [[r & narrow for r in per] for per in seen]
            a, b = partial_gap(seen, shares), partial_gap(aware, shares_aware)
            feats = [judge_features(per, narrow, tags) for per in seen]
            over = sum(max(logit.key_share(v, f) - 1 / len(f), 0.0) for v, f in enumerate(feats))
            return (a[0] + b[0] + LOGIT_WEIGHT * over, a[1] + b[1]), feats

        plan: dict[int, list[tuple[int, Aim]]] = {0: [], -1: []}
        if len(rows) > 1 and DECOY_DRAWS > 1:  # a sequence's one row is its whole context
            plan = self._decoy_plan(rc, rows, side, key_glyph, first, tested, shift)
        clean: list[tuple[tuple[float, float], int, Context, Any, list[list[list[str]]]]] = []
        mend: list[tuple[tuple[float, float], int, Context, list[str | None]]] = []
        reason = "no-glyphs"
        for j in range(DECOY_DRAWS):
            # the first draw is plain; the others aim both partial rows at foils (one row
            # where the other has no aims)
            aims = (
                self._pick_aims(plan, j, rc, rows, side, [key_glyph, *first], shift, part)
                if j
                else []
            )
            if j and not aims:
                continue  # no foil carries another tested concept: nothing to aim at
            cells = self._cells(
                rc, rows, side, key=key_glyph, taken=set(answers.values()), aims=aims
            )
            if cells is None:
                if not (clean or mend) and j >= 1:
                    break  # the folders are short of glyphs, not of luck
                continue
            full_rows = [list(r) for r in cells]
            if not completions(full_rows, self.ann, self.book, shift, only=rc):
                reason = "key-does-not-complete"
                continue
            if self._key_completes_another(rc, full_rows, shift):
                # foils may complete no rule at all; a key completing a second one (over a
                # nuisance concept the rows share) would be told apart by that value alone
                reason = "key-completes-another"
                continue
            context = (*tuple(tuple(r) for r in cells[:-1]), tuple(cells[-1][:-1]))
            open_row = OpenRow(context, self.ann, self.book)
            whys = [self.foil_rejection(context, g, shift, rc, open_row) for g in first]
            seen = self._signatures(context, key_glyph, first, shift, tested)
            gap, feats = judged(seen, narrow, drawn_tags)
            if any(whys):
                mend.append((gap, j, context, whys))
                continue
            clean.append((gap, j, context, seen, feats))
        # the context kept for its partial views: one whose foils are the glyphs drawn with
        # the answers if any (replacement picks glyphs completing nothing, so glyphs with fewer
        # tags; kept for their decoys, they set the foils' tags apart from the key's: the
        # answers-only probe rose from 0.25 to 0.28 on the image-feature set), else one judged
        # with the glyphs that would replace its invalid foils
        if clean:
            _, _, context, seen, feats = min(clean, key=lambda c: c[:2])
            foils = list(first)
        else:
            mended, refused = [], Counter()
            # mending scans a value's glyphs for valid ones: the two contexts that were best
            # with the foils drawn are mended, and judged again with the foils they get
            for _, j, context, whys in sorted(mend, key=lambda m: m[:2])[:MEND_TRIES]:
                counts: Counter[str] = Counter(w for w in whys if w is not None)
                valid = self._mended(rc, side, shift, context, answers, answer_values, key_value,
                                     whys, counts)  # fmt: skip
                if valid is None:
                    reason = "too-few-valid-foils"
                    refused.update(counts)
                    continue
                seen = self._signatures(context, key_glyph, valid, shift, tested)
                # the mended foils are other glyphs: what the answers say is read again
                again = aware_readings([key_glyph, *valid], self.ann, tested)
                again_tags = [self.ann.tags_of(a) for a in [key_glyph, *valid]]
                gap, feats = judged(seen, again, again_tags)
                mended.append((gap, j, context, valid, counts, seen, again, feats))
            if not mended:  # why the foils were refused, as the split's rejections say
                self.result.rejections.update(refused)
                return None, reason
            _, _, context, foils, counts, seen, narrow, feats = min(mended, key=lambda d: d[:2])
            self.result.rejections.update(counts)  # those of the context kept
        # the foils come one per answer value, in the set's sorted order: left so, the key is
        # the one answer out of order (found 66 % of the time with four answers, 55 % with
        # three; review of issue 24), so they are shuffled before the key goes in
        foils = [foils[int(i)] for i in self.rng.permutation(len(foils))]
        made = self._puzzle(t, part, index, rows, context, key_glyph, foils)
        if made[0] is not None and seen:
            shares.add(seen)  # what the weighted solvers will learn from this puzzle
            shares_aware.add([[r & narrow for r in per] for per in seen])
            for view, per in enumerate(seen):
                logit.add(view, feats[view])  # as judged: the key first, the foils' tags kept
                self._rule_fits.setdefault((part, len(per), view), RuleFits()).add(per, narrow)
        return made

    def _signatures(
        self,
        context: Context,
        key: GlyphKey,
        foils: Sequence[GlyphKey],
        shift: bool,
        tested: frozenset[tuple[str, str]],
    ) -> list[list[frozenset[tuple[str, str]]]]:
        """What the partial views read of a drawn context's answers (the key first), computed
        once: the context is judged by it and, if kept, the split's shares learn from it. A
        one-row context (a sequence) has no partial view."""
        if len(context) < 2:
            return []
        return partial_signatures(context, [key, *foils], shift, self.ann, self.book, tested)

    def _mended(
        self,
        rc: RuleContext,
        side: GlyphSide,
        shift: bool,
        context: Context,
        answers: Mapping[str, GlyphKey],
        answer_values: Sequence[str],
        key_value: str,
        whys: Sequence[str | None],
        counts: Counter[str],
    ) -> list[GlyphKey] | None:
        """The foils of ``answers`` (in ``answer_values``' order, the key's left out) for this
        context, each one ``whys`` refuses replaced by a valid glyph of its value, vetted under
        the whole context exactly as ever (each glyph refused on the way counted in
        ``counts``); None when a value has none."""
        open_row = OpenRow(context, self.ann, self.book)
        banned = {g for r in context for g in r} | set(answers.values())
        out: list[GlyphKey] = []
        for v, why in zip((u for u in answer_values if u != key_value), whys, strict=True):
            g = answers[v]
            if why is not None:
                found = self._valid_foils(
                    self._sorted_glyphs(rc.concept, v, side),
                    banned | self._rivals(rc.concept, side, answer_values, v),
                    context,
                    shift,
                    rc,
                    open_row,
                    counts,
                )
                got = next(found, None)
                if got is None:
                    return None
                banned.add(got)
                g = got
            out.append(g)
        return out

    def _decoy_plan(
        self,
        rc: RuleContext,
        rows: list[tuple[str, ...]],
        side: GlyphSide,
        key: GlyphKey,
        foils: Sequence[GlyphKey],
        tested: frozenset[tuple[str, str]],
        shift: bool,
    ) -> dict[int, list[tuple[int, Aim]]]:
        """Where context draws should look to make foils decoys, per partial row (0, the
        first; -1, the incomplete row's visible cells): every aim, with the answers it makes
        fit (a bit per answer, the key's first). An aim gives each cell of the row a (concept,
        value) of another tested reading, so that the row instantiates it and, seen alone, the
        foils it names end it as well as the key ends the puzzle's own. An aim that the key
        would end too is no aim (the key would then score two readings to the decoys' one), nor
        one the side has no glyphs for (a glyph per cell carrying both its value of the
        intended concept and the aimed one), nor one over a concept the answers are no set of
        (:func:`studio.vet.partial.answer_concepts`: an answer lacks it, or two share a value):
        a solver seeing the answers knows the puzzle's concept is none of those, and sees such
        a decoy through (on the image-feature set, where many glyphs lack a feature, the
        aware solver was the floor, 0.62–0.68 against a chance of 0.44). Computed once per
        answer set; the rows' own values of the intended concept are drawn as always, and the
        whole context is vetted as always."""
        answers = [key, *foils]
        crossed = answer_concepts(answers, self.ann, sorted({c for _, c in tested}))
        plan: dict[int, list[tuple[int, Aim]]] = {0: [], -1: []}
        for rule, concept in sorted(tested):
            if concept == rc.concept or rule == Rule.UNION.value:
                continue
            other = self.book.get(concept, rule)
            held = [self.ann.values(a, concept) for a in answers]
            if other is None or not any(held[1:]):
                continue
            if concept not in crossed:
                continue  # the answers are no set over it: a decoy by it is seen through
            wanted = frozenset().union(*held[1:]) - {NONE}
            for row, cells in self._aimed_rows(other, rows, wanted):
                fit = self._aim_fits(other, row, cells, shift, held)
                if fit[0] or not any(fit):
                    continue
                pairs = [(concept, v) for v in cells]
                if not all(
                    self._carrying(side, [(rc.concept, u), p])
                    for u, p in zip(rows[row], pairs, strict=False)
                ):
                    continue
                mask = sum(1 << i for i, f in enumerate(fit) if f)
                named = tuple(a for a, f in zip(answers, fit, strict=True) if f)
                plan[row].append((mask, Aim(row, pairs, other, named)))
        return plan

    def _pick_aims(
        self,
        plan: dict[int, list[tuple[int, Aim]]],
        draw: int,
        rc: RuleContext,
        rows: list[tuple[str, ...]],
        side: GlyphSide,
        answers: Sequence[GlyphKey],
        shift: bool,
        part: str,
    ) -> list[Aim]:
        """The aims of one context draw after the first, plain one: both partial rows, the
        first row aimed first in one draw and the incomplete row in the next (the row aimed
        second leaves out the aims that clash with the first's, :meth:`_aims_clash`). Drawn
        a row at a time, in turn, a third of the draws aimed both, and on a three-concept set
        (the tests', 2,000 glyphs) a foil fitted nothing in the incomplete row alone in 18 % of
        the puzzles (a logit read "fits nothing" as "not the key"). A row takes one aim (a
        rule drawn among those aimed at by :meth:`_rule_weights`, then an aim of it, so that
        decoys come by each rule as keys do), then, while some glyph per cell can carry them
        all, aims over other concepts naming foils none of its aims names yet, tried in an
        order weighted the same way: each foil a decoy by one reading, as the key is the key
        by one. (Preferring the aims that name the most foils
        at once, foils sharing the aimed value, let the incomplete row's logit find the key:
        0.26 → 0.40 on the image-feature set, chance 0.25.)"""
        rows_aimed = [r for r in ((0, -1), (-1, 0))[(draw - 1) % 2] if plan[r]]
        out: list[Aim] = []
        for r in rows_aimed:
            # aimed after the other row's: no aim that would let an answer complete a
            # reading both rows then instantiate (a foil, invalid; the key, refused)
            options = [
                o
                for o in plan[r]
                if not any(self._aims_clash(a, o[1], answers, shift) for a in out)
            ]
            if not options:
                continue
            # the first aim's rule among the rules aimed at, then an aim of it: drawn uniformly
            # among aims, decoys came by the rule with the most cells to aim (sums) while keys
            # come by each rule alike, and "fits a constant reading" told the key; drawn
            # uniformly among rules, by constant still most (the easiest rows to aim), so now
            # weighted by the rules keys fitted more often than foils so far. (The key's own
            # rule first made "the answers sharing a rule" a tell, the key and its first
            # decoy: with a logit reading it, floors 3-6 points higher.)
            rules = sorted({o[1].rc.rule for o in options}, key=lambda x: x.value)
            wanted = self._rule_weights(rules, part, len(answers), 0 if r == 0 else 1)
            cum = np.cumsum([wanted[x] for x in rules])
            pick = int(np.searchsorted(cum, self.rng.random() * cum[-1], side="right"))
            rule = rules[min(pick, len(rules) - 1)]
            ruled = [o for o in options if o[1].rc.rule is rule]
            mask, first = ruled[int(self.rng.integers(len(ruled)))]
            chosen = [first]
            # the other foils' aims in an order weighted the same way: drawn one after another
            # in proportion to the weights, by sorting u ** (1 / w) (Efraimidis and Spirakis;
            # numpy's choice without replacement doubled the time of this method)
            w = np.fromiter((wanted[o[1].rc.rule] for o in options), float, len(options))
            for i in np.argsort(-(self.rng.random(len(options)) ** (1.0 / w)), kind="stable"):
                m, aim = options[int(i)]
                if m & mask or any(a.rc.concept == aim.rc.concept for a in chosen):
                    continue
                trial = [*chosen, aim]
                cells = _cell_aims(trial)
                if all(
                    self._carrying(side, [(rc.concept, u), *want])
                    for u, want in zip(rows[r], cells, strict=False)
                ):
                    chosen, mask = trial, mask | m
            out += chosen
        return out

    def _rule_weights(
        self, rules: Sequence[Rule], part: str, n: int, view: int
    ) -> dict[Rule, float]:
        """How much an aim by each of ``rules`` is wanted: by how much more often keys than foils
        fitted it in this view of the part's puzzles of ``n`` answers so far (the answer
        count is seen: on the image-feature set keys of two answers came by progression and
        arithmetic, keys of three by constant, while decoys came by constant most, and a
        logit read the rule an answer fits). Alike before any puzzle of the stream. The
        history is the stream's (a sharded split's chunk's own), so a split is the same made
        by one worker or several. Docs/decisions.md has the floor of the weight, and why not
        the rule most short every time."""
        fits = self._rule_fits.get((part, n, view))
        if fits is None or not fits.keys_seen:
            return dict.fromkeys(rules, 1.0)
        trust = fits.keys_seen / (fits.keys_seen + RULE_PRIOR)
        return {
            x: trust * max(fits.key_rate(x.value) - fits.foil_rate(x.value), 0.0) + RULE_FLOOR
            for x in rules
        }

    def _aims_clash(self, aim: Aim, other: Aim, answers: Sequence[GlyphKey], shift: bool) -> bool:
        """Would aims for the two partial rows over one concept let an answer complete a
        reading of it under the whole context? Then the foil a row names is no decoy but a
        second key (vetting refuses it, and the context needed mending: on a three-concept
        set, 20,553 of 30,000 draws aiming both rows did, and the mended foils were no decoys),
        or the key completes a second reading (the context is refused). Every rule of the
        concept, tested or not, as vetting reads them (a split testing constant and
        progression alone still refuses a foil completing a sum); values only, and the middle
        rows of a 3×3 as if they instantiated it too (cautious: such a draw keeps fewer aims)."""
        concept = aim.rc.concept
        if other.rc.concept != concept or aim.row == other.row:
            return False
        first, last = (aim, other) if aim.row == 0 else (other, aim)
        row = [frozenset((v,)) for _, v in first.cells]
        visible = [frozenset((v,)) for _, v in last.cells]
        tails = [t for t in (self.ann.values(g, concept) for g in answers) if t]
        readings = (shift, True) if self._strict_reading(shift) else (shift,)
        for reading in self.book.rules_of(concept):
            insts = row_instantiations(reading, row)
            if not insts:
                continue
            for tail in tails:
                ends = row_instantiations(reading, [*visible, tail])
                if ends and any(complete(reading, [insts, ends], s) for s in readings):
                    return True
        return False

    def _aimed_rows(
        self, other: RuleContext, rows: list[tuple[str, ...]], wanted: frozenset[str]
    ) -> list[tuple[int, tuple[str, ...]]]:
        """Values of ``other``'s concept for the first row's cells and the incomplete row's
        visible ones that some foil value in ``wanted`` would end; cached."""
        width = (len(rows[0]), len(rows[-1]) - 1)
        cache_key = ("aimed", other.concept, other.rule.value, width, wanted)
        got = self._runs.get(cache_key)
        if got is None:
            got = []
            for inst in self.candidate_instantiations(other):
                if not wanted & set(self.key_value(other, inst)):
                    continue
                if len(inst) == width[0]:
                    got.append((0, inst))
                if other.rule is Rule.DIST3:  # any order: the foil's value ends it
                    ends = [(*(u for u in inst if u != v), v) for v in inst if v in wanted]
                else:
                    ends = [inst]
                got += [(-1, e[: width[1]]) for e in ends if len(e) == width[1] + 1]
            self._runs[cache_key] = got = sorted(set(got))
        return got  # type: ignore[no-any-return]

    def _aim_fits(
        self,
        other: RuleContext,
        row: int,
        cells: tuple[str, ...],
        shift: bool,
        held: Sequence[frozenset[str]],
    ) -> list[bool]:
        """Which answers (their values of ``other``'s concept, ``held``) a row whose cells
        carry ``cells`` would make fit ``other``, seen alone (:mod:`studio.vet.partial`)."""
        sets = [frozenset((v,)) for v in cells]
        if row == 0:
            needs = first_row_needs(other, row_instantiations(other, sets), shift)
            return [bool(h) and meets(needs, h) for h in held]
        return [bool(h) and open_row_fits(other, sets, h, shift) for h in held]

    def _answer_glyphs(
        self, rc: RuleContext, side: GlyphSide, answer_values: Sequence[str]
    ) -> dict[str, GlyphKey] | None:
        """A glyph per answer value, each drawn alike: carrying that value and no other
        answer value of the concept (the key's draw is no different from a foil's). Where the
        side allows, the answers are drawn to be a set over other tested concepts too
        (:meth:`_crossed_answers`, the best of up to ``CROSS_DRAWS`` draws;
        :func:`studio.vet.partial.answer_concepts`): answers that are a set over the
        puzzle's concept alone name it, and a decoy over another concept is then seen
        through. How they are drawn depends on the answers as a whole, never on which is the
        key, so the answers alone still say nothing of it."""
        others = self._crossable(rc, side, answer_values)
        if not others:
            taken: set[GlyphKey] = set()
            out: dict[str, GlyphKey] = {}
            for v in answer_values:
                rivals = self._rivals(rc.concept, side, answer_values, v)
                g = self._draw(self._sorted_glyphs(rc.concept, v, side), taken, rivals)
                if g is None:
                    return None
                taken.add(g)
                out[v] = g
            return out
        best: tuple[int, dict[str, GlyphKey]] | None = None
        enough = min(len(others), len(answer_values) - 1)  # a decoy concept per foil
        for _ in range(CROSS_DRAWS):
            got = self._crossed_answers(rc, side, answer_values, others)
            if got is None:
                break
            crossed = len(answer_concepts(list(got.values()), self.ann, others))
            if best is None or crossed > best[0]:
                best = (crossed, got)
            if crossed >= enough:
                break
        return best[1] if best else None

    def _answer_cap(self, concept: str, side_name: str) -> int:
        """How many answers every set over ``concept`` holds on this side: the fewest of the
        largest sets (:meth:`_largest_set`) that the side's tuples over it can build, dry
        tuples left out, at most ``ANSWERS``. A rule's own most would name it: on the
        image-feature set three answers came only with a constant over a three-valued feature
        (a progression keys two of three values), and a view that knew the rule saw through
        decoys by any other (such puzzles were 29-39 points over chance). Cached: the same in
        every worker."""
        key = ("cap", concept, side_name)
        got = self._runs.get(key)
        if got is None:
            sizes = [
                self._largest_set(t, side_name)
                for t in self._tuples[side_name]
                if t[1] == concept and self._tuple_impossible(t, side_name) is None
            ]
            got = self._runs[key] = min(
                [ANSWERS, *(n for n in sizes if n >= self.params.min_answers)]
            )
        return got  # type: ignore[no-any-return]

    def _capped(self, values: list[str], cap: int) -> list[str]:
        """``cap`` of ``values`` at random, before the key is drawn (which values remain says
        nothing of the key); all of them when they fit. (Stopping the greedy draw of
        :meth:`_answer_values` at the cap instead drew other sets: on the image-feature set,
        with the same caps, the first row's held-out floor read 14.4 points over chance on
        average over five seeds, against 12.2 this way.)"""
        if len(values) <= cap:
            return values
        return [values[int(i)] for i in sorted(self.rng.choice(len(values), cap, replace=False))]

    def _largest_set(self, t: Tuple, side_name: str) -> int:
        """The most values (up to ``ANSWERS``) of a symmetric set this tuple can build on this
        side, by the values alone as :meth:`_admissible_rows` reads them: each value has a
        glyph carrying no other of the set, and for each value as the key some instantiation
        ending in it whose rows no other value completes and leave a glyph for every foil.
        Depth first over the key values in order, growing only admissible sets (a subset of
        one is admissible too, so none larger is missed) and stopping at ``ANSWERS`` or after
        ``LARGEST_SET_CHECKS`` checks (then the largest found: the same in every worker).
        Exact without shift (within the budget; spent, it can only lower the cap) but for
        the draw's own luck (it tries ``ROW_TRIES`` instantiations a value, and grows its
        set greedily: a set drawn short is drawn again); with shift, read on the rows
        without it (a shifted draw's other rows are drawn at random)."""
        rule, concept, shift = t
        rc = self.book.get(concept, rule)
        if rc is None:
            return 0
        keys = self.key_values(rc, side_name, shift)
        reading = shift or self._strict_reading(shift)

        def keyable(u: str, values: tuple[str, ...]) -> bool:
            others = tuple(w for w in values if w != u)
            return any(
                self._rows_admit(rc, side_name, self._plain_rows(rc, inst, u), others, reading)
                for inst in self._ending_in(rc, side_name, shift, u)
            )

        def admissible(values: tuple[str, ...]) -> bool:
            return self._each_carried(rc, side_name, values) and all(
                keyable(u, values) for u in values
            )

        top, best, checks = min(ANSWERS, len(keys)), 0, LARGEST_SET_CHECKS

        def grow(values: tuple[str, ...], start: int) -> bool:
            nonlocal best, checks
            best = max(best, len(values))
            for i in range(start, len(keys)):
                if best >= top or checks <= 0:
                    return True
                checks -= 1
                trial = (*values, keys[i])
                if admissible(trial) and grow(trial, i + 1):
                    return True
            return best >= top or checks <= 0

        grow((), 0)
        return best if best >= 2 else 0

    def _decoyable(self, rc: RuleContext, side: GlyphSide, values: list[str]) -> list[str]:
        """At most one foil per other concept the answers cross, never fewer answers than the
        split's ``min_answers`` (whether an aim exists for each foil is not checked here): a
        view can make a foil a decoy by a reading over a concept the answers are a set of, one
        foil per concept, so with answers crossed over ``m`` other concepts a view has decoys
        for ``m`` foils at most and sees through the rest. With four
        answers and two other concepts the first row alone found the key a third of the time
        at best against a chance of a quarter; three answers there leave no foil a partial
        view rules out (VASR keeps only hard distractors, §3.2). Where the answers cross no
        other concept no decoy is possible at all and the set is kept as the values allow.
        Decided from one draw of the answers' glyphs, before the key is drawn, and a random
        subset kept: which values remain says nothing of the key."""
        if len(values) <= self.params.min_answers:
            return values
        others = self._crossable(rc, side, values)
        drawn = self._answer_glyphs(rc, side, values) if others else None
        if not drawn:
            return values
        crossed = len(answer_concepts(list(drawn.values()), self.ann, others))
        keep = max(self.params.min_answers, min(len(values), crossed + 1))
        if not crossed or keep >= len(values):
            return values
        return self._capped(values, keep)

    def _crossed_answers(
        self, rc: RuleContext, side: GlyphSide, answer_values: Sequence[str], others: Sequence[str]
    ) -> dict[str, GlyphKey] | None:
        """One draw of :meth:`_answer_glyphs` that keeps the answers a set over as many of
        ``others`` as it can: each value's glyph is the one, of up to ``CROSS_SAMPLE`` drawn
        at random, that leaves the most of those concepts with a value on every answer so
        far and no value on two (ties: the first drawn). A random draw of four glyphs is a
        set over a second concept one time in eight on three-concept annotations; this makes
        most of them one."""
        taken: set[GlyphKey] = set()
        out: dict[str, GlyphKey] = {}
        used: dict[str, frozenset[str]] = {d: frozenset() for d in others}
        for v in answer_values:
            rivals = self._rivals(rc.concept, side, answer_values, v)
            pool = self._sorted_glyphs(rc.concept, v, side)
            if not pool:
                return None
            order = self.rng.permutation(len(pool))[: 4 * CROSS_SAMPLE]
            free = [pool[int(i)] for i in order if pool[int(i)] not in taken]
            free = [g for g in free if g not in rivals][:CROSS_SAMPLE]
            if not free:
                return None

            g = max(free, key=lambda x, used=used: self._keeps(x, used))  # the first of the best
            used = {
                d: seen | vals
                for d, seen in used.items()
                if (vals := self.ann.values(g, d)) and not vals & seen
            }
            taken.add(g)
            out[v] = g
        return out

    def _keeps(self, glyph: GlyphKey, used: Mapping[str, frozenset[str]]) -> int:
        """How many of ``used``'s concepts the answers stay a set over with this glyph among
        them: it carries a value of the concept, none an answer so far carries."""
        return sum(
            1 for d, seen in used.items() if (vals := self.ann.values(glyph, d)) and not vals & seen
        )

    def _crossable(
        self, rc: RuleContext, side: GlyphSide, answer_values: Sequence[str]
    ) -> list[str]:
        """The other tested concepts that every answer value has glyphs carrying (a value
        of it as well): those the answers could also be a set over. Empty on annotations with
        one concept per glyph, where a single draw is all there is (and the puzzles are the
        same as before). Cached."""
        cache_key = ("crossable", rc.concept, id(side), tuple(answer_values))
        got = self._runs.get(cache_key)
        if got is None:
            concepts = sorted({c for _, c in self._tested()} - {rc.concept})
            got = self._runs[cache_key] = [
                d
                for d in concepts
                if all(
                    any(self.ann.values(g, d) for g in self._sorted_glyphs(rc.concept, v, side))
                    for v in answer_values
                )
            ]
        return got  # type: ignore[no-any-return]

    def _rivals(
        self, concept: str, side: GlyphSide, answer_values: Sequence[str], value: str
    ) -> frozenset[GlyphKey]:
        """The glyphs that carry another answer value: never the glyph of ``value``'s answer.
        A glyph carrying two of the set's values could only ever be the key (as a foil it
        would carry the key's value and complete the rows), so its two values would name the
        key to a model that sees the answers alone."""
        return frozenset().union(
            *(self._value_glyphs(concept, u, side) for u in answer_values if u != value)
        )

    def _carrying(self, side: GlyphSide, pairs: Sequence[tuple[str, str]]) -> list[GlyphKey]:
        """The glyphs of this side carrying every (concept, value) pair, sorted; cached."""
        if len(pairs) > 2:  # combined aims: too many combinations to keep (review)
            sets = [side.folder_sets.get(cv, frozenset()) for cv in pairs]
            return sorted(frozenset.intersection(*sets))
        cache_key = ("carrying", id(side), tuple(sorted(pairs)))
        got = self._runs.get(cache_key)
        if got is None:
            sets = [side.folder_sets.get(cv, frozenset()) for cv in pairs]
            got = self._runs[cache_key] = sorted(frozenset.intersection(*sets))
        return got  # type: ignore[no-any-return]

    def _sorted_glyphs(self, concept: str, value: str, side: GlyphSide) -> list[GlyphKey]:
        """:meth:`_value_glyphs` in a fixed order (draws index it); cached."""
        cache_key = ("sorted-glyphs", concept, value, id(side))
        got = self._runs.get(cache_key)
        if got is None:
            got = self._runs[cache_key] = sorted(self._value_glyphs(concept, value, side))
        return got  # type: ignore[no-any-return]

    def _seen_before(self, t: Tuple, rows: list[tuple[str, ...]], key_glyph: GlyphKey) -> bool:
        """With ``diverse`` sampling, was this instantiation already made with this key?"""
        return self.params.sampling == "diverse" and (*t, tuple(rows), key_glyph) in self._seen

    def _puzzle(
        self,
        t: Tuple,
        part: str,
        index: int,
        rows: list[tuple[str, ...]],
        context: tuple[tuple[GlyphKey, ...], ...],
        key_glyph: GlyphKey,
        foils: list[GlyphKey],
    ) -> tuple[Puzzle | None, str]:
        """The puzzle, the key at a uniform position; its key checked once more."""
        rule, concept, shift = t
        pos = int(self.rng.integers(len(foils) + 1))
        answers = list(foils)
        answers.insert(pos, key_glyph)
        puzzle = Puzzle(
            id=f"{part}-{index:05d}",
            family=self.params.family,
            layout=self.params.layout,
            rule=rule,
            concept=concept,
            shift=shift,
            context=context,
            answers=tuple(answers),
            key=pos,
            split=part,
            seed=self.params.seed,
            values=tuple(tuple(r) for r in rows),
            params={"fold": self.fold},
        )
        if not key_completes(puzzle, self.ann, self.book):
            return None, "key-does-not-complete"
        if self.questions is not None:
            from dataclasses import replace

            puzzle = replace(puzzle, questions=tuple(self.questions(puzzle, self.ann, self.schema)))
        if self.params.sampling == "diverse":
            self._seen.add((*t, tuple(rows), key_glyph))
        return puzzle, ""

    def _tested(self) -> frozenset[tuple[str, str]]:
        """The (rule, concept) readings this split tests, in any part: a partial-view solver
        may know them (a benchmark's card lists them), so only they make a decoy."""
        got = self._runs.get("tested")
        if got is None:  # only tuples that can be built: the reports count puzzles made
            got = self._runs["tested"] = frozenset(
                (t[0], t[1])
                for side, ts in self._tuples.items()
                for t in ts
                if self._tuple_impossible(t, side) is None
            )
        return got  # type: ignore[return-value]

    def _key_completes_another(
        self, rc: RuleContext, rows: list[list[GlyphKey]], shift: bool
    ) -> bool:
        """Does the key complete a rule over another concept than the intended one, under the
        same reading a foil is judged by (a shifted one too in a strict split)? (Another rule
        over the intended concept — a progression that is also a sum — is the key's value
        itself, which the answer set balances.)"""
        readings = (shift, True) if self._strict_reading(shift) else (shift,)
        return any(
            got.concept != rc.concept
            for found in completions_by_reading(rows, self.ann, self.book, readings)
            for got, _ in found
        )

    def _strict_reading(self, shift: bool) -> bool:
        """Is a shifted reading asked of these rows too (a strict split without shift)?"""
        return self.params.strict and not shift and self._nrows() > 1

    def foil_rejection(
        self,
        context: Sequence[Sequence[GlyphKey]],
        candidate: GlyphKey,
        shift: bool,
        rc: RuleContext,
        open_row: OpenRow | None = None,
    ) -> str | None:
        """Why ``candidate`` cannot be a foil for these context rows (None: it can).
        ``open_row``: the context's shared work, when many candidates are tried."""
        readings = (shift, True) if self._strict_reading(shift) else (shift,)
        if open_row is None:
            open_row = OpenRow(context, self.ann, self.book)
        found, *shifted = open_row.completions(candidate, readings)
        if not found:
            if shifted and shifted[0]:
                return f"foil-strict:{shifted[0][0][0].rule.value}"
            return None
        for got, _ in found:
            if got.concept == rc.concept and got.rule is rc.rule:
                return "foil-completes-intended"
        got = found[0][0]
        return f"foil-emergent:{got.rule.value}"

    def _valid_foils(
        self,
        pool: Sequence[GlyphKey],
        skip: set[GlyphKey] | frozenset[GlyphKey],
        context: tuple[tuple[GlyphKey, ...], ...],
        shift: bool,
        rc: RuleContext,
        open_row: OpenRow,
        counts: Counter[str] | None = None,
    ) -> Iterator[GlyphKey]:
        """The glyphs of ``pool`` that may be foils, from a random start (wrapping round),
        never one in ``skip``; each refused candidate is counted by reason (in ``counts``,
        else the split's rejections)."""
        counts = self.result.rejections if counts is None else counts
        n = len(pool)
        if not n:
            return
        start = int(self.rng.integers(n))
        for j in range(n):
            g = pool[(start + j) % n]
            if g in skip:
                continue
            why = self.foil_rejection(context, g, shift, rc, open_row)
            if why is not None:
                counts[why] += 1
                continue
            yield g

    def _foils(
        self,
        rc: RuleContext,
        context: tuple[tuple[GlyphKey, ...], ...],
        key_glyph: GlyphKey,
        side: GlyphSide,
        shift: bool,
        rows: list[tuple[str, ...]],
    ) -> list[GlyphKey] | None:
        """UA's foil pool: up to three candidates per other value of the concept."""
        banned = set(g for r in context for g in r) | {key_glyph}
        open_row = OpenRow(context, self.ann, self.book)
        answer_value = rows[-1][-1] if rc.rule is not Rule.UNION else None
        pool: list[GlyphKey] = []
        in_pool: set[GlyphKey] = set()
        concept = rc.concept
        values = [v for v in self.schema.concept(concept).value_ids if (concept, v) in side.folders]
        for v in values:
            if v == answer_value:
                continue  # narrowed before sampling: the answer's own folder
            skip = banned | in_pool
            found = self._valid_foils(side.folder(concept, v), skip, context, shift, rc, open_row)
            for got, g in enumerate(found, 1):
                pool.append(g)
                in_pool.add(g)
                if got == POOL_PER_VALUE:
                    break
        if len(pool) < FOILS:
            return None
        pick = self.rng.choice(len(pool), size=FOILS, replace=False)
        return [pool[int(i)] for i in pick]

    # ---- odd one out ---------------------------------------------------------------------------
    def _odd_options(self, rc: RuleContext, side_name: str) -> list[str]:
        """Values with glyphs enough to be an odd-one-out group on this side."""
        side = self._sides[side_name]
        need = self.params.group_size - 1
        options = [
            v for v in sorted(rc.allowed) if v != NONE and len(side.folder(rc.concept, v)) >= need
        ]
        if self._values_disjoint:
            options = [
                v
                for v in options
                if self._values_side("odd-one-out", rc.concept, (v,)) == side_name
            ]
        return options

    def _build_odd(
        self, rc: RuleContext, part: str, side: GlyphSide, side_name: str, index: int
    ) -> tuple[Puzzle | None, str]:
        concept = rc.concept
        size = self.params.group_size
        options = self._odd_options(rc, side_name)
        if not options:
            return None, "no-values"
        if self._symmetric:
            # the two values first, each able to be the group's or the odd one's; then which
            # is odd, by a coin: no value is only ever odd (or only ever in the group)
            if len(options) < 2:
                return None, "no-values"
            pair = sorted(int(i) for i in self.rng.choice(len(options), size=2, replace=False))
            v, u = (options[pair[0]], options[pair[1]])
            if self.rng.integers(2):
                v, u = u, v
            odd_values = [u]
        else:
            v = options[int(self.rng.integers(len(options)))]
            odd_values = [
                w
                for w in self.schema.concept(concept).value_ids
                if w != v and side.folder(concept, w)
            ]
        taken: set[GlyphKey] = set()
        members = []
        for _ in range(size - 1):
            g = self._draw(side.folder(concept, v), taken)
            if g is None:
                return None, "no-glyphs"
            taken.add(g)
            members.append(g)
        if not odd_values:
            return None, "no-values"
        u = odd_values[int(self.rng.integers(len(odd_values)))]
        carrying_v = side.folder_sets.get((concept, v), frozenset())
        odd = self._draw(side.folder(concept, u), taken, carrying_v)
        if odd is None:
            return None, "no-glyphs"
        if self.params.sampling == "diverse":
            sig = ("odd", concept, v, odd)
            if sig in self._seen:
                return None, "duplicate-instantiation"
        pos = int(self.rng.integers(size))
        members.insert(pos, odd)
        puzzle = Puzzle(
            id=f"{part}-{index:05d}",
            family=self.params.family,
            layout="odd-one-out",
            rule="constant",
            concept=concept,
            shift=False,
            context=(),
            answers=tuple(members),
            key=pos,
            split=part,
            seed=self.params.seed,
            values=((v,) * (size - 1) + (u,),),
            params={"fold": self.fold},
        )
        from studio.vet.emergent import find_emergent_rules

        found = find_emergent_rules(puzzle, self.ann, self.book)
        if found:
            self.result.rejections[f"foil-{found[0].check}"] += 1
            return None, "second-odd-one"
        if not key_completes(puzzle, self.ann, self.book):
            return None, "key-does-not-complete"
        if self.questions is not None:
            from dataclasses import replace

            puzzle = replace(puzzle, questions=tuple(self.questions(puzzle, self.ann, self.schema)))
        if self.params.sampling == "diverse":
            self._seen.add(("odd", concept, v, odd))
        return puzzle, ""


def generate_split(
    params: SplitParams, annotations: TagIndex, schema: Schema, fold: int = 0, **kw: Any
) -> SplitResult:
    """One fold of a split, all at once (the CLI and tests; the GUI iterates ``run()``)."""
    return GlyphPMPGenerator(params, annotations, schema, fold, **kw).generate()


__all__ = ["CARDINAL_CELLS", "GlyphPMPGenerator", "generate_split", "tuple_name"]
