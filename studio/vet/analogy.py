"""Validity of A : A′ :: B : ? analogies over glyph annotations (VASR's form, §3.1–3.2).

Record convention (a ``Puzzle`` of layout ``analogy``):

- ``context = ((A, A′), (B,))``: the example pair on the first row, the probe alone on the second;
- ``answers``: four glyphs, ``key`` the index of B′;
- ``rule = "change"``; ``concept`` = the concept c whose value changes;
- ``values = ((v1, v2),)``: A carries v1, A′ carries v2 (B carries v1, B′ carries v2);
- ``shift = False``.

Definitions (a glyph's *tag set* is its set of ``(concept, value)`` annotations):

- Two glyphs x, y *differ in exactly one concept value* (c: v1 → v2) when their tag sets differ
  in exactly the two tags ``(c, v1)`` and ``(c, v2)``: x carries v1 and not v2, y carries v2
  and not v1, and every other tag is carried by both or by neither — *including the other values
  of c* (a polysemic glyph carrying v1 and v3 pairs only with one carrying v2 and v3), and
  including concepts that neither or only one of them is tagged with (a tag present on one side
  and absent on the other is a second difference). This is strict on purpose: the context pair
  and the key must show one change and nothing else that the annotations record.
- The key is right (``analogy_key_ok``) when A, A′ differ in exactly c: v1 → v2, and B and the key
  differ in exactly c: v1 → v2 too.
- A foil is judged leniently, "as far as the annotations tell", because a glyph with no tag for
  a concept says nothing about it. A foil F *agrees with B outside a concept d* when every concept
  other than d that both B and F are tagged with carries the same values on both; concepts tagged
  on one side only do not count against agreement. Then:

  - ``foil-completes-intended``: F carries v2 and not v1 of c and agrees with B outside c — a
    second defensible B′ (whatever other values of c it carries).
  - ``emergent``: for another concept d, B carries u1 and not u2, F carries u2 and not u1, F
    agrees with B outside d, and u1 → u2 is *the same change* as v1 → v2: the same value ids
    (bold → thin, present → none), or, when c and d have the same value kind, the same signed
    step (integers: equal difference; ordinals: equal number of places in the concept's order;
    cardinals: equal displacement on the 3×3 grid). Such a foil shows "the same change over
    another concept" — an alternative reading of the analogy.

Findings use ``rule = "change"``; ``rows`` are ``((v1, v2), (b's value, foil's value))``.
"""

from __future__ import annotations

from collections.abc import Sequence

from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.core.schema import Schema, ValueKind
from studio.core.tagindex import TagIndex
from studio.core.verdict import Finding
from studio.vet.rules import CARDINAL_CELLS, NONE, RuleBook

CHANGE = "change"
LAYOUT = "analogy"

Change = tuple[str, str, str]  # (concept, v1, v2)


# ---- pairs ----------------------------------------------------------------------------------
def single_change(annotations: TagIndex, x: GlyphKey, y: GlyphKey) -> Change | None:
    """``(c, v1, v2)`` when x and y differ in exactly one concept value (x carries v1, y
    carries v2; see the module docstring), else None."""
    tx, ty = annotations.tags_of(x), annotations.tags_of(y)
    only_x, only_y = tx - ty, ty - tx
    if len(only_x) != 1 or len(only_y) != 1:
        return None
    ((c1, v1),) = only_x
    ((c2, v2),) = only_y
    if c1 != c2:
        return None
    return (c1, v1, v2)


def differ_by(
    annotations: TagIndex, x: GlyphKey, y: GlyphKey, concept: str, v1: str, v2: str
) -> bool:
    """x and y differ in exactly ``concept``: v1 → v2."""
    return v1 != v2 and single_change(annotations, x, y) == (concept, v1, v2)


def agrees_outside(annotations: TagIndex, b: GlyphKey, f: GlyphKey, concept: str) -> bool:
    """F agrees with B on every concept but ``concept`` that both are tagged with."""
    bb = annotations.by_glyph.get(b, {})
    ff = annotations.by_glyph.get(f, {})
    for d, vals in bb.items():
        if d == concept:
            continue
        other = ff.get(d)
        if other is not None and other != vals:
            return False
    return True


# ---- "the same change" ----------------------------------------------------------------------
def _order(book: RuleBook, concept: str) -> dict[str, int]:
    """Positions of an ordinal concept's values: the progression's stated order when there is
    one (``none`` included when it is listed), else the schema order without ``none``."""
    schema = book.schema
    c = schema.concept(concept)
    for rule, spec in c.rules.items():
        if rule.value == "progression" and spec.values:
            return {v: i for i, v in enumerate(spec.values)}
    return {v: i for i, v in enumerate(v for v in c.value_ids if v != NONE)}


def _step(book: RuleBook, concept: str, kind: ValueKind, a: str, b: str) -> tuple[int, ...] | None:
    if kind is ValueKind.INTEGER:
        if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
            return (int(b) - int(a),)
        return None
    if kind is ValueKind.ORDINAL:
        order = _order(book, concept)
        if a in order and b in order:
            return (order[b] - order[a],)
        return None
    if kind is ValueKind.CARDINAL:
        if a in CARDINAL_CELLS and b in CARDINAL_CELLS:
            (ax, ay), (bx, by) = CARDINAL_CELLS[a], CARDINAL_CELLS[b]
            return (bx - ax, by - ay)
        return None
    return None


