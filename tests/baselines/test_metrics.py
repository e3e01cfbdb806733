"""Accuracy intervals, tests and flags (studio.baselines.metrics) against scipy and by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from studio.baselines.metrics import (
    accuracy_summary,
    binomial_p_value,
    confidence_threshold,
    flag_groups,
    group_table,
    holm,
    marvel_group_accuracy,
    puzzle_flags,
    wilson_interval,
)


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_wilson_matches_scipy_for_whole_counts(case: tuple[int, int]) -> None:
    n, k = case
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson_interval(k / n, n)
    assert lo == pytest.approx(ci.low, abs=1e-9) and hi == pytest.approx(ci.high, abs=1e-9)


def test_wilson_known_values_and_edges() -> None:
    lo, hi = wilson_interval(0.5, 100)
    assert (round(lo, 4), round(hi, 4)) == (0.4038, 0.5962)
    assert wilson_interval(0.0, 10)[0] == pytest.approx(0.0, abs=1e-12)
    assert wilson_interval(1.0, 10)[1] == pytest.approx(1.0)
    assert wilson_interval(0.3, 0) == (0.0, 1.0)


def test_binomial_p_value_is_one_sided_and_rounds_the_count() -> None:
    assert binomial_p_value(50, 200, 0.25) == pytest.approx(
        stats.binomtest(50, 200, 0.25, alternative="greater").pvalue
    )
    assert binomial_p_value(61.33, 200, 0.25) == binomial_p_value(61, 200, 0.25)
    assert binomial_p_value(10, 200, 0.25) > 0.99  # far below chance: not significant
    assert binomial_p_value(120, 200, 0.25) < 1e-20


def test_holm_by_hand() -> None:
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_holm_is_at_least_the_raw_p_and_keeps_the_order(ps: list[float]) -> None:
    adj = holm(ps)
    assert all(a >= p - 1e-12 and a <= 1.0 for a, p in zip(adj, ps, strict=True))
    order = np.argsort(ps, kind="stable")
    assert all(adj[order[i]] <= adj[order[i + 1]] + 1e-12 for i in range(len(ps) - 1))


def test_accuracy_summary_averages_seeds() -> None:
    correct = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0]], dtype=bool)
    s = accuracy_summary(correct, 0.25)
    assert s["n"] == 4 and s["accuracy"] == 0.5 and s["correct"] == 2.0
    assert s["ci95"] == [round(x, 4) for x in wilson_interval(0.5, 4)]
    assert s["p_value"] == pytest.approx(binomial_p_value(2, 4, 0.25), rel=1e-3)


def test_group_table_and_flags() -> None:
    rng = np.random.default_rng(0)
    labels = ["easy"] * 100 + ["fair"] * 100 + ["slight"] * 100
    correct = np.concatenate(
        [
            np.ones((2, 100), bool) * (rng.random((1, 100)) < 0.7),  # 70 %: a shortcut
            np.ones((2, 100), bool) * (np.arange(100) % 4 == 0),  # exactly chance
            np.ones((2, 100), bool) * (np.arange(100) % 100 < 29),  # +4 points: not enough
        ],
        axis=1,
    )
    table = group_table(correct, labels, 0.25)
    assert set(table) == {"easy", "fair", "slight"}
    assert table["fair"]["accuracy"] == 0.25 and table["fair"]["n"] == 100
    assert table["slight"]["accuracy"] == 0.29
    groups = {"concept": table, "rule": group_table(correct, ["r"] * 300, 0.25)}
    flags = flag_groups("blind", groups, 0.25)
    assert [(f["by"], f["value"]) for f in flags] == [("rule", "r"), ("concept", "easy")]
    assert table["easy"]["flagged"] and not table["fair"]["flagged"]
    assert not table["slight"]["flagged"]  # under 5 points over chance
    easy = next(f for f in flags if f["value"] == "easy")
    assert easy["excess_points"] == pytest.approx(100 * (table["easy"]["accuracy"] - 0.25))
    assert easy["p_holm"] >= easy["p_value"] and easy["p_holm"] < 0.05
    # layout/family groups are reported but never flagged
    assert flag_groups("blind", {"layout": table}, 0.25) == []


def test_puzzle_flags_need_every_seed_and_the_confidence() -> None:
    keys = np.array([0, 1, 2, 3, 0])
    choices = np.array([[0, 1, 2, 0, -1], [0, 1, 2, 3, -1], [0, 1, 1, 3, -1]])
    conf = np.array([[0.9, 0.6, 0.99, 0.9, 0], [0.8, 0.6, 0.99, 0.9, 0], [0.7, 0.6, 0.5, 0.9, 0]])
    ids = ["a", "b", "c", "d", "e"]
    flags = puzzle_flags("blind", ids, keys, choices, conf, 0.25)
    assert confidence_threshold(0.25) == 0.625
    assert flags == [
        {"id": "a", "model": "blind", "confidence": 0.8, "seeds_correct": 3, "seeds": 3}
    ]  # b: not confident; c, d: not right in every seed; e: never predicted
    # a seed that did not predict a puzzle does not count against it
    choices[0, 1] = -1
    conf[:, 1] = 0.7
    assert [f["id"] for f in puzzle_flags("m", ids, keys, choices, conf, 0.25)] == ["a", "b"]


def test_marvel_group_accuracy_needs_puzzle_and_perception() -> None:
    avr = np.array([[1, 1, 0, 1]], bool)
    perceived = np.array([[1, 0, 1, 1]], bool)
    g = marvel_group_accuracy(avr, perceived, np.array([[3, 2, 3, 3]]), np.array([[3, 3, 3, 3]]))
    assert g["n"] == 4 and g["accuracy"] == 0.5 and g["avr_accuracy"] == 0.75
    assert g["perception_accuracy"] == round(11 / 12, 4)
