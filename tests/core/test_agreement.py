"""Inter-annotator agreement (studio.core.agreement): textbook values, the krippendorff package
on random data, the bootstrap replicate by replicate, degenerate data, the curator's queue."""

from __future__ import annotations

import json
import math
import warnings
from itertools import combinations

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.core.agreement import (
    AgreementReport,
    Estimate,
    agreement_report,
    disagreements,
    nominal_alpha,
)
from studio.core.agreement import _multiplicities as multiplicities
from studio.core.annotations import read_annotation_csv
from studio.core.schema import NONE_VALUE, Category, Concept, Schema, Value, ValueKind

Rating = tuple[int, str, str, str]


def make_schema(concepts: dict[str, tuple[str, ...]]) -> Schema:
    return Schema(
        "test",
        "1",
        (Category("g"),),
        tuple(
            Concept(cid, "g", ValueKind.NOMINAL, tuple(Value(v) for v in values))
            for cid, values in concepts.items()
        ),
    )


# ---- independent references: the package on reliability matrices, pairs counted one by one --


def value_sets(
    ratings: list[Rating], annotated: list[tuple[int, str]], schema: Schema
) -> dict[tuple[int, str], dict[str, frozenset[str]]]:
    cells: dict[tuple[int, str], dict[str, set[str]]] = {}
    for g, a in annotated:
        cells.setdefault((g, a), {})
    for g, a, c, v in ratings:
        cell = cells.setdefault((g, a), {})
        if schema.has_tag(c, v) and v != NONE_VALUE:
            cell.setdefault(c, set()).add(v)
    return {
        key: {c.id: frozenset(tags.get(c.id, set())) for c in schema.concepts}
        for key, tags in cells.items()
    }


