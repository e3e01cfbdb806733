"""The glyph PMP generator on the real UA annotations: valid, reproducible, honest about gaps."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from studio.core.annotations import read_annotation_csv
from studio.core.puzzle import write_jsonl
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.families.glyph_pmp.generator import generate_split
from studio.families.glyph_pmp.split import GenerationShortfall
from studio.generate.params import ALL_RULES, SplitParams
from studio.vet.emergent import vet_puzzle
from studio.vet.rules import RuleBook


@pytest.fixture(scope="module")
def ua_index(ua_csv: Path, ua_schema: Schema) -> TagIndex:
    rows = read_annotation_csv(ua_csv, ua_schema)
    return TagIndex.from_tags((r.key, r.concept, r.value) for r in rows)


def test_the_same_seed_gives_the_same_split_and_another_seed_another(
    ua_index: TagIndex, ua_schema: Schema
) -> None:
    params = SplitParams(n=300, seed=3, sampling="balanced", shift=True)
    a = write_jsonl(generate_split(params, ua_index, ua_schema).puzzles)
    b = write_jsonl(generate_split(params, ua_index, ua_schema).puzzles)
    assert a == b
    c = generate_split(
        SplitParams(n=300, seed=4, sampling="balanced", shift=True), ua_index, ua_schema
    )
    assert write_jsonl(c.puzzles) != a


@pytest.mark.parametrize(
    ("layout", "holdout", "answer_sets"),
    [
        # the UA set's values are thin: rows of 9 glyphs need every glyph on both sides
        ("two-row", "none", "symmetric"),
        ("two-row", "basic", "ua"),
        ("matrix-3x3", "none", "symmetric"),
        ("sequence", "basic", "symmetric"),
        ("odd-one-out", "basic", "symmetric"),
    ],
)
def test_every_generated_puzzle_is_valid(
    ua_index: TagIndex, ua_schema: Schema, layout: str, holdout: str, answer_sets: str
) -> None:
    params = SplitParams(
        n=240,
        seed=1,
        sampling="balanced",
        layout=layout,
        holdout=holdout,
        answer_sets=answer_sets,
    )
    result = generate_split(params, ua_index, ua_schema)
    book = RuleBook(ua_schema)
    assert len(result.puzzles) == 240
    for p in result.puzzles:
        verdict = vet_puzzle(p, ua_index, book)
        assert verdict.valid, (p.id, [f.message() for f in verdict.errors])
        assert p.layout == layout
        assert len(set(p.answers)) == len(p.answers)
    assert Counter(p.split for p in result.puzzles) == params.counts()


def test_key_positions_are_spread_over_every_slot(ua_index: TagIndex, ua_schema: Schema) -> None:
    result = generate_split(SplitParams(n=800, seed=1, sampling="balanced"), ua_index, ua_schema)
    counts = Counter(p.key for p in result.puzzles)
    assert set(counts) == {0, 1, 2, 3}
    # each slot about as often as a key could sit there: one over each set's own size
    expected: Counter = Counter()
    for p in result.puzzles:
        for slot in range(len(p.answers)):
            expected[slot] += 1 / len(p.answers)
    for slot, want in expected.items():
        assert counts[slot] > want * 0.75, (slot, counts, expected)


def test_disjoint_holdout_keeps_train_and_test_glyphs_apart(
    ua_index: TagIndex, ua_schema: Schema
) -> None:
    result = generate_split(
        SplitParams(n=400, seed=5, sampling="balanced", holdout="disjoint"), ua_index, ua_schema
    )
    train = {k for p in result.puzzles if p.split == "train" for k in p.all_keys()}
    other = {k for p in result.puzzles if p.split != "train" for k in p.all_keys()}
    assert train and other and not train & other


@pytest.mark.parametrize("mode", ["tuples", "concepts", "values"])
def test_extrapolation_holds_out_what_it_says(
    ua_index: TagIndex, ua_schema: Schema, mode: str
) -> None:
    # a seed whose held-out tuples or concepts UA's annotations can fill (many seeds hold out
    # only ones that run dry on them, issue 24)
    seed = {"tuples": 17, "concepts": 15, "values": 11}[mode]
    params = SplitParams(n=300, seed=seed, sampling="balanced", extrapolation=mode, holdout="none")
    result = generate_split(params, ua_index, ua_schema)
    by_part: dict[str, set] = {"train": set(), "test": set()}
    for p in result.puzzles:
        part = "train" if p.split == "train" else "test"
        if mode == "tuples":
            by_part[part].add((p.rule, p.concept))
        elif mode == "concepts":
            by_part[part].add(p.concept)
        else:
            by_part[part].add((p.rule, p.concept, p.values))
    assert by_part["train"] and by_part["test"]
    assert not by_part["train"] & by_part["test"]


def test_diverse_sampling_never_repeats_an_instantiation(
    ua_index: TagIndex, ua_schema: Schema
) -> None:
    result = generate_split(
        SplitParams(n=300, seed=1, sampling="diverse", holdout="none", shift=True),
        ua_index,
        ua_schema,
    )
    seen = Counter((p.rule, p.concept, p.shift, p.values, p.answer_key) for p in result.puzzles)
    assert max(seen.values()) == 1


def test_union_runs_dry_on_single_tag_annotations_and_says_why(
    ua_index: TagIndex, ua_schema: Schema
) -> None:
    with pytest.raises(GenerationShortfall) as e:
        generate_split(SplitParams(n=50, rules=("union",)), ua_index, ua_schema)
    assert "union/gestalt/noshift" in str(e.value)
    assert "carries two values" in str(e.value)


def test_dry_tuples_are_reported_while_the_others_fill_the_split(
    ua_index: TagIndex, ua_schema: Schema
) -> None:
    params = SplitParams(n=200, sampling="balanced", rules=ALL_RULES)
    result = generate_split(params, ua_index, ua_schema)
    assert len(result.puzzles) == 200
    dry = result.summary()["dry_tuples"]["train"]
    assert any(t.startswith("union/") for t in dry)


def test_union_is_asked_for_by_name_only(ua_index: TagIndex, ua_schema: Schema) -> None:
    """No glyph of UA's carries two values of one concept, so a union tuple only ever ran dry
    and warned: the default rules leave it out, and naming it still asks for it."""
    assert "union" not in SplitParams().rules and "union" in ALL_RULES
    result = generate_split(SplitParams(n=100, sampling="balanced"), ua_index, ua_schema)
    assert not any(t.startswith("union/") for t in result.tuples["train"])


def test_a_shortfall_says_what_happened_in_one_line_then_lists_the_tuples(
    ua_index: TagIndex, ua_schema: Schema
) -> None:
    with pytest.raises(GenerationShortfall) as e:
        generate_split(SplitParams(n=2000, sampling="diverse"), ua_index, ua_schema)
    first, *rest = str(e.value).split("\n")
    assert len(first) < 200 and "ran dry" in first  # fits a message box; the rest is details
    assert len(rest) == len(e.value.dry) > 10


def test_a_tuple_no_answer_set_can_build_is_dry_from_the_start_and_says_why(
    ua_index: TagIndex, ua_schema: Schema
) -> None:
    """Issue 24: on the held-out side progression × components-solid has two values that can
    each be a key (1 and 5), yet no set holds both — the glyphs of 5 that 1's rows use leave
    none for its foil. Every draw failed, never 80 in a row within a chunk, and the split
    said nothing of it; now it is dry before any draw, with the values named."""
    params = SplitParams(n=600, seed=5, sampling="balanced", min_answers=2)
    result = generate_split(params, ua_index, ua_schema)
    for part in ("val", "test"):
        why = result.dry[part]["progression/components-solid/noshift"]
        assert why.startswith("no 2 of the values of components-solid that can be the key")
        assert "(1, 5)" in why
    assert "progression/components-solid/noshift" in result.produced  # train builds it


def test_every_tuple_offered_is_made_or_named_dry_in_each_part(
    ua_index: TagIndex, ua_schema: Schema
) -> None:
    """A sharded split (chunks of 250, each counting failures afresh) once left tuples that
    failed every draw neither made nor dry: nothing told the user."""
    params = SplitParams(n=3000, seed=5, sampling="balanced", min_answers=2)
    result = generate_split(params, ua_index, ua_schema)
    made = Counter((p.split, f"{p.rule}/{p.concept}/{'shift' if p.shift else 'noshift'}")
                   for p in result.puzzles)  # fmt: skip
    for part, offered in result.tuples.items():  # 900 or more draws a part: all drawn
        for t in offered:
            assert made[(part, t)] or t in result.dry[part], (part, t)
    unmade = [why for d in result.dry.values() for why in d.values() if why.startswith("none of")]
    assert unmade and all("draws made a puzzle (most often: " in w for w in unmade)


def test_a_tuple_drawn_a_few_times_in_a_small_split_is_not_called_dry(
    ua_index: TagIndex, ua_schema: Schema
) -> None:
    result = generate_split(
        SplitParams(n=40, seed=1, sampling="balanced", shift=True, answer_sets="ua"),
        ua_index,
        ua_schema,
    )
    assert not any(w.startswith("none of") for d in result.dry.values() for w in d.values())


def test_a_tuple_made_in_test_is_not_named_unmade_in_val(
    ua_index: TagIndex, ua_schema: Schema
) -> None:
    """Review of issue 24: val and test draw from the same held-out glyphs, so a tuple made
    in test and unlucky in val is not one whose draws all fail (a 3×3 shift split named
    progression × shape-sides in val after 43 failed draws, with 7 test puzzles of it)."""
    from studio.splits import generate_from

    params = SplitParams(n=3000, seed=5, sampling="balanced", min_answers=2, shift=True,
                         layout="matrix-3x3")  # fmt: skip
    [result] = generate_from(ua_index, ua_schema, params, workers=1)  # in chunks of 250
    made = {(p.split, f"{p.rule}/{p.concept}/{'shift' if p.shift else 'noshift'}")
            for p in result.puzzles}  # fmt: skip
    unmade = [(part, t) for part in ("val", "test") for t, why in result.dry[part].items()
              if why.startswith("none of")]  # fmt: skip
    assert all(("val", t) not in made and ("test", t) not in made for _, t in unmade)
    assert any(why.startswith("none of") for why in result.dry["train"].values())
