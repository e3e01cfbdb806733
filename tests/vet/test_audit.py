"""The answer-set audit: can the key be found from the answers alone?

Hand-computed statistics on tiny examples; planted leaks in answer sets drawn from the real UA
annotations are caught, and the same answer sets with keys drawn uniformly at random are not;
the audit reaches report.json and ``analogy-studio vet``."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chi2

from studio.cli import main
from studio.core.annotations import TagRow, read_annotation_csv
from studio.core.puzzle import Puzzle
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.families.glyph_pmp.export import write_split
from studio.generate.params import SplitParams
from studio.splits import audit_dir, generate_from
from studio.vet.audit import (
    audit_answer_sets,
    audit_lines,
    audit_puzzles,
    g_statistic,
    holm,
    position_balance,
)
from studio.vet.balance import split_stats
from studio.vet.partial import partial_views
from studio.vet.rules import RuleBook


# ---- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ua_rows(ua_csv: Path, ua_schema: Schema) -> list[TagRow]:
    return read_annotation_csv(ua_csv, ua_schema)


@pytest.fixture(scope="module")
def ua(ua_rows: list[TagRow]) -> TagIndex:
    return TagIndex.from_tags((r.key, r.concept, r.value) for r in ua_rows)


@pytest.fixture(scope="module")
def ua_split(ua: TagIndex, ua_schema: Schema) -> list[Puzzle]:
    """A real split from the UA annotations with UA's own (unbalanced) answer sets."""
    params = SplitParams(n=600, seed=4, sampling="balanced", answer_sets="ua")
    [result] = generate_from(ua, ua_schema, params)
    return result.puzzles


def attrs(*values: str) -> list[dict[str, frozenset[str]]]:
    """One answer per value, all of concept ``c`` ("" = untagged)."""
    return [{"c": frozenset([v])} if v else {} for v in values]


def row_of(audit: dict, value: str, scope: str = "intended") -> dict:
    [row] = [r for r in audit["key_rates"][scope]["worst"] if r["value"] == value]
    return row


def keys_at_random(puzzles: list[Puzzle], seed: int) -> list[Puzzle]:
    rng = np.random.default_rng(seed)
    return [replace(p, key=int(rng.integers(len(p.answers)))) for p in puzzles]


# ---- hand-computed ------------------------------------------------------------------------------
def test_g_statistic_by_hand() -> None:
    # c=x: on the key of puzzles 0-2, on a foil of puzzle 3: 3 of 4 answer occurrences on the
    # key where 1 is expected (4 answers each) -> G = 2 (3 ln 3 + 1 ln(1/3)) = 4 ln 3
    sets = [attrs("x", "a", "b", "d"), attrs("x", "a", "b", "d"), attrs("x", "a", "b", "d")]
    sets.append(attrs("y", "x", "a", "b"))
    audit = audit_answer_sets(["p0", "p1", "p2", "p3"], sets, [0, 0, 0, 0], ["c"] * 4)
    x = row_of(audit, "c=x")
    assert (x["on_key"], x["on_answers"], x["expected_key"]) == (3, 4, 1.0)
    assert x["G"] == pytest.approx(4 * math.log(3), abs=1e-3)
    assert x["p"] == pytest.approx(math.erfc(math.sqrt(2 * math.log(3))), rel=1e-3)
    assert x["z"] == pytest.approx(2 / math.sqrt(4 * 0.25 * 0.75), abs=1e-3)
    assert x["puzzles"] == ["p0", "p1", "p2", "p3"] and x["puzzles_total"] == 4
    assert g_statistic(3, 4, 1.0) == pytest.approx(4 * math.log(3))
    # c=a: never on the key, 4 times on an answer: G = 2 · 4 ln(4/3)
    a = row_of(audit, "c=a")
    assert (a["on_key"], a["on_answers"]) == (0, 4)
    assert a["G"] == pytest.approx(8 * math.log(4 / 3), abs=1e-3)
    # the overall G is the sum over the values tested, one degree of freedom each
    kr = audit["key_rates"]["intended"]
    per_value = {
        "x": g_statistic(3, 4, 1.0),
        "a": g_statistic(0, 4, 1.0),
        "b": g_statistic(0, 4, 1.0),
        "d": g_statistic(0, 3, 0.75),
        "y": g_statistic(1, 1, 0.25),
    }
    assert kr["values"] == kr["df"] == 5
    assert kr["G"] == pytest.approx(sum(per_value.values()), abs=1e-3)
    assert kr["p"] == pytest.approx(chi2.sf(sum(per_value.values()), 5), rel=1e-3)


