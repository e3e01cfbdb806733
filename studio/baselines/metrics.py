"""Accuracy, its uncertainty and the shortcut flags (numpy and scipy only).

- :func:`wilson_interval`: the Wilson score 95% interval for an accuracy over ``n`` puzzles.
  The accuracy may be a mean over seeds (not a whole count), so the interval is computed from
  the proportion directly; for whole counts it equals ``scipy.stats.binomtest(...)
  .proportion_ci(method="wilson")``.
- :func:`binomial_p_value`: one-sided exact binomial test of "better than chance", with the
  correct count rounded to the nearest whole puzzle.
- :func:`holm`: Holm's step-down adjustment of a family of p-values.
- :func:`accuracy_summary` / :func:`group_table`: overall and per-group (rule, concept,
  layout, family) accuracy with interval and p-value.
- :func:`flag_groups`: split-level flags. A rule or concept group of a shortcut model (blind,
  partial inputs) is flagged when its accuracy exceeds chance by more than
  :data:`GROUP_EXCESS` (5 points) and its p-value, Holm-corrected over all of that model's
  rule and concept groups together, is below :data:`ALPHA`.
- :func:`puzzle_flags`: a puzzle is *shortcut-prone* for a model when, in every seed, the model
  chooses the key, with mean confidence (its probability for the key) at least
  ``chance + (1 - chance) / 2`` (0.625 with four answers). Seeds whose prediction is missing
  are not counted.
- flags of the answers-only probes (:mod:`studio.baselines.probes`) carry a ``reason``: the
  features that carried the prediction (puzzle flags) or the most frequent first feature among
  the group's right answers (split-level flags).
- :func:`marvel_group_accuracy`: MARVEL's group accuracy (§4–6): a puzzle counts only when the
  model answers it *and* every perception question about it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from scipy import stats

Z95 = float(stats.norm.ppf(0.975))
ALPHA = 0.05
GROUP_EXCESS = 0.05  # 5 points over chance
FLAG_GROUPS_BY = ("rule", "concept")


def wilson_interval(accuracy: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``accuracy`` over ``n`` trials (0..1)."""
    if n <= 0:
        return (0.0, 1.0)
    p = min(1.0, max(0.0, float(accuracy)))
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def binomial_p_value(correct: float, n: int, chance: float) -> float:
    """P(X >= round(correct)) for X ~ Binomial(n, chance): one-sided, "better than chance"."""
    if n <= 0:
        return 1.0
    k = int(min(n, max(0, round(float(correct)))))
    return float(stats.binomtest(k, n, chance, alternative="greater").pvalue)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given; monotone; at most 1)."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return [float(x) for x in adjusted]


def _round(x: float, places: int = 4) -> float:
    return round(float(x), places)


def rounded(values: np.ndarray | Sequence[Any], places: int = 4) -> list[Any]:
    """``[round(float(x), places) for x in values]`` (nested lists for a 2-D array) at numpy
    speed: a report lists a confidence per puzzle, model and seed (360,000 of them in the
    default job on 10,000 puzzles), and Python's ``round`` on each took a second.

    Exactly Python's floats: ``round`` gives the double nearest to the decimal its exact
    value rounds to (half to even); ``np.round`` gives the nearest double to
    ``rint(x * 10**places) / 10**places``, the same decimal unless the product rounded onto
    or across a half (``np.round(0.00035, 4)`` is 0.0004, ``round`` gives 0.0003). So the
    values whose product lies within a few units in the last place of a half, and those
    that are not finite or too large for the product to hold a fraction, are rounded by
    Python's ``round``."""
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(all="ignore"):  # an overflowing or NaN product goes to Python's round
        out = np.round(x, places)
        scaled = x * 10.0**places
        near_half = np.abs(scaled - np.floor(scaled) - 0.5) <= 4 * np.spacing(np.abs(scaled))
        python = ~np.isfinite(scaled) | (np.abs(scaled) >= 2.0**50) | near_half
    if python.any():
        out[python] = [round(float(v), places) for v in x[python]]
    listed: list[Any] = out.tolist()
    return listed


