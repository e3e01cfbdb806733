"""A : A′ :: B : ? validity, hand-worked on polysemic glyphs (studio.vet.analogy)."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.vet.analogy import (
    agrees_outside,
    analogy_findings,
    analogy_key_ok,
    differ_by,
    same_change,
    single_change,
)
from studio.vet.emergent import find_emergent_rules, key_completes, vet_puzzle
from studio.vet.rules import RuleBook

DOTS = "stroke-dot-quantity"
LINES = "stroke-line-straight-quantity"
CLOSURE = "closure"


def g(n: int) -> GlyphKey:
    return GlyphKey(0x2600 + n, "symbola")


A, A2, B, B2 = g(1), g(2), g(3), g(4)
DEFENSIBLE = g(10)  # 4 dots, a square, no line tag: nothing says it is not B′
POLY_DEFENSIBLE = g(11)  # 4 and 5 dots, 2 lines, a square: carries v2, not v1, agrees with B
UNLIKE = g(12)  # 4 dots but 5 lines and a triangle: the change, unlike B
UNCHANGED = g(13)  # B's tags exactly: similar to B without the change
BOTH = g(14)  # 3 and 4 dots: carries v1 too, so it shows no change
EMERGENT = g(15)  # 3 dots, 3 lines, a square: lines 2 → 3 is the same +1 as dots 3 → 4
PLUS_TWO = g(16)  # 3 dots, 4 lines: +2 is another change
EMERGENT_BUT_CIRCLE = g(17)  # lines +1, but also a circle instead of a square: two changes
UNTAGGED = g(18)


def tags() -> list[tuple[GlyphKey, str, str]]:
    rows: list[tuple[GlyphKey, str, str]] = []

    def add(key: GlyphKey, *pairs: tuple[str, str]) -> None:
        rows.extend((key, c, v) for c, v in pairs)

    add(A, (DOTS, "3"), (CLOSURE, "circle"))
    add(A2, (DOTS, "4"), (CLOSURE, "circle"))
    add(B, (DOTS, "3"), (LINES, "2"), (CLOSURE, "square"))
    add(B2, (DOTS, "4"), (LINES, "2"), (CLOSURE, "square"))
    add(DEFENSIBLE, (DOTS, "4"), (CLOSURE, "square"))
    add(POLY_DEFENSIBLE, (DOTS, "4"), (DOTS, "5"), (LINES, "2"), (CLOSURE, "square"))
    add(UNLIKE, (DOTS, "4"), (LINES, "5"), (CLOSURE, "triangle"))
    add(UNCHANGED, (DOTS, "3"), (LINES, "2"), (CLOSURE, "square"))
    add(BOTH, (DOTS, "3"), (DOTS, "4"), (LINES, "2"), (CLOSURE, "square"))
    add(EMERGENT, (DOTS, "3"), (LINES, "3"), (CLOSURE, "square"))
    add(PLUS_TWO, (DOTS, "3"), (LINES, "4"), (CLOSURE, "square"))
    add(EMERGENT_BUT_CIRCLE, (DOTS, "3"), (LINES, "3"), (CLOSURE, "circle"))
    return rows


@pytest.fixture(scope="module")
def ann() -> TagIndex:
    return TagIndex.from_tags(tags())


@pytest.fixture(scope="module")
def book(ua_schema: Schema) -> RuleBook:
    return RuleBook(ua_schema)


def analogy(
    foils: Iterable[GlyphKey],
    key: int = 0,
    concept: str = DOTS,
    values: tuple[tuple[str, ...], ...] = (("3", "4"),),
    context: tuple[tuple[GlyphKey, ...], ...] = ((A, A2), (B,)),
    key_glyph: GlyphKey = B2,
) -> Puzzle:
    answers = list(foils)
    answers.insert(key, key_glyph)
    return Puzzle(
        id="a",
        family="glyph-pmp",
        layout="analogy",
        rule="change",
        concept=concept,
        shift=False,
        context=context,
        answers=tuple(answers),
        key=key,
        split="test",
        seed=1,
        values=values,
    )


# ---- pairs ------------------------------------------------------------------------------------
def test_single_change_is_exactly_one_swapped_value(ann: TagIndex) -> None:
    assert single_change(ann, A, A2) == (DOTS, "3", "4")
    assert single_change(ann, A2, A) == (DOTS, "4", "3")
    assert single_change(ann, B, B2) == (DOTS, "3", "4")
    assert single_change(ann, A, B) is None  # closure and lines differ too
    assert single_change(ann, B, UNCHANGED) is None  # no difference at all
    assert single_change(ann, B, BOTH) is None  # 4 added, nothing removed
    assert single_change(ann, B, DEFENSIBLE) is None  # the line tag is missing: a second diff
    assert single_change(ann, B, EMERGENT) == (LINES, "2", "3")
    assert differ_by(ann, B, B2, DOTS, "3", "4")
    assert not differ_by(ann, B, B2, DOTS, "4", "3")


def test_other_values_of_the_concept_must_be_shared_by_the_pair() -> None:
    x, y, z = g(50), g(51), g(52)
    idx = TagIndex.from_tags(
        [(x, DOTS, "3"), (x, DOTS, "6"), (y, DOTS, "4"), (y, DOTS, "6"), (z, DOTS, "4")]
    )
    assert differ_by(idx, x, y, DOTS, "3", "4")  # 6 carried by both
    assert not differ_by(idx, x, z, DOTS, "3", "4")  # 6 dropped as well: two changes


def test_agreement_outside_a_concept_is_as_far_as_the_annotations_tell(ann: TagIndex) -> None:
    assert agrees_outside(ann, B, DEFENSIBLE, DOTS)  # no line tag: says nothing
    assert agrees_outside(ann, B, POLY_DEFENSIBLE, DOTS)
    assert not agrees_outside(ann, B, UNLIKE, DOTS)
    assert agrees_outside(ann, B, UNTAGGED, DOTS)
    assert not agrees_outside(ann, B, EMERGENT, DOTS)
    assert agrees_outside(ann, B, EMERGENT, LINES)


def test_the_same_change(book: RuleBook) -> None:
    assert same_change(book, (DOTS, "3", "4"), (LINES, "2", "3"))  # +1, both integer
    assert not same_change(book, (DOTS, "3", "4"), (LINES, "2", "4"))
    assert not same_change(book, (DOTS, "3", "4"), (LINES, "3", "2"))  # −1
    assert same_change(book, ("latin-style", "bold", "thin"), ("stroke-style", "bold", "thin"))
    assert not same_change(book, ("latin-style", "bold", "thin"), ("stroke-style", "thin", "bold"))
    assert same_change(
        book, ("aspect", "tall", "square"), ("intersection-angle", "acute", "orthogonal")
    )
    assert not same_change(
        book, ("aspect", "tall", "square"), ("intersection-angle", "acute", "obtuse")
    )
    assert same_change(book, ("global-mass", "W", "C"), ("global-mass", "C", "E"))
    assert not same_change(book, ("global-mass", "W", "C"), ("global-mass", "N", "C"))
    # different kinds never match by step: aspect is ordinal, dots integer
    assert not same_change(book, ("aspect", "tall", "square"), (DOTS, "1", "2"))
    # closure is nominal: only the same ids count
    assert not same_change(book, (CLOSURE, "circle", "line"), ("opening", "narrow", "wide"))


# ---- the key ----------------------------------------------------------------------------------
def test_the_key_is_right(ann: TagIndex, book: RuleBook) -> None:
    p = analogy([UNCHANGED, UNLIKE, PLUS_TWO], key=2)
    assert analogy_key_ok(p, ann, book)
    assert key_completes(p, ann, book)  # the lead's dispatch reaches it
    assert vet_puzzle(p, ann, book).valid


@pytest.mark.parametrize(
    "key_glyph",
    [DEFENSIBLE, POLY_DEFENSIBLE, UNLIKE, BOTH, UNCHANGED],
    ids=["missing-tag", "extra-value", "unlike", "both", "unchanged"],
)
def test_a_key_that_is_not_exactly_the_change_fails(
    ann: TagIndex, book: RuleBook, key_glyph: GlyphKey
) -> None:
    p = analogy([UNCHANGED, PLUS_TWO, EMERGENT_BUT_CIRCLE], key=1, key_glyph=key_glyph)
    assert not analogy_key_ok(p, ann, book)
    verdict = vet_puzzle(p, ann, book)
    assert any(f.check == "key-fails" for f in verdict.errors)


def test_the_example_pair_must_show_the_change(ann: TagIndex, book: RuleBook) -> None:
    p = analogy([UNCHANGED, UNLIKE, PLUS_TWO], context=((A, B2), (B,)))
    assert not analogy_key_ok(p, ann, book)
    p = analogy([UNCHANGED, UNLIKE, PLUS_TWO], values=(("4", "3"),))
    assert not analogy_key_ok(p, ann, book)


def test_values_missing_from_the_record_come_from_the_example_pair(
    ann: TagIndex, book: RuleBook
) -> None:
    p = analogy([UNCHANGED, DEFENSIBLE, PLUS_TWO], values=())
    assert analogy_key_ok(p, ann, book)
    assert [f.answer for f in analogy_findings(p, ann, book)] == [2]


def test_malformed_records_are_not_valid(ann: TagIndex, book: RuleBook) -> None:
    p = analogy([UNCHANGED, UNLIKE, PLUS_TWO], context=((A, A2, B),))
    assert not analogy_key_ok(p, ann, book)
    assert analogy_findings(p, ann, book) == []
    p = analogy([UNCHANGED, UNLIKE, PLUS_TWO], concept="no-such-concept")
    assert not analogy_key_ok(p, ann, book)


# ---- the foils --------------------------------------------------------------------------------
def test_a_foil_that_carries_v2_and_agrees_with_b_is_flagged(ann: TagIndex, book: RuleBook) -> None:
    p = analogy([UNCHANGED, DEFENSIBLE, POLY_DEFENSIBLE], key=0)
    found = analogy_findings(p, ann, book)
    assert sorted((f.check, f.answer) for f in found) == [
        ("foil-completes-intended", 2),
        ("foil-completes-intended", 3),
    ]
    f = found[0]
    assert f.rule == "change" and f.concept == DOTS and f.rows == (("3", "4"), ("3", "4"))
    assert "also completes change over stroke-dot-quantity" in f.message()
    # the lead's entry point dispatches here, and a flagged foil makes the puzzle invalid
    assert find_emergent_rules(p, ann, book) == found
    assert not vet_puzzle(p, ann, book).valid


def test_a_foil_showing_the_same_change_over_another_concept_is_emergent(
    ann: TagIndex, book: RuleBook
) -> None:
    p = analogy([EMERGENT, PLUS_TWO, EMERGENT_BUT_CIRCLE], key=3)
    found = analogy_findings(p, ann, book)
    assert len(found) == 1
    (f,) = found
    assert (f.check, f.answer, f.rule, f.concept) == ("emergent", 0, "change", LINES)
    assert f.rows == (("3", "4"), ("2", "3"))


def test_the_same_ids_over_another_concept_are_emergent(book: RuleBook) -> None:
    a, a2, b, b2, f = g(60), g(61), g(62), g(63), g(64)
    idx = TagIndex.from_tags(
        [
            (a, "latin-style", "bold"),
            (a2, "latin-style", "thin"),
            (b, "latin-style", "bold"),
            (b, "stroke-style", "bold"),
            (b2, "latin-style", "thin"),
            (b2, "stroke-style", "bold"),
            (f, "latin-style", "bold"),
            (f, "stroke-style", "thin"),
        ]
    )
    p = analogy([f, g(70), g(71)], concept="latin-style", values=(("bold", "thin"),),
                context=((a, a2), (b,)), key_glyph=b2)  # fmt: skip
    assert analogy_key_ok(p, idx, book)
    found = analogy_findings(p, idx, book)
    assert [(x.check, x.concept, x.answer) for x in found] == [("emergent", "stroke-style", 1)]


def test_valid_foils_give_no_findings(ann: TagIndex, book: RuleBook) -> None:
    p = analogy([UNCHANGED, UNLIKE, BOTH], key=1)
    assert analogy_findings(p, ann, book) == []
    p = analogy([PLUS_TWO, EMERGENT_BUT_CIRCLE, UNTAGGED], key=0)
    assert analogy_findings(p, ann, book) == []
    assert vet_puzzle(p, ann, book).valid


def test_answers_limits_the_search(ann: TagIndex, book: RuleBook) -> None:
    p = analogy([DEFENSIBLE, EMERGENT, UNCHANGED], key=0)
    assert [f.answer for f in analogy_findings(p, ann, book)] == [1, 2]
    assert [f.answer for f in analogy_findings(p, ann, book, answers=[2])] == [2]
    assert analogy_findings(p, ann, book, answers=[0, 3]) == []  # the key is never a foil


def test_a_schema_works_as_well_as_a_rule_book(ann: TagIndex, ua_schema: Schema) -> None:
    p = analogy([DEFENSIBLE, UNCHANGED, UNLIKE], key=0)
    assert analogy_key_ok(p, ann, ua_schema)
    assert [f.answer for f in analogy_findings(p, ann, ua_schema)] == [1]