def test_a_value_shared_by_two_answers_expects_two_in_k() -> None:
    # w on two of four answers: the key carries it with probability 1/2 under the null
    sets = [attrs("w", "w", "a", "b")] * 2
    audit = audit_answer_sets(["p0", "p1"], sets, [2, 3], ["c", "c"])
    w = row_of(audit, "c=w")
    assert (w["on_key"], w["on_answers"], w["expected_key"]) == (0, 4, 1.0)
    # the exact null variance is Σ m/k (1 − m/k) = 2 · 1/2 · 1/2
    assert w["z"] == pytest.approx(-1 / math.sqrt(0.5), abs=1e-3)


def test_a_value_on_every_answer_is_not_tested() -> None:
    sets = [[{"c": frozenset(["x"]), "d": frozenset(["same"])} for _ in range(3)]] * 5
    audit = audit_answer_sets([f"p{i}" for i in range(5)], sets, [0] * 5, ["c"] * 5)
    assert audit["key_rates"]["all"]["values"] == 0
    assert audit["key_rates"]["all"]["untestable"] == 2
    assert audit["key_rates"]["all"]["verdict"] == "untested"


def test_holm_adjustment() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_sharing_distribution_key_against_foils() -> None:
    # the key's value is its own, the foils come in a pair and a lone one
    sets = [attrs("k", "f", "f", "g")] * 30
    audit = audit_answer_sets([f"p{i}" for i in range(30)], sets, [0] * 30, ["c"] * 30)
    sh = audit["sharing"]["intended"]
    assert sh["histogram"]["key"] == {"0": 30, "1": 0, "2": 0, "3": 0}
    assert sh["histogram"]["foil"] == {"0": 30, "1": 60, "2": 0, "3": 0}
    assert sh["answers"] == {"key": 30, "foil": 90}
    assert sh["mean"] == {"key": 0.0, "foil": pytest.approx(2 / 3, abs=1e-4)}
    assert sh["unshared"] == {"key": 1.0, "foil": pytest.approx(1 / 3, abs=1e-4)}
    assert sh["df"] == 1 and sh["p"] < 1e-6 and sh["verdict"] == "off"
    # G of independence on the 2 × 2 table [[30, 0], [30, 60]], by hand
    table = [[30, 0], [30, 60]]
    rows, cols, n = [30, 90], [60, 60], 120
    g = 2 * sum(
        o * math.log(o * n / (rows[i] * cols[j]))
        for i, r in enumerate(table)
        for j, o in enumerate(r)
        if o
    )
    assert sh["G"] == pytest.approx(g, abs=1e-3)
    # untagged answers are their own column
    audit = audit_answer_sets(["p"], [attrs("k", "", "f", "f")], [0], ["c"])
    assert audit["sharing"]["intended"]["histogram"]["foil"]["untagged"] == 1


def test_odd_one_out_puzzles_are_left_out_of_sharing_only() -> None:
    sets = [attrs("odd", "g", "g", "g")] * 4
    audit = audit_answer_sets(
        list("abcd"), sets, [0] * 4, ["c"] * 4, sharing=[False, False, True, True]
    )
    assert audit["sharing_left_out"] == 2
    assert audit["sharing"]["intended"]["answers"] == {"key": 2, "foil": 6}
    assert row_of(audit, "c=odd")["on_answers"] == 4  # still in the key rates


