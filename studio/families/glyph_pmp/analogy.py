"""A : A′ :: B : ? analogies in VASR's form (VASR §3.1–3.2), valid by construction.

The record convention and the definitions (*differ in exactly one concept value*, a defensible
B′, *the same change*) are those of :mod:`studio.vet.analogy`.

For each puzzle a change (c, v1, v2) is drawn — a concept uniformly among those that still
supply changes, then one of its ordered value pairs — and two pairs (A, A′), (B, B′) are drawn
uniformly among the glyph pairs of the split's side that differ in exactly c: v1 → v2, all four
glyphs distinct. Distractors are chosen as VASR does (§3.2), ranked by the Jaccard similarity of
tag sets to B, ties broken by the Jaccard similarity of the *concepts* tagged and then by the
seeded generator:

- one *with the change but unlike B*: carrying v2 of c, lowest Jaccard first (at most
  ``CANDIDATES`` looked at, as VASR extracts a few dozen candidates);
- the rest *similar to B without the change*: not carrying v2, highest Jaccard first; when the
  neighbourhood of B (glyphs tagged with one of B's concepts) runs out, any other glyph of the
  side, drawn at random.

A candidate that :func:`studio.vet.analogy.foil_findings` flags never becomes a foil, and each
such rejection is counted by reason. With single-tag annotations (the public UA set) every glyph
carrying v2 is a defensible B′, so the "changed" slot is filled from the similar group. At most
``FOIL_VALUE_CAP`` foils share the same values of c, so that the key is not simply the odd one
out among the answers (glyphs with no tag of c say nothing about it and are not capped). The
key's position is uniform. ``params["answer_roles"]`` records, answer by answer, ``key``,
``similar`` or ``changed``.

**Symmetric answer sets** (``params.answer_sets == "symmetric"``, the default). VASR's
"changed" distractor carries the key's value v2, so the key is one of the two answers sharing a
value of c and a blind solver halves the choice; and a value that is never changed *to* only
ever appears on foils. So the answers are chosen as a set first, every answer a glyph that
differs in c alone from B or from a glyph like B, every answer's value one a change leads into
(issue 24). Glyphs differing in c alone form *classes* (their other tags equal); two designs,
the first the side's glyphs allow for the concept:

- **crossed** (I-RAVEN's tree; VASR's two distractor kinds at once): two classes S ∋ B and S′
  that disagree on a concept both carry, two values x, y of c, the answers {S, S′} × {x, y}
  (roles ``key``, ``variant``: B after the other change, ``crossed``: the other class's two).
  The example pair alone finds two answers with the key's value, B alone two answers that are B
  after one change; only the whole context finds the key. Needs glyphs tagged with several
  concepts (the image-feature set; not the shared UA set).
- **variants**: one class and ``FOILS + 1`` values (fewer, down to ``min_answers``, where the
  class holds fewer that a change leads into), the answers B after each change (roles ``key``,
  ``variant``). B alone is at chance: B's own value stays out of the set (its twin would be the
  one answer B alone rules out), so the class holds one value more than the set, except where
  ``min_answers`` of three or four leaves no other way, or no change from outside the set leads
  into a value (B alone then reads 1/3 or 1/2); never in a set of two. The example pair alone
  names the key's value — on single-tag annotations nothing can hide it (a second glyph with v2
  is a second B′), which the reports say.

Concepts whose side allows neither design are dry from the start, with the reason.
``VARIANT_SETS = False`` draws the design before issue 24 (foils carrying the set's other
values, most like B; every role ``similar``: 45 % answers-only on polysemic tags) for the
bench's same-run reference. ``answer_sets="ua"`` keeps VASR's recipe above.

Rejections are counted by reason: foil candidates ``foil-completes-intended`` and
``foil-emergent:change``; whole draws ``no-second-pair`` (no (B, B′) disjoint from (A, A′)),
``duplicate-instantiation`` (diverse sampling), ``too-few-valid-foils``. A change whose side
cannot supply two disjoint pairs is *dry* from the start; one that fails ``MAX_TUPLE_FAILS``
draws in a row becomes dry; when every change of a part is dry, ``GenerationShortfall`` names
them with the reason.

Split parameters: ``n``, ``ratios``, ``holdout`` (``none``; ``basic``: every annotation folder
split on its own, a glyph taking part through the folder of the tag it is used for; ``disjoint``:
train and val+test glyph sets disjoint), ``extrapolation`` (``tuples`` and ``concepts`` hold out
whole concepts — the rule is always ``change``; ``values`` holds out changes (c, v1, v2); with
hold-out ``none`` changes are kept disjoint too, as in the glyph PMP generator), ``sampling``
(``diverse`` never repeats (c, v1, v2, B, B′)), ``concepts``, ``seed``. Everything random comes
from one ``numpy.random.Generator`` seeded by (seed, fold), and every iteration order is fixed.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from itertools import accumulate
from typing import Any

import numpy as np

from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.core.verdict import Finding
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
from studio.vet.analogy import CHANGE, LAYOUT, analogy_findings, analogy_key_ok, foil_findings
from studio.vet.rules import RuleBook

FOILS = 3
CHANGED_FOILS = 1  # "with the change but unlike B"; the rest are "similar to B without it"
CANDIDATES = 40  # changed-group candidates looked at per puzzle (VASR extracts 20-40)
FOIL_VALUE_CAP = 2  # foils sharing the same values of c
MAX_TUPLE_FAILS = 80  # consecutive failed draws before a change is declared dry
PAIR_TRIES = 8  # draws of (B, B′) per puzzle before giving up
SET_TRIES = 6  # draws of a symmetric set's answer glyphs before giving up
PAIR_SAMPLE = 6  # example-pair glyphs per side of a group offered for a key (bounds the work)
#: symmetric sets: every answer is B after one change of c (issue 24); False draws foils only
#: carrying the set's values, most like B (the design before; the bench's same-run reference)
VARIANT_SETS = True

Change = tuple[str, str, str]  # (concept, v1, v2)
Group = tuple[tuple[GlyphKey, ...], tuple[GlyphKey, ...]]  # glyphs A-side, glyphs A′-side
Class = dict[str, tuple[GlyphKey, ...]]  # glyphs alike but for one concept: value → glyphs
Member = tuple[frozenset, Class]  # a class: its signature (the tags but c's) and its glyphs
Crossing = tuple[str, str, list[tuple[Member, Member]]]  # values x, y; the class pairs crossing
Keyable = tuple[frozenset, Class, list[str]]  # a class's signature, glyphs, keyable values


def change_name(t: Change) -> str:
    c, v1, v2 = t
    return f"{CHANGE}/{c}/{v1 or '(present)'}->{v2 or '(present)'}"


def rejection_reason(finding: Finding) -> str:
    """The rejection counter's name for a flagged foil (as the glyph PMP generator names them)."""
    if finding.check == "emergent":
        return f"foil-emergent:{finding.rule}"
    return finding.check if finding.check.startswith("foil-") else f"foil-{finding.check}"


