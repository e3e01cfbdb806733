"""A : A′ :: B : ? seen in part (issue 24): the example pair alone, B alone, the answers alone.

VASR's partial inputs (vasr.txt §4, Table 3) as exact symbolic solvers (:mod:`studio.vet.partial`),
and the analogy generator's symmetric sets built so that none of them suffices: on glyphs tagged
with two concepts, crossed sets halve both views and leave the answers alone at chance; on
single-tag glyphs every answer is B after one change, so B alone is at chance."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from scipy.stats import binomtest

import studio.families.glyph_pmp.analogy as analogy
from studio.core.annotations import read_annotation_csv
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.families.glyph_pmp.analogy import generate_analogies
from studio.generate.params import SplitParams
from studio.vet.analogy import analogy_findings, analogy_key_ok, single_change
from studio.vet.partial import partial_lines, partial_views, puzzle_views
from studio.vet.rules import RuleBook

SIDES = "shape-sides"  # 1, 2, 3, 4, 5, 7, 8
ASPECT = "aspect"  # tall, square, wide


def g(n: int) -> GlyphKey:
    return GlyphKey(0x4E00 + n, "han")


def crossed_set(per_cell: int = 3) -> TagIndex:
    """Every (sides, aspect) combination of five sides and three aspects, ``per_cell`` glyphs
    each: glyphs alike but for sides form a class per aspect, and two classes disagree on it."""
    tags = []
    n = 0
    for sides in ("1", "2", "3", "4", "5"):
        for aspect in ("tall", "square", "wide"):
            for _ in range(per_cell):
                tags += [(g(n), SIDES, sides), (g(n), ASPECT, aspect)]
                n += 1
    return TagIndex.from_tags(tags)


def params(n: int, **kw: object) -> SplitParams:
    base: dict = dict(n=n, seed=3, sampling="balanced", layout="analogy", holdout="none")
    return SplitParams(**{**base, **kw})


def planted() -> tuple[Puzzle, TagIndex]:
    """Sides 1 → 2 shown by the pair; B has 1 side; foils with 3, 4 and 5 sides, each B after
    another change: the pair alone names the key, B alone cannot."""
    tags = [(g(i), SIDES, v) for i, v in enumerate("12123458")]
    p = Puzzle(
        id="p",
        family="glyph-pmp",
        layout="analogy",
        rule="change",
        concept=SIDES,
        shift=False,
        context=((g(0), g(1)), (g(2),)),
        answers=(g(3), g(4), g(5), g(6)),
        key=0,
        split="test",
        seed=1,
        values=(("1", "2"),),
    )
    return p, TagIndex.from_tags(tags)


def test_the_pair_alone_names_the_key_and_b_alone_does_not(ua_schema: Schema) -> None:
    p, ann = planted()
    book = RuleBook(ua_schema)
    assert analogy_key_ok(p, ann, book) and not analogy_findings(p, ann, book)
    views = puzzle_views(p, ann, book)
    assert views["pair"] == [{("change", SIDES)}, set(), set(), set()]
    assert views["probe"] == [{("change", SIDES)}] * 4
    report = partial_views([p], ann, book)
    assert report["views"]["pair"]["accuracy"] == 1.0
    assert report["views"]["probe"]["accuracy"] == 0.25
    assert report["views"]["probe"]["decoyed"] == 1.0
    lines = partial_lines(report)
    assert lines[0].startswith("partial views (exact solvers; chance 25%): the example pair alone")
    assert any(line.startswith(f"change × {SIDES}: the example pair alone 100%") for line in lines)
    assert lines[-1].startswith("no decoy for the example pair: it names the key's value")


def test_crossed_sets_halve_both_views_and_keep_the_answers_alone_at_chance(
    ua_schema: Schema,
) -> None:
    ann = crossed_set()
    book = RuleBook(ua_schema)
    result = generate_analogies(params(600, concepts=(SIDES,)), ann, ua_schema)
    puzzles = result.puzzles
    assert len(puzzles) == 600
    on_key: Counter = Counter()
    on_answer: Counter = Counter()
    for p in puzzles:
        assert analogy_key_ok(p, ann, book) and not analogy_findings(p, ann, book), p.id
        assert sorted(p.params["answer_roles"]) == ["crossed", "crossed", "key", "variant"]
        cells = {(min(ann.values(a, SIDES)), min(ann.values(a, ASPECT))) for a in p.answers}
        sides = {s for s, _ in cells}
        aspects = {a for _, a in cells}
        assert len(sides) == 2 and len(aspects) == 2 and len(cells) == 4, p.id  # 2 × 2
        for i, a in enumerate(p.answers):
            for tag in ann.tags_of(a):
                on_answer[tag] += 1
                on_key[tag] += i == p.key
    views = partial_views(puzzles, ann, book)["views"]
    assert views["pair"]["accuracy"] == 0.5 and views["probe"]["accuracy"] == 0.5
    # the answers alone: every value of either concept is on the key a quarter of its times
    for tag, n in on_answer.items():
        assert binomtest(on_key[tag], n, 0.25).pvalue > 1e-3, (tag, on_key[tag], n)


def test_without_crossed_sets_the_pair_alone_finds_every_key(
    ua_schema: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The design before (foils carrying the set's other values, most like B): the same
    annotations, and the example pair alone finds the key every time."""
    monkeypatch.setattr(analogy, "VARIANT_SETS", False)
    ann = crossed_set()
    puzzles = generate_analogies(params(300, concepts=(SIDES,)), ann, ua_schema).puzzles
    views = partial_views(puzzles, ann, RuleBook(ua_schema))["views"]
    assert views["pair"]["accuracy"] == 1.0


