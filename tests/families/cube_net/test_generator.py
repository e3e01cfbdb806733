"""Cube nets (MARVEL reassembling): the 11 nets, folding checked against a physical fold, marks
that show every quarter turn, and the vet that refuses a distractor the true cube can show."""

from __future__ import annotations

import copy
import itertools
import json

import numpy as np
import pytest
from PIL import Image, ImageDraw

from studio.families.cube_net.generator import (
    AXES,
    FACES,
    MARK_NAMES,
    CubeNetGenerator,
    all_views,
    cube_from_net,
    cube_nets,
    cube_rotations,
    fold,
    is_cube_net,
    swap_faces,
    turn_face,
    vet_cube_net_item,
    view_of,
    view_to_json,
    visible_faces,
)
from studio.stimuli.polyomino import canonical_form, enumerate_polyominoes

CROSS = [(1, 0), (0, 1), (1, 1), (2, 1), (1, 2), (1, 3)]
OPPOSITE = {"+x": "-x", "-x": "+x", "+y": "-y", "-y": "+y", "+z": "-z", "-z": "+z"}


@pytest.fixture(scope="module")
def items():
    gen = CubeNetGenerator(design="published")
    return gen, list(gen.items(12, seed=4))


def _errors(verdict):
    return {c.check for c in verdict.errors}


# -- nets and folding -------------------------------------------------------------------------


def test_exactly_eleven_nets():
    nets = cube_nets()
    assert len(nets) == 11
    assert len(enumerate_polyominoes(6, "free")) == 35
    assert canonical_form(CROSS) in {tuple(n) for n in nets}
    assert not is_cube_net([(c, r) for c in range(3) for r in range(2)])  # 2×3 rectangle
    assert not is_cube_net([(c, 0) for c in range(6)])  # straight hexomino


def test_fold_the_cross_gives_opposite_faces():
    folded = fold(CROSS)
    faces = {cell: sq.face for cell, sq in folded.items()}
    assert sorted(faces.values()) == sorted(FACES)
    # the ends of each straight run of three are opposite faces
    assert faces[(0, 1)] == OPPOSITE[faces[(2, 1)]]
    assert faces[(1, 0)] == OPPOSITE[faces[(1, 2)]]
    assert faces[(1, 1)] == OPPOSITE[faces[(1, 3)]]
    for sq in folded.values():
        assert np.dot(AXES[sq.up], AXES[sq.face]) == 0  # up lies in the face


def _rotation(axis, angle):
    axis = np.asarray(axis, dtype=float)
    axis /= np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _physical_fold(cells):
    """Fold with real hinge rotations: net in the plane z = 0 (image up = +y), squares folded
    away from the viewer at +z. Returns cell → (outward normal, image-up direction) in 3D."""
    cells = sorted(cells)
    placed = {cells[0]: (np.eye(3), np.zeros(3))}  # x ↦ R x + t
    stack = [cells[0]]
    while stack:
        c = stack.pop()
        rot, t = placed[c]
        for dc, dr in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nb = (c[0] + dc, c[1] + dr)
            if nb not in cells or nb in placed:
                continue
            # hinge: the shared edge, in flat coordinates of the net
            cx, cy = c[0] + 0.5, -c[1] - 0.5
            mid = np.array([cx + dc / 2, cy - dr / 2, 0.0])
            axis = np.array([0.0, 1.0, 0.0]) if dc else np.array([1.0, 0.0, 0.0])
            child_centre = np.array([cx + dc, cy - dr, 0.0])
            for sign in (1, -1):
                h = _rotation(axis, sign * np.pi / 2)
                local = h @ (child_centre - mid) + mid
                if local[2] < 0:  # folded away from the viewer
                    break
            new_rot = rot @ h
            new_t = rot @ (mid - h @ mid) + t
            placed[nb] = (new_rot, new_t)
            stack.append(nb)
    out = {}
    for c, (rot, _) in placed.items():
        normal = np.rint(rot @ np.array([0, 0, 1.0])).astype(int)
        up = np.rint(rot @ np.array([0, 1.0, 0])).astype(int)
        out[c] = (tuple(normal), tuple(up))
    return out


def test_fold_agrees_with_a_physical_fold():
    names = {v: k for k, v in AXES.items()}
    for net in cube_nets():
        folded = fold(net)
        physical = _physical_fold(net)
        for cell, (normal, up) in physical.items():
            assert folded[cell].face == names[normal]
            assert folded[cell].up == names[up]


def test_rotation_group():
    rots = cube_rotations()
    assert len(rots) == 24 == len(set(rots))
    mats = {np.asarray(r).tobytes() for r in rots}
    for a, b in itertools.product(rots, repeat=2):
        assert (np.asarray(a) @ np.asarray(b)).tobytes() in mats


