"""Replace foil on a polycube-rotation item (issue 27): another foil drawn as the item's design
draws it — balanced, the same shape of the set {A, A′, B, B′} turned by another rotation and
seen anew; published, the question turned by a rotation no other candidate uses."""

from __future__ import annotations

import numpy as np
import pytest

from studio.families.polycube_rotation.generator import OFFSET_MAX, OFFSET_MIN, _rotate
from studio.stimuli.polycube import ROTATIONS_3D
from tests.families.foils import (
    check_candidates,
    check_refusals,
    other_seed_differs,
    stored_records,
)

KEPT = ("question", "set", "key", "scale", "arm_lengths", "design", "odd", "odd_kind", "size")


def _is_rotation(matrix: list) -> int:
    """The index of a cube rotation among the 24 (ValueError when it is none)."""
    m = np.asarray(matrix)
    return next(i for i, r in enumerate(ROTATIONS_3D) if np.array_equal(r, m))


def _quadrant(view: dict) -> int:
    return int(float(view["azimuth"]) // 90) % 4


@pytest.mark.parametrize("design", ["balanced", "published"])
def test_every_foil_is_turned_and_seen_anew(design: str) -> None:
    records = stored_records("polycube-rotation", {"design": design, "size": 64}, 2, seed=3)
    for record in records:
        check_refusals("polycube-rotation", record)
        cands = record["candidates"]
        for answer in (j for j in range(4) if j != record["key"]):
            old = cands[answer]
            for new in check_candidates("polycube-rotation", record, answer, n=3):
                assert {k: new.get(k) for k in KEPT} == {k: record.get(k) for k in KEPT}
                cand = new["candidates"][answer]
                r = _is_rotation(cand["rotation"])
                assert r != _is_rotation(old["rotation"])
                # seen from the old view's azimuth quadrant, inside its interval
                view = cand["view"]
                assert _quadrant(view) == _quadrant(old["view"])
                assert OFFSET_MIN <= float(view["azimuth"]) % 90 < OFFSET_MAX
                assert OFFSET_MIN <= abs(float(view["elevation"])) < OFFSET_MAX
                if design == "balanced":
                    # the same shape of the set, its kind unchanged, turned by its rotation
                    assert (cand["shape"], cand["kind"]) == (old["shape"], old["kind"])
                    source = record["set"]["shapes"][old["shape"]]
                else:
                    # a rotation of the question that no other "same" candidate uses
                    assert cand["same"] and r != 0
                    used = [
                        _is_rotation(c["rotation"])
                        for j, c in enumerate(cands)
                        if j != answer and c["same"]
                    ]
                    assert r not in used
                    source = record["question"]["cells"]
                assert _rotate(source, ROTATIONS_3D[r]) == [tuple(c) for c in cand["cells"]]
    assert other_seed_differs("polycube-rotation", records[0], (records[0]["key"] + 1) % 4)