def package_alpha(matrix: np.ndarray) -> float | None:
    """krippendorff.alpha on reliability data (annotators × glyphs, NaN missing); None where
    the package refuses or the result is not a number."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            value = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
        except ValueError:
            return None
    return None if math.isnan(value) else float(value)


def reference(
    ratings: list[Rating], annotated: list[tuple[int, str]], schema: Schema
) -> dict[str, dict]:
    sets = value_sets(ratings, annotated, schema)
    people = sorted({a for _, a in sets})
    glyphs = sorted({g for g, _ in sets})
    out: dict[str, dict] = {"concept": {}, "value": {}, "percent": {}, "kappa": {}, "present": {}}
    pairable = {g for g in glyphs if sum((g, a) in sets for a in people) >= 2}
    for c in schema.concepts:
        codes: dict[frozenset[str], int] = {}
        matrix = np.full((len(people), len(glyphs)), np.nan)
        for (g, a), cell in sets.items():
            matrix[people.index(a), glyphs.index(g)] = codes.setdefault(cell[c.id], len(codes))
        out["concept"][c.id] = package_alpha(matrix)
        agree = total = 0
        for g in glyphs:
            said = [sets[(g, a)][c.id] for a in people if (g, a) in sets]
            for x, y in combinations(said, 2):
                total += 1
                agree += x == y
        out["percent"][c.id] = agree / total if total else None
        for v in c.value_ids:
            binary = np.full((len(people), len(glyphs)), np.nan)
            for (g, a), cell in sets.items():
                yes = (not cell[c.id]) if v == NONE_VALUE else (v in cell[c.id])
                binary[people.index(a), glyphs.index(g)] = float(yes)
            out["value"][(c.id, v)] = package_alpha(binary)
            out["present"][(c.id, v)] = int(
                sum(np.nansum(binary[:, glyphs.index(g)]) for g in pairable)
            )
    for a, b in combinations(people, 2):
        table = np.zeros((2, 2))
        for g in glyphs:
            if (g, a) in sets and (g, b) in sets:
                for c in schema.concepts:
                    for v in c.value_ids:
                        if v != NONE_VALUE:  # none: the complement, not a decision of its own
                            ya, yb = (v in s[c.id] for s in (sets[(g, a)], sets[(g, b)]))
                            table[int(ya), int(yb)] += 1
        n = table.sum()
        if n:
            po = (table[0, 0] + table[1, 1]) / n
            pe = (table[1].sum() * table[:, 1].sum() + table[0].sum() * table[:, 0].sum()) / n**2
            out["kappa"][(a, b)] = None if pe == 1 else (po - pe) / (1 - pe)
    return out


# ---- textbook values -------------------------------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: four observers,
# twelve units, missing values; nominal alpha = 0.743.
K2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def k2011() -> tuple[list[Rating], Schema]:
    schema = make_schema({"c": tuple(str(v) for v in range(1, 6))})
    ratings = [
        (unit + 1, observer, "c", str(value))
        for observer, row in zip("ABCD", K2011, strict=True)
        for unit, value in enumerate(row)
        if value is not None
    ]
    return ratings, schema


def test_krippendorff_2011_nominal_example_with_missing_data() -> None:
    ratings, schema = k2011()
    report = agreement_report(ratings, [], schema, n_boot=200)
    c = report.concept("c")
    assert c.alpha.value is not None and round(c.alpha.value, 3) == 0.743
    assert c.glyphs == 11  # unit 12 has one value only: not pairable
    assert c.pairs == 3 + 8 * 6 + 3 + 1  # units of 3, 4 (eight of them), 3 and 2 values
    assert c.percent.value == pytest.approx(43 / 55)  # agreeing pairs counted by hand
    assert report.pairable_glyphs == 11 and report.glyphs == 12
    assert c.alpha.low is not None and c.alpha.high is not None
    assert c.alpha.low <= c.alpha.value <= c.alpha.high


def test_cohens_kappa_textbook_two_by_two() -> None:
    """50 items: both yes 20, only the first 5, only the second 10, neither 15: observed 0.7,
    chance 0.5, kappa 0.4."""
    schema = make_schema({"c": ("x",)})
    cells = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10
    cells += [(False, False)] * 15
    ratings: list[Rating] = []
    annotated: list[tuple[int, str]] = []
    for g, (first, second) in enumerate(cells):
        annotated += [(g, "first"), (g, "second")]
        ratings += [(g, "first", "c", "x")] if first else []
        ratings += [(g, "second", "c", "x")] if second else []
    pair = agreement_report(ratings, annotated, schema, n_boot=0).pair("second", "first")
    assert (pair.first, pair.second, pair.glyphs, pair.items) == ("first", "second", 50, 50)
    assert pair.kappa.value == pytest.approx(0.4)
    assert pair.percent == pytest.approx(0.7)
    assert pair.concepts[0].kappa == pytest.approx(0.4) and pair.concepts[0].items == 50
    assert pair.kappa.low is None  # no bootstrap asked for


# ---- the package on random data --------------------------------------------------------------


@st.composite
def random_study(draw: st.DrawFn) -> tuple[list[Rating], list[tuple[int, str]], Schema]:
    n_concepts = draw(st.integers(1, 3))
    concepts = {
        f"c{i}": tuple(f"v{j}" for j in range(draw(st.integers(1, 4))))
        + ((NONE_VALUE,) if draw(st.booleans()) else ())
        for i in range(n_concepts)
    }
    schema = make_schema(concepts)
    people = [f"p{i}" for i in range(draw(st.integers(1, 5)))]
    n_glyphs = draw(st.integers(1, 12))
    ratings: list[Rating] = []
    annotated: list[tuple[int, str]] = []
    for g in range(n_glyphs):
        for p in people:
            if not draw(st.booleans()):
                continue  # missing
            annotated.append((g * 7 + 3, p))
            for cid, values in concepts.items():
                for v in draw(st.sets(st.sampled_from(values), max_size=2)):
                    ratings.append((g * 7 + 3, p, cid, v))
    return ratings, annotated, schema


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_study())
def test_every_statistic_equals_the_independent_reference(
    study: tuple[list[Rating], list[tuple[int, str]], Schema],
) -> None:
    ratings, annotated, schema = study
    report = agreement_report(ratings, annotated, schema, n_boot=20, seed=1)
    json.dumps(report.to_json(), allow_nan=False)
    ref = reference(ratings, annotated, schema)
    for c in report.concepts:
        expected = ref["concept"][c.concept]
        if expected is None:
            assert c.alpha.value is None and c.alpha.reason
        else:
            assert c.alpha.value == pytest.approx(expected, abs=1e-9)
        assert c.percent.value == pytest.approx(ref["percent"][c.concept], abs=1e-12)
        for v in c.values:
            assert v.present == ref["present"][(c.concept, v.value)]
            expected = ref["value"][(c.concept, v.value)]
            if expected is None:
                assert v.alpha.value is None and v.alpha.reason
            else:
                assert v.alpha.value == pytest.approx(expected, abs=1e-9)
    assert {(p.first, p.second) for p in report.pairs} == set(ref["kappa"])
    for p in report.pairs:
        expected = ref["kappa"][(p.first, p.second)]
        if expected is None:
            assert p.kappa.value is None and p.kappa.reason
        else:
            assert p.kappa.value == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_vectorised_alpha_equals_the_package_with_and_without_multiplicities(seed: int) -> None:
    rng = np.random.default_rng(seed)
    coders, units, categories = rng.integers(2, 8), rng.integers(2, 60), rng.integers(2, 7)
    data = rng.integers(0, categories, size=(coders, units)).astype(float)
    data[rng.random(data.shape) < rng.uniform(0.1, 0.6)] = np.nan
    counts = (data.T[..., None] == np.arange(categories)).sum(axis=1)
    expected = package_alpha(data)
    got = nominal_alpha(counts)
    assert (expected is None and math.isnan(got)) or got == pytest.approx(expected, abs=1e-12)
    # replicates: unit u taken weights[r, u] times is the package on the repeated columns
    weights = rng.integers(0, 4, size=(5, units))
    alphas = nominal_alpha(counts, weights)
    for r in range(5):
        expected = package_alpha(np.repeat(data, weights[r], axis=1))
        if expected is None:
            assert math.isnan(alphas[r])
        else:
            assert alphas[r] == pytest.approx(expected, abs=1e-12)


def test_the_intervals_are_percentiles_of_the_package_on_each_resampled_data_set() -> None:
    """Rebuild every replicate's resampled data set from the same draws, ask the package (and
    the pair-by-pair counts) for each statistic, and take numpy's percentiles."""
    rng = np.random.default_rng(5)
    schema = make_schema({"c": ("a", "b", "c", NONE_VALUE), "d": ("x", "y")})
    ratings: list[Rating] = []
    annotated: list[tuple[int, str]] = []
    for g in range(30):
        for p in rng.choice(["ann", "bob", "cy"], size=rng.integers(1, 4), replace=False):
            annotated.append((g, str(p)))
            for c, values in (("c", "abc"), ("d", "xy")):
                ratings += [(g, str(p), c, v) for v in values if rng.random() < 0.4]
    pairable = sorted(g for g in {g for g, _ in annotated} if sum(x == g for x, _ in annotated) > 1)
    n_boot = 5
    for seed in range(2):
        report = agreement_report(ratings, annotated, schema, n_boot=n_boot, seed=seed)
        draws = np.hstack(list(multiplicities(n_boot, len(pairable), seed))).astype(int)
        assert draws.shape == (len(pairable), n_boot)
        replicates = []
        for r in range(n_boot):
            resampled_r: list[Rating] = []
            resampled_a: list[tuple[int, str]] = []
            for g, times in zip(pairable, draws[:, r], strict=True):
                for k in range(times):
                    new = g * 1000 + k
                    resampled_r += [(new, p, c, v) for x, p, c, v in ratings if x == g]
                    resampled_a += [(new, p) for x, p in annotated if x == g]
            replicates.append(reference(resampled_r, resampled_a, schema))
        for c in report.concepts:
            check_interval(c.alpha, replicates, "concept", c.concept)
            check_interval(c.percent, replicates, "percent", c.concept)
            for v in c.values:
                check_interval(v.alpha, replicates, "value", (c.concept, v.value))
        for p in report.pairs:
            check_interval(p.kappa, replicates, "kappa", (p.first, p.second))


