"""When a row satisfies a rule, and when rows complete a problem (DESIGN.md, "Row satisfies rule").

Each glyph carries a *set* of values per concept, so a row may satisfy a rule in several ways.
``row_instantiations`` returns every way — an *instantiation* — as a hashable value:

- constant: the shared value ``v``;
- progression: the ordered triple ``(v1, v2, v3)`` (or n-tuple, for a 1×n sequence);
- arithmetic: the ordered triple ``(v1, v2, v3)`` with v3 = v1 + v2 or v3 = v1 − v2;
- dist3: the frozenset of the three distinct values;
- union: the frozenset ``{a, b}`` with a carried by g1, b by g2 (a ≠ b) and both by g3.

Rows complete a problem (``complete``) when every row satisfies the same rule over the same
concept, and, without context shift, with the same instantiation in every row. With shift each row
may use its own. dist3 always needs the same three values (that is the rule). For constant, the
value ``none`` counts only for negate concepts and only when some other row is not ``none``.

A rule's ``values`` in the schema restrict which values it may use; for progression on an
ordinal or nominal concept they are also the order of the steps (consecutive in that order, either
direction). Integer progressions step by any equal nonzero difference; cardinal progressions are
straight lines of equally spaced cells on the 3×3 grid N…NW, C.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise, product
from typing import Any

from studio.core.schema import RULE_IDS, ConstantMode, Rule, Schema, ValueKind

NONE = "none"

#: Cells of the 3×3 grid as (x, y), y down.
CARDINAL_CELLS: dict[str, tuple[int, int]] = {
    "NW": (-1, -1), "N": (0, -1), "NE": (1, -1),
    "W": (-1, 0), "C": (0, 0), "E": (1, 0),
    "SW": (-1, 1), "S": (0, 1), "SE": (1, 1),
}  # fmt: skip

#: Which rules each layout can express (MARVEL's configurations, with UA's two rows).
LAYOUT_RULES: dict[str, tuple[str, ...]] = {
    "two-row": RULE_IDS,
    "matrix-3x3": RULE_IDS,
    "sequence": (Rule.CONSTANT.value, Rule.PROGRESSION.value),
    "odd-one-out": (Rule.CONSTANT.value,),
}

Instantiation = Any  # str | tuple[str, ...] | frozenset[str]


@dataclass(frozen=True)
class RuleContext:
    """One (concept, rule) of a schema, with what its satisfaction test needs precomputed."""

    concept: str
    rule: Rule
    kind: ValueKind
    negate: bool
    allowed: frozenset[str]
    coords: Mapping[str, tuple[int, ...]]  # progression coordinates
    unit_steps: bool  # ordinal orders step by exactly one place
    ints: Mapping[str, int]  # arithmetic operands
    #: ``row_instantiations`` already computed, by the row's value sets (values only: the same
    #: row of values always satisfies the rule the same ways)
    memo: dict[tuple[frozenset[str], ...], frozenset[Instantiation]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def instantiations(self, value_sets: Sequence[frozenset[str]]) -> frozenset[Instantiation]:
        return row_instantiations(self, value_sets)


def _coords(
    kind: ValueKind, values: Sequence[str], listed: bool
) -> tuple[dict[str, tuple[int, ...]], bool]:
    """Progression coordinates. A listed order is used as written, ``none`` included (UA's
    interaction runs none → touching → overlap); an unlisted one leaves ``none`` out."""
    if kind is ValueKind.INTEGER:
        return {v: (int(v),) for v in values if v.lstrip("-").isdigit()}, False
    if kind is ValueKind.CARDINAL:
        return {v: CARDINAL_CELLS[v] for v in values if v in CARDINAL_CELLS}, False
    ordered = values if listed else [v for v in values if v != NONE]
    return {v: (i,) for i, v in enumerate(ordered)}, True


class RuleBook:
    """Every (concept, rule) of a schema, ready for satisfaction tests. Build once per schema."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self._by_concept: dict[str, tuple[RuleContext, ...]] = {}
        self._one: dict[tuple[str, str], RuleContext] = {}
        for c in schema.concepts:
            contexts = []
            for rule, spec in c.rules.items():
                listed = tuple(spec.values) if spec.values else None
                base = listed if listed is not None else c.value_ids
                allowed = frozenset(base)
                if rule is Rule.PROGRESSION:
                    coords, unit = _coords(c.kind, base, listed is not None)
                    allowed = frozenset(coords)
                else:
                    coords, unit = {}, False
                ints = {v: int(v) for v in base if v.lstrip("-").isdigit()}
                if rule is Rule.ARITHMETIC:
                    allowed = frozenset(ints)
                if rule in (Rule.DIST3, Rule.UNION) and listed is None:
                    allowed = frozenset(base)  # `none` may take part, as in UA's folders
                rc = RuleContext(
                    concept=c.id,
                    rule=rule,
                    kind=c.kind,
                    negate=spec.mode is ConstantMode.NEGATE,
                    allowed=allowed,
                    coords=coords,
                    unit_steps=unit,
                    ints=ints,
                )
                contexts.append(rc)
                self._one[(c.id, rule.value)] = rc
            self._by_concept[c.id] = tuple(contexts)

    def rules_of(self, concept: str) -> tuple[RuleContext, ...]:
        return self._by_concept.get(concept, ())

    def get(self, concept: str, rule: str) -> RuleContext | None:
        return self._one.get((concept, str(rule)))

    def pairs(self) -> list[tuple[str, str]]:
        """Every (rule, concept) the schema allows, in schema order."""
        return [(rc.rule.value, rc.concept) for cs in self._by_concept.values() for rc in cs]


