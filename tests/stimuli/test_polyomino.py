"""Polyominoes: the square's symmetry group, canonical forms, chirality, enumeration counts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.stimuli.polyomino import (
    MIRROR_2D,
    ROTATIONS_2D,
    SYMMETRIES_2D,
    apply_matrix,
    canonical_form,
    chiral_mask,
    count_polyominoes,
    enumerate_animals,
    enumerate_polyominoes,
    group_2d,
    is_chiral,
    is_connected,
    matrix_group,
    mirror,
    naive_enumerate,
    normalize,
)

FREE = [1, 1, 2, 5, 12, 35, 108, 369]  # OEIS A000105
ONE_SIDED = [1, 1, 2, 7, 18, 60, 196, 704]  # A000988
FIXED = [1, 2, 6, 19, 63, 216, 760, 2725]  # A001168

S_TETROMINO = ((0, 0), (1, 0), (1, 1), (2, 1))
Z_TETROMINO = ((0, 1), (1, 1), (1, 0), (2, 0))
T_TETROMINO = ((0, 0), (1, 0), (2, 0), (1, 1))
L_TETROMINO = ((0, 0), (0, 1), (0, 2), (1, 0))


def _as_key(m: np.ndarray) -> bytes:
    return np.asarray(m, dtype=np.int64).tobytes()


def test_the_square_has_four_rotations_and_eight_symmetries() -> None:
    assert len(ROTATIONS_2D) == 4 and len(SYMMETRIES_2D) == 8
    assert np.array_equal(ROTATIONS_2D[0], np.eye(2)) and np.array_equal(
        SYMMETRIES_2D[0], np.eye(2)
    )
    assert all(round(np.linalg.det(r)) == 1 for r in ROTATIONS_2D)
    assert sorted(round(np.linalg.det(m)) for m in SYMMETRIES_2D) == [-1] * 4 + [1] * 4
    keys = {_as_key(m) for m in SYMMETRIES_2D}
    assert len(keys) == 8
    for a, b in itertools.product(SYMMETRIES_2D, repeat=2):
        assert _as_key(a @ b) in keys
    assert {_as_key(m) for m in ROTATIONS_2D} <= keys


def test_matrix_group_is_the_closure_of_its_generators() -> None:
    assert len(matrix_group([MIRROR_2D])) == 2
    assert len(matrix_group([[[0, 1], [1, 0]], [[-1, 0], [0, 1]]])) == 8  # two reflections
    with pytest.raises(ValueError):
        matrix_group([])


@pytest.mark.parametrize(
    ("equivalence", "counts"), [("free", FREE), ("one-sided", ONE_SIDED), ("fixed", FIXED)]
)
def test_enumeration_counts_match_oeis(equivalence: str, counts: list[int]) -> None:
    assert [count_polyominoes(n, equivalence) for n in range(1, 9)] == counts


@pytest.mark.parametrize("equivalence", ["free", "one-sided", "fixed"])
def test_fast_enumeration_equals_grow_and_dedupe(equivalence: str) -> None:
    for n in range(1, 7):
        fast = enumerate_polyominoes(n, equivalence)
        assert len(set(fast)) == len(fast)
        assert set(fast) == naive_enumerate(n, 2, group_2d(equivalence))


def test_enumerated_shapes_are_canonical_connected_and_sorted() -> None:
    shapes = enumerate_polyominoes(6, "free")
    assert shapes == sorted(shapes)
    for s in shapes:
        assert canonical_form(s, "free") == s
        assert is_connected(s) and len(s) == 6


def test_canonical_forms_name_the_equivalence() -> None:
    assert canonical_form(S_TETROMINO, "free") == canonical_form(Z_TETROMINO, "free")
    assert canonical_form(S_TETROMINO, "one-sided") != canonical_form(Z_TETROMINO, "one-sided")
    upright_s = ((0, 1), (0, 2), (1, 0), (1, 1))
    assert canonical_form(S_TETROMINO, "one-sided") == canonical_form(upright_s, "one-sided")
    assert canonical_form(S_TETROMINO, "fixed") != canonical_form(upright_s, "fixed")
    moved = [(x + 5, y - 3) for x, y in S_TETROMINO]
    assert canonical_form(moved, "fixed") == normalize(S_TETROMINO)
    with pytest.raises(ValueError):
        canonical_form(S_TETROMINO, "mirror")


def test_chirality_of_the_tetrominoes() -> None:
    assert is_chiral(S_TETROMINO) and is_chiral(Z_TETROMINO) and is_chiral(L_TETROMINO)
    assert not is_chiral(T_TETROMINO)
    assert not is_chiral(((0, 0), (1, 0), (0, 1), (1, 1)))  # O
    assert canonical_form(mirror(S_TETROMINO), "one-sided") == canonical_form(
        Z_TETROMINO, "one-sided"
    )
    shapes = enumerate_animals(4, 2, SYMMETRIES_2D)
    assert int(chiral_mask(shapes, ROTATIONS_2D, MIRROR_2D).sum()) == 2  # L and S of five


def test_one_sided_count_is_free_count_plus_chiral_ones() -> None:
    for n in range(1, 8):
        free = enumerate_animals(n, 2, SYMMETRIES_2D)
        chiral = int(chiral_mask(free, ROTATIONS_2D, MIRROR_2D).sum())
        assert len(free) + chiral == count_polyominoes(n, "one-sided")


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError):
        count_polyominoes(0)


@st.composite
def polyominoes(draw: st.DrawFn) -> tuple[tuple[int, int], ...]:
    """A random connected polyomino of 1–10 cells, grown one neighbour at a time."""
    cells = [(0, 0)]
    for pick, step in draw(
        st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(range(4))), max_size=9)
    ):
        x, y = cells[pick % len(cells)]
        dx, dy = ((1, 0), (-1, 0), (0, 1), (0, -1))[step]
        if (x + dx, y + dy) not in cells:
            cells.append((x + dx, y + dy))
    return tuple(cells)


@settings(max_examples=150, deadline=None)
@given(
    polyominoes(),
    st.sampled_from(range(8)),
    st.integers(-20, 20),
    st.integers(-20, 20),
)
def test_canonical_form_is_invariant_under_its_group(
    shape: tuple[tuple[int, int], ...], g: int, dx: int, dy: int
) -> None:
    moved = [(x + dx, y + dy) for x, y in apply_matrix(shape, SYMMETRIES_2D[g])]
    assert canonical_form(moved, "free") == canonical_form(shape, "free")
    if g < 4:
        turned = [(x + dx, y + dy) for x, y in apply_matrix(shape, ROTATIONS_2D[g])]
        assert canonical_form(turned, "one-sided") == canonical_form(shape, "one-sided")
    assert canonical_form(canonical_form(shape, "free"), "free") == canonical_form(shape, "free")
    assert is_chiral(moved) == is_chiral(shape)
    assert is_connected(moved)