def test_on_single_tag_glyphs_every_answer_is_b_after_one_change(
    ua_csv: Path, ua_schema: Schema
) -> None:
    rows = read_annotation_csv(ua_csv, ua_schema)
    ann = TagIndex.from_tags((r.key, r.concept, r.value) for r in rows)
    book = RuleBook(ua_schema)
    puzzles = generate_analogies(params(800, min_answers=2), ann, ua_schema).puzzles
    assert len(puzzles) == 800
    assert {len(p.answers) for p in puzzles} == {2, 3, 4}
    for p in puzzles:
        (_a, _a2), (b,) = p.context
        assert set(p.params["answer_roles"]) == {"key", "variant"}
        for answer in p.answers:
            change = single_change(ann, b, answer)
            twin = ann.tags_of(answer) == ann.tags_of(b)
            assert twin or (change is not None and change[0] == p.concept), (p.id, answer)
            # B after no change is the one answer B alone rules out: in a set of two it
            # named the key (B alone read 0.65 against 0.50), so never there
            assert not (twin and len(p.answers) == 2), p.id
    views = partial_views(puzzles, ann, book)["views"]
    assert views["probe"]["decoyed"] == 1.0
    assert views["probe"]["accuracy"] < views["probe"]["chance"] + 0.05
    two = partial_views([p for p in puzzles if len(p.answers) == 2], ann, book)["views"]
    assert two["probe"]["accuracy"] == 0.5
    assert views["pair"]["accuracy"] == 1.0  # one concept per glyph: nothing can hide it


def test_a_concept_without_glyphs_alike_but_for_it_is_dry_and_says_why(
    ua_schema: Schema,
) -> None:
    """Tall glyphs have one, two or three sides, square ones three, four or five (two glyphs
    each): five values changes lead into, but no class holds four of them and the two classes
    share one value only, so neither design can be built."""
    tags = []
    n = 0
    for aspect, values in (("tall", "123"), ("square", "345")):
        for sides in values:
            for _ in range(2):
                tags += [(g(n), SIDES, sides), (g(n), ASPECT, aspect)]
                n += 1
    ann = TagIndex.from_tags(tags)
    with pytest.raises(StudioError) as e:
        generate_analogies(params(20, concepts=(SIDES,), min_answers=4), ann, ua_schema)
    assert "differ from each other in shape-sides alone" in str(e.value)
    assert "tag glyphs alike in every other concept" in str(e.value)