# ---- rows ---------------------------------------------------------------------------------
def _constant(rc: RuleContext, sets: Sequence[frozenset[str]]) -> frozenset[Instantiation]:
    common = frozenset.intersection(*sets) & rc.allowed
    if not rc.negate:
        common = common - {NONE}
    return common


def _progression(rc: RuleContext, sets: Sequence[frozenset[str]]) -> frozenset[Instantiation]:
    coords = rc.coords
    choices = [[v for v in s if v in coords] for s in sets]
    if any(not c for c in choices):
        return frozenset()
    out = set()
    for combo in product(*choices):
        pts = [coords[v] for v in combo]
        step = tuple(b - a for a, b in zip(pts[0], pts[1], strict=True))
        if not any(step):
            continue
        if rc.unit_steps and abs(step[0]) != 1:
            continue
        if all(tuple(b - a for a, b in zip(p, q, strict=True)) == step for p, q in pairwise(pts)):
            out.add(combo)
    return frozenset(out)


def _arithmetic(rc: RuleContext, sets: Sequence[frozenset[str]]) -> frozenset[Instantiation]:
    if len(sets) != 3:
        return frozenset()
    ints = rc.ints
    a_s = [v for v in sets[0] if v in ints]
    b_s = [v for v in sets[1] if v in ints]
    c_s = [v for v in sets[2] if v in ints]
    return frozenset(
        (a, b, c)
        for a in a_s
        for b in b_s
        for c in c_s
        if ints[c] == ints[a] + ints[b] or ints[c] == ints[a] - ints[b]
    )


def _dist3(rc: RuleContext, sets: Sequence[frozenset[str]]) -> frozenset[Instantiation]:
    if len(sets) != 3:
        return frozenset()
    allowed = rc.allowed
    return frozenset(
        frozenset((a, b, c))
        for a in sets[0] & allowed
        for b in sets[1] & allowed
        for c in sets[2] & allowed
        if a != b and b != c and a != c
    )


def _union(rc: RuleContext, sets: Sequence[frozenset[str]]) -> frozenset[Instantiation]:
    if len(sets) != 3:
        return frozenset()
    allowed = rc.allowed
    third = sets[2] & allowed
    return frozenset(frozenset((a, b)) for a in sets[0] & third for b in sets[1] & third if a != b)


_ROW_TESTS: dict[Rule, Callable[[RuleContext, Sequence[frozenset[str]]], frozenset]] = {
    Rule.CONSTANT: _constant,
    Rule.PROGRESSION: _progression,
    Rule.ARITHMETIC: _arithmetic,
    Rule.DIST3: _dist3,
    Rule.UNION: _union,
}


def row_instantiations(
    rc: RuleContext, value_sets: Sequence[frozenset[str]]
) -> frozenset[Instantiation]:
    """Every way the row (the glyphs' value sets for ``rc.concept``, in order) satisfies the
    rule; empty when it does not. Rows of 3, or of any length ≥ 3 for constant and
    progression (a 1×n sequence)."""
    key = tuple(value_sets)
    memo = rc.memo
    try:
        got = memo.get(key)
    except TypeError:  # unhashable value sets (plain sets): computed, not remembered
        return _row_instantiations(rc, value_sets)
    if got is None:
        if len(memo) >= MEMO_MAX:
            memo.clear()
        got = memo[key] = _row_instantiations(rc, key)
    return got


#: rows remembered per rule context before the memo starts over (bounds its memory)
MEMO_MAX = 200_000


def _row_instantiations(
    rc: RuleContext, value_sets: Sequence[frozenset[str]]
) -> frozenset[Instantiation]:
    if len(value_sets) < 3 or any(not s for s in value_sets):
        return frozenset()
    return _ROW_TESTS[rc.rule](rc, value_sets)


def _sort_key(inst: Instantiation) -> tuple:
    if isinstance(inst, frozenset):
        return (1, tuple(sorted(inst)))
    if isinstance(inst, tuple):
        return (2, inst)
    return (0, (inst,))


def complete(
    rc: RuleContext, rows: Sequence[frozenset[Instantiation]], shift: bool
) -> tuple[Instantiation, ...] | None:
    """The instantiation chosen for each row when the rows together complete the rule, else
    None. Deterministic: the smallest choice in a fixed order."""
    if not rows or any(not r for r in rows):
        return None
    if not shift or rc.rule is Rule.DIST3:
        common = frozenset.intersection(*rows)
        if rc.rule is Rule.CONSTANT:
            common = common - {NONE}  # every row `none`: no row shows the value
        if not common:
            return None
        best = min(common, key=_sort_key)
        return (best,) * len(rows)
    if rc.rule is Rule.CONSTANT:
        choice = []
        for r in rows:
            non_none = [v for v in r if v != NONE]
            choice.append(min(non_none) if non_none else NONE)
        if all(v == NONE for v in choice) and len(rows) > 1:
            return None
        if len(rows) == 1 and choice[0] == NONE:
            return None
        return tuple(choice)
    return tuple(min(r, key=_sort_key) for r in rows)


def describe(inst: Instantiation, rule: str) -> tuple[str, ...]:
    """An instantiation as the values a person reads, in row order where there is one."""
    if isinstance(inst, frozenset):
        return tuple(sorted(inst))
    if isinstance(inst, tuple):
        return inst
    return (inst,)


def rows_complete(
    rc: RuleContext,
    rows: Sequence[Sequence[frozenset[str]]],
    shift: bool,
) -> tuple[tuple[str, ...], ...] | None:
    """Convenience: value sets row by row → the values instantiating each row, or None."""
    insts = [row_instantiations(rc, r) for r in rows]
    got = complete(rc, insts, shift)
    if got is None:
        return None
    return tuple(describe(i, rc.rule.value) for i in got)