def test_marks_show_every_quarter_turn():
    def raster(mark, quarters):
        from studio.families.cube_net.generator import _draw_mark

        img = Image.new("L", (64, 64), 0)
        up, right = (0.0, -1.0), (1.0, 0.0)
        for _ in range(quarters):
            up, right = (-up[1], up[0]), (-right[1], right[0])
        origin = (32 - 24 * (right[0] + up[0]), 32 - 24 * (right[1] + up[1]))
        _draw_mark(
            ImageDraw.Draw(img),
            mark,
            origin,
            (48 * right[0], 48 * right[1]),
            (48 * up[0], 48 * up[1]),
            255,
        )
        return np.asarray(img) > 0

    seen = []
    for mark in MARK_NAMES:
        images = [raster(mark, q) for q in range(4)]
        for a, b in itertools.combinations(images, 2):
            assert (a != b).mean() > 0.02, mark
        for other in seen:
            assert all((img != other).mean() > 0.02 for img in images)
        seen.append(images[0])


def test_modified_visible_faces_are_never_true_views():
    marks = [
        {"cell": list(c), "mark": m, "rotation": 0} for c, m in zip(CROSS, MARK_NAMES, strict=True)
    ]
    cube = cube_from_net(marks)
    truth = set(all_views(cube))
    assert len(truth) == 24
    for rot in cube_rotations()[::5]:
        for face in visible_faces(rot):
            for by in (90, 180, 270):
                assert view_of(turn_face(cube, face, by), rot) not in truth
            for other in FACES:
                if other != face:
                    assert view_of(swap_faces(cube, face, other), rot) not in truth


# -- generation -------------------------------------------------------------------------------


def test_same_seed_same_records():
    a = [it.record for it in CubeNetGenerator().items(3, seed=2)]
    b = [it.record for it in CubeNetGenerator().items(3, seed=2)]
    c = [it.record for it in CubeNetGenerator().items(3, seed=3)]
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert json.dumps(a, sort_keys=True) != json.dumps(c, sort_keys=True)


def test_items_ids_images_and_record(items):
    gen, its = items
    assert [it.id for it in its[:2]] == ["cube-net-4-00000", "cube-net-4-00001"]
    for it in its:
        assert it.family == "cube-net" == gen.family
        assert set(it.images) == {
            "question",
            "candidate-0",
            "candidate-1",
            "candidate-2",
            "candidate-3",
        }
        assert all(img.size == (224, 224) for img in it.images.values())
        rec = it.record
        assert len(rec["marks"]) == 6 and sorted(m["mark"] for m in rec["marks"]) == sorted(
            MARK_NAMES
        )
        assert all(m["rotation"] in (0, 90, 180, 270) for m in rec["marks"])
        assert is_cube_net([m["cell"] for m in rec["marks"]])
        kinds = [c["kind"] for c in rec["candidates"]]
        assert kinds.count("key") == 1 and kinds[rec["key"]] == "key"
        assert sorted(rec["distractor_kinds"]) == sorted(k for k in kinds if k != "key")
        for cand in rec["candidates"]:
            assert [s["slot"] for s in cand["view"]] == ["top", "left", "right"]
            assert all(s["rotation"] in (0, 90, 180, 270) for s in cand["view"])
            if cand["kind"] != "key":
                assert cand["modification"]["kind"] == cand["kind"]
    assert isinstance(gen.rejections, dict)
    again = gen.render(its[0].record)
    assert np.array_equal(
        np.asarray(again["candidate-2"]), np.asarray(its[0].images["candidate-2"])
    )


def test_vet_accepts_generated_items(items):
    for it in items[1]:
        verdict = vet_cube_net_item(it.record)
        assert verdict.valid, verdict.errors
        checks = {c.check: c for c in verdict.findings}
        assert checks["key-matches-a-view"].measure == 1.0


def test_vet_refuses_a_distractor_that_is_a_true_view(items):
    rec = copy.deepcopy(items[1][0].record)
    cube = cube_from_net(rec["marks"])
    idx = next(i for i, c in enumerate(rec["candidates"]) if c["kind"] != "key")
    key_view = rec["candidates"][rec["key"]]["view"]
    other = next(v for v in all_views(cube) if view_to_json(v) != key_view)
    rec["candidates"][idx]["view"] = view_to_json(other)
    verdict = vet_cube_net_item(rec)
    assert not verdict.valid
    assert f"candidate-{idx}-matches-no-view" in _errors(verdict)


def test_vet_refuses_a_wrong_key_and_a_bad_net(items):
    rec = copy.deepcopy(items[1][1].record)
    rec["key"] = next(i for i, c in enumerate(rec["candidates"]) if c["kind"] != "key")
    assert "key-matches-a-view" in _errors(vet_cube_net_item(rec))

    rec = copy.deepcopy(items[1][1].record)
    for k, m in enumerate(rec["marks"]):
        m["cell"] = [k, 0]  # a straight strip does not fold
    assert "net-folds-into-cube" in _errors(vet_cube_net_item(rec))


def test_vet_works_on_the_written_json_line(items):
    """The split writes ``item.to_json()`` (record keys at top level) and re-vets that."""
    for it in items[1]:
        line = json.loads(json.dumps(it.to_json(), sort_keys=True))
        assert vet_cube_net_item(line).valid
