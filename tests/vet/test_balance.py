"""Split statistics: counts, answer-position balance and foil-value balance (chi-square)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.core.annotations import read_annotation_csv
from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.generate.params import SplitParams
from studio.splits import generate_from
from studio.vet.balance import answer_positions, chi_square_uniform, foil_values, split_stats


def key(n: int) -> GlyphKey:
    return GlyphKey(0x2500 + n, "symbola")


def puzzle(
    answers: list[int], key_index: int, concept: str = "closure", split: str = "train", i: int = 0
) -> Puzzle:
    return Puzzle(
        id=f"{split}-{i:05d}",
        family="glyph-pmp",
        layout="two-row",
        rule="constant",
        concept=concept,
        shift=False,
        context=((key(100), key(101), key(102)), (key(103), key(104))),
        answers=tuple(key(a) for a in answers),
        key=key_index,
        split=split,
        seed=1,
    )


@pytest.fixture(scope="module")
def ua_index(ua_csv: Path, ua_schema: Schema) -> TagIndex:
    rows = read_annotation_csv(ua_csv, ua_schema)
    return TagIndex.from_tags((r.key, r.concept, r.value) for r in rows)


def test_stats_of_a_real_split_are_consistent_and_json(ua_index: TagIndex, ua_schema: Schema):
    params = SplitParams(n=300, sampling="balanced", seed=3)
    [result] = generate_from(ua_index, ua_schema, params)
    stats = split_stats(result.puzzles, ua_index, ua_schema)
    assert set(stats) == {"train", "val", "test", "all"}
    text = json.dumps(stats, allow_nan=False, sort_keys=True)  # plain JSON, no NaN
    assert json.loads(text) == stats
    assert stats == split_stats(result.puzzles, ua_index, ua_schema)  # deterministic
    every = stats["all"]
    assert every["puzzles"] == 300
    assert sum(stats[p]["puzzles"] for p in ("train", "val", "test")) == 300
    assert stats["train"]["puzzles"] == params.counts()["train"]
    for part in ("train", "val", "test", "all"):
        s = stats[part]
        assert sum(s["per_rule"].values()) == s["puzzles"]
        assert sum(s["per_concept"].values()) == s["puzzles"]
        assert sum(s["per_rule_concept"].values()) == s["puzzles"]
        assert s["per_layout"] == {"two-row": s["puzzles"]}
        assert sum(s["answer_position"]["histogram"]) == s["puzzles"]
    pos = every["answer_position"]
    assert len(pos["histogram"]) == 4 and 0 <= pos["p"] <= 1
    # the key's position is drawn uniformly: no significant bias over 300 puzzles
    assert pos["p"] > 0.001
    fv = every["foil_values"]
    assert set(fv["per_concept"]) == set(every["per_concept"])
    for concept, entry in fv["per_concept"].items():
        # counted over the concept's own values, in schema order
        order = list(ua_schema.concept(concept).value_ids)
        assert list(entry["counts"]) == [v for v in order if v in entry["counts"]]
        total = sum(entry["counts"].values())
        if entry["values_seen"] >= 2:
            assert 0 <= entry["p"] <= 1
            assert entry["max_share"] == max(entry["counts"].values()) / total
        else:
            assert entry["p"] is None
    ps = [e["p"] for e in fv["per_concept"].values() if e["p"] is not None]
    assert fv["min_p"] == min(ps)
    assert fv["per_concept"][fv["min_p_concept"]]["p"] == fv["min_p"]
    shares = [e["max_share"] for e in fv["per_concept"].values()]
    assert fv["max_share"] == max(shares)
    assert fv["max_share_value"].split("=")[0] in fv["per_concept"]


def test_answer_position_chi_square() -> None:
    uniform = [puzzle([1, 2, 3, 4], i % 4, i=i) for i in range(40)]
    got = answer_positions(uniform)
    assert got["histogram"] == [10, 10, 10, 10]
    assert got["chi2"] == 0 and got["p"] == pytest.approx(1.0)
    skewed = [puzzle([1, 2, 3, 4], 0, i=i) for i in range(40)]
    got = answer_positions(skewed)
    assert got["histogram"] == [40, 0, 0, 0] and got["p"] < 1e-10
    assert answer_positions([]) == {"histogram": [], "chi2": None, "p": None}


def test_answer_position_with_groups_of_different_size() -> None:
    # 30 puzzles of 3 answers, 40 of 4: each slot's expected count sums 1/len(answers)
    ps = [puzzle([1, 2, 3], i % 3, i=i) for i in range(30)]
    ps += [puzzle([1, 2, 3, 4], i % 4, i=100 + i) for i in range(40)]
    got = answer_positions(ps)
    assert got["histogram"] == [20, 20, 20, 10]
    assert got["p"] == pytest.approx(1.0)


def test_foil_values_count_every_value_a_foil_carries() -> None:
    tags = [
        (key(1), "closure", "circle"),  # the key
        (key(2), "closure", "square"),
        (key(3), "closure", "square"),
        (key(3), "closure", "triangle"),  # polysemic foil: counts for both values
        # key(4) carries no closure value: untagged, not in the test
        (key(4), "aspect", "tall"),
    ]
    ann = TagIndex.from_tags(tags)
    got = foil_values([puzzle([1, 2, 3, 4], 0)], ann)
    entry = got["per_concept"]["closure"]
    assert entry["counts"] == {"square": 2, "triangle": 1}
    assert entry["untagged"] == 1
    assert entry["values_seen"] == 2
    assert entry["max_share"] == pytest.approx(2 / 3)
    assert entry["max_share_value"] == "square"
    assert got["max_share_value"] == "closure=square"
    assert entry["p"] == pytest.approx(chi_square_uniform([2, 1])["p"])
    assert got["min_p"] == entry["p"] and got["min_p_concept"] == "closure"


def test_foil_values_flag_an_over_represented_value() -> None:
    tags = [(key(n), "closure", "square") for n in range(1, 40)]
    tags += [(key(n), "closure", "circle") for n in range(40, 45)]
    ann = TagIndex.from_tags(tags)
    # the foils of 12 puzzles all come from the square folder, of one from circle
    ps = [puzzle([40, 1 + 3 * i, 2 + 3 * i, 3 + 3 * i], 0, i=i) for i in range(12)]
    ps.append(puzzle([1, 40, 41, 42], 0, i=99))
    got = foil_values(ps, ann)
    entry = got["per_concept"]["closure"]
    assert entry["counts"] == {"circle": 3, "square": 36}
    assert entry["p"] < 1e-6 and got["min_p"] == entry["p"]
    assert entry["max_share"] == pytest.approx(36 / 39)


def test_chi_square_degenerate_inputs() -> None:
    assert chi_square_uniform([]) == {"chi2": None, "p": None}
    assert chi_square_uniform([5]) == {"chi2": None, "p": None}
    assert chi_square_uniform([0, 0]) == {"chi2": None, "p": None}
    assert chi_square_uniform([1, 1], [1, 0]) == {"chi2": None, "p": None}
    assert chi_square_uniform([3, 3])["p"] == pytest.approx(1.0)
