"""Issue 24 (in part): coverage said where users look — per part, the (rule, concept) tuples
and rules a split covers, and the warnings that ``--require-coverage`` turns into a refusal."""

from __future__ import annotations

from collections import Counter

from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.vet.coverage import coverage, coverage_lines


def puzzle(i: int, split: str, rule: str, concept: str) -> Puzzle:
    k = GlyphKey(0x2500 + i, "symbola")
    return Puzzle(
        id=f"{split}-{i:05d}", family="glyph-pmp", layout="two-row", rule=rule, concept=concept,
        shift=False, context=((k, k, k), (k, k)), answers=(k, k, k, k), key=0, split=split,
        seed=0,
    )  # fmt: skip


def test_coverage_counts_tuples_and_rules_per_part_and_warns_on_a_narrow_test() -> None:
    puzzles = [puzzle(i, "train", r, c) for i, (r, c) in enumerate(
        [("constant", "gestalt"), ("dist3", "stroke-feature"), ("progression", "aspect")] * 4
    )]  # fmt: skip
    puzzles += [puzzle(100 + i, "test", "dist3", "stroke-feature") for i in range(5)]
    dry = {"test": {"union/gestalt/noshift": "no glyph carries two values of gestalt"}}
    cov = coverage(
        puzzles,
        {"train": 12, "val": 0, "test": 5},
        ("constant", "progression", "dist3", "union"),
        dry,
    )
    assert cov["parts"]["train"]["tuples"] == [
        "constant × gestalt", "dist3 × stroke-feature", "progression × aspect"
    ]  # fmt: skip
    assert cov["parts"]["test"]["rules"] == {"dist3": 5}
    assert cov["all"]["tuples"] == 3 and cov["all"]["rules"]["union"] == 0
    text = "\n".join(cov["warnings"])
    assert "test covers 1 (rule, concept) tuple (dist3 × stroke-feature), fewer than 5" in text
    assert "val covers" not in text  # no val puzzles were asked for
    assert "rule union yields no puzzle: union × gestalt: no glyph carries two values" in text
    assert "rule constant has train puzzles but no test puzzle" in text
    assert coverage_lines(cov)[-1] == "test: 5/5 puzzles, 1 tuple, 1 of 4 rules (dist3)"
    wide = coverage(puzzles, {"train": 12, "val": 0, "test": 5}, ("dist3",), min_tuples=1)
    assert wide["warnings"] == []
    assert Counter(p.split for p in puzzles) == {"train": 12, "test": 5}


def test_an_analogy_split_is_not_told_that_matrix_rules_yield_nothing() -> None:
    """An analogy tests one change; the default rules (constant, progression, …) belong to
    the matrix layouts, and their "yields no puzzle" warnings were noise on every analogy
    split's summary."""
    from studio.generate.params import SplitParams
    from studio.vet.coverage import coverage_of_set

    params = SplitParams(n=17, layout="analogy")
    assert params.tested_rules == ("change",)
    assert SplitParams(n=17).tested_rules == SplitParams(n=17).rules
    puzzles = [puzzle(i, "train", "change", f"c{i % 5}") for i in range(12)]
    puzzles += [puzzle(100 + i, "test", "change", f"c{i}") for i in range(5)]
    cov = coverage(puzzles, {"train": 12, "val": 0, "test": 5}, params.tested_rules)
    assert cov["warnings"] == []
    stored = coverage_of_set(puzzles, params.to_json())
    assert not any("yields no puzzle" in w for w in stored["warnings"])