Chance = float | np.ndarray


def mean_chance(chance: Chance, cols: np.ndarray | slice = slice(None)) -> float:
    """One chance for a group of puzzles: the chance itself, or the mean of the puzzles' own
    (``chance`` (n,): one over each puzzle's answers, where sets differ in size). A binomial
    test at that mean is conservative against the exact Poisson-binomial, whose variance is
    smaller."""
    if np.ndim(chance) == 0:
        return float(chance)
    arr = np.asarray(chance, dtype=float)[cols]
    return float(arr.mean()) if arr.size else 0.0


def accuracy_summary(per_seed_correct: np.ndarray, chance: Chance) -> dict[str, Any]:
    """``{n, correct, accuracy, ci95, chance, p_value}`` from a (seeds × n) correctness
    matrix: accuracy is the mean over seeds of each seed's accuracy; ``correct`` = accuracy
    × n (fractional when seeds disagree). ``chance``: one number, or each puzzle's (n,)."""
    chance = mean_chance(chance)
    m = np.atleast_2d(np.asarray(per_seed_correct, dtype=float))
    n = int(m.shape[1])
    acc = float(m.mean()) if m.size else 0.0
    lo, hi = wilson_interval(acc, n)
    return {
        "n": n,
        "correct": _round(acc * n, 2),
        "accuracy": _round(acc),
        "ci95": [_round(lo), _round(hi)],
        "chance": _round(chance),
        "p_value": float(f"{binomial_p_value(acc * n, n, chance):.4g}"),
    }


def group_table(
    per_seed_correct: np.ndarray, labels: Sequence[str], chance: Chance
) -> dict[str, dict[str, Any]]:
    """Per value of ``labels`` (aligned with the columns): the :func:`accuracy_summary` of
    its puzzles (without ``correct``) and ``flagged: False`` (see :func:`flag_groups`)."""
    m = np.atleast_2d(np.asarray(per_seed_correct, dtype=float))
    labels = np.asarray([str(x) for x in labels], dtype=object)
    out: dict[str, dict[str, Any]] = {}
    for value in sorted(set(labels.tolist())):
        cols = labels == value
        summary = accuracy_summary(m[:, cols], mean_chance(chance, cols))
        summary.pop("correct")
        summary["flagged"] = False
        out[value] = summary
    return out


def flag_groups(
    model: str,
    groups: Mapping[str, Mapping[str, dict[str, Any]]],
    chance: float,
    *,
    by: Sequence[str] = FLAG_GROUPS_BY,
    excess: float = GROUP_EXCESS,
    alpha: float = ALPHA,
    reasons: Mapping[tuple[str, str], str] | None = None,
) -> list[dict[str, Any]]:
    """Flag the groups (``groups[by][value]``, as :func:`group_table` makes them) whose
    accuracy exceeds chance by more than ``excess`` and whose Holm-adjusted p-value (over every
    group of ``by`` together) is below ``alpha``. Sets ``flagged`` and ``p_holm`` on each
    tested group and returns the flags (report format). ``reasons[(by, value)]``, when given
    (the answers-only probes), becomes the flag's ``reason``."""
    tested = [(b, v, g) for b in by for v, g in sorted(groups.get(b, {}).items())]
    adjusted = holm([g["p_value"] for _, _, g in tested])
    flags = []
    for (b, v, g), p_adj in zip(tested, adjusted, strict=True):
        g["p_holm"] = float(f"{p_adj:.4g}")
        group_chance = float(g.get("chance", chance))  # the group's own, where sets differ
        over = g["accuracy"] - group_chance
        g["flagged"] = bool(over > excess and p_adj < alpha)
        if g["flagged"]:
            flags.append(
                {
                    "model": model,
                    "by": b,
                    "value": v,
                    "n": g["n"],
                    "accuracy": g["accuracy"],
                    "chance": _round(group_chance),
                    "excess_points": round(100 * over, 2),
                    "p_value": g["p_value"],
                    "p_holm": g["p_holm"],
                }
            )
            if reasons is not None and (b, v) in reasons:
                flags[-1]["reason"] = reasons[(b, v)]
    return flags


