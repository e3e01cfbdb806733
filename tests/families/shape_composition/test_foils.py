"""Replace foil on a shape-composition item (issue 27): the same piece of the key changed
again as the item's design changes it — a piece of a freshly cut shape of similar size (the
balanced design: within 3-25 % of the key's and the other foils' changed pieces, pairwise), or
in the published design a new scale factor — on the same side of the key's piece by area, so
the key's rank by area holds; laid out at the item's scale."""

from __future__ import annotations

import pytest

from studio.families.shape_composition.generator import (
    BALANCED_AREA_RATIO,
    REPLACEMENT_AREA_BAND,
    SCALE_BANDS,
)
from studio.stimuli.geometry import polygon_area
from tests.families.foils import (
    check_candidates,
    check_refusals,
    other_seed_differs,
    stored_records,
)

KEPT = ("shape", "pieces", "piece_cuts", "target_piece", "key", "key_area_rank", "piece_scale", "m")


def changed_area(cand: dict) -> float:
    [piece] = [p for p in cand["pieces"] if p["modification"]]
    return polygon_area(piece["polygon"])


@pytest.mark.parametrize(("design", "m"), [("balanced", 3), ("balanced", 5), ("published", 2)])
def test_every_foil_changes_the_target_piece_anew(design: str, m: int) -> None:
    records = stored_records("shape-composition", {"design": design, "pieces": m}, 2, seed=4)
    for record in records:
        check_refusals("shape-composition", record)
        key, target = record["key"], record["target_piece"]
        key_area = polygon_area(record["pieces"][target]["polygon"])
        for answer in (j for j in range(4) if j != key):
            old = record["candidates"][answer]
            smaller = changed_area(old) < key_area
            others = [
                changed_area(c)
                for j, c in enumerate(record["candidates"])
                if j not in (key, answer)
            ]
            for new in check_candidates("shape-composition", record, answer, n=3):
                assert {k: new.get(k) for k in KEPT} == {k: record.get(k) for k in KEPT}
                cand = new["candidates"][answer]
                assert (cand["kind"], cand["modified_piece"]) == (old["kind"], target)
                area = changed_area(cand)
                assert (area < key_area) == smaller  # the key's rank by area holds
                [mod] = [p["modification"] for p in cand["pieces"] if p["modification"]]
                if design == "balanced":
                    lo, hi = BALANCED_AREA_RATIO
                    for b in (key_area, *others):
                        assert lo <= max(area, b) / min(area, b) <= hi
                elif mod["kind"] == "scaled":
                    assert SCALE_BANDS[0 if smaller else 1][0] <= mod["factor"]
                    assert mod["factor"] <= SCALE_BANDS[0 if smaller else 1][1]
                else:
                    lo, hi = REPLACEMENT_AREA_BAND
                    assert lo * key_area <= abs(area - key_area) <= hi * key_area
                # the other pieces are the shape's own, one each
                sources = sorted(
                    p["source"]["piece"]
                    for p in cand["pieces"]
                    if p["source"]["shape"] == "original" and not p["modification"]
                )
                assert sources == [j for j in range(m) if j != target]
    assert other_seed_differs("shape-composition", records[0], (records[0]["key"] + 1) % 4)