def check_interval(estimate: Estimate, replicates: list[dict], kind: str, key: object) -> None:
    if estimate.value is None:
        assert estimate.low is None and estimate.high is None
        return
    values = [x[kind][key] for x in replicates if x[kind][key] is not None]
    low, high = np.percentile(values, [2.5, 97.5])
    assert estimate.low == pytest.approx(low, abs=1e-5), (kind, key)
    assert estimate.high == pytest.approx(high, abs=1e-5), (kind, key)
    assert estimate.boot_undefined == len(replicates) - len(values)


def test_the_draws_resample_every_glyph_set_in_chunks() -> None:
    chunks = list(multiplicities(450, 37, seed=3))
    draws = np.hstack(chunks)
    assert len(chunks) > 1 and draws.shape == (37, 450)
    assert (draws.sum(axis=0) == 37).all() and draws.min() >= 0
    assert abs(draws.mean() - 1.0) < 1e-9 and 0.8 < draws.var() < 1.2  # multinomial: var ≈ 1
    again = np.hstack(list(multiplicities(450, 37, seed=3)))
    assert (again == draws).all()


# ---- properties of the report ----------------------------------------------------------------


def noisy_study(
    n_glyphs: int, noise: float, seed: int
) -> tuple[list[Rating], list[tuple[int, str]], Schema]:
    rng = np.random.default_rng(seed)
    values = ("a", "b", "c", "d")
    schema = make_schema({"shape": (*values, NONE_VALUE), "size": ("big", "small")})
    ratings: list[Rating] = []
    annotated: list[tuple[int, str]] = []
    for g in range(n_glyphs):
        truth = values[rng.integers(4)]
        size = ("big", "small")[rng.integers(2)]
        for p in ("ann", "bob"):
            annotated.append((g, p))
            said = values[rng.integers(4)] if rng.random() < noise else truth
            ratings += [(g, p, "shape", said), (g, p, "size", size)]
    return ratings, annotated, schema


