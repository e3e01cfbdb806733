"""MARVEL perception questions: coarse panel counts and fine-grained binary questions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from studio.core.annotations import read_annotation_csv
from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle, Question
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.families.glyph_pmp.analogy import generate_analogies
from studio.families.glyph_pmp.generator import generate_split
from studio.generate.params import SplitParams
from studio.vet.questions import (
    coarse_questions,
    concept_noun,
    perception_questions,
    value_phrase,
)

DOTS = "stroke-dot-quantity"


def g(n: int) -> GlyphKey:
    return GlyphKey(0x2A00 + n, "symbola")


def puzzle(
    layout: str,
    context: tuple[tuple[GlyphKey, ...], ...],
    answers: tuple[GlyphKey, ...],
    concept: str = DOTS,
    values: tuple[tuple[str, ...], ...] = (),
    pid: str = "p-00001",
) -> Puzzle:
    return Puzzle(
        id=pid,
        family="glyph-pmp",
        layout=layout,
        rule="change" if layout == "analogy" else "constant",
        concept=concept,
        shift=False,
        context=context,
        answers=answers,
        key=0,
        split="test",
        seed=1,
        values=values,
    )


SHAPES = {
    "two-row": (((g(1), g(2), g(3)), (g(4), g(5))), (5, 4, 9)),
    "matrix-3x3": (((g(1), g(2), g(3)), (g(4), g(5), g(6)), (g(7), g(8))), (8, 4, 12)),
    "sequence": (((g(1), g(2), g(3)),), (3, 4, 7)),
    "odd-one-out": ((), (0, 4, 4)),
    "analogy": (((g(1), g(2)), (g(3),)), (3, 4, 7)),
}


def answer_value(ann: TagIndex, schema: Schema, q: Question, p: Puzzle) -> tuple[str, str]:
    """(the answer's value, the other option's value), read back from the phrases."""
    concept = schema.concept(q.concept or "")
    by_phrase = {value_phrase(concept, v): v for v in concept.value_ids}
    other = next(o for o in q.options if o != q.answer)
    return by_phrase[q.answer], by_phrase[other]


def panel_glyph(p: Puzzle, panel: str) -> GlyphKey:
    where, _, pos = panel.partition(" ")
    if where == "answer":
        return p.answers[int(pos) - 1]
    if "." in pos:
        r, c = pos.split(".")
        return p.context[int(r) - 1][int(c) - 1]
    return p.context[0][int(pos) - 1]


def assert_true_by_annotations(p: Puzzle, ann: TagIndex, schema: Schema) -> None:
    for q in p.questions or perception_questions(p, ann, schema):
        assert q.answer in q.options
        assert len(set(q.options)) == len(q.options)
        if q.kind == "fine":
            assert q.panel and q.concept == p.concept and len(q.options) == 2
            truth, other = answer_value(ann, schema, q, p)
            carried = ann.values(panel_glyph(p, q.panel), q.concept)
            assert truth in carried, (p.id, q)
            assert other not in carried, (p.id, q)


# ---- coarse ------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", list(SHAPES))
def test_coarse_counts(layout: str) -> None:
    context, (n_context, n_answers, n_all) = SHAPES[layout]
    p = puzzle(layout, context, (g(20), g(21), g(22), g(23)))
    qs = coarse_questions(p)
    assert [q.kind for q in qs] == ["coarse"] * 3
    assert [q.answer for q in qs] == [str(n_context), str(n_answers), str(n_all)]
    for q in qs:
        assert q.answer in q.options and len(q.options) == 4
        nums = [int(o) for o in q.options]
        assert nums == list(range(nums[0], nums[0] + 4)) and nums[0] >= 0
    assert coarse_questions(p) == qs  # deterministic


def test_where_the_count_sits_among_the_options_varies_with_the_puzzle() -> None:
    context, _ = SHAPES["two-row"]
    firsts = {
        coarse_questions(puzzle("two-row", context, (g(20),) * 4, pid=f"p-{i}"))[2].options[0]
        for i in range(40)
    }
    assert len(firsts) > 1


# ---- fine --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dots_index() -> TagIndex:
    return TagIndex.from_tags(
        [
            (g(1), DOTS, "3"),
            (g(2), DOTS, "4"),
            (g(3), DOTS, "3"),
            (g(20), DOTS, "4"),
            (g(21), DOTS, "2"),
            (g(21), DOTS, "5"),  # polysemic: the wrong option is neither 2 nor 5
            (g(22), "closure", "circle"),  # no dots tag: no question
            (g(23), DOTS, "1"),
            (g(23), DOTS, "none"),
        ]
    )


def test_one_fine_question_per_tagged_answer_and_context_panels_of_short_layouts(
    dots_index: TagIndex, ua_schema: Schema
) -> None:
    context, _ = SHAPES["analogy"]
    answers = (g(20), g(21), g(22), g(23))
    p = puzzle("analogy", context, answers, values=(("3", "4"),))
    qs = perception_questions(p, dots_index, ua_schema)
    fine = [q for q in qs if q.kind == "fine"]
    assert [q.panel for q in fine] == [
        "context 1.1",
        "context 1.2",
        "context 2.1",
        "answer 1",
        "answer 2",
        "answer 4",
    ]
    assert_true_by_annotations(p, dots_index, ua_schema)
    q = next(q for q in fine if q.panel == "answer 1")
    assert set(q.options) == {"four dots", "three dots"}  # the puzzle's other value, nearest
    assert q.answer == "four dots"
    assert q.text in ("Does answer 1 show four dots or three dots?",
                      "Does answer 1 show three dots or four dots?")  # fmt: skip
    q = next(q for q in fine if q.panel == "answer 2")
    assert q.answer in ("two dots", "five dots")
    assert not {"two dots", "five dots"} <= set(q.options)
    assert perception_questions(p, dots_index, ua_schema) == qs


def test_long_contexts_ask_about_answers_only(dots_index: TagIndex, ua_schema: Schema) -> None:
    context, _ = SHAPES["two-row"]
    p = puzzle("two-row", context, (g(20), g(21), g(22), g(23)))
    fine = [q for q in perception_questions(p, dots_index, ua_schema) if q.kind == "fine"]
    assert [q.panel for q in fine] == ["answer 1", "answer 2", "answer 4"]
    seq = puzzle("sequence", ((g(1), g(2), g(3)),), (g(20), g(21), g(22), g(23)))
    fine = [q for q in perception_questions(seq, dots_index, ua_schema) if q.kind == "fine"]
    assert [q.panel for q in fine][:3] == ["context 1", "context 2", "context 3"]
    assert fine[0].text.startswith("Does context panel 1 show ")


def test_option_order_comes_from_the_puzzle_id(dots_index: TagIndex, ua_schema: Schema) -> None:
    context, _ = SHAPES["two-row"]
    orders = set()
    for i in range(30):
        p = puzzle("two-row", context, (g(20), g(21), g(22), g(23)), pid=f"x-{i}")
        q = next(q for q in perception_questions(p, dots_index, ua_schema) if q.kind == "fine")
        orders.add(q.options[0] == q.answer)
    assert orders == {True, False}


def test_an_rng_decides_instead_when_given(dots_index: TagIndex, ua_schema: Schema) -> None:
    context, _ = SHAPES["analogy"]
    p = puzzle("analogy", context, (g(20), g(21), g(22), g(23)), values=(("3", "4"),))
    a = perception_questions(p, dots_index, ua_schema, rng=np.random.default_rng(7))
    b = perception_questions(p, dots_index, ua_schema, rng=np.random.default_rng(7))
    assert a == b
    for q in a:
        assert q.answer in q.options


def test_phrasing_by_value_kind(ua_schema: Schema) -> None:
    ann = TagIndex.from_tags(
        [
            (g(30), "closure", "circle"),
            (g(31), "gestalt", "3"),
            (g(32), "horns", ""),
            (g(33), "horns", "none"),
        ]
    )
    nominal = puzzle("two-row", SHAPES["two-row"][0], (g(30),) * 4, concept="closure")
    q = next(q for q in perception_questions(nominal, ann, ua_schema) if q.kind == "fine")
    assert q.text.startswith("Which does answer 1 show for closure: ")
    assert q.answer == "circle" and "none" not in q.options
    counts = puzzle("two-row", SHAPES["two-row"][0], (g(31),) * 4, concept="gestalt")
    q = next(q for q in perception_questions(counts, ann, ua_schema) if q.kind == "fine")
    assert concept_noun("gestalt") is None
    assert "gestalt: " in q.text and set(q.options) in ({"3", "2"}, {"3", "4"})
    presence = puzzle("odd-one-out", (), (g(32), g(33), g(32), g(32)), concept="horns")
    fine = [q for q in perception_questions(presence, ann, ua_schema) if q.kind == "fine"]
    assert [q.answer for q in fine] == ["present", "none", "present", "present"]
    assert all(set(q.options) == {"present", "none"} for q in fine)
    assert_true_by_annotations(presence, ann, ua_schema)


def test_nouns_from_concept_ids() -> None:
    assert concept_noun("stroke-dot-quantity") == ("dot", "dots")
    assert concept_noun("stroke-dash-quantity") == ("dash", "dashes")
    assert concept_noun("stroke-line-straight-quantity") == ("straight line", "straight lines")
    assert concept_noun("intersection-quantity") == ("intersection", "intersections")
    assert concept_noun("components-solid") == ("solid component", "solid components")
    assert concept_noun("widget-quantity") == ("widget", "widgets")
    assert concept_noun("symmetry-rotational") is None


def test_a_puzzle_over_an_unknown_concept_gets_coarse_questions_only(
    dots_index: TagIndex, ua_schema: Schema
) -> None:
    p = puzzle("two-row", SHAPES["two-row"][0], (g(20),) * 4, concept="no-such-concept")
    assert [q.kind for q in perception_questions(p, dots_index, ua_schema)] == ["coarse"] * 3


# ---- on generated puzzles ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def ua_index(ua_csv: Path, ua_schema: Schema) -> TagIndex:
    rows = read_annotation_csv(ua_csv, ua_schema)
    return TagIndex.from_tags((r.key, r.concept, r.value) for r in rows)


@pytest.mark.parametrize(
    ("layout", "context"),
    [("two-row", 5), ("matrix-3x3", 8), ("sequence", 3), ("odd-one-out", 0), ("analogy", 3)],
)
def test_questions_on_generated_puzzles_are_true(
    ua_index: TagIndex, ua_schema: Schema, layout: str, context: int
) -> None:
    # every glyph on both sides: the UA set's thin values still give symmetric answer sets
    params = SplitParams(layout=layout, n=60, seed=2, sampling="balanced", holdout="none")
    make = generate_analogies if layout == "analogy" else generate_split
    result = make(params, ua_index, ua_schema, questions=perception_questions)
    assert result.puzzles
    fine = 0
    for p in result.puzzles:
        k = len(p.answers)  # sets of two to four answers
        counts = [str(context), str(k), str(context + k)]
        assert [q.answer for q in p.questions if q.kind == "coarse"] == counts
        assert_true_by_annotations(p, ua_index, ua_schema)
        fine += sum(q.kind == "fine" for q in p.questions)
        again = Puzzle.from_json(p.to_json())
        assert again.questions == p.questions
    assert fine >= len(result.puzzles)
