"""Rule satisfaction, hand-worked from DESIGN.md ("Row satisfies rule"), and its properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.core.schema import Schema
from studio.vet.rules import RuleBook, complete, row_instantiations, rows_complete

F = frozenset


@pytest.fixture(scope="module")
def book(ua_schema: Schema) -> RuleBook:
    return RuleBook(ua_schema)


def row(*sets: str | set[str]) -> list[frozenset[str]]:
    return [F({s}) if isinstance(s, str) else F(s) for s in sets]


# ---- constant -------------------------------------------------------------------------------
def test_constant_needs_a_value_carried_by_all_three(book: RuleBook) -> None:
    rc = book.get("stroke-dot-quantity", "constant")
    assert rows_complete(rc, [row({"2", "3"}, "3", {"3", "1"}), row("3", "3", "3")], False) == (
        ("3",),
        ("3",),
    )
    assert rows_complete(rc, [row("2", "3", "3"), row("3", "3", "3")], False) is None
    # without shift both rows must show the same value
    assert rows_complete(rc, [row("2", "2", "2"), row("3", "3", "3")], False) is None
    assert rows_complete(rc, [row("2", "2", "2"), row("3", "3", "3")], True) == (("2",), ("3",))


def test_none_counts_only_for_negate_concepts_and_never_in_both_rows(book: RuleBook) -> None:
    negate = book.get("closure", "constant")  # negate
    select = book.get("aspect", "constant")  # select
    nones = row("none", "none", "none")
    assert rows_complete(negate, [nones, row("circle", "circle", "circle")], True) is not None
    assert rows_complete(negate, [nones, nones], True) is None
    assert rows_complete(negate, [nones, nones], False) is None
    assert not row_instantiations(select, row("none", "none", "none"))


# ---- progression ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("values", "ok"),
    [
        (("1", "2", "3"), True),
        (("3", "2", "1"), True),
        (("1", "3", "5"), True),
        (("2", "2", "2"), False),  # a zero step is not a progression
        (("1", "2", "4"), False),
    ],
)
def test_integer_progression_steps_evenly(book: RuleBook, values: tuple, ok: bool) -> None:
    rc = book.get("stroke-dot-quantity", "progression")
    assert bool(row_instantiations(rc, row(*values))) is ok


def test_ordinal_progression_is_consecutive_in_the_stated_order_either_way(book: RuleBook) -> None:
    rc = book.get("aspect", "progression")  # tall < square < wide
    assert row_instantiations(rc, row("tall", "square", "wide"))
    assert row_instantiations(rc, row("wide", "square", "tall"))
    assert not row_instantiations(rc, row("tall", "wide", "square"))


@pytest.mark.parametrize(
    ("cells", "ok"),
    [
        (("W", "C", "E"), True),
        (("NW", "C", "SE"), True),
        (("N", "NE", "E"), False),  # a bend, not a line
        (("N", "C", "E"), False),
        (("S", "C", "N"), True),
    ],
)
def test_cardinal_progression_is_a_straight_line_on_the_grid(
    book: RuleBook, cells: tuple, ok: bool
) -> None:
    rc = book.get("global-mass", "progression")
    assert bool(row_instantiations(rc, row(*cells))) is ok


def test_progression_uses_any_value_a_polysemic_glyph_carries(book: RuleBook) -> None:
    rc = book.get("stroke-dot-quantity", "progression")
    assert row_instantiations(rc, row({"1", "5"}, {"2", "7"}, "3")) == {("1", "2", "3")}


# ---- arithmetic, dist3, union ---------------------------------------------------------------
def test_arithmetic_adds_or_subtracts(book: RuleBook) -> None:
    rc = book.get("shape-sides", "arithmetic")
    assert row_instantiations(rc, row("2", "3", "5"))
    assert row_instantiations(rc, row("5", "3", "2"))
    assert not row_instantiations(rc, row("2", "3", "4"))


def test_dist3_needs_three_distinct_values_and_the_same_three_in_the_other_row(
    book: RuleBook,
) -> None:
    rc = book.get("closed", "dist3")  # values empty, halfshaded, full
    r1 = row("empty", "halfshaded", "full")
    assert rows_complete(rc, [r1, row("full", "empty", "halfshaded")], False) is not None
    assert rows_complete(rc, [r1, row("full", "empty", "halfshaded")], True) is not None
    assert not row_instantiations(rc, row("empty", "empty", "full"))
    rc2 = book.get("stroke-feature", "dist3")
    other = row("arrow", "curve", "kink")
    assert rows_complete(rc2, [row("loop", "zig", "wiggle"), other], True) is None


def test_union_third_carries_both_of_the_first_two(book: RuleBook) -> None:
    rc = book.get("gestalt", "union")
    assert row_instantiations(rc, row("1", "2", {"1", "2"})) == {F({"1", "2"})}
    assert not row_instantiations(rc, row("1", "2", "1"))
    assert not row_instantiations(rc, row("1", "1", "1"))


def test_rule_values_restrict_what_a_rule_may_use(book: RuleBook) -> None:
    rc = book.get("closure", "dist3")  # listed: line, circle, square, triangle
    assert not row_instantiations(rc, row("line", "circle", "none"))


# ---- properties ------------------------------------------------------------------------------
INTS = [str(i) for i in range(1, 9)]
value_sets = st.frozensets(st.sampled_from(INTS), min_size=1, max_size=3)
rows3 = st.tuples(value_sets, value_sets, value_sets)
rules = st.sampled_from(["constant", "progression", "arithmetic"])


@settings(max_examples=200, deadline=None)
@given(r=rows3, extra=st.sampled_from(INTS), where=st.integers(0, 2), rule=rules)
def test_more_values_never_lose_an_instantiation(
    book: RuleBook, r: tuple, extra: str, where: int, rule: str
) -> None:
    rc = book.get("stroke-dot-quantity" if rule != "arithmetic" else "shape-sides", rule)
    grown = list(r)
    grown[where] = grown[where] | {extra}
    assert row_instantiations(rc, list(r)) <= row_instantiations(rc, grown)


@settings(max_examples=200, deadline=None)
@given(r=rows3)
def test_progression_holds_backwards_iff_forwards(book: RuleBook, r: tuple) -> None:
    rc = book.get("stroke-dot-quantity", "progression")
    fwd = row_instantiations(rc, list(r))
    back = row_instantiations(rc, list(reversed(r)))
    assert {tuple(reversed(i)) for i in fwd} == set(back)


@settings(max_examples=200, deadline=None)
@given(r=rows3)
def test_constant_is_the_intersection(book: RuleBook, r: tuple) -> None:
    rc = book.get("stroke-dot-quantity", "constant")
    assert row_instantiations(rc, list(r)) == r[0] & r[1] & r[2] & rc.allowed  # values 1..7


@settings(max_examples=200, deadline=None)
@given(a=st.integers(1, 8), d=st.integers(-3, 3).filter(bool))
def test_every_even_step_inside_the_values_is_a_progression(book: RuleBook, a: int, d: int) -> None:
    rc = book.get("stroke-dot-quantity", "progression")  # values 1..7
    vals = [a, a + d, a + 2 * d]
    r = [F({str(v)}) for v in vals]
    assert bool(row_instantiations(rc, r)) is all(1 <= v <= 7 for v in vals)


@settings(max_examples=200, deadline=None)
@given(r1=rows3, r2=rows3, rule=st.sampled_from(["constant", "progression", "dist3"]))
def test_a_completion_without_shift_is_also_one_with_shift(
    book: RuleBook, r1: tuple, r2: tuple, rule: str
) -> None:
    concept = "stroke-feature" if rule == "dist3" else "stroke-dot-quantity"
    rc = book.get(concept, rule)
    if rule == "dist3":
        names = ["arrow", "curve", "kink", "loop", "straight", "wiggle", "zig", "arrow"]
        r1 = tuple(F(names[int(v) - 1] for v in s) for s in r1)
        r2 = tuple(F(names[int(v) - 1] for v in s) for s in r2)
    i1, i2 = row_instantiations(rc, list(r1)), row_instantiations(rc, list(r2))
    if complete(rc, [i1, i2], False) is not None:
        assert complete(rc, [i1, i2], True) is not None


def test_a_listed_order_keeps_none_as_a_step(book: RuleBook) -> None:
    rc = book.get("interaction", "progression")  # listed: none, touching, overlap
    assert row_instantiations(rc, row("none", "touching", "overlap"))
    assert row_instantiations(rc, row("overlap", "touching", "none"))
