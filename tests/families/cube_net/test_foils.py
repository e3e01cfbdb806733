"""Replace foil on a cube-net item (issue 27): another foil drawn as the item's design draws
it — balanced, the same cube of the orbit from another corner no other cube shows the same
way; published, another changed cube whose kind keeps the item's kinds of distractors."""

from __future__ import annotations

import pytest

from studio.families.cube_net.foils import _orbit_cube
from studio.families.cube_net.generator import (
    DISTRACTOR_KINDS,
    ROTATIONS,
    all_views,
    cube_from_net,
    cube_rotations,
    view_from_json,
    view_of,
    visible_faces,
)
from tests.families.foils import (
    check_candidates,
    check_refusals,
    other_seed_differs,
    stored_records,
)

KEPT = ("net", "marks", "folded", "key", "design", "size")


@pytest.fixture(scope="module", params=["balanced", "published"])
def records(request: pytest.FixtureRequest) -> list[dict]:
    return stored_records("cube-net", {"design": request.param, "size": 64}, 4, seed=5)


def test_every_foil_gets_new_valid_candidates(records: list[dict]) -> None:
    for record in records:
        check_refusals("cube-net", record)
        for answer in (j for j in range(4) if j != record["key"]):
            for new in check_candidates("cube-net", record, answer, n=4):
                assert {k: new.get(k) for k in KEPT} == {k: record.get(k) for k in KEPT}
                cand = new["candidates"][answer]
                assert cand["kind"] != "key"
                assert new["distractor_kinds"] == [
                    c["kind"] for c in new["candidates"] if c["kind"] != "key"
                ]
    assert other_seed_differs("cube-net", records[0], (records[0]["key"] + 1) % 4)


def test_a_balanced_foil_stays_its_cube_of_the_orbit_seen_from_a_telling_corner() -> None:
    [record] = stored_records("cube-net", {"design": "balanced", "size": 64}, 1, seed=8)
    cube = cube_from_net(record["marks"])
    cubes = [_orbit_cube(cube, c["modification"]) for c in record["candidates"]]
    for answer in (j for j in range(4) if j != record["key"]):
        others = set().union(*(all_views(c) for j, c in enumerate(cubes) if j != answer))
        allowed = {view_of(cubes[answer], r) for r in cube_rotations()} - others
        got = check_candidates("cube-net", record, answer, n=30)
        # every corner the design could have drawn, and nothing else
        assert {view_from_json(r["candidates"][answer]["view"]) for r in got} == allowed - {
            view_from_json(record["candidates"][answer]["view"])
        }
        for new in got:
            cand = new["candidates"][answer]
            assert cand["modification"] == record["candidates"][answer]["modification"]
            assert view_from_json(cand["view"]) == view_of(cubes[answer], cand["orientation"])


def test_a_published_foil_is_a_changed_cube_of_the_same_kinds() -> None:
    records = stored_records("cube-net", {"design": "published", "size": 64}, 6, seed=2)
    for record in records:
        cube = cube_from_net(record["marks"])
        truth = set(all_views(cube))
        for answer in (j for j in range(4) if j != record["key"]):
            for new in check_candidates("cube-net", record, answer, n=5):
                cand = new["candidates"][answer]
                mod = cand["modification"]
                assert cand["kind"] == mod["kind"] in DISTRACTOR_KINDS
                assert view_from_json(cand["view"]) not in truth  # no orientation shows it
                # the kinds of distractors, what the board lists the item by, are kept
                assert sorted(set(new["distractor_kinds"])) == sorted(
                    set(record["distractor_kinds"])
                )
                shown = visible_faces(cand["orientation"])
                if mod["kind"] == "rotate":
                    assert mod["face"] in shown and mod["by"] in ROTATIONS[1:]
                else:
                    assert set(mod["faces"]) & shown
