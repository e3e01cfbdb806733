"""Answers-only attributes of the non-glyph families (issue 11): real generated records, the
published designs' giveaways found from the answers alone, the balanced designs' key rates
within noise."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from scipy.stats import binomtest

from studio.baselines.probes import fit_answers_only_probe
from studio.core.errors import StudioError
from studio.families.cube_net.generator import CubeNetGenerator
from studio.families.kiva.generator import KivaGenerator
from studio.families.polycube_rotation.generator import PolycubeRotationGenerator
from studio.families.shape_composition.generator import ShapeCompositionGenerator
from studio.stimuli.split import assign_parts
from studio.stimuli.symbolic import answer_attributes, symbolic_families

OBJECTS = ["mug", "key", "toy-car", "teapot"]


def _key(family: str, record: dict[str, Any]) -> int:
    if family == "kiva":
        return int(next(q for q in record["questions"] if q["id"] == "extrapolate")["key"])
    return int(record["key"])


def _records(family: str, design: str, n: int, seed: int = 1) -> list[dict[str, Any]]:
    if family == "kiva":
        return list(KivaGenerator(objects=OBJECTS, design=design).records(n, seed))
    if family == "polycube-rotation":
        return list(PolycubeRotationGenerator(level=2, design=design).records(n, seed))
    if family == "shape-composition":
        gen = ShapeCompositionGenerator(2, design=design)
        return [it.record for it in gen.items(n, seed)]
    return [it.record for it in CubeNetGenerator(design=design).items(n, seed)]


def _probe_accuracy(family: str, records: list[dict[str, Any]]) -> float:
    attrs = [answer_attributes(family, r) for r in records]
    keys = np.array([_key(family, r) for r in records])
    parts = np.array(assign_parts(len(records), (0.7, 0.1, 0.2), 3))
    result = fit_answers_only_probe(attrs, keys, parts, 3)
    return float((result.choices == keys).mean())


def _worst_key_rate_p(family: str, records: list[dict[str, Any]], k: int) -> float:
    """The smallest binomial p-value, over attribute values seen on 40+ answers, of "this value
    sits on the key 1/k of the times it sits on an answer" (Bonferroni-corrected)."""
    on_key: Counter[tuple[str, str]] = Counter()
    on_any: Counter[tuple[str, str]] = Counter()
    for r in records:
        key = _key(family, r)
        for j, attrs in enumerate(answer_attributes(family, r)):
            for name, values in attrs.items():
                for v in values:
                    on_any[(name, v)] += 1
                    on_key[(name, v)] += j == key
    tested = [x for x, n in on_any.items() if n >= 40]
    assert tested, "no attribute value repeats enough to test"
    p = min(binomtest(on_key[x], on_any[x], 1 / k).pvalue for x in tested)
    return min(1.0, p * len(tested))


def test_every_family_is_read_one_dict_per_answer() -> None:
    builtin = {"cube-net", "kiva", "polycube-rotation", "shape-composition"}
    assert builtin <= set(symbolic_families()) and "glyph-pmp" not in symbolic_families()
    for family, k in (
        ("kiva", 3),
        ("polycube-rotation", 4),
        ("shape-composition", 4),
        ("cube-net", 4),
    ):
        for design in ("published", "balanced"):
            record = _records(family, design, 1)[0]
            attrs = answer_attributes(family, record)
            assert len(attrs) == k
            for a in attrs:
                assert a and all(isinstance(v, frozenset) and v for v in a.values())
    with pytest.raises(StudioError, match="no symbolic answer reader"):
        answer_attributes("glyph-pmp", {})
    with pytest.raises(StudioError, match="cannot be read"):
        answer_attributes("cube-net", {"candidates": [{}]})


def test_polycube_shapes_compare_up_to_rotation_and_reflection() -> None:
    (published,) = _records("polycube-rotation", "published", 1)
    attrs = answer_attributes("polycube-rotation", published)
    key = published["key"]
    same = {next(iter(a["one-sided"])) for j, a in enumerate(attrs) if j != key}
    assert len(same) == 1  # the three rotations share one canonical form
    assert next(iter(attrs[key]["one-sided"])) not in same
    (balanced,) = _records("polycube-rotation", "balanced", 1)
    attrs = answer_attributes("polycube-rotation", balanced)
    assert len({next(iter(a["one-sided"])) for a in attrs}) == 4
    assert Counter(next(iter(a["free"])) for a in attrs) == Counter(
        {v: 2 for v in {next(iter(a["free"])) for a in attrs}}
    )  # two mirror pairs
    assert all(a["chirality"] == {"chiral"} for a in attrs)


def test_polycube_published_key_is_found_from_the_candidates_alone() -> None:
    records = _records("polycube-rotation", "published", 120)
    assert _probe_accuracy("polycube-rotation", records) > 0.95
    balanced = _records("polycube-rotation", "balanced", 120)
    accuracy = _probe_accuracy("polycube-rotation", balanced)
    # chance is 0.25; 120 puzzles: a 99.9 % binomial band is about ±0.13
    assert accuracy < 0.41


def test_kiva_published_options_give_the_key_away_and_balanced_do_not() -> None:
    published = _records("kiva", "published", 900)
    assert _probe_accuracy("kiva", published) > 0.38  # chance 1/3
    assert _worst_key_rate_p("kiva", published, 3) < 1e-6
    balanced = _records("kiva", "balanced", 900)
    assert _probe_accuracy("kiva", balanced) < 0.39
    assert _worst_key_rate_p("kiva", balanced, 3) > 1e-3


@pytest.mark.parametrize("family", ["shape-composition", "cube-net"])
def test_balanced_key_rates_are_within_noise(family: str) -> None:
    records = _records(family, "balanced", 240)
    assert all(r["design"] == "balanced" for r in records)
    assert _worst_key_rate_p(family, records, 4) > 1e-3
    assert _probe_accuracy(family, records) < 0.40


def test_composition_published_scaled_twin_is_found() -> None:
    records = _records("shape-composition", "published", 240)
    assert _probe_accuracy("shape-composition", records) > 0.45


def test_records_are_deterministic_per_seed() -> None:
    for family in ("kiva", "polycube-rotation"):
        a, b = _records(family, "balanced", 6, 5), _records(family, "balanced", 6, 5)
        assert a == b
        assert a != _records(family, "balanced", 6, 6)