def test_the_card_shows_an_analogys_own_views(ua_schema: Schema) -> None:
    """The dataset card's table has the views the puzzles have: an analogy's pair and B, not
    two empty matrix columns."""
    from studio.publish.card import _partial_section

    p, ann = planted()
    report = partial_views([p], ann, RuleBook(ua_schema))
    text = "\n".join(_partial_section({"test": {"partial_views": report}}))
    assert "| part | chance | the example pair alone | B alone |" in text
    assert (
        "| test | 0.25 | 1.00 · 1.00 weighted (decoys 0%) | 0.25 · 0.25 weighted (decoys 100%) |"
        in text
    )
    assert "first row" not in text.split("|", 1)[1]


def test_short_variant_sets_widen_an_analogy_split(ua_csv: Path, ua_schema: Schema) -> None:
    """``min_answers`` for analogies: a class of glyphs alike but for c holding two or three
    values that a change leads into builds a set of that many, instead of leaving the concept
    dry; each puzzle's answers are still B after one change each, and valid."""
    rows = read_annotation_csv(ua_csv, ua_schema)
    ann = TagIndex.from_tags((r.key, r.concept, r.value) for r in rows)
    book = RuleBook(ua_schema)
    four = generate_analogies(params(600, min_answers=4), ann, ua_schema).puzzles
    short = generate_analogies(params(600, min_answers=2), ann, ua_schema).puzzles
    assert {len(p.answers) for p in four} == {4}
    sizes = Counter(len(p.answers) for p in short)
    assert sizes[4] and (sizes[2] or sizes[3]), sizes
    assert len({p.concept for p in short}) > len({p.concept for p in four})
    for p in short:
        assert analogy_key_ok(p, ann, book) and not analogy_findings(p, ann, book), p.id
        assert 0 <= p.key < len(p.answers) and len(p.params["answer_roles"]) == len(p.answers)
    for k in (2, 3):  # the key's slot is uniform within each set size
        keys = Counter(p.key for p in short if len(p.answers) == k)
        n = sum(keys.values())
        if n >= 40:
            assert all(binomtest(keys[i], n, 1 / k).pvalue > 1e-3 for i in range(k)), keys


@pytest.mark.parametrize("least", [4, 3, 2])
def test_every_value_is_the_key_its_share_of_the_time(
    ua_csv: Path, ua_schema: Schema, least: int
) -> None:
    """Value by value, not only pooled (an outside review found base-contacts 3 the key 0
    times in 115 and every stroke-line-zig-quantity set {1, 3} keyed 3, 73 of 73: the key's
    value was drawn before its example pair, and a failed pair redrew the puzzle, so values
    hard to pair stayed off the key). On the shared UA annotations every (concept, value)
    sits on the key its expected share of its appearances."""
    rows = read_annotation_csv(ua_csv, ua_schema)
    ann = TagIndex.from_tags((r.key, r.concept, r.value) for r in rows)
    puzzles = generate_analogies(params(4000, min_answers=least), ann, ua_schema).puzzles
    on_key: Counter = Counter()
    seen: Counter = Counter()
    expected: Counter = Counter()
    for p in puzzles:
        for i, a in enumerate(p.answers):
            for v in ann.values(a, p.concept):
                seen[(p.concept, v)] += 1
                on_key[(p.concept, v)] += i == p.key
                expected[(p.concept, v)] += 1 / len(p.answers)
    for cv, n in seen.items():
        if n >= 30:
            share = expected[cv] / n
            assert binomtest(on_key[cv], n, share).pvalue > 1e-4, (cv, on_key[cv], n, share)


def test_what_a_class_can_key_follows_the_changes_left_not_their_number(
    ua_schema: Schema,
) -> None:
    """Val and test draw from one side but retire changes apart: two lists of changes of the
    same length must not share an answer (a review found the memo keyed by the length alone,
    which later ended a generation in an internal error)."""
    gen = analogy.AnalogyGenerator(params(40, concepts=(SIDES,)), crossed_set(), ua_schema)
    changes = [t for t in gen._changes["train"] if t[0] == SIDES]

    def into(values: str, m: int) -> list:
        return [t for v in values for t in [t for t in changes if t[2] == v][:m]]

    m = min(sum(1 for t in changes if t[2] == v) for v in "1234")
    assert m >= 1
    first = {u for _, _, k in gen._keyable("train", SIDES, into("12", m)) for u in k}
    second = {u for _, _, k in gen._keyable("train", SIDES, into("34", m)) for u in k}
    assert first == {"1", "2"} and second == {"3", "4"}