def test_position_balance_by_hand() -> None:
    pos = position_balance([0] * 40, [4] * 40)
    assert pos["histogram"] == [40, 0, 0, 0] and pos["expected"] == [10.0] * 4
    assert pos["chi2"] == pytest.approx(120.0) and pos["df"] == 3
    assert pos["p"] == pytest.approx(chi2.sf(120.0, 3), rel=1e-3)
    even = position_balance([0, 1, 2, 3] * 10, [4] * 40)
    assert even["chi2"] == 0.0 and even["p"] == 1.0
    # mixed sizes: a slot's expected count is Σ 1/k over the puzzles that have it
    mixed = position_balance([0, 1, 2, 0, 1], [3, 3, 3, 2, 2])
    assert mixed["expected"] == [2.0, 2.0, 1.0]
    assert mixed["chi2"] == pytest.approx(0.0)
    audit = audit_answer_sets(["a", "b"], [attrs("x", "y"), attrs("x", "y")], [1, 1], ["c", "c"])
    assert audit["positions"]["histogram"] == [0, 2]


def test_empty_and_mismatched_input() -> None:
    audit = audit_answer_sets([], [], [], [])
    assert audit["puzzles"] == 0 and audit["findings"] == []
    assert audit["key_rates"]["intended"]["p"] is None
    json.dumps(audit)
    with pytest.raises(ValueError):
        audit_answer_sets(["a"], [attrs("x")], [3], ["c"])
    with pytest.raises(ValueError):
        audit_answer_sets(["a", "b"], [attrs("x")], [0], ["c"])


# ---- planted leaks in real answer sets ---------------------------------------------------------
def test_foils_from_low_count_values_are_caught(ua: TagIndex) -> None:
    """Answer sets from the real UA annotations where the key comes from the concept's
    best-stocked values and the foils only from its three least-stocked ones: those three are
    never on the key, and the audit names them."""
    rng = np.random.default_rng(11)
    plans = []
    for concept in sorted({c for c, _ in ua.folders}):
        values = sorted(
            (v for c, v in ua.folders if c == concept),
            key=lambda v: (len(ua.folder(concept, v)), v),
        )
        if len(values) >= 6:
            plans.append((concept, values[:3], values[-3:]))
    assert len(plans) >= 5
    ids, sets, keys, intended = [], [], [], []
    planted = set()
    for i in range(900):
        concept, low, high = plans[i % len(plans)]
        planted.update(f"{concept}={v}" for v in low)
        key_glyph = ua.folder(concept, high[int(rng.integers(3))])
        answers = [key_glyph[int(rng.integers(len(key_glyph)))]]
        for v in low:
            folder = ua.folder(concept, v)
            answers.append(folder[int(rng.integers(len(folder)))])
        slot = int(rng.integers(4))
        answers[0], answers[slot] = answers[slot], answers[0]
        ids.append(f"p{i:04d}")
        sets.append([ua.by_glyph[g] for g in answers])
        keys.append(slot)
        intended.append(concept)
    audit = audit_answer_sets(ids, sets, keys, intended, worst=3 * len(planted))
    kr = audit["key_rates"]["intended"]
    assert kr["verdict"] == "off" and kr["p"] < 1e-10
    # every planted value is off after Holm, never on the key; the key's values are too
    # (on the key every time): both halves of the leak are listed, nothing else
    off = {r["value"]: r for r in kr["worst"] if r["p_holm"] < 1e-3}
    assert planted <= set(off)
    assert all(off[v]["on_key"] == 0 and off[v]["z"] < 0 for v in planted)
    assert len(off) == kr["off"] == 2 * len(planted)
    assert all(r["key_share"] == 1.0 for v, r in off.items() if v not in planted)
    low = off[sorted(planted)[0]]
    assert low["puzzles"] and len(low["puzzles"]) == min(low["puzzles_total"], 50)
    # the same answer sets with the key anywhere, uniformly at random: nothing stands out
    rng = np.random.default_rng(12)
    shuffled_keys = [int(rng.integers(len(s))) for s in sets]
    fair = audit_answer_sets(ids, sets, shuffled_keys, intended)
    assert fair["key_rates"]["intended"]["p"] > 0.05
    assert fair["key_rates"]["intended"]["off"] == 0
    assert fair["positions"]["p"] > 0.05