ChanceT = TypeVar("ChanceT", float, np.ndarray)


def confidence_threshold(chance: ChanceT) -> ChanceT:
    """Mean confidence a shortcut-prone puzzle needs: halfway from chance to certainty (per
    puzzle for an array of chances)."""
    return chance + (1.0 - chance) / 2.0


def puzzle_flags(
    model: str,
    ids: Sequence[str],
    keys: np.ndarray,
    choices: np.ndarray,
    confidence: np.ndarray,
    chance: Chance,
    reasons: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Shortcut-prone puzzles of one model (module docstring). ``choices`` and
    ``confidence`` are (seeds × n); a choice of -1 marks a missing prediction. ``reasons``
    (per puzzle, the answers-only probes' "why") becomes each flag's ``reason``."""
    choices = np.atleast_2d(np.asarray(choices))
    confidence = np.atleast_2d(np.asarray(confidence, dtype=float))
    n = len(ids)
    chances = np.broadcast_to(np.asarray(chance, dtype=float), (n,))
    have = choices >= 0
    seeds = have.sum(axis=0)
    every_seed_right = ((choices == np.asarray(keys)) | ~have).all(axis=0)
    cols = np.flatnonzero((seeds > 0) & every_seed_right)
    # the mean confidence over the seeds that predicted: one contiguous row per puzzle, which
    # numpy sums as it sums the puzzle's own (the same floats as ``row.mean()`` one by one)
    conf = np.zeros(n)
    every_seed = have[:, cols].all(axis=0)
    full = cols[every_seed]
    conf[full] = np.ascontiguousarray(confidence[:, full].T).mean(axis=1)
    for j in cols[~every_seed].tolist():  # a seed without a prediction: rare
        conf[j] = float(confidence[have[:, j], j].mean())
    flagged = cols[conf[cols] >= confidence_threshold(chances[cols])]
    flags = []
    for j, c in zip(flagged.tolist(), rounded(conf[flagged]), strict=True):
        flags.append(
            {
                "id": ids[j],
                "model": model,
                "confidence": c,
                "seeds_correct": int(seeds[j]),
                "seeds": int(seeds[j]),
            }
        )
        if reasons is not None and reasons[j]:
            flags[-1]["reason"] = reasons[j]
    return flags


def marvel_group_accuracy(
    avr_correct: np.ndarray,
    perception_correct: np.ndarray,
    perception_right: np.ndarray,
    perception_asked: np.ndarray,
) -> dict[str, Any]:
    """MARVEL's group accuracy over (seeds × n) matrices: ``avr_correct`` (the puzzle),
    ``perception_correct`` (every perception question of the puzzle right),
    ``perception_right`` / ``perception_asked`` (question counts per puzzle). Returns
    ``{n, accuracy, ci95, perception_accuracy, avr_accuracy}`` (means over seeds)."""
    avr = np.atleast_2d(np.asarray(avr_correct, dtype=bool))
    per = np.atleast_2d(np.asarray(perception_correct, dtype=bool))
    both = (avr & per).astype(float)
    n = int(avr.shape[1])
    acc = float(both.mean()) if both.size else 0.0
    lo, hi = wilson_interval(acc, n)
    asked = float(np.asarray(perception_asked, dtype=float).sum())
    right = float(np.asarray(perception_right, dtype=float).sum())
    return {
        "n": n,
        "accuracy": _round(acc),
        "ci95": [_round(lo), _round(hi)],
        "perception_accuracy": _round(right / asked) if asked else None,
        "avr_accuracy": _round(float(avr.mean())) if avr.size else 0.0,
    }


__all__ = [
    "ALPHA",
    "FLAG_GROUPS_BY",
    "GROUP_EXCESS",
    "accuracy_summary",
    "binomial_p_value",
    "confidence_threshold",
    "flag_groups",
    "group_table",
    "holm",
    "marvel_group_accuracy",
    "puzzle_flags",
    "rounded",
    "wilson_interval",
]
