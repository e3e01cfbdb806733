"""The glyph hold-out is a property of each glyph (issue 24): tagging a glyph never moves
another between train and val/test, the seed does not move the test glyphs, and an annotator
who tags as many held-out glyphs as the needs report asks for mends the tuple it names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from studio.core.annotations import read_annotation_csv
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.families.glyph_pmp.generator import generate_split
from studio.families.glyph_pmp.needs import annotation_needs
from studio.families.glyph_pmp.split import GlyphSide, glyph_side, hold_out
from studio.generate.params import SplitParams


@pytest.fixture(scope="module")
def ua_tags(ua_csv: Path, ua_schema: Schema) -> list[tuple[GlyphKey, str, str]]:
    return [(r.key, r.concept, r.value) for r in read_annotation_csv(ua_csv, ua_schema)]


def sides_of(params: SplitParams, tags: list[tuple[GlyphKey, str, str]], fold: int = 0) -> dict:
    sides = hold_out(params, TagIndex.from_tags(tags).folders, fold)
    return {k: name for name, side in sides.items() for k in side.glyphs}


def new_glyphs(side: str, fraction: float = 0.3) -> Iterator[GlyphKey]:
    """Glyphs no annotation set has (a private-use range of a font of its own) on ``side``."""
    for cp in range(0xF0000, 0xFFFFD):
        key = GlyphKey(cp, "holdout-test")
        if glyph_side(key, fraction) == side:
            yield key


def test_a_tag_added_moves_no_other_glyph(ua_tags: list[tuple[GlyphKey, str, str]]) -> None:
    params = SplitParams(holdout="disjoint")
    before = sides_of(params, ua_tags)
    held = sum(s == "eval" for s in before.values()) / len(before)
    assert 0.25 < held < 0.35  # about the fraction asked for (0.3)
    first, _c, _v = ua_tags[0]
    more = [
        *((k, "aspect", "tall") for k, _ in zip(new_glyphs("eval"), range(7), strict=False)),
        *((k, "aspect", "wide") for k, _ in zip(new_glyphs("train"), range(7), strict=False)),
        (first, "closure", "circle"),  # one more tag on a glyph already there
    ]
    after = sides_of(params, [*ua_tags, *more])
    assert {k: after[k] for k in before} == before
    assert all(after[k] == glyph_side(k, 0.3) for k, _c, _v in more)


def test_the_test_glyphs_are_the_same_for_every_seed_and_layout(
    ua_tags: list[tuple[GlyphKey, str, str]],
) -> None:
    one = sides_of(SplitParams(seed=1), ua_tags)
    assert sides_of(SplitParams(seed=2, layout="analogy"), ua_tags) == one
    other_fold = sides_of(SplitParams(seed=1), ua_tags, fold=1)
    assert other_fold.keys() == one.keys() and other_fold != one  # folds partition anew


def test_basic_holdout_moves_at_most_one_glyph_of_the_folder_a_tag_joins(
    ua_tags: list[tuple[GlyphKey, str, str]], ua_schema: Schema
) -> None:
    params = SplitParams(holdout="basic")
    before = hold_out(params, TagIndex.from_tags(ua_tags).folders)
    key = next(new_glyphs("eval"))
    after = hold_out(params, TagIndex.from_tags([*ua_tags, (key, "aspect", "tall")]).folders)

    def where(sides: dict[str, GlyphSide]) -> dict[GlyphKey, str]:
        return {k: n for n, s in sides.items() for k in s.folder("aspect", "tall")}

    old, new = where(before), where(after)
    assert sum(old[k] != new[k] for k in old) <= 1
    for cv in TagIndex.from_tags(ua_tags).folders:
        if cv != ("aspect", "tall"):
            assert after["eval"].folder(*cv) == before["eval"].folder(*cv)


def test_tagging_the_held_out_glyphs_the_needs_ask_for_mends_the_tuple(
    ua_tags: list[tuple[GlyphKey, str, str]], ua_schema: Schema
) -> None:
    params = SplitParams(n=40, seed=3, rules=("constant",), sampling="balanced")
    report = annotation_needs(params, TagIndex.from_tags(ua_tags), ua_schema)
    assert report.holdout == "disjoint"
    wanted = [t for t in report.tuples if t.side == "eval" and t.mendable and t.values]
    assert wanted, "the UA set leaves some constant tuple dry on the held-out side"
    need = wanted[0]
    concept = need.values[0].concept
    sides = report.per_value_side()
    for v in need.values:  # the count is of held-out glyphs, said so
        assert sides[(concept, v.value)]["eval"] >= v.more
        assert "held-out" in report.side_text(concept, v.value)
    glyphs = new_glyphs("eval")
    more = [(next(glyphs), concept, v.value) for v in need.values for _ in range(v.more)]
    mended = annotation_needs(params, TagIndex.from_tags([*ua_tags, *more]), ua_schema)
    still = [t for t in mended.tuples if (t.tuple, t.side) == (need.tuple, "eval")]
    assert still == [], f"{need.message()} — still dry after tagging {len(more)} glyphs"
    # and tagging train glyphs instead leaves the held-out side as it was
    glyphs = new_glyphs("train")
    wrong = [(next(glyphs), concept, v.value) for v in need.values for _ in range(v.more)]
    unmended = annotation_needs(params, TagIndex.from_tags([*ua_tags, *wrong]), ua_schema)
    assert [t for t in unmended.tuples if (t.tuple, t.side) == (need.tuple, "eval")]


def test_a_split_keeps_the_glyph_sides_it_reports(
    ua_tags: list[tuple[GlyphKey, str, str]], ua_schema: Schema
) -> None:
    params = SplitParams(n=300, seed=4, sampling="balanced")
    result = generate_split(params, TagIndex.from_tags(ua_tags), ua_schema)
    for p in result.puzzles:
        want = "train" if p.split == "train" else "eval"
        assert {glyph_side(k, params.holdout_fraction) for k in p.all_keys()} == {want}, p.id


def test_a_split_made_before_keeps_its_seeded_hold_out(
    ua_tags: list[tuple[GlyphKey, str, str]],
) -> None:
    """Review of issue 24: a curated set made with the seeded permutation must regenerate its
    puzzles on the sides its other puzzles were built on, not the glyph-side hash's."""
    import numpy as np

    old_json = SplitParams(seed=3).to_json()
    del old_json["holdout_version"]  # as a split.json or a set written before records it
    old = SplitParams.from_json(old_json)
    assert old.holdout_version == 1 and SplitParams().holdout_version == 2
    folders = TagIndex.from_tags(ua_tags).folders

    def sides(params: SplitParams) -> dict:
        rng = np.random.default_rng(np.random.SeedSequence([params.seed, 0]))
        got = hold_out(params, folders, 0, rng)
        return {k: n for n, side in got.items() for k in side.glyphs}

    assert sides(old) != sides(SplitParams(seed=3))  # the two schemes differ
    assert sides(old) == sides(old)  # the old one is the seeded permutation, again
    assert sides(old) != sides(SplitParams.from_json({**old_json, "seed": 4}))  # seed-bound
    with pytest.raises(ValueError, match="draws from the split's generator"):
        hold_out(old, folders, 0)
