"""Shape composition (Spatial-IQ §3.2): exact cutting geometry, the paper's limits, the candidates
and the vet that proves only the key reassembles the shape."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from studio.families.shape_composition.generator import (
    CUT_ANGLES,
    INTERCEPT_RANGE,
    REPLACEMENT_AREA_BAND,
    ROTATIONS,
    SCALE_BANDS,
    SHAPE_MIN_AREA,
    ShapeCompositionGenerator,
    piece_area_limits,
    vet_composition_item,
)
from studio.families.shape_composition.generator import _same_vertices as _same_vertices
from studio.stimuli.geometry import (
    clip_convex,
    cover_iou,
    coverage,
    polygon_area,
    rotate_polygon,
    round_polygon,
    signed_area,
    split_polygon,
    to_origin,
)

SQUARE = [(0.0, 0.0), (10.0, 0.0), (10.0, 10.0), (0.0, 10.0)]


@pytest.fixture(scope="module")
def items_by_level():
    out = {}
    for m in (2, 3, 4, 5):
        gen = ShapeCompositionGenerator(pieces=m, design="published")
        out[m] = (gen, list(gen.items(4, seed=11)))
    return out


def _errors(verdict):
    return {c.check for c in verdict.errors}


# -- geometry ---------------------------------------------------------------------------------


def test_split_tiles_the_parent():
    a, b = split_polygon(SQUARE, np.tan(np.radians(30)), 1.0, 6.0)
    assert a and b
    assert polygon_area(a) + polygon_area(b) == pytest.approx(100.0)
    assert signed_area(a) > 0 and signed_area(b) > 0


def test_quarter_turns_are_exact_and_keep_orientation():
    tri = [(0.0, 0.0), (4.0, 0.0), (0.0, 2.0)]
    assert rotate_polygon(tri, 360) == tri
    assert rotate_polygon(rotate_polygon(tri, 90), 270) == tri
    assert signed_area(rotate_polygon(tri, 90)) == pytest.approx(signed_area(tri))
    with pytest.raises(ValueError):
        rotate_polygon(tri, 45)


def test_convex_clip_and_coverage():
    shifted = [(x + 5, y + 5) for x, y in SQUARE]
    assert polygon_area(clip_convex(SQUARE, shifted)) == pytest.approx(25.0)
    assert clip_convex(SQUARE, [(x + 20, y) for x, y in SQUARE]) == []
    left, right = split_polygon(SQUARE, 1.0, 0.0, 5.0)
    counts = coverage([left, right], 16, 2)
    target = coverage([SQUARE], 16, 2) > 0
    assert counts.max() == 1
    assert cover_iou(counts, target) == pytest.approx(1.0)
    # the same piece twice is an overlap, not a cover
    assert cover_iou(coverage([left, left, right], 16, 2), target) < 0.6


# -- generation -------------------------------------------------------------------------------


def test_same_seed_same_records():
    a = [it.record for it in ShapeCompositionGenerator(3).items(2, seed=5)]
    b = [it.record for it in ShapeCompositionGenerator(3).items(2, seed=5)]
    c = [it.record for it in ShapeCompositionGenerator(3).items(2, seed=6)]
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert json.dumps(a, sort_keys=True) != json.dumps(c, sort_keys=True)


def test_ids_progress_and_images(items_by_level):
    calls = []
    gen = ShapeCompositionGenerator(pieces=4, size=224)
    items = list(gen.items(2, seed=9, progress=lambda i, n: calls.append((i, n))))
    assert calls == [(1, 2), (2, 2)]
    assert [it.id for it in items] == ["shape-composition-9-00000", "shape-composition-9-00001"]
    for it in items:
        assert it.family == "shape-composition" == gen.family
        assert set(it.images) == {
            "question",
            "candidate-0",
            "candidate-1",
            "candidate-2",
            "candidate-3",
        }
        assert all(img.size == (224, 224) for img in it.images.values())
        assert it.sheet.width > 4 * 224 and it.sheet.height > 2 * 224
        # images are re-made from the record alone
        again = gen.render(it.record)
        for name, img in it.images.items():
            assert np.array_equal(np.asarray(img), np.asarray(again[name]))
    assert isinstance(gen.rejections, dict)


def test_pieces_and_area_limits(items_by_level):
    lo_b, hi_b = INTERCEPT_RANGE[0] * 224, INTERCEPT_RANGE[1] * 224
    for m, (_, items) in items_by_level.items():
        min_a, max_a = piece_area_limits(m)
        for it in items:
            rec = it.record
            assert rec["m"] == m and len(rec["pieces"]) == m
            assert polygon_area(rec["shape"]["polygon"]) > SHAPE_MIN_AREA
            areas = [polygon_area(p["polygon"]) for p in rec["pieces"]]
            assert all(min_a - 1e-6 <= a <= max_a + 1e-6 for a in areas)
            assert sum(areas) == pytest.approx(polygon_area(rec["shape"]["polygon"]), rel=1e-4)
            cuts = rec["shape"]["cuts"] + rec["piece_cuts"]
            assert len(rec["shape"]["cuts"]) == 2 and len(rec["piece_cuts"]) == m - 1
            for cut in cuts:
                assert cut["angle"] in CUT_ANGLES
                assert lo_b - 1e-6 <= cut["intercept"] <= hi_b + 1e-6
            assert all(len(c["pieces"]) == m for c in rec["candidates"])


def test_rotations_are_quarter_turns_and_never_flips(items_by_level):
    for _, items in items_by_level.values():
        for it in items:
            rec = it.record
            for cand in rec["candidates"]:
                for piece in cand["pieces"]:
                    assert piece["rotation"] in ROTATIONS
                    src = piece["source"]
                    if src["shape"] != "original" or piece["modification"]:
                        continue
                    source = rec["pieces"][src["piece"]]["polygon"]
                    expected = round_polygon(to_origin(rotate_polygon(source, piece["rotation"])))
                    assert piece["polygon"] == expected
                    assert signed_area(piece["polygon"]) > 0


def test_candidates_follow_the_paper(items_by_level):
    for _, items in items_by_level.values():
        for it in items:
            rec = it.record
            kinds = [c["kind"] for c in rec["candidates"]]
            assert sorted(kinds) == ["key", "replaced", "replaced", "scaled"]
            assert kinds[rec["key"]] == "key"
            target = rec["target_piece"]
            for cand in rec["candidates"]:
                mods = [p["modification"] for p in cand["pieces"] if p["modification"]]
                if cand["kind"] == "key":
                    assert not mods
                    continue
                assert len(mods) == 1 and cand["modified_piece"] == target
                mod = mods[0]
                if cand["kind"] == "replaced":
                    assert mod["replaces"] == target
                    (piece,) = [p for p in cand["pieces"] if p["modification"]]
                    assert piece["source"]["shape"].startswith("donor-")
                    assert (
                        REPLACEMENT_AREA_BAND[0]
                        <= abs(mod["area_ratio"] - 1)
                        <= REPLACEMENT_AREA_BAND[1] + 1e-3
                    )
                else:
                    assert any(lo <= mod["factor"] <= hi for lo, hi in SCALE_BANDS)


def test_key_area_rank_is_balanced():
    """The key's changed piece is smaller than ``key_area_rank`` of the distractors' variants."""
    ranks = set()
    for it in ShapeCompositionGenerator(pieces=2).items(16, seed=3):
        rec = it.record
        target = rec["target_piece"]
        key_area = rec["pieces"][target]["area"]
        variant_areas = []
        for cand in rec["candidates"]:
            if cand["kind"] == "key":
                continue
            (piece,) = [p for p in cand["pieces"] if p["modification"]]
            variant_areas.append(polygon_area(piece["polygon"]))
        assert sum(a < key_area for a in variant_areas) == rec["key_area_rank"]
        ranks.add(rec["key_area_rank"])
    assert ranks == {0, 1, 2, 3}


def test_vet_accepts_generated_items(items_by_level):
    for _, items in items_by_level.values():
        for it in items:
            verdict = vet_composition_item(it.record)
            assert verdict.valid, verdict.errors
            checks = {c.check: c for c in verdict.findings}
            assert checks["key-placement-covers-shape"].measure > 0.99
            assert checks["key-area-matches"].measure < 1e-3
            changed = [c for c in verdict.findings if c.check.endswith("one-piece-changed")]
            assert changed and all(c.detail == "1 piece not found in the shape" for c in changed)


def _bad_distractor(record):
    """The first distractor replaced by the key's own pieces, each in another rotation."""
    rec = copy.deepcopy(record)
    idx = next(i for i, c in enumerate(rec["candidates"]) if c["kind"] != "key")
    cand = rec["candidates"][idx]
    for j, piece in enumerate(cand["pieces"]):
        rot = (90 * (j + 1)) % 360
        source = rec["pieces"][j]["polygon"]
        piece.update(
            source={"shape": "original", "piece": j},
            modification=None,
            rotation=rot,
            polygon=round_polygon(to_origin(rotate_polygon(source, rot))),
        )
    return rec, idx