def test_perfect_agreement_is_one_everywhere() -> None:
    ratings, annotated, schema = noisy_study(30, 0.0, 0)
    report = agreement_report(ratings, annotated, schema, n_boot=100)
    for c in report.concepts:
        assert c.alpha.value == pytest.approx(1.0)
        assert (c.alpha.low, c.alpha.high) == (pytest.approx(1.0), pytest.approx(1.0))
        assert c.percent.value == 1.0
        for v in c.values:
            assert v.alpha.value == pytest.approx(1.0) or v.alpha.value is None
    assert report.pair("ann", "bob").kappa.value == pytest.approx(1.0)
    assert disagreements(ratings, annotated, schema) == []


def test_interval_contains_the_estimate_and_narrows_with_more_glyphs() -> None:
    widths = []
    for n in (60, 600):
        ratings, annotated, schema = noisy_study(n, 0.3, 2)
        report = agreement_report(ratings, annotated, schema, n_boot=500, seed=3)
        alpha = report.concept("shape").alpha
        kappa = report.pair("ann", "bob").kappa
        for est in (alpha, kappa, report.concept("shape").percent):
            assert est.value is not None and est.low is not None and est.high is not None
            assert est.low <= est.value <= est.high
        assert 0.3 < alpha.value < 0.95
        widths.append((alpha.high - alpha.low, kappa.high - kappa.low))
    assert widths[1][0] < widths[0][0] / 2 and widths[1][1] < widths[0][1] / 2