def test_ua_answer_sets_leak_the_key_and_random_keys_do_not(
    ua_split: list[Puzzle], ua: TagIndex
) -> None:
    """UA's own foil pool (a real split from the real annotations): the key's value is shared
    by no other answer while foils share theirs, and some values sit on the key far more often
    than 1 in 4. Moving each key to a uniformly random answer removes both."""
    audit = audit_puzzles(ua_split, ua)
    sh = audit["sharing"]["intended"]
    assert sh["verdict"] == "off" and sh["p"] < 1e-10
    assert sh["mean"]["key"] < sh["mean"]["foil"]
    kr = audit["key_rates"]["intended"]
    assert kr["verdict"] == "off" and kr["p"] < 1e-10 and kr["off"] >= 1
    assert kr["worst"][0]["p_holm"] < 0.05 and kr["worst"][0]["puzzles"]
    assert any(line.startswith("answers sharing a value") for line in audit["findings"])
    for seed in (1, 2):
        fair = audit_puzzles(keys_at_random(ua_split, seed), ua)
        assert fair["key_rates"]["intended"]["p"] > 0.05, seed
        assert fair["sharing"]["intended"]["p"] > 0.01, seed
        assert fair["positions"]["p"] > 0.01, seed


def test_key_moved_to_the_unshared_answer_is_caught(ua_split: list[Puzzle], ua: TagIndex) -> None:
    """Start from random keys (balanced), then move each key to the one answer whose value no
    other answer shares, where there is one: the sharing measure flags it."""
    fair = keys_at_random(ua_split, 3)
    moved = []
    for p in fair:
        vals = [ua.values(g, p.concept) for g in p.answers]
        alone = [
            i
            for i, v in enumerate(vals)
            if v and all(not (v & w) for j, w in enumerate(vals) if j != i)
        ]
        moved.append(replace(p, key=alone[0]) if len(alone) == 1 else p)
    assert sum(a.key != b.key for a, b in zip(moved, fair, strict=True)) >= 30
    before = audit_puzzles(fair, ua)["sharing"]["intended"]
    after = audit_puzzles(moved, ua)["sharing"]["intended"]
    assert before["p"] > 0.01
    assert after["p"] < 1e-6 and after["unshared"]["key"] > after["unshared"]["foil"]


# ---- reports and the CLI ------------------------------------------------------------------------
def test_split_stats_carry_the_audit_deterministically(
    ua_split: list[Puzzle], ua: TagIndex, ua_schema: Schema
) -> None:
    stats = split_stats(ua_split, ua, ua_schema)
    for part in ("train", "val", "test", "all"):
        assert stats[part]["audit"]["puzzles"] == stats[part]["puzzles"]
    assert stats["all"]["audit"] == audit_puzzles(ua_split, ua)
    again = split_stats(list(ua_split), ua, ua_schema)
    assert json.dumps(stats, sort_keys=True) == json.dumps(again, sort_keys=True)
    assert json.dumps(stats["all"]["audit"]) == json.dumps(again["all"]["audit"])  # key order


