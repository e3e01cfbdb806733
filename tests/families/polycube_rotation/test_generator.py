"""The polycube rotation task: chains of arms, three rotations and one odd candidate, vetting
that catches planted faults, seeded determinism."""

from __future__ import annotations

import copy
import json
from collections import Counter

import numpy as np
import pytest

from studio.families.polycube_rotation.generator import (
    ARM_MAX,
    ARM_MIN,
    PolycubeRotationGenerator,
    arm_lengths_of,
    chain_cells,
    chain_is_clean,
    render_item_images,
    vet_polycube_item,
)
from studio.render3d import Renderer
from studio.stimuli.items import StimulusItem
from studio.stimuli.polycube import (
    ROTATIONS_3D,
    canonical_polycube,
    is_chiral_polycube,
    is_mirror_of,
    is_rotation_of,
    mirror_polycube,
)


@pytest.fixture(scope="module")
def renderer():
    with Renderer(224) as r:
        yield r


@pytest.fixture(scope="module")
def generator() -> PolycubeRotationGenerator:
    return PolycubeRotationGenerator(level=1, design="published")


@pytest.fixture(scope="module")
def items(generator: PolycubeRotationGenerator, renderer: Renderer) -> list[StimulusItem]:
    return list(generator.items(8, seed=11, renderer=renderer))


def _errors(verdict) -> set[str]:
    return {c.check for c in verdict.errors}


def test_chains_are_built_and_read_back() -> None:
    cells = chain_cells([3, 4, 3], [(1, 0, 0), (0, 1, 0), (0, 0, 1)])
    assert len(cells) == 3 + 4 + 3 - 2
    assert cells[2] == (2, 0, 0) and cells[5] == (2, 3, 0) and cells[-1] == (2, 3, 2)
    assert arm_lengths_of(cells) == [3, 4, 3]
    assert chain_is_clean(cells)
    # A U whose legs touch is not clean; one that folds back onto itself overlaps.
    assert not chain_is_clean(chain_cells([3, 2, 3], [(1, 0, 0), (0, 1, 0), (-1, 0, 0)]))
    square = chain_cells([3, 2, 2, 2], [(1, 0, 0), (0, 1, 0), (-1, 0, 0), (0, -1, 0)])
    assert len(set(square)) < len(square) and not chain_is_clean(square)
    assert arm_lengths_of([(0, 0, 0), (2, 0, 0)]) is None


def test_items_have_the_promised_shape(
    items: list[StimulusItem], generator: PolycubeRotationGenerator
) -> None:
    assert [it.id for it in items] == [f"polycube-rotation-11-{i:05d}" for i in range(8)]
    for it in items:
        r = it.record
        assert it.family == "polycube-rotation" and it.verdict.valid
        assert sorted(it.images) == [
            "candidate-0",
            "candidate-1",
            "candidate-2",
            "candidate-3",
            "question",
        ]
        assert all(im.size == (224, 224) and im.mode == "RGB" for im in it.images.values())
        assert it.sheet.width > 5 * 224 and it.sheet.height > 224
        assert r["level"] == 1 and r["arms"] == 3 and len(r["arm_lengths"]) == 3
        assert all(ARM_MIN <= v <= ARM_MAX for v in r["arm_lengths"])
        q = r["question"]["cells"]
        assert len(q) == sum(r["arm_lengths"]) - 2
        for pos, c in enumerate(r["candidates"]):
            assert np.asarray(c["rotation"]).shape == (3, 3)
            assert {"azimuth", "elevation"} <= set(c["view"])
            if pos == r["key"]:
                assert not c["same"] and not is_rotation_of(q, c["cells"])
                assert r["odd_kind"] == ("mirror" if is_mirror_of(q, c["cells"]) else "different")
            else:
                assert c["same"] and is_rotation_of(q, c["cells"])
        json.dumps(it.to_json())  # the record is JSON-able as it stands
    # The odd one's position runs through a permutation of A–D in each block of four.
    keys = [it.record["key"] for it in items]
    assert sorted(keys[:4]) == sorted(keys[4:]) == [0, 1, 2, 3]
    assert all(isinstance(v, int) for v in generator.rejections.values())


