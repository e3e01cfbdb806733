"""Accuracy intervals, tests and flags (studio.baselines.metrics) against scipy and by hand."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

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
    rounded,
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


# ---- the report's lists at numpy speed, the same values ----------------------------------------
def python_rounded(values: np.ndarray) -> list[Any]:
    if values.ndim > 1:
        return [python_rounded(row) for row in values]
    return [round(float(x), 4) for x in values]


def same_floats(a: list[Any], b: list[Any]) -> bool:
    """Equal as the report's JSON writes them (NaN equal to NaN; -0.0 apart from 0.0)."""
    return json.dumps(a) == json.dumps(b) and repr(a) == repr(b)


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=50))
def test_rounded_is_python_round_for_any_float(values: list[float]) -> None:
    x = np.array(values, dtype=np.float64)
    assert same_floats(rounded(x), python_rounded(x))


@given(st.lists(st.floats(0, 1, width=32), max_size=50))
def test_rounded_is_python_round_for_float32_confidences(values: list[float]) -> None:
    x = np.array(values, dtype=np.float32)
    assert same_floats(rounded(x), [round(float(v), 4) for v in x])


def test_rounded_is_python_round_at_the_halves_where_np_round_is_not() -> None:
    """Five-place decimals end in a half at four places: ``np.round`` rounds many of them the
    other way (0.00035 → 0.0004; Python: 0.0003), and so do their neighbouring doubles."""
    halves = np.array([float(f"{k / 10_000 + 0.00005:.5f}") for k in range(-10_000, 30_000)])
    assert np.round(halves, 4).tolist() != python_rounded(halves)
    near = np.concatenate(
        [halves, np.nextafter(halves, np.inf), np.nextafter(halves, -np.inf), halves * 3]
    )
    grid = np.random.default_rng(0).random((300, 7)) ** 0.3  # a (seeds x puzzles) matrix
    for x in (near, grid, grid.T, np.array([1e17, -2.5e20, 2.0**50 + 0.5, 0.0, -0.0])):
        assert same_floats(rounded(x), python_rounded(x))


def previous_puzzle_flags(
    model: str,
    ids: Sequence[str],
    keys: np.ndarray,
    choices: np.ndarray,
    confidence: np.ndarray,
    chance: float | np.ndarray,
    reasons: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """:func:`puzzle_flags` as it was, puzzle by puzzle: the vectorised one must flag the
    same puzzles with the same floats."""
    choices = np.atleast_2d(np.asarray(choices))
    confidence = np.atleast_2d(np.asarray(confidence, dtype=float))
    chances = np.broadcast_to(np.asarray(chance, dtype=float), (len(ids),))
    flags = []
    for j, pid in enumerate(ids):
        threshold = confidence_threshold(float(chances[j]))
        have = choices[:, j] >= 0
        seeds = int(have.sum())
        if seeds == 0:
            continue
        right = choices[have, j] == keys[j]
        if not right.all():
            continue
        conf = float(confidence[have, j].mean())
        if conf >= threshold:
            flags.append(
                {
                    "id": pid,
                    "model": model,
                    "confidence": round(conf, 4),
                    "seeds_correct": int(right.sum()),
                    "seeds": seeds,
                }
            )
            if reasons is not None and reasons[j]:
                flags[-1]["reason"] = reasons[j]
    return flags


@pytest.mark.parametrize("seeds", [1, 2, 3, 7, 8, 13])
def test_puzzle_flags_are_those_of_the_puzzle_by_puzzle_loop(seeds: int) -> None:
    """Random (seeds x puzzles) predictions, mostly right and confident, some puzzles not
    predicted by some seeds or any, answer sets of two to five (their own chances), mean
    confidences exactly at a threshold, and reasons: the same flags, the same floats."""
    rng = np.random.default_rng(seeds)
    n = 3000
    answers = rng.integers(2, 6, n)
    keys = rng.integers(0, answers)
    choices = np.where(rng.random((seeds, n)) < 0.9, keys, rng.integers(0, answers, (seeds, n)))
    choices[rng.random((seeds, n)) < 0.05] = -1
    choices[:, :40] = -1  # never predicted
    confidence = rng.random((seeds, n)) ** 0.2
    confidence[:, 40:80] = confidence_threshold(1.0 / answers[40:80])  # at the threshold
    ids = [f"p{j}" for j in range(n)]
    reasons = ["" if j % 3 else f"tag {j}" for j in range(n)]
    for chance in (1.0 / answers, 0.25):
        got = puzzle_flags("m", ids, keys, choices, confidence, chance, reasons=reasons)
        want = previous_puzzle_flags("m", ids, keys, choices, confidence, chance, reasons)
        assert 100 < len(got) < n
        assert json.dumps(got) == json.dumps(want)
        assert puzzle_flags("m", ids, keys, choices, confidence, chance) == previous_puzzle_flags(
            "m", ids, keys, choices, confidence, chance
        )
