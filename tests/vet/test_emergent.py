"""Emergent rules: a planted polysemic glyph that would complete a second rule is never a foil."""

from __future__ import annotations

from collections import Counter

import pytest

from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.families.glyph_pmp.generator import GlyphPMPGenerator
from studio.generate.params import SplitParams
from studio.vet.emergent import find_emergent_rules, vet_puzzle
from studio.vet.rules import RuleBook


def g(n: int) -> GlyphKey:
    return GlyphKey(0x2500 + n, "symbola")


def planted_index() -> tuple[TagIndex, set[GlyphKey]]:
    """12 glyphs with 3 dots that are also circles, 4 that are squares; foils with 1, 2 or 4
    dots, where five of the 2-dot glyphs are ALSO circles (planted): with a context of circles
    they would complete constant(closure) — a second defensible answer that UA's folder rule
    lets in.
    Every value has glyphs enough to be a key, as a symmetric answer set needs."""
    tags = []
    for i in range(12):
        tags += [(g(i), "stroke-dot-quantity", "3"), (g(i), "closure", "circle")]
    for i in range(60, 64):  # a key completing no second rule (closure) can be drawn
        tags += [(g(i), "stroke-dot-quantity", "3"), (g(i), "closure", "square")]
    planted = set()
    for i in range(20, 25):
        tags += [(g(i), "stroke-dot-quantity", "2"), (g(i), "closure", "circle")]
        planted.add(g(i))
    for i in range(25, 30):
        tags.append((g(i), "stroke-dot-quantity", "2"))
    for i in range(30, 40):
        tags.append((g(i), "stroke-dot-quantity", "1"))
    for i in range(40, 50):
        tags.append((g(i), "stroke-dot-quantity", "4"))
    return TagIndex.from_tags(tags), planted


def constant_puzzle(foils: list[GlyphKey]) -> Puzzle:
    return Puzzle(
        id="p",
        family="glyph-pmp",
        layout="two-row",
        rule="constant",
        concept="stroke-dot-quantity",
        shift=False,
        context=((g(0), g(1), g(2)), (g(3), g(4))),
        answers=(g(5), *foils),
        key=0,
        split="test",
        seed=1,
    )


def test_a_polysemic_foil_completing_another_concept_is_found(ua_schema: Schema) -> None:
    ann, planted = planted_index()
    bad = sorted(planted)[0]
    puzzle = constant_puzzle([bad, g(30), g(40)])
    found = find_emergent_rules(puzzle, ann, ua_schema)
    assert [(f.check, f.answer, f.rule, f.concept, f.rows) for f in found] == [
        ("emergent", 1, "constant", "closure", (("circle",), ("circle",)))
    ]
    verdict = vet_puzzle(puzzle, ann, ua_schema)
    assert not verdict.valid
    assert "completes constant over closure" in verdict.errors[0].message()


def test_a_foil_completing_the_intended_rule_is_found(ua_schema: Schema) -> None:
    ann, _ = planted_index()
    puzzle = constant_puzzle([g(6), g(30), g(40)])  # g(6) has three dots too
    found = find_emergent_rules(puzzle, ann, ua_schema)
    assert ("foil-completes-intended", 1) in [(f.check, f.answer) for f in found]


def test_clean_foils_are_valid(ua_schema: Schema) -> None:
    ann, _ = planted_index()
    assert vet_puzzle(constant_puzzle([g(30), g(31), g(40)]), ann, ua_schema).valid


def test_key_that_does_not_complete_and_answers_from_the_context_are_errors(
    ua_schema: Schema,
) -> None:
    ann, _ = planted_index()
    p = constant_puzzle([g(30), g(31), g(40)])
    kinds = {f.check for f in vet_puzzle(p.with_answer(0, g(41)), ann, ua_schema).errors}
    assert "key-fails" in kinds
    kinds = {f.check for f in vet_puzzle(p.with_answer(2, g(0)), ann, ua_schema).errors}
    assert "answer-in-context" in kinds
    kinds = {f.check for f in vet_puzzle(p.with_answer(2, g(30)), ann, ua_schema).errors}
    assert "duplicate-answer" in kinds


@pytest.mark.parametrize("shift", [False, True])
def test_the_generator_never_draws_the_planted_foils(ua_schema: Schema, shift: bool) -> None:
    ann, planted = planted_index()
    params = SplitParams(
        rules=("constant",),
        concepts=("stroke-dot-quantity",),
        holdout="basic",
        sampling="balanced",
        ratios=(1, 0, 0),
        n=150,
        seed=6,
        shift=shift,
    )
    gen = GlyphPMPGenerator(params, ann, ua_schema)
    result = gen.generate()
    book = RuleBook(ua_schema)
    circles_in_context = 0
    for p in result.puzzles:
        assert vet_puzzle(p, ann, book).valid
        if all("circle" in ann.values(k, "closure") for k in p.context_keys):
            circles_in_context += 1
            assert not set(p.answers[i] for i in p.foils) & planted
    assert circles_in_context > 0
    assert result.rejections["foil-emergent:constant"] > 0


def test_the_planted_foil_would_pass_uas_folder_rule(ua_schema: Schema) -> None:
    """The point of checking every concept: UA only kept foils out of the answer's folder."""
    ann, planted = planted_index()
    answer_folder = set(ann.folder("stroke-dot-quantity", "3"))
    assert planted and not planted & answer_folder
    counts = Counter(v for k in planted for v in ann.values(k, "stroke-dot-quantity"))
    assert counts == {"2": 5}


def test_shared_context_work_gives_the_same_completions_as_one_by_one(ua_schema: Schema) -> None:
    from studio.vet.emergent import _rows_with, answer_completions, completions

    ann, _ = planted_index()
    book = RuleBook(ua_schema)
    result = GlyphPMPGenerator(
        SplitParams(
            rules=("constant",),
            concepts=("stroke-dot-quantity",),
            holdout="basic",
            sampling="balanced",
            ratios=(1, 0, 0),
            n=40,
            shift=True,
        ),
        ann,
        ua_schema,
    ).generate()
    for p in result.puzzles:
        for candidate in [*p.answers, *sorted(ann.by_glyph)[:12]]:
            one = completions(_rows_with(p, candidate), ann, book, p.shift)
            shared = answer_completions(p.context, [candidate], ann, book, p.shift)[0]
            assert [(rc.rule, rc.concept, v) for rc, v in one] == [
                (rc.rule, rc.concept, v) for rc, v in shared
            ]