def test_views_lie_in_their_intervals_and_cover_all_quadrants(items: list[StimulusItem]) -> None:
    for it in items:
        views = [it.record["question"]["view"], *(c["view"] for c in it.record["candidates"])]
        quadrants = set()
        for v in views:
            assert 15 <= v["azimuth"] % 90 < 75
            assert 15 <= abs(v["elevation"]) < 75
            quadrants.add(int(v["azimuth"] // 90) % 4)
        assert quadrants == {0, 1, 2, 3}


def test_the_verdict_carries_measures(items: list[StimulusItem]) -> None:
    checks = {c.check: c for c in items[0].verdict.findings}
    assert set(checks) >= {
        "layout",
        "arm-structure",
        "same-are-rotations",
        "recorded-rotations",
        "odd-not-rotation",
        "odd-kind-label",
        "view-intervals",
        "cubes-visible",
    }
    assert checks["same-are-rotations"].measure == 3
    assert checks["cubes-visible"].measure >= 8
    assert checks["view-intervals"].measure >= 15
    # the candidates as the sheet labels them, A–D (issue 28: "key 0" under A–D labels)
    key = "ABCD"[items[0].record["key"]]
    assert checks["layout"].detail == f"4 candidates, odd at {key}, key {key}"


def test_same_seed_same_items_other_seed_other_items(
    items: list[StimulusItem], renderer: Renderer
) -> None:
    again = list(
        PolycubeRotationGenerator(level=1, design="published").items(2, seed=11, renderer=renderer)
    )
    for a, b in zip(items[:2], again, strict=True):
        assert a.id == b.id and a.record == b.record
        for name in a.images:
            assert np.array_equal(np.asarray(a.images[name]), np.asarray(b.images[name]))
    other = next(
        PolycubeRotationGenerator(level=1, design="published").items(1, seed=12, renderer=renderer)
    )
    assert other.record != items[0].record


def test_an_item_re_renders_and_re_vets_from_its_record(
    items: list[StimulusItem], renderer: Renderer
) -> None:
    item = items[1]
    flat = json.loads(json.dumps(item.to_json()))  # what a split's items.jsonl holds
    assert vet_polycube_item(flat, renderer).valid
    images = render_item_images(flat, renderer)
    for name, im in images.items():
        assert np.array_equal(np.asarray(im), np.asarray(item.images[name]))


@pytest.mark.parametrize(("level", "arms"), [(2, 4), (3, 5)])
def test_higher_levels_have_more_arms(level: int, arms: int, renderer: Renderer) -> None:
    item = next(PolycubeRotationGenerator(level=level).items(1, seed=3, renderer=renderer))
    assert item.verdict.valid and item.record["arms"] == arms
    assert arm_lengths_of(item.record["question"]["cells"]) == item.record["arm_lengths"]


def test_odd_candidates_are_mirrors_and_turned_joints(items: list[StimulusItem]) -> None:
    kinds = Counter(it.record["odd_kind"] for it in items)
    assert kinds["mirror"] > 0 and kinds["different"] > 0
    hows = Counter(it.record["odd"]["how"] for it in items)
    assert set(hows) <= {"mirrored", "turned-joint"}


def test_a_mirror_image_among_the_same_candidates_is_caught(
    items: list[StimulusItem], renderer: Renderer
) -> None:
    item = next(it for it in items if is_chiral_polycube(it.record["question"]["cells"]))
    record = copy.deepcopy(item.record)
    pos = next(i for i, c in enumerate(record["candidates"]) if c["same"])
    mirrored = mirror_polycube(record["question"]["cells"])
    record["candidates"][pos]["cells"] = [list(c) for c in mirrored]
    verdict = vet_polycube_item(record, renderer)
    assert not verdict.valid
    assert "same-are-rotations" in _errors(verdict)
    check = next(c for c in verdict.findings if c.check == "same-are-rotations")
    assert check.measure == 2


def test_a_rotation_in_the_odd_place_and_a_wrong_label_are_caught(
    items: list[StimulusItem], renderer: Renderer
) -> None:
    record = copy.deepcopy(items[2].record)
    q = np.asarray(record["question"]["cells"])
    record["candidates"][record["key"]]["cells"] = (q @ ROTATIONS_3D[9].T).tolist()
    assert "odd-not-rotation" in _errors(vet_polycube_item(record, renderer))
    record = copy.deepcopy(items[2].record)
    record["odd_kind"] = "different" if record["odd_kind"] == "mirror" else "mirror"
    assert _errors(vet_polycube_item(record, renderer)) == {"odd-kind-label"}
    record = copy.deepcopy(items[2].record)
    record["key"] = (record["key"] + 1) % 4
    assert "layout" in _errors(vet_polycube_item(record, renderer))


def test_a_view_down_an_arm_hides_cubes(items: list[StimulusItem], renderer: Renderer) -> None:
    record = copy.deepcopy(items[3].record)
    first_arm = np.asarray(record["question"]["rotation"]) @ np.array([1, 0, 0])
    axis = int(np.flatnonzero(first_arm)[0])
    sign = int(first_arm[axis])
    view = {  # a camera on the first arm's line, looking along it
        0: {"azimuth": 90.0 * sign, "elevation": 0.0},
        1: {"azimuth": 0.0, "elevation": 90.0 * sign},
        2: {"azimuth": 0.0 if sign > 0 else 180.0, "elevation": 0.0},
    }[axis]
    record["question"]["view"] = view
    verdict = vet_polycube_item(record, renderer)
    assert {"view-intervals", "cubes-visible"} <= _errors(verdict)
    assert next(c for c in verdict.findings if c.check == "cubes-visible").measure == 0


def test_bad_options_are_refused(renderer: Renderer) -> None:
    with pytest.raises(ValueError):
        PolycubeRotationGenerator(level=4)
    with pytest.raises(ValueError):
        next(PolycubeRotationGenerator(level=1, size=128).items(1, seed=1, renderer=renderer))


def test_balanced_design_key_is_the_only_rotation_in_two_mirror_pairs(renderer: Renderer) -> None:
    """The default design (issue 11): the key alone is the question turned; the four candidates
    are two mirror pairs, so comparing candidates alone singles none out; vetting catches a
    candidate set that breaks this."""
    items = list(PolycubeRotationGenerator(level=2).items(2, seed=4, renderer=renderer))
    for item in items:
        rec = item.record
        assert item.verdict.valid and rec["design"] == "balanced"
        q = canonical_polycube(rec["question"]["cells"])
        forms = [canonical_polycube(c["cells"]) for c in rec["candidates"]]
        assert [i for i, f in enumerate(forms) if f == q] == [rec["key"]]
        assert len(set(forms)) == 4
        assert sorted(c["kind"] for c in rec["candidates"]) == sorted(
            ("rotation", "mirror", "different", "different-mirror")
        )
    record = copy.deepcopy(items[0].record)
    foil = next(i for i, c in enumerate(record["candidates"]) if not c["same"])
    q = np.asarray(record["question"]["cells"])
    record["candidates"][foil]["cells"] = (q @ ROTATIONS_3D[5].T).tolist()
    errors = _errors(vet_polycube_item(record, renderer))
    assert {"key-only-rotation", "symmetric-set"} <= errors
    with pytest.raises(ValueError, match="design"):
        PolycubeRotationGenerator(design="odd")
