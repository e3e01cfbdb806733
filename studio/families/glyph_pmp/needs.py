"""What the annotators should tag next: the glyphs each dry tuple lacks (the annotation-needs
report).

A symmetric answer set (:mod:`studio.families.glyph_pmp.generator`) needs ``min_answers`` values
of the intended concept that could each be the key, so a thinly annotated concept runs dry even
where UA's biased foil pool would have filled it. This report closes the loop with the
annotators: for each tuple of a split that is dry *for lack of glyphs*, on each side of the
glyph hold-out, the values that are closest to becoming key-able and how many glyphs each still
lacks — so the next round of tagging fills exactly what the generator is missing.

How a shortfall is counted. A row instantiation needs, per value, as many glyphs as the rows use
it (:meth:`GlyphPMPGenerator.requirement`); a value is key-able when some instantiation ending
in it has them all. For a value that is not, its *deficit* is the smallest total of missing
glyphs over the instantiations that would make it key-able, and the values with the smallest
deficits are the ones asked for, as many as the tuple is short of ``min_answers``. With the
``disjoint`` hold-out the count is of glyphs *of that side*: a glyph's side is a function of the
glyph alone (:func:`~studio.families.glyph_pmp.split.glyph_side`), known before anyone tags it and
never changed by other tags, so "3 more held-out glyphs" means three glyphs the tagger's View ▸
Only held-out glyphs shows, and the count falls by one with each. With ``basic`` (each folder
split on its own) a count is of glyphs to tag anywhere, enough that the folder's split gives the
side its share.
A union needs glyphs carrying both values; such a value reads ``a+b``.

A tuple with values enough that no symmetric set can build (without shift: the rows of one
value use the glyphs another's foil needs) is listed with the glyphs the cheapest set lacks
(:meth:`GlyphPMPGenerator.set_shortfall`). Tuples that fail for other reasons (every candidate
foil completes a rule, a value that completes another's rows in every set, values asymmetric
under shift) are not listed: more glyphs of the same kind would not help.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from studio.core.schema import Rule, Schema
from studio.core.tagindex import TagIndex
from studio.families.glyph_pmp.generator import ANSWERS, GlyphPMPGenerator, tuple_name
from studio.generate.params import SplitParams


@dataclass(frozen=True)
class ValueNeed:
    """One value a dry tuple lacks: ``more`` glyphs to tag (project-wide), having ``have``."""

    concept: str
    value: str
    have: int
    more: int

    def to_json(self) -> dict[str, Any]:
        return {"concept": self.concept, "value": self.value, "have": self.have, "more": self.more}


@dataclass(frozen=True)
class TupleNeed:
    """A tuple that is dry on one side for lack of glyphs, and what would mend it."""

    tuple: str
    side: str  # train or eval
    keyable: tuple[str, ...]
    values: tuple[ValueNeed, ...]
    #: False when the schema's values cannot give ``answers`` key-able ones, however many
    #: glyphs are tagged (e.g. a progression over a three-value order has two possible keys)
    mendable: bool = True
    #: the key-able values a set needs (the split's ``min_answers``)
    answers: int = ANSWERS

    def message(self) -> str:
        n = self.answers
        have = f"{self.tuple} ({self.side}): {len(self.keyable)} of {n} key-able values"
        if len(self.keyable) >= n:  # values enough, but no set leaves a glyph for each foil
            have = (
                f"{self.tuple} ({self.side}): {len(self.keyable)} key-able values, but the rows "
                f"of one use glyphs another's foil needs, or every glyph of a value carries "
                f"another of the set (an answer's glyph carries its value alone)"
            )
        if not self.mendable:
            return f"{have}; the schema's values cannot give {n}, whatever is tagged"
        asks = ", ".join(f"{_shown(v.value)} +{v.more}" for v in self.values)
        return f"{have}; tag {asks}"

    def to_json(self) -> dict[str, Any]:
        return {
            "tuple": self.tuple,
            "side": self.side,
            "keyable": list(self.keyable),
            "mendable": self.mendable,
            "values": [v.to_json() for v in self.values],
        }


def _shown(value: str) -> str:
    return value if value else "(present)"


@dataclass
class NeedsReport:
    tuples: list[TupleNeed] = field(default_factory=list)
    #: the split's hold-out: with ``disjoint`` the eval side's counts are of held-out glyphs
    holdout: str = "none"
    #: the key-able values a tuple needs (the split's ``min_answers``)
    answers: int = ANSWERS

    def per_value_side(self) -> dict[tuple[str, str], dict[str, int]]:
        """(concept, value) → side → glyphs to tag on that side: the most any dry tuple of the
        side asks for (one glyph serves every tuple of its value on its side)."""
        out: dict[tuple[str, str], dict[str, int]] = {}
        for t in self.tuples:
            for v in t.values:
                for part in v.value.split("+"):
                    sides = out.setdefault((v.concept, part), {})
                    sides[t.side] = max(sides.get(t.side, 0), v.more)
        return dict(sorted(out.items()))

    def per_value(self) -> dict[tuple[str, str], int]:
        """(concept, value) → glyphs to tag: per side the most any dry tuple asks for, summed
        over the sides where the hold-out keeps their glyphs apart."""
        if self.holdout != "disjoint":
            return {cv: max(s.values()) for cv, s in self.per_value_side().items()}
        return {cv: sum(s.values()) for cv, s in self.per_value_side().items()}

    def side_text(self, concept: str, value: str) -> str:
        """How a value's count splits over the sides, for a tooltip or a report line: "2
        held-out, 1 train"; empty without the ``disjoint`` hold-out."""
        if self.holdout != "disjoint":
            return ""
        sides = self.per_value_side().get((concept, value), {})
        words = {"eval": "held-out", "train": "train"}
        return ", ".join(f"{sides[s]} {words[s]}" for s in ("eval", "train") if sides.get(s))

    def tuples_of(self, concept: str, value: str) -> list[str]:
        return sorted(
            {
                t.tuple
                for t in self.tuples
                for v in t.values
                if v.concept == concept and value in v.value.split("+")
            }
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "answers": self.answers,
            "tuples": [t.to_json() for t in self.tuples],
            "values": [
                {"concept": c, "value": v, "more": n} for (c, v), n in self.per_value().items()
            ],
        }