def _by_sig(item: tuple[frozenset, Any]) -> list[tuple[str, str]]:
    return sorted(item[0])


def _into(options: Sequence[Change]) -> dict[str, set[str]]:
    """Per value, the values from which a change of ``options`` leads into it."""
    into: dict[str, set[str]] = {}
    for _c, v1, v2 in options:
        into.setdefault(v2, set()).add(v1)
    return into


def _conflict(first: frozenset, second: frozenset) -> bool:
    """Do two tag sets give a concept that both carry different values?"""
    a: dict[str, set[str]] = {}
    b: dict[str, set[str]] = {}
    for c, v in first:
        a.setdefault(c, set()).add(v)
    for c, v in second:
        b.setdefault(c, set()).add(v)
    return any(a[c] != b[c] for c in a.keys() & b.keys())


def _jaccard(a: frozenset, b: frozenset) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


class AnalogyGenerator(QuotaGenerator[Change]):
    """Builds one fold of an analogy split. ``run()`` yields (done, total) between puzzles (close
    the iterator to cancel); ``result`` holds the split afterwards."""

    name = staticmethod(change_name)
    max_fails = MAX_TUPLE_FAILS
    names_unmade = False  # a concept's failed draw is charged to one of its changes at random

    def __init__(
        self,
        params: SplitParams,
        annotations: TagIndex,
        schema: Schema,
        fold: int = 0,
        questions: Callable[[Puzzle, TagIndex, Schema], Sequence[Any]] | None = None,
    ) -> None:
        if params.layout != LAYOUT:
            raise StudioError(
                f"layout {params.layout!r} is not made by the analogy generator (use 'analogy')"
            )
        self.params = params
        self.ann = annotations
        self.schema = schema
        self.book = RuleBook(schema)
        self.fold = fold
        self.questions = questions
        self.rng = np.random.default_rng(np.random.SeedSequence([params.seed, fold]))
        self.result = SplitResult(params, fold, names_unmade=self.names_unmade)
        self._tags = {g: annotations.tags_of(g) for g in annotations.by_glyph}
        self._concepts = {g: frozenset(cs) for g, cs in annotations.by_glyph.items()}
        by_tags: dict[frozenset, list[GlyphKey]] = {}
        for g in sorted(self._tags):
            by_tags.setdefault(self._tags[g], []).append(g)
        self._by_tags = {t: tuple(gs) for t, gs in by_tags.items()}
        self._seen: set[tuple] = set()
        self._groups: dict[tuple[str, Change], list[Group]] = {}
        self._class_cache: dict[tuple[str, str], dict[frozenset, Class]] = {}
        #: per (side, concept, options left): the classes' keyable values, the crossings
        #: keyed by the options left: val and test share a side but retire changes apart
        self._keyable_cache: dict[tuple[str, str, tuple[Change, ...]], list[Keyable]] = {}
        self._crossed_cache: dict[tuple[str, str, tuple[Change, ...]], list[Crossing]] = {}
        self._sides = self._hold_out()
        self._changes = self._changes_by_side()

    # ---- set-up ----------------------------------------------------------------------------
    def _concept_ids(self) -> list[str]:
        p = self.params
        ids = [c.id for c in self.schema.concepts]
        wanted = set(p.concepts)
        return [c for c in ids if c in wanted] if wanted else ids

    def _hold_out(self) -> dict[str, GlyphSide]:
        """As the glyph PMP generator splits glyphs (the same glyphs held out)."""
        concepts = set(self._concept_ids())
        folders = {cv: ks for cv, ks in self.ann.folders.items() if cv[0] in concepts}
        return hold_out(self.params, folders, self.fold, self.rng)

    def _changes_by_side(self) -> dict[str, list[Change]]:
        p = self.params
        concepts = self._concept_ids()
        folders = self.ann.folders
        changes = []
        for c in concepts:  # only values some glyph carries: the others cannot even run dry
            values = [v for v in self.schema.concept(c).value_ids if (c, v) in folders]
            changes += [(c, v1, v2) for v1 in values for v2 in values if v1 != v2]
        train, ev = list(changes), list(changes)
        if p.extrapolation in ("tuples", "concepts"):
            present = [c for c in concepts if any(t[0] == c for t in changes)]
            n = len(present)
            k = max(1, round(n * p.holdout_fraction)) if n > 1 else 0
            held = {present[int(i)] for i in sorted(self.rng.permutation(n)[:k].tolist())}
            train = [t for t in changes if t[0] not in held]
            ev = [t for t in changes if t[0] in held]
        elif p.extrapolation == "tuple-folds":  # a change's problem type is its concept
            present = [c for c in concepts if any(t[0] == c for t in changes)]
            held = set(fold_group(present, p.seed, p.folds, self.fold))
            train = [t for t in changes if t[0] not in held]
            ev = [t for t in changes if t[0] in held]
        elif p.extrapolation == "values" or p.holdout == "none":
            frac = p.holdout_fraction
            ev = [t for t in changes if stable_fraction(p.seed, self.fold, CHANGE, *t) < frac]
            held = set(ev)
            train = [t for t in changes if t not in held]
        self.result.tuples = {
            "train": [change_name(t) for t in train],
            "val": [change_name(t) for t in ev],
            "test": [change_name(t) for t in ev],
        }
        return {"train": train, "eval": ev}

    def pairs(self, side_name: str, change: Change) -> list[Group]:
        """Glyph pairs of a side that differ in exactly c: v1 → v2, grouped by the tags they
        share: every x of a group pairs with every y of it. Cached."""
        key = (side_name, change)
        got = self._groups.get(key)
        if got is not None:
            return got
        c, v1, v2 = change
        side = self._sides[side_name]
        to = side.folder_sets.get((c, v2), frozenset())
        groups: dict[frozenset, list[GlyphKey]] = {}
        if to:
            for x in side.folder(c, v1):
                t = self._tags[x]
                if (c, v2) in t:
                    continue
                groups.setdefault((t - {(c, v1)}) | {(c, v2)}, []).append(x)
        out: list[Group] = []
        for target, xs in groups.items():  # folder order: deterministic
            ys = tuple(y for y in self._by_tags.get(target, ()) if y in to)
            if ys:
                out.append((tuple(xs), ys))
        self._groups[key] = out
        return out

    def _why_dry(self, side_name: str, change: Change) -> str | None:
        groups = self.pairs(side_name, change)
        if len(groups) >= 2:
            return None
        if len(groups) == 1 and len(groups[0][0]) >= 2 and len(groups[0][1]) >= 2:
            return None
        c, v1, v2 = change
        n = sum(len(xs) * len(ys) for xs, ys in groups)
        return (
            f"{n} glyph pair(s) on this side differ only in {c}: {v1!r} -> {v2!r}; "
            "two disjoint pairs are needed"
        )

    # ---- main loop -------------------------------------------------------------------------
    def _open_part(self, part: str, side_name: str) -> PartLoop[Change]:
        """The part's quota loop pieces (:func:`fill_quotas`): the changes dry from the start
        (and, for symmetric answer sets, the concepts with too few key-able values), a draw of
        a puzzle of a concept drawn uniformly among the live ones, and the retiring."""
        dry: dict[str, str] = {}
        by_concept: dict[str, list[Change]] = {}
        for t in self._changes[side_name]:
            why = self._why_dry(side_name, t)
            if why:
                dry[change_name(t)] = why
            else:
                by_concept.setdefault(t[0], []).append(t)
        symmetric = self.params.answer_sets == "symmetric"
        if symmetric:
            least = self.params.min_answers if VARIANT_SETS else FOILS + 1
            for c in sorted(by_concept):
                keys = sorted({t[2] for t in by_concept[c]})
                if len(keys) < least:
                    for t in by_concept.pop(c):
                        dry[change_name(t)] = (
                            f"only {len(keys)} value(s) of {c} can be changed to on this "
                            f"side ({', '.join(keys)}); a symmetric answer set needs {least}"
                        )
                elif VARIANT_SETS and not self._symmetric_possible(side_name, c, by_concept[c]):
                    for t in by_concept.pop(c):
                        dry[change_name(t)] = (
                            f"no {max(least, 3)} glyphs of this side that differ from each "
                            f"other in {c} alone carry values a change leads into ({least} "
                            "answers, and a B whose own value is none of a set of two), nor do "
                            "two classes of such glyphs cross (B and its answers must: tag "
                            "glyphs alike in every other concept)"
                        )

        def draw(made: int) -> tuple[Puzzle | None, str, Change] | None:
            if not by_concept:
                return None
            concepts = sorted(by_concept)
            c = concepts[int(self.rng.integers(len(concepts)))]
            options = by_concept[c]
            if symmetric and VARIANT_SETS:
                return self._build_symmetric(c, options, part, side_name, made)
            if symmetric:
                return self._build_values(c, options, part, side_name, made)
            t = options[int(self.rng.integers(len(options)))]
            return (*self._build(t, part, side_name, made), t)

        def retire(t: Change) -> None:
            options = by_concept[t[0]]
            options.remove(t)
            if not options:
                del by_concept[t[0]]

        return dry, draw, retire

    def generate(self) -> SplitResult:
        for _ in self.run():
            pass
        return self.result

    # ---- one puzzle ----------------------------------------------------------------------------
    def _draw_pair(self, groups: list[Group]) -> tuple[GlyphKey, GlyphKey]:
        sizes = [len(xs) * len(ys) for xs, ys in groups]
        bounds = list(accumulate(sizes))
        r = int(self.rng.integers(bounds[-1]))
        gi = bisect_right(bounds, r)
        r -= bounds[gi - 1] if gi else 0
        xs, ys = groups[gi]
        return xs[r // len(ys)], ys[r % len(ys)]

    def _classes(self, side_name: str, c: str) -> dict[frozenset, Class]:
        """The side's glyphs carrying one value of ``c``, in *classes* by the rest of their
        tags (value → glyphs): two glyphs of a class differ in exactly c (the strict sense of
        :mod:`studio.vet.analogy`). Cached."""
        got = self._class_cache.get((side_name, c))
        if got is not None:
            return got
        side = self._sides[side_name]
        out: dict[frozenset, dict[str, list[GlyphKey]]] = {}
        for v in self.schema.concept(c).value_ids:
            for g in side.folder(c, v):
                if len(self.ann.values(g, c)) == 1:
                    out.setdefault(self._tags[g] - {(c, v)}, {}).setdefault(v, []).append(g)
        classes = {
            sig: {v: tuple(gs) for v, gs in by.items()}
            for sig, by in sorted(out.items(), key=_by_sig)
        }
        self._class_cache[(side_name, c)] = classes
        return classes

    def _keyable(self, side_name: str, c: str, options: Sequence[Change]) -> list[Keyable]:
        """Per class of at least three values: the values a B of the class could be changed
        into (a value u of the class into which some change of ``options`` leads from another
        value of the class, which B would carry)."""
        memo = (side_name, c, tuple(options))
        got = self._keyable_cache.get(memo)
        if got is not None:
            return got
        into = _into(options)
        out = []
        for sig, by in self._classes(side_name, c).items():
            if len(by) < 3:
                continue
            keyable = sorted(
                u
                for u in by
                if any(self._pairable(side_name, c, sig, by, v, u) for v in into.get(u, ()))
            )
            if len(keyable) >= 2:
                out.append((sig, by, keyable))
        self._keyable_cache[memo] = out
        return out

    def _pairable(self, side_name: str, c: str, sig: frozenset, by: Class, v1: str, u: str) -> bool:
        """Could a B of this class carrying ``v1`` be changed into ``u`` with an example pair
        besides the answers? A pair of another class always leaves the answers alone; one of
        this class needs a second glyph of v1 (B is one) and of u (its answer is one). By
        counts, before any glyph is drawn, so the values that can be keys are known first."""
        if v1 not in by or v1 == u:
            return False
        for xs, _ys in self.pairs(side_name, (c, v1, u)):
            if self._tags[xs[0]] - {(c, v1)} != sig:
                return True
            if len(by[v1]) >= 2 and len(by[u]) >= 2:
                return True
        return False

    def _build_symmetric(
        self, c: str, options: list[Change], part: str, side_name: str, index: int
    ) -> tuple[Puzzle | None, str, Change]:
        """A symmetric answer set of B's own variants (issue 24). Every answer is a glyph that
        differs from B in c alone or from a glyph like B in c alone, and every answer's value
        could have been the key, so neither the answers alone nor B alone can tell it (before,
        foils merely *similar* to B left the key the one answer shaped like a pair's member:
        45 % answers-only on polysemic tags). Two designs, the first that the glyphs allow:

        - **crossed** (I-RAVEN's tree, VASR's two distractor kinds at once): two classes S ∋ B
          and S′ that disagree on a concept both carry, two values x, y of c; the answers
          are {S, S′} × {x, y}. The pair alone names the key's value (two answers carry it),
          B alone names its class (two answers are B after one change): each view halves the
          choice, and only the whole context finds the key. Needs glyphs tagged with several
          concepts.
        - **variants**: one class, ``FOILS + 1`` values (down to ``min_answers``): B after
          each of them. B alone is at
          chance; the example pair alone names the key's value (one answer carries it).

        Returns the change it used (or tried last)."""
        crossed = self._crossed_choices(side_name, c, options)
        if crossed:
            return self._build_crossed(c, options, crossed, part, side_name, index)
        least = self.params.min_answers
        sets = [
            (sig, by, k)
            for sig, by, k in self._keyable(side_name, c, options)
            if _variant_count(by, k, least) >= least
        ]
        if not sets:
            return None, "no-variant-set", options[int(self.rng.integers(len(options)))]
        rng = self.rng
        sig, by, keyable = sets[int(rng.integers(len(sets)))]
        k = _variant_count(by, keyable, least)
        values = sorted(keyable[int(i)] for i in rng.permutation(len(keyable))[:k])
        cells = [((sig, by), w) for w in values]
        return self._build_exchangeable(c, options, cells, values, (), part, side_name, index)

    def _crossed_choices(self, side_name: str, c: str, options: Sequence[Change]) -> list[Crossing]:
        """The value pairs {x, y} of c that two classes can cross, with those pairs of
        classes: each class holds both values and a third from which a change of ``options``
        leads into each, and the two disagree on a concept both carry (else the other class's
        glyph with the key's value would be a second B′)."""
        memo = (side_name, c, tuple(options))
        got = self._crossed_cache.get(memo)
        if got is not None:
            return got
        into = _into(options)
        by_pair: dict[tuple[str, str], list[tuple[frozenset, Class]]] = {}
        for sig, by, keyable in self._keyable(side_name, c, options):
            for i, x in enumerate(keyable):
                for y in keyable[i + 1 :]:
                    rest = set(by) - {x, y}
                    if rest & into.get(x, set()) and rest & into.get(y, set()):
                        by_pair.setdefault((x, y), []).append((sig, by))
        out = []
        for (x, y), classes in sorted(by_pair.items()):
            crossing = [
                (first, second)
                for i, first in enumerate(classes)
                for second in classes[i + 1 :]
                if _conflict(first[0], second[0])
            ]
            if crossing:
                out.append((x, y, crossing))
        self._crossed_cache[memo] = out
        return out

    def _build_crossed(
        self,
        c: str,
        options: Sequence[Change],
        choices: Sequence[Crossing],
        part: str,
        side_name: str,
        index: int,
    ) -> tuple[Puzzle | None, str, Change]:
        """The crossed design of :meth:`_build_symmetric`: the values and the two classes
        chosen, then the answers, then the key among them (:meth:`_build_exchangeable`). The
        example pair comes from a third class, so its own tags say nothing of which of the two
        is B's."""
        rng = self.rng
        x, y, crossing = choices[int(rng.integers(len(choices)))]
        first, second = crossing[int(rng.integers(len(crossing)))]
        cells = [(first, x), (first, y), (second, x), (second, y)]
        avoid = (first[0], second[0])
        return self._build_exchangeable(c, options, cells, [x, y], avoid, part, side_name, index)

    def _symmetric_possible(self, side_name: str, c: str, options: Sequence[Change]) -> bool:
        """Can this side build either design of :meth:`_build_symmetric` for ``c``?"""
        least = self.params.min_answers
        return bool(self._crossed_choices(side_name, c, options)) or any(
            _variant_count(by, k, least) >= least
            for _, by, k in self._keyable(side_name, c, options)
        )

    def _build_exchangeable(
        self,
        c: str,
        options: Sequence[Change],
        cells: Sequence[tuple[Member, str]],
        values: Sequence[str],
        avoid: tuple[frozenset, ...],
        part: str,
        side_name: str,
        index: int,
    ) -> tuple[Puzzle | None, str, Change]:
        """Answers first, the key last (issue 24). A glyph is drawn for every answer cell (a
        class and a value of c); then, for every cell, whether it could be the key — a B of
        its class carrying another value (none of ``values`` where the class allows: B after
        no change would be the answer B alone rules out) and an example pair (A, A′) of that
        change, from no class in ``avoid``, none of them an answer. A draw in which some cell
        could not be the key is refused whole, before any key is chosen; the key is then
        drawn uniformly among the cells, then its B and its pair. So which answer is the key
        never depends on which key was easier to build (a review found a key value drawn,
        then its pair failing and the draw being redrawn, kept some values off the key)."""
        rng = self.rng
        reason = "no-exchangeable-set"
        into = _into(options)
        for _ in range(SET_TRIES):
            used: set[GlyphKey] = set()
            picked = [self._pick(member[1][v], used) for member, v in cells]
            answers = [g for g in picked if g is not None]
            if len(answers) < len(cells):
                return None, "too-few-valid-foils", options[int(rng.integers(len(options)))]
            ways = [
                self._ways_to_key(c, member, u, values, into, used, avoid, side_name)
                for member, u in cells
            ]
            if not all(ways):
                continue
            k = int(rng.integers(len(cells)))
            (sig_b, _by), v2 = cells[k]
            v1, bs, pairs = ways[k][int(rng.integers(len(ways[k])))]
            b = bs[int(rng.integers(len(bs)))]
            free = [(a, a2) for a, a2 in pairs if b not in (a, a2)]
            a, a2 = free[int(rng.integers(len(free)))]
            t = (c, v1, v2)
            b2 = answers[k]
            if self.params.sampling == "diverse" and (c, v1, v2, b, b2) in self._seen:
                return None, "duplicate-instantiation", t
            roles = [
                "variant" if member[0] == sig_b else "crossed"
                for i, (member, _v) in enumerate(cells)
                if i != k
            ]
            foils = [g for i, g in enumerate(answers) if i != k]
            puzzle, reason = self._assemble(t, part, index, (a, a2, b, b2), foils, roles, True)
            return puzzle, reason, t
        return None, reason, options[int(rng.integers(len(options)))]

    def _ways_to_key(
        self,
        c: str,
        member: Member,
        u: str,
        values: Sequence[str],
        into: Mapping[str, set[str]],
        used: set[GlyphKey],
        avoid: tuple[frozenset, ...],
        side_name: str,
    ) -> list[tuple[str, list[GlyphKey], list[tuple[GlyphKey, GlyphKey]]]]:
        """The ways the answer of ``member``'s class with value ``u`` could be the key: per
        B's value v1 (none of ``values`` where any is possible, and never in a set of two: B's
        twin would be the one answer B alone rules out), the free Bs and the free
        example pairs of the change v1 → u. Bounded: a few pairs per group are enough to
        say it can and to draw one."""
        _sig, by = member
        froms = sorted(v for v in into.get(u, ()) if v in by and v != u)
        outside = [v for v in froms if v not in values]
        out = []
        # B's twin among the answers only where the set cannot avoid it (_variant_count)
        for v1 in outside or (froms if len(values) >= 3 else []):
            bs = [g for g in by[v1] if g not in used]
            if not bs:
                continue
            pairs: list[tuple[GlyphKey, GlyphKey]] = []
            for xs, ys in self.pairs(side_name, (c, v1, u)):
                if avoid and self._tags[xs[0]] - {(c, v1)} in avoid:
                    continue
                free_x = self._sample([x for x in xs if x not in used])
                free_y = self._sample([y for y in ys if y not in used])
                pairs += [(x, y) for x in free_x for y in free_y]
            # a B and a pair that does not use it
            if any(any(b not in pair for pair in pairs) for b in bs[:2]):
                out.append((v1, bs, pairs))
        return out

    def _sample(self, glyphs: list[GlyphKey]) -> list[GlyphKey]:
        """At most ``PAIR_SAMPLE`` of these, drawn uniformly (all of them when fewer)."""
        if len(glyphs) <= PAIR_SAMPLE:
            return glyphs
        return [glyphs[int(i)] for i in self.rng.choice(len(glyphs), PAIR_SAMPLE, replace=False)]

    def _pick(self, glyphs: Sequence[GlyphKey], used: set[GlyphKey]) -> GlyphKey | None:
        """A glyph of these, none of ``used``, drawn uniformly."""
        free = [g for g in glyphs if g not in used]
        if not free:
            return None
        g = free[int(self.rng.integers(len(free)))]
        used.add(g)
        return g

    def _build_values(
        self, c: str, options: list[Change], part: str, side_name: str, index: int
    ) -> tuple[Puzzle | None, str, Change]:
        """A puzzle whose answers carry ``FOILS + 1`` distinct values of ``c`` that could each
        be the key, foils most like B (before issue 24's variant sets; kept for reference in
        the bench); returns the change it used (or tried last)."""
        keys = sorted({t[2] for t in options})
        if len(keys) < FOILS + 1:
            return None, "no-values", options[0]
        side = self._sides[side_name]

        def admissible(u: str, values: Sequence[str]) -> list[Change]:
            # changes into u that leave a glyph for every other value's foil (A and B carry v1)
            return [
                t
                for t in options
                if t[2] == u and (t[1] not in values or len(side.folder(c, t[1])) > 2)
            ]

        values: list[str] = []
        for i in self.rng.permutation(len(keys)):
            trial = [*values, keys[int(i)]]
            if all(admissible(u, trial) for u in trial):
                values = trial
                if len(values) == FOILS + 1:
                    break
        if len(values) < FOILS + 1:
            return None, "asymmetric-values", options[int(self.rng.integers(len(options)))]
        values.sort()
        key_value = values[int(self.rng.integers(FOILS + 1))]
        into = admissible(key_value, values)
        t = into[int(self.rng.integers(len(into)))]
        reason = "no-values"
        for _ in range(SET_TRIES):
            puzzle, reason = self._build(t, part, side_name, index, values)
            if puzzle is not None:
                return puzzle, "", t
        return None, reason, t

    def _build(
        self,
        t: Change,
        part: str,
        side_name: str,
        index: int,
        answer_values: Sequence[str] | None = None,
    ) -> tuple[Puzzle | None, str]:
        c, v1, v2 = t
        groups = self.pairs(side_name, t)
        a, a2 = self._draw_pair(groups)
        diverse = self.params.sampling == "diverse"
        reason = "no-second-pair"
        b = b2 = None
        for _ in range(PAIR_TRIES):
            x, y = self._draw_pair(groups)
            if x == a or y == a2:
                reason = "no-second-pair"
                continue
            if diverse and (c, v1, v2, x, y) in self._seen:
                reason = "duplicate-instantiation"
                continue
            b, b2 = x, y
            break
        if b is None or b2 is None:
            return None, reason
        side = self._sides[side_name]
        banned = frozenset((a, a2, b, b2))
        if answer_values is None:
            picked = self._foils(t, b, banned, side)
        else:
            picked = self._symmetric_foils(t, b, banned, side, answer_values)
        if picked is None:
            return None, "too-few-valid-foils"
        foils, roles = picked
        return self._assemble(
            t, part, index, (a, a2, b, b2), foils, roles, answer_values is not None
        )

    def _assemble(
        self,
        t: Change,
        part: str,
        index: int,
        glyphs: tuple[GlyphKey, GlyphKey, GlyphKey, GlyphKey],
        foils: list[GlyphKey],
        roles: list[str],
        shuffle: bool,
    ) -> tuple[Puzzle | None, str]:
        """The puzzle of A, A′, B, B′ and these foils, the key at a uniform position, vetted."""
        c, v1, v2 = t
        a, a2, b, b2 = glyphs
        diverse = self.params.sampling == "diverse"
        if shuffle:  # in the set's sorted value order the key stood out
            order = [int(i) for i in self.rng.permutation(len(foils))]
            foils, roles = [foils[i] for i in order], [roles[i] for i in order]
        pos = int(self.rng.integers(len(foils) + 1))
        answers = list(foils)
        answers.insert(pos, b2)
        roles.insert(pos, "key")
        puzzle = Puzzle(
            id=f"{part}-{index:05d}",
            family=self.params.family,
            layout=LAYOUT,
            rule=CHANGE,
            concept=c,
            shift=False,
            context=((a, a2), (b,)),
            answers=tuple(answers),
            key=pos,
            split=part,
            seed=self.params.seed,
            values=((v1, v2),),
            params={"fold": self.fold, "answer_roles": roles},
        )
        if not analogy_key_ok(puzzle, self.ann, self.book):
            return None, "key-does-not-complete"
        found = analogy_findings(puzzle, self.ann, self.book)
        if found:
            return None, rejection_reason(found[0])
        if self.questions is not None:
            puzzle = replace(puzzle, questions=tuple(self.questions(puzzle, self.ann, self.schema)))
        if diverse:
            self._seen.add((c, v1, v2, b, b2))
        return puzzle, ""

    def _ranked(self, candidates: Sequence[GlyphKey], b: GlyphKey, similar: bool) -> list[GlyphKey]:
        """Candidates by Jaccard similarity of tag sets to B (descending when ``similar``),
        then of tagged concepts, then by the seeded generator."""
        if not candidates:
            return []
        tb, cb = self._tags[b], self._concepts[b]
        jt = np.array([_jaccard(self._tags[g], tb) for g in candidates])
        jc = np.array([_jaccard(self._concepts[g], cb) for g in candidates])
        tie = self.rng.random(len(candidates))
        order = np.lexsort((tie, -jc, -jt)) if similar else np.lexsort((tie, jc, jt))
        return [candidates[int(i)] for i in order]

    def _foils(
        self, change: Change, b: GlyphKey, banned: frozenset[GlyphKey], side: GlyphSide
    ) -> tuple[list[GlyphKey], list[str]] | None:
        c, _v1, v2 = change
        changed_set = side.folder_sets.get((c, v2), frozenset())
        foils: list[GlyphKey] = []
        roles: list[str] = []
        per_value: Counter[frozenset[str]] = Counter()
        rejections = self.result.rejections

        def offer(g: GlyphKey, role: str) -> bool:
            cvals = self.ann.values(g, c)
            if cvals and per_value[cvals] >= FOIL_VALUE_CAP:
                return False
            found = foil_findings(self.ann, self.book, change, b, g, 0)
            if found:
                rejections[rejection_reason(found[0])] += 1
                return False
            foils.append(g)
            roles.append(role)
            per_value[cvals] += 1
            return True

        # with the change but unlike B
        changed = [g for g in side.folder(c, v2) if g not in banned]
        got = 0
        for g in self._ranked(changed, b, similar=False)[:CANDIDATES]:
            if got == CHANGED_FOILS:
                break
            if offer(g, "changed"):
                got += 1
        # similar to B without the change: B's neighbourhood first, then anything else
        near: set[GlyphKey] = set()
        for d in sorted(self._concepts[b]):
            near |= side.by_concept.get(d, frozenset())
        near_list = sorted(near - banned - changed_set)
        for g in self._ranked(near_list, b, similar=True):
            if len(foils) == FOILS:
                break
            offer(g, "similar")
        if len(foils) < FOILS:
            pool = side.glyphs
            n = len(pool)
            start = int(self.rng.integers(n)) if n else 0
            for j in range(n):
                if len(foils) == FOILS:
                    break
                g = pool[(start + j) % n]
                if g in banned or g in near or g in changed_set or g in foils:
                    continue
                offer(g, "similar")
        if len(foils) < FOILS:
            return None
        return foils, roles

    def _symmetric_foils(
        self,
        change: Change,
        b: GlyphKey,
        banned: frozenset[GlyphKey],
        side: GlyphSide,
        answer_values: Sequence[str],
    ) -> tuple[list[GlyphKey], list[str]] | None:
        """One foil per answer value other than the key's (v2): the glyph carrying it, and no
        other value of the set, most like B that passes vetting."""
        c, _v1, v2 = change
        carriers = {v: side.folder_sets.get((c, v), frozenset()) for v in answer_values}
        foils: list[GlyphKey] = []
        for w in answer_values:
            if w == v2:
                continue
            rivals = frozenset().union(*(carriers[u] for u in answer_values if u != w))
            pool = [g for g in side.folder(c, w) if g not in banned and g not in rivals]
            chosen = None
            for g in self._ranked(pool, b, similar=True)[:CANDIDATES]:
                found = foil_findings(self.ann, self.book, change, b, g, 0)
                if found:
                    self.result.rejections[rejection_reason(found[0])] += 1
                    continue
                chosen = g
                break
            if chosen is None:
                return None
            banned = banned | {chosen}
            foils.append(chosen)
        return foils, ["similar"] * len(foils)


def generate_analogies(
    params: SplitParams, annotations: TagIndex, schema: Schema, fold: int = 0, **kw: Any
) -> SplitResult:
    """One fold of an analogy split, all at once (the CLI and tests; the GUI iterates ``run()``)."""
    return AnalogyGenerator(params, annotations, schema, fold, **kw).generate()


__all__ = ["AnalogyGenerator", "change_name", "generate_analogies", "rejection_reason"]


def _variant_count(by: Mapping[str, Any], keyable: Sequence[str], least: int) -> int:
    """How many answers a variants set of this class holds: as many values as a change leads
    into, at most four, and fewer than the class holds where that leaves ``least`` or more,
    so that B's own value stays out of the set. Were it in, B after no change (B's twin)
    would be the one answer B alone rules out: B alone then reads 1/3 with four answers, 1/2
    with three, and with two it gives the key away (on the UA set's two-answer analogies B
    alone read 0.65 against 0.50; over sets of two to four, 0.45–0.50 against 0.36–0.38). So
    a twin is let in only where the minimum asked for (three or four) leaves no other way,
    and never into a set of two: such a class holds no set (0 here). A set of three or four
    may still take a twin for a value no change from outside the set leads into
    (:meth:`_ways_to_key`)."""
    k = min(FOILS + 1, len(keyable))
    if k < len(by):
        return k
    if k - 1 >= least:
        return k - 1
    return k if k >= 3 else 0
