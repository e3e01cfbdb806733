"""Cube nets: MARVEL's reassembling configuration ("which cube can be folded from this net?").

MARVEL (Jiang et al.) §3, *Reassembling format* for the *3D-Geometry* pattern: "the context
section provides a panel featuring the unfolded 2D diagram of one of the choices. Models must
reason about the visual details in the 2D diagram to identify the correct 3D shape"; its
instructions read "The question part on the top is an unfolded diagram. The answer part on the
bottom contains 4 options that represent the correct three-dimensional assembly."

Here the unfolded diagram is one of the 11 hexomino nets of the cube with a distinct mark on every
square; the four options are isometric views of cubes (three faces visible). One is the folded
net seen from a random corner; each distractor is the cube with two faces' marks swapped or one
face's mark turned, seen from its own random corner, and is kept only if *no* orientation of the
true cube shows what it shows.

Conventions (all symbolic, so that the vet re-derives everything from the record):

- A net square is ``(col, row)`` in image coordinates (row grows downward). The net is seen from
  the side that ends up outside; folding pushes the other squares away from the viewer. The
  first square (sorted) becomes the face +z, its image-right direction +x, its image-up +y.
- :func:`fold` maps every square to the face it becomes and to the 3D axis its image-up points
  along on the cube. A mark drawn on a square turned ``rotation`` degrees clockwise has its up
  direction that many quarter turns further, clockwise as seen from outside the cube.
- A view shows the faces +z ("top"), +x ("left") and +y ("right") of the cube after one of its
  24 rotations; the viewer looks from the corner (1, 1, 1). The rotation of a mark in a slot is
  counted in clockwise quarter turns (seen from outside) from the slot's reference direction:
  +z (the vertical edge) for the two side faces and −x for the top face (which appears as the
  edge running up and to the right).
- **Designs** (``design``, recorded per item). In ``"published"`` every distractor is the cube
  with one change, so the key is the centre of the set: its faces agree with each foil's except
  where that foil was changed, and comparing the candidates' neighbouring marks alone favours it
  (issue 11). ``"balanced"`` (the default) draws the answer set as an *orbit*: the folded cube
  and its images under a group of changes — one face's mark in its four quarter turns, or two
  commuting changes on disjoint faces (a swap of two faces' marks or a half turn of one), all
  four combinations — so every cube of the set relates to the other three exactly as the true
  one does. Each is seen from a random corner that no other cube of the set shows the same way;
  the key is the folded net's cube, and the marks are random, so any of the four could be it.
- Marks are glyphs with no rotational symmetry, so every quarter turn is visible. Mirror images
  never arise: folding and rotating a cube keep handedness.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any, NamedTuple

import numpy as np
from PIL import Image, ImageDraw

from studio.core.verdict import Finding, Verdict
from studio.stimuli.items import StimulusItem
from studio.stimuli.loop import (
    ItemGenerator,
    drawn_item,
    pool_workers,
    pooled_items,
    vetted_items,
)
from studio.stimuli.polyomino import SYMMETRIES_2D, apply_matrix, enumerate_polyominoes
from studio.stimuli.sheet import stitch_sheet

Cell = tuple[int, int]
Vec = tuple[int, int, int]

FAMILY = "cube-net"
AXES: dict[str, Vec] = {
    "+x": (1, 0, 0),
    "-x": (-1, 0, 0),
    "+y": (0, 1, 0),
    "-y": (0, -1, 0),
    "+z": (0, 0, 1),
    "-z": (0, 0, -1),
}
FACES: tuple[str, ...] = tuple(AXES)
_NAMES: dict[Vec, str] = {v: k for k, v in AXES.items()}
#: The visible faces of a view, in the order a view lists them, and their reference directions.
SLOTS: tuple[tuple[str, str, str], ...] = (
    ("top", "+z", "-x"),
    ("left", "+x", "+z"),
    ("right", "+y", "+z"),
)
#: Reference direction per face, for a mark's rotation within its face (swaps keep it).
FACE_REFERENCE: dict[str, str] = {
    "+x": "+z",
    "-x": "+z",
    "+y": "+z",
    "-y": "+z",
    "+z": "+y",
    "-z": "+y",
}
ROTATIONS: tuple[int, ...] = (0, 90, 180, 270)
DISTRACTOR_KINDS: tuple[str, ...] = ("swap", "rotate")
#: Answer-set designs (module docstring); the first is the default.
DESIGNS: tuple[str, ...] = ("balanced", "published")


# --------------------------------------------------------------------------------------------
# Vectors and the rotation group of the cube


def _cross(a: Vec, b: Vec) -> Vec:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _neg(a: Vec) -> Vec:
    return (-a[0], -a[1], -a[2])


def _apply(matrix: Sequence[Sequence[int]], v: Vec) -> Vec:
    x, y, z = (sum(int(matrix[i][j]) * v[j] for j in range(3)) for i in range(3))
    return (x, y, z)


@cache
def cube_rotations() -> tuple[tuple[tuple[int, ...], ...], ...]:
    """The 24 proper rotations of the cube: signed permutation matrices with determinant +1.

    Built from the definition rather than listed, in a fixed order (records store the matrix)."""
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1, -1), repeat=3):
            m = np.zeros((3, 3), dtype=int)
            for i, j in enumerate(perm):
                m[i, j] = signs[i]
            if round(np.linalg.det(m)) == 1:
                out.append(tuple(tuple(int(v) for v in row) for row in m))
    return tuple(out)


def turn_clockwise(up: str, normal: str, quarters: int) -> str:
    """``up`` turned by quarter turns clockwise as seen from outside the face ``normal``.

    Clockwise seen from outside takes a direction w to w × n (up → right for n toward you)."""
    w, n = AXES[up], AXES[normal]
    for _ in range(quarters % 4):
        w = _cross(w, n)
    return _NAMES[w]


def quarter_turns(reference: str, up: str, normal: str) -> int:
    """How many clockwise quarter turns (seen from outside ``normal``) take reference to up."""
    for k in range(4):
        if turn_clockwise(reference, normal, k) == up:
            return k
    raise ValueError(f"{up} does not lie in the face {normal}")


# --------------------------------------------------------------------------------------------
# Nets and folding


def changed_cube(
    cube: Any, kind: str, rot: Any, rng: np.random.Generator
) -> tuple[Any, dict[str, Any]]:
    """A distractor's cube: ``cube`` with one face turned (``rotate``) or two faces swapped,
    where the view ``rot`` shows the change (only a visible face can show a turn; at least
    one of two swapped faces shows), and the record of the change. The generator and the
    replacement foils draw through it, in the same order of random draws."""
    shown = sorted(visible_faces(rot))
    if kind == "rotate":
        face = shown[int(rng.integers(3))]
        by = int(ROTATIONS[1 + int(rng.integers(3))])
        return turn_face(cube, face, by), {
            "kind": "rotate",
            "face": face,
            "mark": cube[face][0],
            "by": by,
        }
    a = shown[int(rng.integers(3))]
    others = [f for f in FACES if f != a]
    b = others[int(rng.integers(len(others)))]
    mod = {"kind": "swap", "faces": sorted([a, b]), "marks": sorted([cube[a][0], cube[b][0]])}
    return swap_faces(cube, a, b), mod


class FoldedSquare(NamedTuple):
    """Where a net square ends up: its cube face, and the axis its image-up direction points to.

    A mark drawn upright on the square points along ``up`` on the cube."""

    face: str
    up: str


def fold(net_cells: Sequence[Sequence[int]]) -> dict[Cell, FoldedSquare]:
    """Fold a net of unit squares into a cube; raise ValueError if it does not fold into one.

    Walks the squares from the first one, rolling a frame (normal, image-right, image-up): a step
    to the right folds the square down over the right edge, so its normal becomes the old
    image-right and its image-right the old inward normal; likewise for the other directions.
    Every pair of adjacent squares is checked against that rule (a net whose squares would need
    cutting apart fails), and the six squares must land on six different faces."""
    cells = sorted({(int(c[0]), int(c[1])) for c in net_cells})
    if len(cells) != 6:
        raise ValueError(f"a cube net has 6 squares, not {len(cells)}")
    cellset = set(cells)
    frames: dict[Cell, tuple[Vec, Vec, Vec]] = {cells[0]: (AXES["+z"], AXES["+x"], AXES["+y"])}

    def step(frame: tuple[Vec, Vec, Vec], dc: int, dr: int) -> tuple[Vec, Vec, Vec]:
        n, u, v = frame
        if (dc, dr) == (1, 0):
            return u, _neg(n), v
        if (dc, dr) == (-1, 0):
            return _neg(u), n, v
        if (dc, dr) == (0, -1):  # image up
            return v, u, _neg(n)
        return _neg(v), u, n  # image down

    stack = [cells[0]]
    while stack:
        c = stack.pop()
        for dc, dr in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nb = (c[0] + dc, c[1] + dr)
            if nb not in cellset:
                continue
            expected = step(frames[c], dc, dr)
            if nb not in frames:
                frames[nb] = expected
                stack.append(nb)
            elif frames[nb] != expected:
                raise ValueError("the squares around a cycle would overlap: not a cube net")
    if len(frames) != 6:
        raise ValueError("the squares are not connected")
    faces = {_NAMES[f[0]] for f in frames.values()}
    if len(faces) != 6:
        raise ValueError("two squares land on the same face: not a cube net")
    return {c: FoldedSquare(_NAMES[n], _NAMES[v]) for c, (n, _, v) in frames.items()}


def is_cube_net(net_cells: Sequence[Sequence[int]]) -> bool:
    """Whether the squares fold into a closed cube."""
    try:
        fold(net_cells)
    except ValueError:
        return False
    return True


@cache
def cube_nets() -> tuple[tuple[Cell, ...], ...]:
    """The 11 free hexomino nets of the cube, derived: the free hexominoes that fold."""
    return tuple(
        tuple((int(a), int(b)) for a, b in shape)
        for shape in enumerate_polyominoes(6, "free")
        if is_cube_net(shape)
    )


# --------------------------------------------------------------------------------------------
# Marks

#: Glyph outlines in a unit square (a to the right, b up), none with rotational symmetry.
_Glyph = tuple[tuple[tuple[float, float], ...], ...]


def _rect(a0: float, b0: float, a1: float, b1: float) -> tuple[tuple[float, float], ...]:
    return ((a0, b0), (a1, b0), (a1, b1), (a0, b1))


def _disc(a: float, b: float, r: float, n: int = 20) -> tuple[tuple[float, float], ...]:
    return tuple(
        (a + r * math.cos(2 * math.pi * k / n), b + r * math.sin(2 * math.pi * k / n))
        for k in range(n)
    )


MARKS: dict[str, _Glyph] = {
    "arrow": (_rect(0.42, 0.12, 0.58, 0.58), ((0.2, 0.55), (0.8, 0.55), (0.5, 0.9))),
    "ell": (_rect(0.22, 0.14, 0.4, 0.86), _rect(0.22, 0.14, 0.8, 0.32)),
    "eff": (
        _rect(0.24, 0.12, 0.42, 0.88),
        _rect(0.24, 0.7, 0.8, 0.88),
        _rect(0.24, 0.42, 0.66, 0.58),
    ),
    "dots": (_disc(0.3, 0.7, 0.17), _disc(0.72, 0.72, 0.09), _disc(0.72, 0.28, 0.09)),
    "flag": (_rect(0.22, 0.1, 0.34, 0.9), ((0.34, 0.9), (0.82, 0.72), (0.34, 0.54))),
    "tee": (_rect(0.14, 0.72, 0.86, 0.88), _rect(0.42, 0.12, 0.58, 0.72)),
}
MARK_NAMES: tuple[str, ...] = tuple(MARKS)


def _draw_mark(
    draw: ImageDraw.ImageDraw,
    mark: str,
    origin: tuple[float, float],
    right: tuple[float, float],
    up: tuple[float, float],
    fill: Any = "black",
) -> None:
    """Draw a mark through the affine map (a, b) ↦ origin + a·right + b·up (pixel vectors)."""
    for poly in MARKS[mark]:
        draw.polygon(
            [
                (origin[0] + a * right[0] + b * up[0], origin[1] + a * right[1] + b * up[1])
                for a, b in poly
            ],
            fill=fill,
        )


# --------------------------------------------------------------------------------------------
# Cubes and views

#: A cube: face → (mark, axis its up points along).
Cube = dict[str, tuple[str, str]]
#: A view: per slot (top, left, right) the mark seen there and its rotation in degrees.
View = tuple[tuple[str, int], ...]


def cube_from_net(marks: Sequence[dict[str, Any]]) -> Cube:
    """The marked cube a net folds into; ``marks`` as in the record (cell, mark, rotation)."""
    folded = fold([m["cell"] for m in marks])
    cube: Cube = {}
    for m in marks:
        sq = folded[(int(m["cell"][0]), int(m["cell"][1]))]
        cube[sq.face] = (m["mark"], turn_clockwise(sq.up, sq.face, int(m["rotation"]) // 90))
    return cube


def view_of(cube: Cube, rotation: Sequence[Sequence[int]]) -> View:
    """What the viewer at corner (1, 1, 1) sees of the cube after ``rotation``."""
    seen: dict[str, tuple[str, str]] = {}
    for face, (mark, up) in cube.items():
        seen[_NAMES[_apply(rotation, AXES[face])]] = (mark, _NAMES[_apply(rotation, AXES[up])])
    out = []
    for _slot, normal, ref in SLOTS:
        mark, up = seen[normal]
        out.append((mark, 90 * quarter_turns(ref, up, normal)))
    return tuple(out)


def all_views(cube: Cube) -> list[View]:
    """The view under each of the 24 rotations, in :func:`cube_rotations` order."""
    return [view_of(cube, r) for r in cube_rotations()]


def visible_faces(rotation: Sequence[Sequence[int]]) -> set[str]:
    """The faces of the unrotated cube that show after ``rotation``."""
    inv = np.asarray(rotation).T
    return {_NAMES[_apply(inv.tolist(), AXES[normal])] for _, normal, _ in SLOTS}


def swap_faces(cube: Cube, a: str, b: str) -> Cube:
    """The cube with the marks of faces a and b exchanged, each keeping its turn within its face."""
    out = dict(cube)
    (ma, ua), (mb, ub) = cube[a], cube[b]
    ka = quarter_turns(FACE_REFERENCE[a], ua, a)
    kb = quarter_turns(FACE_REFERENCE[b], ub, b)
    out[a] = (mb, turn_clockwise(FACE_REFERENCE[a], a, kb))
    out[b] = (ma, turn_clockwise(FACE_REFERENCE[b], b, ka))
    return out


def turn_face(cube: Cube, face: str, degrees: int) -> Cube:
    """The cube with one face's mark turned clockwise (seen from outside) by ``degrees``."""
    out = dict(cube)
    mark, up = cube[face]
    out[face] = (mark, turn_clockwise(up, face, degrees // 90))
    return out


def view_to_json(view: View) -> list[dict[str, Any]]:
    """A view as the record stores it: slot names spelled out, so a reader needs no convention."""
    return [
        {"slot": slot, "mark": m, "rotation": r}
        for (slot, _, _), (m, r) in zip(SLOTS, view, strict=True)
    ]


def view_from_json(items: Sequence[dict[str, Any]]) -> View:
    """Inverse of :func:`view_to_json`, whatever order the slots were written in."""
    by_slot = {it["slot"]: (str(it["mark"]), int(it["rotation"])) for it in items}
    return tuple(by_slot[slot] for slot, _, _ in SLOTS)


# --------------------------------------------------------------------------------------------
# Rendering

_COS30 = math.cos(math.radians(30))
_SHADES = {"top": (238, 238, 238), "left": (208, 208, 208), "right": (182, 182, 182)}


def render_net(marks: Sequence[dict[str, Any]], size: int = 224) -> Image.Image:
    """The net, each square with its mark turned as recorded, centred on white."""
    cols = [int(m["cell"][0]) for m in marks]
    rows = [int(m["cell"][1]) for m in marks]
    w, h = max(cols) - min(cols) + 1, max(rows) - min(rows) + 1
    side = math.floor(size * 0.92 / max(w, h))
    x0 = (size - side * w) / 2 - min(cols) * side
    y0 = (size - side * h) / 2 - min(rows) * side
    img = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(img)
    inset = 0.1 * side
    for m in marks:
        c, r = int(m["cell"][0]), int(m["cell"][1])
        left, top = x0 + c * side, y0 + r * side
        draw.rectangle(
            (left, top, left + side, top + side), fill=(238, 238, 238), outline="black", width=2
        )
        # up and right pixel vectors turned clockwise on screen: (x, y) → (−y, x)
        up, right = (0.0, -1.0), (1.0, 0.0)
        for _ in range((int(m["rotation"]) // 90) % 4):
            up, right = (-up[1], up[0]), (-right[1], right[0])
        span = side - 2 * inset
        cx, cy = left + side / 2, top + side / 2
        origin = (cx - span / 2 * (right[0] + up[0]), cy - span / 2 * (right[1] + up[1]))
        _draw_mark(
            draw,
            m["mark"],
            origin,
            (span * right[0], span * right[1]),
            (span * up[0], span * up[1]),
        )
    return img


def render_view(view: View, size: int = 224) -> Image.Image:
    """An isometric cube from corner (1, 1, 1): three shaded faces with their marks mapped on."""
    edge = size * 0.42
    cx, cy = size / 2, size / 2

    def project(p: Sequence[float]) -> tuple[float, float]:
        x, y, z = p
        sx = (y - x) * _COS30
        sy = z - 0.5 * (x + y)  # up
        # the cube's projection spans sy ∈ [−1, 1], sx ∈ [−cos30, cos30]: centre it
        return (cx + edge * sx, cy - edge * sy)

    img = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(img)
    for (slot, normal, ref), (mark, rotation) in zip(SLOTS, view, strict=True):
        n = AXES[normal]
        up_axis = turn_clockwise(ref, normal, rotation // 90)
        up = AXES[up_axis]
        right = _cross(up, n)
        centre = [0.5 + 0.5 * n[i] for i in range(3)]
        corners = []
        for sa, sb in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
            corners.append(
                project([centre[i] + 0.5 * sa * right[i] + 0.5 * sb * up[i] for i in range(3)])
            )
        draw.polygon(corners, fill=_SHADES[slot], outline="black", width=2)
        inset, span = 0.1, 0.8
        o3 = [centre[i] + (inset - 0.5) * (right[i] + up[i]) for i in range(3)]
        origin = project(o3)
        r2 = project([o3[i] + span * right[i] for i in range(3)])
        u2 = project([o3[i] + span * up[i] for i in range(3)])
        _draw_mark(
            draw,
            mark,
            origin,
            (r2[0] - origin[0], r2[1] - origin[1]),
            (u2[0] - origin[0], u2[1] - origin[1]),
        )
    return img


# --------------------------------------------------------------------------------------------
# Vetting


def vet_cube_net_item(record: dict[str, Any]) -> Verdict:
    """Check a cube-net item from its record alone, by folding the net again.

    The net must fold into a cube with six different, known marks; every rotation is a multiple
    of 90°; the key's view must be what some orientation of the folded cube shows (measure: how
    many of the 24 do) and each distractor's view what none shows (measure: how many do, 0);
    the four views must differ."""
    checks: list[Finding] = []
    marks = record["marks"]
    try:
        cube = cube_from_net(marks)
        checks.append(Finding("net-folds-into-cube", True, 6.0, "six squares on six faces"))
    except ValueError as exc:
        checks.append(Finding("net-folds-into-cube", False, 0.0, str(exc)))
        return Verdict(tuple(checks))
    names = [m["mark"] for m in marks]
    distinct = len(set(names)) == 6 and all(n in MARKS for n in names)
    checks.append(Finding("marks-distinct", distinct, float(len(set(names))), ", ".join(names)))
    candidates = record["candidates"]
    rotations_ok = all(int(m["rotation"]) in ROTATIONS for m in marks) and all(
        int(s["rotation"]) in ROTATIONS for c in candidates for s in c["view"]
    )
    checks.append(Finding("rotations-multiple-of-90", rotations_ok))
    if not distinct or not rotations_ok:
        return Verdict(tuple(checks))
    truth = all_views(cube)
    key = int(record["key"])
    views = [view_from_json(c["view"]) for c in candidates]
    checks.append(
        Finding("four-candidates", len(views) == 4 and 0 <= key < len(views), float(len(views)))
    )
    for i, view in enumerate(views):
        matches = sum(1 for t in truth if t == view)
        if i == key:
            checks.append(
                Finding(
                    "key-matches-a-view",
                    matches >= 1,
                    float(matches),
                    f"{matches} of 24 orientations",
                )
            )
        else:
            checks.append(
                Finding(
                    f"candidate-{i}-matches-no-view",
                    matches == 0,
                    float(matches),
                    f"{candidates[i].get('kind', '?')}: {matches} of 24 orientations show it",
                )
            )
    checks.append(
        Finding("candidates-distinct", len(set(views)) == len(views), float(len(set(views))))
    )
    return Verdict(tuple(checks))


# --------------------------------------------------------------------------------------------
# Generator


#: Items from which :meth:`CubeNetGenerator.items` draws over every core by default: an item
#: costs ~30 ms, so below this, starting the workers (about a second each) costs more than it
#: saves.
POOL_MIN_ITEMS = 400


class CubeNetGenerator(ItemGenerator):
    """Cube-net items, deterministic for a seed; ``rejections`` counts refused attempts by why."""

    family = FAMILY

    def __init__(self, size: int = 224, design: str = "balanced") -> None:
        super().__init__(design, DESIGNS)
        self.size = size

    def items(
        self,
        count: int,
        seed: int,
        progress: Callable[[int, int], None] | None = None,
        *,
        workers: int | None = None,
        indices: Iterable[int] | None = None,
    ) -> Iterator[StimulusItem]:
        """Yield ``count`` vetted items; item i depends only on (seed, size, i), so they are the
        same bytes over any number of ``workers`` (default: every core for a large set,
        :func:`~studio.stimuli.loop.pool_workers`). ``indices``: only those items, in order."""
        n_workers = (
            1 if indices is not None else pool_workers(count, workers, min_items=POOL_MIN_ITEMS)
        )
        if n_workers > 1:
            return pooled_items(self, count, seed, n_workers, progress)
        return vetted_items(
            FAMILY,
            count,
            seed,
            (self.size,),
            draw=lambda rng, _index: self._record(rng),
            vet=vet_cube_net_item,
            render=self.render,
            sheet=stitch_sheet,
            rejections=self.rejections,
            progress=progress,
            indices=indices,
        )

    def _record(self, rng: np.random.Generator) -> dict[str, Any] | None:
        """One item's record in the generator's design (None: a draw to throw away)."""
        if self.design == "balanced":
            return self._record_balanced(rng)
        return self._record_published(rng)

    def _net(self, rng: np.random.Generator) -> tuple[int, list[Cell], list[dict[str, Any]]]:
        """A random net of the 11, turned or mirrored at random, with the six marks shuffled
        onto its squares and each turned at random: (net index, squares, marks)."""
        nets = cube_nets()
        net_index = int(rng.integers(len(nets)))
        sym = SYMMETRIES_2D[int(rng.integers(len(SYMMETRIES_2D)))]
        cells = [(int(a), int(b)) for a, b in apply_matrix(nets[net_index], sym)]
        order = rng.permutation(len(MARK_NAMES)).tolist()
        marks = [
            {
                "cell": [c, r],
                "mark": MARK_NAMES[order[k]],
                "rotation": int(ROTATIONS[int(rng.integers(4))]),
            }
            for k, (c, r) in enumerate(cells)
        ]
        return net_index, cells, marks

    def _record_balanced(self, rng: np.random.Generator) -> dict[str, Any] | None:
        """The balanced design (module docstring): the folded cube's orbit under a group of
        modifications, each cube seen from a random corner that no other cube of the set shows
        the same way, in random order."""
        net_index, cells, marks = self._net(rng)
        cube = cube_from_net(marks)
        faces = [FACES[int(i)] for i in rng.permutation(len(FACES))]
        if rng.random() < 0.5:  # one face's mark in its four turns
            f = faces[0]
            cubes = [turn_face(cube, f, 90 * k) for k in range(4)]
            steps = [[{"kind": "rotate", "face": f, "by": 90 * k}] if k else [] for k in range(4)]
        else:  # two commuting changes on disjoint faces: swaps of two faces or half turns
            moves = []
            free = list(faces)
            for _ in range(2):
                if rng.random() < 0.5:
                    a, b = free.pop(0), free.pop(0)
                    moves.append({"kind": "swap", "faces": sorted([a, b])})
                else:
                    moves.append({"kind": "rotate", "face": free.pop(0), "by": 180})
            subsets: list[list[dict[str, Any]]] = [[], [moves[0]], [moves[1]], moves]
            cubes = []
            for sub in subsets:
                c = cube
                for mv in sub:
                    c = (
                        swap_faces(c, *mv["faces"])
                        if mv["kind"] == "swap"
                        else turn_face(c, mv["face"], 180)
                    )
                cubes.append(c)
            steps = subsets
        view_sets = [set(all_views(c)) for c in cubes]
        if any(view_sets[i] == view_sets[j] for i in range(4) for j in range(i + 1, 4)):
            self._reject("equivalent-cubes")
            return None
        rotations = cube_rotations()
        candidates: list[dict[str, Any]] = []
        for i, c in enumerate(cubes):
            others = set().union(*(v for j, v in enumerate(view_sets) if j != i))
            allowed = [r for r in rotations if view_of(c, r) not in others]
            if not allowed:
                self._reject("no-telling-view")
                return None
            rot = allowed[int(rng.integers(len(allowed)))]
            kinds = sorted({st["kind"] for st in steps[i]})
            candidates.append(
                {
                    "kind": "key" if i == 0 else "+".join(kinds),
                    "view": view_of(c, rot),
                    "orientation": rot,
                    "modification": None
                    if i == 0
                    else {"kind": "+".join(kinds), "steps": steps[i]},
                }
            )
        return self._finish(rng, net_index, cells, marks, candidates) | {"design": "balanced"}

    def _finish(
        self,
        rng: np.random.Generator,
        net_index: int,
        cells: list[Cell],
        marks: list[dict[str, Any]],
        candidates: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """The record with the candidates (the key first) in random order."""
        perm = rng.permutation(4).tolist()
        candidates = [candidates[p] for p in perm]
        key = perm.index(0)
        folded = fold(cells)
        return {
            "task": FAMILY,
            "size": self.size,
            "net": {"cells": [list(c) for c in cells], "net_index": net_index},
            "marks": marks,
            "folded": [
                {"cell": list(c), "face": folded[c].face, "up": folded[c].up} for c in cells
            ],
            "slots": [{"slot": s, "face": n, "reference": r} for s, n, r in SLOTS],
            "candidates": [
                {
                    "kind": c["kind"],
                    "view": view_to_json(c["view"]),
                    "orientation": [list(row) for row in c["orientation"]],
                    "modification": c["modification"],
                }
                for c in candidates
            ],
            "distractor_kinds": [c["kind"] for c in candidates if c["kind"] != "key"],
            "key": key,
        }

    def _record_published(self, rng: np.random.Generator) -> dict[str, Any] | None:
        net_index, cells, marks = self._net(rng)
        cube = cube_from_net(marks)
        truth = set(all_views(cube))
        rotations = cube_rotations()

        key_rot = rotations[int(rng.integers(len(rotations)))]
        candidates: list[dict[str, Any]] = [
            {
                "kind": "key",
                "view": view_of(cube, key_rot),
                "orientation": key_rot,
                "modification": None,
            }
        ]
        for _ in range(3):
            kind = DISTRACTOR_KINDS[int(rng.integers(len(DISTRACTOR_KINDS)))]
            rot = rotations[int(rng.integers(len(rotations)))]
            modified, mod = changed_cube(cube, kind, rot, rng)
            view = view_of(modified, rot)
            if view in truth:
                self._reject("distractor-is-a-true-view")
                return None
            if any(view == c["view"] for c in candidates):
                self._reject("duplicate-candidate")
                return None
            candidates.append({"kind": kind, "view": view, "orientation": rot, "modification": mod})
        return self._finish(rng, net_index, cells, marks, candidates)

    @staticmethod
    def render(record: dict[str, Any]) -> dict[str, Image.Image]:
        """The net and the four cube views, re-made from the record alone."""
        size = int(record["size"])
        images = {"question": render_net(record["marks"], size)}
        for k, cand in enumerate(record["candidates"]):
            images[f"candidate-{k}"] = render_view(view_from_json(cand["view"]), size)
        return images


def render_cube_net_record(record: Mapping[str, Any]) -> tuple[dict[str, Image.Image], Image.Image]:
    """The family's ``render_record``: the net, the four cube views and the sheet, re-drawn from a
    stored record (an ``items.jsonl`` line or the bare record) by the generator's own drawing
    and layout (:func:`~studio.stimuli.loop.drawn_item`): generation's pictures, to the byte."""
    return drawn_item(dict(record), CubeNetGenerator.render, stitch_sheet)