def _project_wide(params: SplitParams, side: str, have: int, on_side: int, short: int) -> int:
    """Glyphs to tag so that a side holds ``short`` more than its ``on_side``: for ``basic``
    hold-out (each folder split on its own, ``round(n × (1 − f))`` to train) glyphs anywhere,
    enough for the side's share; for ``disjoint`` glyphs of the side itself (a glyph's side is
    its own, :func:`glyph_side`), and without hold-out any glyph: one for one."""
    if params.holdout in ("none", "disjoint"):
        return short
    f = params.holdout_fraction
    if params.holdout == "basic":

        def count(n: int) -> int:
            train = round(n * (1 - f))
            return train if side == "train" else n - train

        more = short
        while count(have + more) < on_side + short:
            more += 1
        return more
    raise ValueError(f"unknown hold-out {params.holdout!r}")


def annotation_needs(
    params: SplitParams, annotations: TagIndex, schema: Schema, fold: int = 0
) -> NeedsReport:
    """Dry tuples of the split ``params`` describes and the glyphs each lacks (module
    docstring). Only symmetric answer sets are considered (UA's pool needs fewer values)."""
    from dataclasses import replace

    if params.answer_sets != "symmetric":
        params = replace(params, answer_sets="symmetric")
    gen = GlyphPMPGenerator(params, annotations, schema, fold)
    report = NeedsReport(holdout=params.holdout, answers=params.min_answers)
    if params.layout in ("odd-one-out", "analogy"):
        return report  # their sets need two values / changes: not counted here yet
    counts = params.counts()
    wanted_sides = [
        name
        for name, n in (("train", counts["train"]), ("eval", counts["val"] + counts["test"]))
        if n > 0
    ]
    for side_name in wanted_sides:
        side = gen.side("train" if side_name == "train" else "test")
        seen: set[str] = set()
        for t in gen.tuples(side_name):
            name = tuple_name(t)
            if name in seen:
                continue
            seen.add(name)
            rule, concept, shift = t
            rc = gen.book.get(concept, rule)
            if rc is None:
                continue
            keyable = gen.key_values(rc, side_name, shift)
            least = params.min_answers
            if len(keyable) >= least:
                if shift or rule == Rule.UNION.value:
                    continue
                lacks = gen.set_shortfall(rc, side_name, keyable)
                if lacks:  # None: a value completes another's rows, which glyphs do not mend
                    asked = _asks(params, annotations, side, side_name, concept, lacks)
                    report.tuples.append(
                        TupleNeed(name, side_name, tuple(keyable), asked, answers=least)
                    )
                continue
            deficits: dict[str, tuple[int, Counter[str]]] = {}
            for inst in gen.candidate_instantiations(rc):
                if rc.rule is Rule.CONSTANT and not shift and inst[0] == "none":
                    continue
                if not rc.negate and rc.rule is Rule.CONSTANT and inst[0] == "none":
                    continue
                if rc.rule is Rule.UNION:
                    a, b = inst
                    both = side.folder_sets.get((concept, a), frozenset()) & side.folder_sets.get(
                        (concept, b), frozenset()
                    )
                    short = Counter({f"{a}+{b}": max(0, 1 - len(both))})
                else:
                    need = gen.requirement(rc, inst, shift)
                    short = Counter({v: n - len(side.folder(concept, v)) for v, n in need.items()})
                    short = +short  # only the positive shortfalls
                total = sum(short.values())
                for kv in gen.key_value(rc, inst):
                    if kv in keyable:
                        continue
                    got = deficits.get(kv)
                    if got is None or total < got[0]:
                        deficits[kv] = (total, short)
            wanted = least - len(keyable)
            if len(deficits) < wanted:
                report.tuples.append(
                    TupleNeed(name, side_name, tuple(keyable), (), False, answers=least)
                )
                continue
            best = sorted(deficits.items(), key=lambda kv: (kv[1][0], kv[0]))[:wanted]
            asks: Counter[str] = Counter()
            for _kv, (_total, short) in best:
                for v, n in short.items():
                    asks[v] = max(asks[v], n)
            values = _asks(params, annotations, side, side_name, concept, asks)
            report.tuples.append(TupleNeed(name, side_name, tuple(keyable), values, answers=least))
    return report