def test_audit_lines_one_per_finding(ua_split: list[Puzzle], ua: TagIndex) -> None:
    audit = audit_puzzles(ua_split, ua)
    lines = audit_lines(audit, worst=2)
    assert lines[0].startswith("key rate per value (intended concept): off, G = ")
    assert lines[1].startswith("  ") and "on the key" in lines[1] and "puzzles " in lines[1]
    assert lines[-1].startswith("key position: ")
    # UA tags each glyph in one concept: the all-concepts scope is the same and not repeated
    assert not any("all concepts" in line for line in lines)
    assert audit["findings"] == [line.strip() for line in audit_lines(audit, 3, True)]


def write_glyph_split(out: Path, puzzles_params: SplitParams, ua: TagIndex, rows, schema):
    [result] = generate_from(ua, schema, puzzles_params)
    write_split(
        out,
        [result],
        puzzles_params,
        rows,
        lambda _k: None,
        None,
        split_stats(result.puzzles, ua, schema),
        schema=schema,
    )
    return result


def test_report_and_vet_show_the_audit(
    tmp_path: Path, ua: TagIndex, ua_rows: list[TagRow], ua_schema: Schema, capsys
) -> None:
    params = SplitParams(n=300, seed=6, sampling="balanced", answer_sets="ua")
    out = tmp_path / "split"
    result = write_glyph_split(out, params, ua, ua_rows, ua_schema)
    report = json.loads((out / "report.json").read_text())
    audit = report["stats"]["all"]["audit"]
    assert audit["sharing"]["intended"]["verdict"] == "off"
    assert audit == json.loads(json.dumps(audit_puzzles(result.puzzles, ua), sort_keys=True))
    from_dir = audit_dir(out)
    # with the partial views of a glyph matrix split (issue 24)
    assert from_dir.pop("partial_views") == partial_views(result.puzzles, ua, RuleBook(ua_schema))
    assert from_dir == audit_puzzles(result.puzzles, ua)

    assert main(["vet", str(out), "--json", "--no-features"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["audit"]["key_rates"]["intended"]["verdict"] == "off"
    worst = doc["audit"]["key_rates"]["intended"]["worst"][0]
    assert set(worst["puzzles"]) <= {p.id for p in result.puzzles}

    assert main(["vet", str(out), "--no-features"]) == 0
    text = capsys.readouterr().out
    assert "answer-set audit:" in text
    assert "key rate per value (intended concept): off" in text
    assert f"  {worst['value']}: on the key {worst['on_key']} of {worst['on_answers']}" in text
    assert "answers sharing a value (intended concept): off" in text
    assert "key position: " in text


# ---- non-glyph families ------------------------------------------------------------------------
def test_polycube_published_design_is_caught_in_report_and_vet(tmp_path: Path, capsys) -> None:
    """The published polycube design (three rotations and an odd one: the key is the candidate
    no other shares a shape with) is flagged in report.json and by ``vet``; the default
    balanced design is not."""
    from studio.stimuli.split import generate_stimulus_split, make_generator
    from studio.stimuli.symbolic import audit_stimulus_records

    out = tmp_path / "polycube"
    generate_stimulus_split("polycube-rotation", out, 12, seed=1, options={"design": "published"})
    audit = json.loads((out / "report.json").read_text())["audit"]
    sh = audit["sharing"]["all"]
    assert sh["verdict"] == "off" and sh["p"] < 1e-6
    assert sh["mean"]["key"] < sh["mean"]["foil"] and sh["unshared"]["foil"] == 0.0
    assert audit["key_rates"]["intended"]["values"] == 0  # no intended concept here

    assert main(["vet", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["audit"] == audit
    assert main(["vet", str(out)]) == 0
    assert "answers sharing a value (all concepts): off" in capsys.readouterr().out

    balanced = make_generator("polycube-rotation", {})
    records = [item.to_json() for item in balanced.items(12, 1)]
    fair = audit_stimulus_records("polycube-rotation", records)
    assert fair is not None and fair["sharing"]["all"]["verdict"] == "balanced"
    assert fair["key_rates"]["all"]["verdict"] == "balanced"
    assert audit_stimulus_records("no-such-family", records) is None