def same_change(book: RuleBook, first: Change, second: Change) -> bool:
    """Is ``second`` (d: u1 → u2) the same change as ``first`` (c: v1 → v2)? Same value ids,
    or the same signed step when both concepts have the same ordered kind."""
    c, v1, v2 = first
    d, u1, u2 = second
    if (u1, u2) == (v1, v2):
        return True
    schema = book.schema
    if not (schema.has_concept(c) and schema.has_concept(d)):
        return False
    kind = schema.concept(c).kind
    if kind is ValueKind.NOMINAL or schema.concept(d).kind is not kind:
        return False
    s1 = _step(book, c, kind, v1, v2)
    s2 = _step(book, d, kind, u1, u2)
    return s1 is not None and s1 == s2 and any(s1)


# ---- one foil -------------------------------------------------------------------------------
def foil_findings(
    annotations: TagIndex,
    book: RuleBook,
    change: Change,
    b: GlyphKey,
    foil: GlyphKey,
    index: int,
) -> list[Finding]:
    """Why ``foil`` (answer ``index``) would be a defensible B′ for probe ``b`` under
    ``change`` = (c, v1, v2); empty when it would not."""
    c, v1, v2 = change
    out: list[Finding] = []
    fvals = annotations.values(foil, c)
    if v2 in fvals and v1 not in fvals and agrees_outside(annotations, b, foil, c):
        out.append(
            Finding(
                "foil-completes-intended",
                answer=index,
                rule=CHANGE,
                concept=c,
                rows=((v1, v2), (v1, v2)),
                detail=f"carries {c} = {v2!r}, not {v1!r}, and agrees with B elsewhere",
            )
        )
    bb = annotations.by_glyph.get(b, {})
    ff = annotations.by_glyph.get(foil, {})
    for d in sorted(bb.keys() & ff.keys()):
        if d == c:
            continue
        gone = sorted(bb[d] - ff[d])
        new = sorted(ff[d] - bb[d])
        if not gone or not new:
            continue
        if not agrees_outside(annotations, b, foil, d):
            continue
        for u1 in gone:
            for u2 in new:
                if same_change(book, change, (d, u1, u2)):
                    out.append(
                        Finding(
                            "emergent",
                            answer=index,
                            rule=CHANGE,
                            concept=d,
                            rows=((v1, v2), (u1, u2)),
                            detail=f"shows {d}: {u1!r} → {u2!r}, the same change as "
                            f"{c}: {v1!r} → {v2!r}",
                        )
                    )
    return out


# ---- puzzles --------------------------------------------------------------------------------
def _book(schema: Schema | RuleBook) -> RuleBook:
    return schema if isinstance(schema, RuleBook) else RuleBook(schema)


def puzzle_change(
    puzzle: Puzzle, annotations: TagIndex
) -> tuple[GlyphKey, GlyphKey, GlyphKey, Change] | None:
    """(A, A′, B, (c, v1, v2)) of an analogy record, or None when the record is not one. The
    values come from ``puzzle.values``; a record without them takes the change A → A′ shows."""
    if puzzle.layout != LAYOUT or len(puzzle.context) != 2:
        return None
    first, second = puzzle.context
    if len(first) != 2 or len(second) != 1:
        return None
    a, a2 = first
    (b,) = second
    if puzzle.values and len(puzzle.values[0]) == 2:
        v1, v2 = puzzle.values[0]
        return a, a2, b, (puzzle.concept, v1, v2)
    got = single_change(annotations, a, a2)
    if got is None or got[0] != puzzle.concept:
        return None
    return a, a2, b, got


def analogy_key_ok(puzzle: Puzzle, annotations: TagIndex, book: Schema | RuleBook) -> bool:
    """A and A′ differ in exactly c: v1 → v2, and so do B and the key."""
    got = puzzle_change(puzzle, annotations)
    if got is None or not 0 <= puzzle.key < len(puzzle.answers):
        return False
    a, a2, b, (c, v1, v2) = got
    if not _book(book).schema.has_concept(c):
        return False
    return differ_by(annotations, a, a2, c, v1, v2) and differ_by(
        annotations, b, puzzle.answers[puzzle.key], c, v1, v2
    )


def analogy_findings(
    puzzle: Puzzle,
    annotations: TagIndex,
    book: Schema | RuleBook,
    answers: Sequence[int] | None = None,
) -> list[Finding]:
    """Every foil that would also be a defensible B′ (``foil-completes-intended``) or shows the
    same change over another concept (``emergent``). ``answers`` limits the search to those
    indices (default: every foil). A record that is not a readable analogy gives no findings
    here; ``analogy_key_ok`` fails for it."""
    got = puzzle_change(puzzle, annotations)
    if got is None:
        return []
    _, _, b, change = got
    rb = _book(book)
    indices = puzzle.foils if answers is None else [i for i in answers if i != puzzle.key]
    out: list[Finding] = []
    for i in indices:
        if 0 <= i < len(puzzle.answers):
            out.extend(foil_findings(annotations, rb, change, b, puzzle.answers[i], i))
    return out


__all__ = [
    "CHANGE",
    "LAYOUT",
    "agrees_outside",
    "analogy_findings",
    "analogy_key_ok",
    "differ_by",
    "foil_findings",
    "puzzle_change",
    "same_change",
    "single_change",
]