def _asks(
    params: SplitParams,
    annotations: TagIndex,
    side: Any,
    side_name: str,
    concept: str,
    asks: Mapping[str, int],
) -> tuple[ValueNeed, ...]:
    """The values to ask for, from the glyphs of the side each lacks, as counts to tag."""
    return tuple(
        ValueNeed(
            concept,
            v,
            have=_have(annotations, concept, v),
            more=_project_wide(
                params, side_name, _have(annotations, concept, v), _on_side(side, concept, v), n
            ),
        )
        for v, n in sorted(asks.items())
    )


def _on_side(side: Any, concept: str, value: str) -> int:
    sets = [side.folder_sets.get((concept, p), frozenset()) for p in value.split("+")]
    return len(frozenset.intersection(*sets))


def _have(annotations: TagIndex, concept: str, value: str) -> int:
    parts = value.split("+")
    sets = [frozenset(annotations.folder(concept, p)) for p in parts]
    return len(frozenset.intersection(*sets))


def needs_by_value(report: NeedsReport) -> Mapping[tuple[str, str], int]:
    """The tagger's marker: glyphs to tag per (concept, value)."""
    return report.per_value()


def project_annotations(glyphs: Iterable[Any], tags: Iterable[Any]) -> TagIndex:
    """The tags a split of a project would be made from: those of glyphs that have (or may
    still get) an image — ``glyphs`` are the project's records, ``tags`` its tag records."""
    shown = {g.key for g in glyphs if g.status not in ("uncovered", "missing")}
    return TagIndex.from_tags((t.key, t.concept, t.value) for t in tags if t.key in shown)


__all__ = [
    "NeedsReport",
    "TupleNeed",
    "ValueNeed",
    "annotation_needs",
    "needs_by_value",
    "project_annotations",
]