def test_same_seed_same_report_other_seed_other_intervals() -> None:
    ratings, annotated, schema = noisy_study(80, 0.3, 4)
    first = agreement_report(ratings, annotated, schema, n_boot=200, seed=7).to_json()
    again = agreement_report(list(reversed(ratings)), annotated, schema, n_boot=200, seed=7)
    other = agreement_report(ratings, annotated, schema, n_boot=200, seed=8).to_json()
    assert first == again.to_json()
    assert first["concepts"][0]["alpha"]["value"] == other["concepts"][0]["alpha"]["value"]
    assert first["concepts"][0]["alpha"]["low"] != other["concepts"][0]["alpha"]["low"]


def test_the_ua_annotations_against_a_perturbed_copy(ua_csv, ua_schema: Schema) -> None:
    """UA's public annotations as one annotator, a copy with a growing share of its tags changed
    to another value of the same concept as a second: alpha and kappa fall at every step."""
    rows = read_annotation_csv(ua_csv, ua_schema)
    glyph = {key: i for i, key in enumerate(sorted({r.key for r in rows}))}
    original: list[Rating] = [(glyph[r.key], "ua", r.concept, r.value) for r in rows]
    rng = np.random.default_rng(0)
    draw = rng.random(len(rows))  # one draw per tag: a tag changed at p stays changed above p
    other = [
        rng.choice([v for v in ua_schema.concept(r.concept).value_ids if v != r.value])
        for r in rows
    ]
    annotated = [(g, who) for g in glyph.values() for who in ("ua", "copy")]
    big = [c.id for c in ua_schema.concepts if sum(r.concept == c.id for r in rows) >= 40]
    assert len(big) >= 5
    previous: dict[str, float] = {}
    for p in (0.0, 0.1, 0.25, 0.5, 0.8):
        copy = [
            (g, "copy", c, str(other[i]) if draw[i] < p else v)
            for i, (g, _, c, v) in enumerate(original)
        ]
        report = agreement_report(original + copy, annotated, ua_schema, n_boot=0)
        now = {c: report.concept(c).alpha.value for c in big}
        now["kappa"] = report.pair("ua", "copy").kappa.value
        if p == 0.0:
            assert all(v == pytest.approx(1.0) for v in now.values())
            assert disagreements(original + copy, annotated, ua_schema) == []
        else:
            for key, value in now.items():
                assert value is not None and value < previous[key], (p, key)
        previous = {key: float(value) for key, value in now.items() if value is not None}
    assert previous["kappa"] < 0.5


# ---- degenerate data never crash -------------------------------------------------------------


def test_degenerate_data_give_none_with_a_reason() -> None:
    schema = make_schema({"c": ("x", "y", NONE_VALUE)})
    cases: list[tuple[list[Rating], list[tuple[int, str]], str]] = [
        ([], [], "fewer than two people"),
        ([(1, "a", "c", "x"), (2, "a", "c", "y")], [], "fewer than two people"),
        ([(1, "a", "c", "x"), (2, "b", "c", "y")], [], "no glyph was annotated by two"),
        ([], [(1, "a"), (1, "b"), (2, "a"), (2, "b")], "says none"),
        ([(1, "a", "c", "x"), (1, "b", "c", "x")], [], "says {'x'}"),
    ]
    for ratings, annotated, reason in cases:
        report = agreement_report(ratings, annotated, schema, n_boot=50)
        json.dumps(report.to_json(), allow_nan=False)
        c = report.concept("c")
        assert c.alpha.value is None and reason in c.alpha.reason
        assert c.alpha.low is None and c.alpha.high is None
        assert all(v.alpha.value is None and v.alpha.reason for v in c.values)
    # everyone silent on two glyphs: kappa undefined, percent agreement perfect
    report = agreement_report([], [(1, "a"), (1, "b"), (2, "a"), (2, "b")], schema, n_boot=10)
    pair = report.pair("a", "b")
    assert pair.kappa.value is None and "same answer" in pair.kappa.reason
    assert report.concept("c").percent.value == 1.0


