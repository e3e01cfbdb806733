"""Polycubes: the cube's 24 rotations and 48 symmetries, canonical forms, chirality, counts,
rotation/mirror tests between shapes, and the trimesh of unit cubes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.stimuli.polycube import (
    MIRROR_3D,
    ROTATIONS_3D,
    SYMMETRIES_3D,
    bounding_radius,
    canonical_polycube,
    common_scale,
    count_polycubes,
    enumerate_polycubes,
    group_3d,
    is_chiral_polycube,
    is_mirror_of,
    is_rotation_of,
    mirror_polycube,
    polycube_centre,
    polycube_cube_meshes,
    polycube_mesh,
    rotation_between,
)
from studio.stimuli.polyomino import (
    apply_matrix,
    chiral_mask,
    enumerate_animals,
    naive_enumerate,
    normalize,
)

FIXED = [1, 3, 15, 86, 534, 3481]  # OEIS A001931
ONE_SIDED = [1, 1, 2, 8, 29, 166]  # A000162: mirror images distinct
FREE = [1, 1, 2, 7, 23, 112]  # A038119: mirror images identified

# The two chiral tetracubes: a three-step screw and its mirror image.
RIGHT_SCREW = ((0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1))
LEFT_SCREW = ((0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, -1))
S_TETROMINO = ((0, 0, 0), (1, 0, 0), (1, 1, 0), (2, 1, 0))


def _key(m: np.ndarray) -> bytes:
    return np.asarray(m, dtype=np.int64).tobytes()


def test_the_cube_has_24_proper_rotations() -> None:
    assert len(ROTATIONS_3D) == 24
    assert np.array_equal(ROTATIONS_3D[0], np.eye(3))
    keys = {_key(r) for r in ROTATIONS_3D}
    assert len(keys) == 24
    for r in ROTATIONS_3D:
        assert round(np.linalg.det(r)) == 1
        assert np.array_equal(r @ r.T, np.eye(3))  # signed permutation matrices
        assert set(np.abs(r).sum(axis=0).tolist()) == {1}
        assert _key(r.T) in keys  # inverses
    for a, b in itertools.product(ROTATIONS_3D, repeat=2):
        assert _key(a @ b) in keys


def test_with_reflections_there_are_48_symmetries() -> None:
    assert len(SYMMETRIES_3D) == 48
    keys = {_key(m) for m in SYMMETRIES_3D}
    assert len(keys) == 48 and {_key(r) for r in ROTATIONS_3D} <= keys
    assert sorted(round(np.linalg.det(m)) for m in SYMMETRIES_3D) == [-1] * 24 + [1] * 24
    assert _key(MIRROR_3D) in keys
    for a, b in itertools.product(SYMMETRIES_3D[::5], SYMMETRIES_3D):
        assert _key(a @ b) in keys


@pytest.mark.parametrize(
    ("equivalence", "counts"), [("fixed", FIXED), ("one-sided", ONE_SIDED), ("free", FREE)]
)
def test_enumeration_counts_match_oeis(equivalence: str, counts: list[int]) -> None:
    assert [count_polycubes(n, equivalence) for n in range(1, 7)] == counts


@pytest.mark.parametrize("equivalence", ["free", "one-sided", "fixed"])
def test_fast_enumeration_equals_grow_and_dedupe(equivalence: str) -> None:
    for n in range(1, 6):
        assert set(enumerate_polycubes(n, equivalence)) == naive_enumerate(
            n, 3, group_3d(equivalence)
        )


def test_the_two_chiral_tetracubes() -> None:
    assert is_chiral_polycube(RIGHT_SCREW) and is_chiral_polycube(LEFT_SCREW)
    assert not is_rotation_of(RIGHT_SCREW, LEFT_SCREW)
    assert is_mirror_of(RIGHT_SCREW, LEFT_SCREW) and is_mirror_of(LEFT_SCREW, RIGHT_SCREW)
    assert canonical_polycube(RIGHT_SCREW, "free") == canonical_polycube(LEFT_SCREW, "free")
    one_sided = enumerate_animals(4, 3, ROTATIONS_3D)
    assert int(chiral_mask(one_sided, ROTATIONS_3D, MIRROR_3D).sum()) == 2
    # A planar shape that is chiral in the plane turns over in space.
    assert not is_chiral_polycube(S_TETROMINO)
    assert is_rotation_of(S_TETROMINO, mirror_polycube(S_TETROMINO))


def test_one_sided_count_is_free_count_plus_chiral_ones() -> None:
    for n in range(1, 7):
        free = enumerate_animals(n, 3, SYMMETRIES_3D)
        chiral = int(chiral_mask(free, ROTATIONS_3D, MIRROR_3D).sum())
        assert len(free) + chiral == count_polycubes(n, "one-sided")


def test_rotation_between_finds_the_turn() -> None:
    r = ROTATIONS_3D[17]
    turned = [tuple(int(v) for v in r @ np.array(c)) for c in RIGHT_SCREW]
    found = rotation_between(RIGHT_SCREW, turned)
    assert found is not None and apply_matrix(RIGHT_SCREW, found) == normalize(turned)
    assert rotation_between(RIGHT_SCREW, LEFT_SCREW) is None


@st.composite
def polycubes(draw: st.DrawFn) -> tuple[tuple[int, int, int], ...]:
    cells = [(0, 0, 0)]
    steps = ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))
    for pick, step in draw(
        st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(range(6))), max_size=8)
    ):
        x, y, z = cells[pick % len(cells)]
        dx, dy, dz = steps[step]
        if (x + dx, y + dy, z + dz) not in cells:
            cells.append((x + dx, y + dy, z + dz))
    return tuple(cells)


@settings(max_examples=100, deadline=None)
@given(polycubes(), st.sampled_from(range(48)), st.tuples(*[st.integers(-9, 9)] * 3))
def test_canonical_forms_are_invariant_under_their_groups(
    shape: tuple[tuple[int, int, int], ...], g: int, shift: tuple[int, int, int]
) -> None:
    m = SYMMETRIES_3D[g]
    moved = [tuple(a + b for a, b in zip(c, shift, strict=True)) for c in apply_matrix(shape, m)]
    assert canonical_polycube(moved, "free") == canonical_polycube(shape, "free")
    proper = round(np.linalg.det(m)) == 1
    assert is_rotation_of(shape, moved) == (proper or not is_chiral_polycube(shape))
    assert is_mirror_of(shape, moved) == ((not proper) or not is_chiral_polycube(shape))
    assert is_chiral_polycube(moved) == is_chiral_polycube(shape)
    assert bounding_radius(moved) == pytest.approx(bounding_radius(shape))


def test_polycube_mesh_is_unit_cubes_centred_in_the_unit_sphere() -> None:
    cells = [(0, 0, 0), (1, 0, 0), (2, 0, 0), (2, 1, 0), (2, 1, 1)]
    mesh = polycube_mesh(cells, colors=(255, 0, 0))
    assert len(mesh.faces) == 12 * len(cells)
    assert np.linalg.norm(mesh.vertices, axis=1).max() <= 1.0 + 1e-9
    assert np.allclose((mesh.bounds[0] + mesh.bounds[1]) / 2, 0.0)
    assert mesh.volume == pytest.approx(len(cells) / bounding_radius(cells) ** 3)
    assert (mesh.visual.face_colors == [255, 0, 0, 255]).all()
    # A turned copy gets the same cube size; a common scale keeps two shapes comparable.
    turned = [tuple(int(v) for v in ROTATIONS_3D[5] @ np.array(c)) for c in cells]
    assert polycube_mesh(turned).volume == pytest.approx(mesh.volume)
    s = common_scale([cells, RIGHT_SCREW])
    assert polycube_mesh(RIGHT_SCREW, scale=s).volume == pytest.approx(4 * s**3)
    assert np.allclose(polycube_centre(cells), [1.0, 0.5, 0.5])


def test_per_cube_meshes_keep_order_and_colours() -> None:
    cells = [(0, 0, 0), (0, 1, 0), (0, 2, 0)]
    colors = [(10, 20, 30), (40, 50, 60), (0.0, 0.5, 1.0)]
    meshes = polycube_cube_meshes(cells, colors=colors)
    assert len(meshes) == 3
    assert [tuple(m.visual.face_colors[0][:3]) for m in meshes] == [
        (10, 20, 30),
        (40, 50, 60),
        (0, 128, 255),
    ]
    ys = [m.centroid[1] for m in meshes]
    assert ys[0] < ys[1] < ys[2] and ys[1] == pytest.approx(0.0)
    with pytest.raises(ValueError):
        polycube_cube_meshes(cells, colors=colors[:2])