def test_vet_refuses_a_distractor_that_reassembles(items_by_level):
    for m in (2, 5):
        _, items = items_by_level[m]
        rec, idx = _bad_distractor(items[0].record)
        verdict = vet_composition_item(rec)
        assert not verdict.valid
        assert f"candidate-{idx}-does-not-reassemble" in _errors(verdict)
        bad = next(c for c in verdict.findings if c.check == f"candidate-{idx}-does-not-reassemble")
        assert bad.measure > 0.99


def _mirror(poly):
    width = max(x for x, _ in poly)
    return [[round(width - x, 3) + 0.0, y] for x, y in reversed(poly)]


def _chiral_key_piece(items):
    """A copy of a record and a key piece whose mirror image no quarter turn reproduces."""
    for it in items:
        rec = copy.deepcopy(it.record)
        for piece in rec["candidates"][rec["key"]]["pieces"]:
            mirrored = _mirror(piece["polygon"])
            turns = [round_polygon(to_origin(rotate_polygon(mirrored, r))) for r in ROTATIONS]
            if not any(_same_vertices(t, piece["polygon"], 0.01) for t in turns):
                return rec, piece, mirrored
    raise AssertionError("every key piece is mirror-symmetric")


def test_vet_refuses_a_flipped_or_wrong_key(items_by_level):
    _, items = items_by_level[3]
    rec, key_piece, mirrored = _chiral_key_piece(items)
    key_piece["polygon"] = mirrored
    assert "shown-pieces-match-sources" in _errors(vet_composition_item(rec))

    rec = copy.deepcopy(items[1].record)
    rec["key"] = next(i for i, c in enumerate(rec["candidates"]) if c["kind"] == "scaled")
    errors = _errors(vet_composition_item(rec))
    assert "key-area-matches" in errors and "key-placement-covers-shape" in errors


def test_vet_works_on_the_written_json_line(items_by_level):
    """The split writes ``item.to_json()`` (record keys at top level) and re-vets that."""
    for _, its in items_by_level.values():
        for it in its:
            line = json.loads(json.dumps(it.to_json(), sort_keys=True))
            assert vet_composition_item(line).valid