def test_explicit_none_and_unknown_tags() -> None:
    schema = make_schema({"c": ("x", NONE_VALUE), "d": ("y",)})
    ratings: list[Rating] = [
        (1, "a", "c", NONE_VALUE),  # said none explicitly …
        (1, "b", "d", "y"),  # … and b said nothing of c: they agree on c
        (1, "a", "gone", "x"),  # not in the schema
        (1, "b", "c", "zz"),  # not a value of c
        (2, "a", "c", "x"),
        (2, "b", "c", "x"),
        (2, "b", "c", NONE_VALUE),  # contradictory: {x}
    ]
    report = agreement_report(ratings, [], schema, n_boot=0)
    assert (report.ratings, report.ignored_ratings) == (5, 2)
    assert report.concept("c").percent.value == 1.0
    assert report.concept("c").value(NONE_VALUE).present == 2
    queue = disagreements(ratings, [], schema)
    assert [(d.glyph_id, d.concepts) for d in queue] == [(1, ("d",))]


def test_bad_arguments_are_refused() -> None:
    schema = make_schema({"c": ("x",)})
    from studio.core.errors import StudioError

    for n_boot in (-1, 100_000_000):  # the second once asked numpy for 507 GiB
        with pytest.raises(StudioError, match="bootstrap replicates must be 0 to 100,000"):
            agreement_report([], [], schema, n_boot=n_boot)
    with pytest.raises(ValueError, match="confidence"):
        agreement_report([], [], schema, confidence=1.0)


# ---- the curator's queue ---------------------------------------------------------------------


def test_disagreements_list_each_persons_values_of_the_disputed_concepts() -> None:
    schema = make_schema({"shape": ("round", "square", NONE_VALUE), "size": ("big", "small")})
    ratings: list[Rating] = [
        (10, "ann", "shape", "round"),
        (10, "bob", "shape", "round"),  # agree
        (20, "ann", "shape", "round"),
        (20, "bob", "shape", "round"),
        (20, "bob", "shape", "square"),  # {round} vs {round, square}
        (20, "cy", "size", "big"),  # cy: shape none, size big
        (30, "ann", "size", "big"),  # alone on glyph 30: nobody to disagree with
        (40, "bob", "size", "small"),
    ]
    annotated = [(20, "cy"), (40, "ann"), (50, "ann"), (50, "bob")]
    queue = disagreements(ratings, annotated, schema)
    assert [d.glyph_id for d in queue] == [20, 40]
    d20, d40 = queue
    assert d20.concepts == ("shape", "size") and d20.annotators == ("ann", "bob", "cy")
    assert d20.values("bob", "shape") == ("round", "square")
    assert d20.values("cy", "shape") == () and d20.values("cy", "size") == ("big",)
    assert d20.values("ann", "size") == ()
    assert len(d20.opinions) == 6
    assert d40.concepts == ("size",) and d40.values("ann", "size") == ()
    assert json.loads(json.dumps(d40.to_json()))["opinions"][1] == {
        "annotator": "bob",
        "concept": "size",
        "values": ["small"],
    }
    with pytest.raises(KeyError):
        d40.values("cy", "size")


def test_report_json_round_trips_and_lookups_fail_clearly() -> None:
    ratings, schema = k2011()
    report = agreement_report(ratings, [], schema, n_boot=50)
    data = json.loads(json.dumps(report.to_json(), allow_nan=False))
    assert data["concepts"][0]["alpha"]["value"] == report.concept("c").alpha.value
    assert data["annotators"] == ["A", "B", "C", "D"] and data["n_boot"] == 50
    assert isinstance(report, AgreementReport)
    with pytest.raises(KeyError):
        report.concept("nope")
    with pytest.raises(KeyError):
        report.pair("A", "Z")
