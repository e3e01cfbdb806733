"""The polycube rotation task (Spatial IQ, §2.1 and §3.1): which of four views is not the shape?

A question polycube is a chain of k arms (k = 3, 4, 5 for levels 1, 2, 3), each of 3–9 cubes,
every arm at a right angle to the one before, consecutive arms sharing their joining cube. Four
candidates follow: three are the question turned by a cube rotation, one is a different polycube
with the same arm lengths — a joint of the chain turned (the paper's "different δ"). When that
turn yields the mirror image the odd candidate is labelled ``"mirror"``, else ``"different"``;
half of the items aim for a mirror on purpose when the question is chiral, because the mirror is
the classic mental-rotation foil. ``key`` is the position of the odd candidate.

**Designs** (``design``, recorded per item). ``"published"`` is the paper's: three candidates
are rotations of the question and the key is the one that is not — so the key is also the one
candidate that is no rotation of the *other candidates*, and comparing the four candidates alone,
never looking at the question, finds it every time (issue 11). ``"balanced"`` (the default) asks
the opposite question, "which view is the question turned?", over an answer set that is
symmetric when the question is hidden: a chiral chain A and a chain B made from it by turning
one joint (also chiral, not A nor its mirror) give four shapes {A, A′, B, B′} (′: the mirror
image); one of the four, drawn uniformly, is the question, and the candidates are the four,
each turned by its own random rotation. Every candidate then has exactly one mirror twin and one
joint-turn neighbour among the others, so no candidate is singled out by comparing candidates;
only the question tells which one it is. A question with no mirror twin (an achiral, planar
chain) cannot make such a set and is redrawn (``rejections["achiral"]``).

Choices made where the paper leaves room (all recorded per item):

- Arms never touch except at their joints (no two cubes of different, non-consecutive parts of
  the chain share a face), so every arm can be counted in a picture. Directions are narrowed
  to those that keep this true before one is drawn; a chain with no way on is restarted.
- The question itself is turned by a random rotation, so its first arms are not always along
  the same world axes.
- Views: azimuth (about the vertical y axis) in [θ+15°, θ+75°) for θ a multiple of 90°; the five
  images of an item cover all four azimuth quadrants (one quadrant twice), as in the paper.
  Elevation follows the same rule restricted to θ ∈ {−90°, 0°}, i.e. ±[15°, 75°): seen from
  above or below, never upside down. Orthographic projection, fixed framing.
- Every image uses one scale: the five shapes fit the unit sphere about their box centres, so a
  cube is the same size in all of them (a size difference would give the odd one away).
- Cubes alternate two shades along the chain, so neighbouring cubes of an arm can be told
  apart; all five shapes share the arm lengths and hence the same shade sequence.
- A view is kept only if every cube shows at least :data:`MIN_VISIBLE_PIXELS` pixels at 224 px
  (scaled with the image area; measured with the renderer's segmentation, one mesh per cube);
  hidden views are redrawn within the same quadrant.

Core layer: numpy, Pillow, trimesh and :mod:`studio.render3d` (imported lazily); no Qt, no torch.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING, Any

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
from studio.stimuli.polycube import (
    ROTATIONS_3D,
    canonical_polycube,
    common_scale,
    is_chiral_polycube,
    is_mirror_of,
    is_rotation_of,
    mirror_polycube,
    polycube_cube_meshes,
    polycube_mesh,
)
from studio.stimuli.sheet import label_font

if TYPE_CHECKING:
    from studio.render3d import Renderer

FAMILY = "polycube-rotation"
#: Level → number of arms k.
LEVEL_ARMS: dict[int, int] = {1: 3, 2: 4, 3: 5}
ARM_MIN, ARM_MAX = 3, 9
#: Views are drawn in [θ + OFFSET_MIN, θ + OFFSET_MAX) degrees, θ a multiple of 90°.
OFFSET_MIN, OFFSET_MAX = 15.0, 75.0
#: Half-width of the framed square in world units; the shapes fit the unit sphere.
EXTENT = 1.04
#: The fewest pixels a cube must show in every view of a 224 px image (scaled with the area).
MIN_VISIBLE_PIXELS = 8
#: Shapes tried for one item before giving up (never reached in practice: a few are typical).
MAX_ATTEMPTS = 200
#: Attempts to redraw one view before the shape is given up.
VIEW_TRIES = 12
#: Shades of the two alternating cube colours.
CUBE_COLORS = ((236, 156, 62), (150, 190, 245))
CANDIDATE_LABELS = ("A", "B", "C", "D")


def _letter(i: int) -> str:
    """A candidate as its sheet labels it (A–D): a verdict said "key 0" under options
    labelled A–D (issue 28)."""
    return CANDIDATE_LABELS[i] if 0 <= i < len(CANDIDATE_LABELS) else f"#{i}"


def _letters(positions: list[int]) -> str:
    return ", ".join(_letter(i) for i in positions) or "none"


#: Answer-set designs (see the module docstring); the first is the default.
DESIGNS: tuple[str, ...] = ("balanced", "published")
#: Balanced design: what each candidate is relative to the question (the key is "rotation").
BALANCED_KINDS: tuple[str, ...] = ("rotation", "mirror", "different", "different-mirror")

Cell = tuple[int, int, int]
Progress = Callable[[int, int], None]

_AXES: tuple[Cell, ...] = ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))


def _add(a: Sequence[int], b: Sequence[int]) -> Cell:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _perpendicular(d: Sequence[int]) -> list[Cell]:
    return [a for a in _AXES if sum(x * y for x, y in zip(a, d, strict=True)) == 0]


def _rotate(cells: Sequence[Sequence[int]], r: np.ndarray) -> list[Cell]:
    out = np.asarray(cells, dtype=np.int64) @ np.asarray(r).T
    return [(int(x), int(y), int(z)) for x, y, z in out]


def chain_cells(arm_lengths: Sequence[int], directions: Sequence[Sequence[int]]) -> list[Cell]:
    """The cubes of a chain in order: arm i has ``arm_lengths[i]`` cubes along ``directions[i]``,
    the first cube at the origin and each arm starting on the last cube of the one before."""
    cells: list[Cell] = [(0, 0, 0)]
    for length, d in zip(arm_lengths, directions, strict=True):
        for _ in range(length - 1):
            cells.append(_add(cells[-1], d))
    return cells


def chain_is_clean(cells: Sequence[Sequence[int]]) -> bool:
    """No cube twice, and no two cubes share a face unless they are neighbours in the chain.

    The second rule keeps arms apart so that each can be counted in a picture."""
    index = {tuple(c): i for i, c in enumerate(cells)}
    if len(index) != len(cells):
        return False
    for c, i in index.items():
        for a in _AXES:
            j = index.get(_add(c, a))
            if j is not None and abs(i - j) != 1:
                return False
    return True


def arm_lengths_of(cells: Sequence[Sequence[int]]) -> list[int] | None:
    """Read a chain back into arm lengths (cubes per straight run, joints counted in both runs).

    None when consecutive cubes are not face neighbours or two runs are not at right angles."""
    pts = [tuple(int(v) for v in c) for c in cells]
    if len(pts) < 2:
        return None
    steps = []
    for a, b in pairwise(pts):
        d = tuple(y - x for x, y in zip(a, b, strict=True))
        if sorted(abs(v) for v in d) != [0, 0, 1]:
            return None
        steps.append(d)
    lengths = [2]
    for prev, cur in pairwise(steps):
        if cur == prev:
            lengths[-1] += 1
        elif sum(x * y for x, y in zip(prev, cur, strict=True)) == 0:
            lengths.append(2)
        else:
            return None  # a reversal
    return lengths


def _interval_offset(angle: float) -> float:
    return float(np.mod(angle, 90.0))


def sample_view(rng: np.random.Generator, quadrant: int) -> dict[str, float]:
    """Azimuth in [90q + 15°, 90q + 75°); elevation in ±[15°, 75°) (above or below)."""
    azimuth = 90.0 * quadrant + rng.uniform(OFFSET_MIN, OFFSET_MAX)
    elevation = rng.uniform(OFFSET_MIN, OFFSET_MAX) * (1.0 if rng.random() < 0.5 else -1.0)
    return {"azimuth": round(float(azimuth), 4), "elevation": round(float(elevation), 4)}


def _camera(view: Mapping[str, float]) -> Any:
    from studio.render3d import Camera

    return Camera(
        azimuth=float(view["azimuth"]),
        elevation=float(view["elevation"]),
        projection="orthographic",
        extent=EXTENT,
    )


def _chain_colors(count: int) -> list[tuple[int, int, int]]:
    return [CUBE_COLORS[i % 2] for i in range(count)]


def _cube_meshes(cells: Sequence[Sequence[int]], scale: float) -> list[Any]:
    """One mesh per cube, for segmentation."""
    return polycube_cube_meshes(cells, colors=_chain_colors(len(cells)), scale=scale)


def _shape_mesh(cells: Sequence[Sequence[int]], scale: float) -> Any:
    """One mesh for the whole shape, for pictures (one draw call instead of one per cube)."""
    return polycube_mesh(cells, colors=_chain_colors(len(cells)), scale=scale)


def min_visible_pixels(size: int) -> int:
    """The visibility threshold for images of ``size`` pixels: :data:`MIN_VISIBLE_PIXELS` at
    224 px, scaled with the image area (a cube covers proportionally as many pixels)."""
    return max(2, round(MIN_VISIBLE_PIXELS * (size / 224) ** 2))


def fewest_visible_pixels(
    renderer: Renderer, cells: Sequence[Sequence[int]], scale: float, view: Mapping[str, float]
) -> int:
    """The pixel count of the least visible cube in this view (0 when one is hidden)."""
    ids = renderer.segment(_cube_meshes(cells, scale), _camera(view))
    counts = np.bincount(ids[ids >= 0].ravel(), minlength=len(cells))
    return int(counts[: len(cells)].min())


def _renderer_for(size: int, renderer: Renderer | None) -> Renderer:
    """``renderer`` when it makes images of ``size`` (pixel counts depend on it), else this
    thread's cached renderer of that size."""
    if renderer is not None:
        if renderer.size != size:
            raise ValueError(f"the renderer makes {renderer.size} px images, the item {size} px")
        return renderer
    from studio.render3d import thread_renderer

    return thread_renderer(size, "white")


def compose_sheet(question: Image.Image, candidates: Sequence[Image.Image]) -> Image.Image:
    """Question on the left, a rule, then the four candidates in a row labelled A–D."""
    size = question.width
    gap, rule, label_h = 10, 24, 26
    width = gap + size + rule + len(candidates) * (size + gap)
    sheet = Image.new("RGB", (width, gap + size + label_h), "white")
    draw = ImageDraw.Draw(sheet)
    font = label_font(16)
    sheet.paste(question.convert("RGB"), (gap, gap))
    draw.text(
        (gap + size / 2, gap + size + 4), "Question", fill=(30, 30, 30), font=font, anchor="mt"
    )
    x_rule = gap + size + rule // 2
    draw.line([(x_rule, gap), (x_rule, gap + size)], fill=(160, 160, 160), width=2)
    for i, img in enumerate(candidates):
        x = gap + size + rule + i * (size + gap)
        sheet.paste(img.convert("RGB"), (x, gap))
        draw.rectangle([x, gap, x + size - 1, gap + size - 1], outline=(210, 210, 210))
        draw.text(
            (x + size / 2, gap + size + 4),
            CANDIDATE_LABELS[i],
            fill=(30, 30, 30),
            font=font,
            anchor="mt",
        )
    return sheet


#: Items from which :meth:`PolycubeRotationGenerator.items` draws over every core by default
#: (an item costs about half a second of rendering, so a pool pays off early).
POOL_MIN_ITEMS = 24


class PolycubeRotationGenerator(ItemGenerator):
    """Polycube rotation items of one level (1: k = 3 arms, 2: k = 4, 3: k = 5).

    ``rejections`` counts, by reason, every drawn shape or view that was thrown away:
    ``dead-end`` (a chain found no clean way on), ``no-odd`` (no turned joint gave a shape that
    is not a rotation of the question), ``hidden-cube`` (a view hid a cube and was redrawn),
    ``hidden-cube-shape`` (no view of a shape showed every cube), ``vet:<check>`` (the final
    vet refused an item; not expected)."""

    family = FAMILY

    def __init__(self, level: int = 1, size: int = 224, design: str = "balanced") -> None:
        if level not in LEVEL_ARMS:
            raise ValueError(f"level must be one of {sorted(LEVEL_ARMS)}, not {level}")
        super().__init__(design, DESIGNS)
        if not 32 <= size <= 1024:
            raise ValueError(f"size must be within 32..1024, not {size}")
        self.level = level
        self.size = size
        self.arms = LEVEL_ARMS[level]

    # -- shapes ------------------------------------------------------------------------------

    def _sample_chain(self, rng: np.random.Generator) -> tuple[list[int], list[Cell]]:
        """Arm lengths and absolute directions of a clean chain (narrowing, then restarting)."""
        while True:
            lengths = [int(v) for v in rng.integers(ARM_MIN, ARM_MAX + 1, size=self.arms)]
            directions: list[Cell] = [(1, 0, 0)]
            ok = True
            for i in range(1, self.arms):
                options = [
                    d
                    for d in _perpendicular(directions[-1])
                    if chain_is_clean(chain_cells(lengths[: i + 1], [*directions, d]))
                ]
                if not options:
                    ok = False
                    break
                directions.append(options[int(rng.integers(len(options)))])
            if ok:
                return lengths, directions
            self.rejections["dead-end"] += 1

    def _odd_shape(
        self,
        rng: np.random.Generator,
        lengths: list[int],
        directions: list[Cell],
        question: list[Cell],
    ) -> tuple[list[Cell], dict[str, Any]] | None:
        """A chain with the same arm lengths that is no rotation of ``question``.

        Tries the mirror image first on half of the items (when the question is chiral), else
        turns one joint: arms j … k−1 rotate together by a quarter turn multiple about the axis
        of arm j−1 (j ≥ 2; turning joint 1 would turn the whole shape about arm 0's line)."""
        mirror = mirror_polycube(question)
        want_mirror = rng.random() < 0.5
        if want_mirror and not is_rotation_of(question, mirror):
            cells = [(-x, y, z) for x, y, z in question]
            return cells, {"how": "mirrored"}
        turns = [(j, q) for j in range(2, self.arms) for q in (1, 2, 3)]
        for t in rng.permutation(len(turns)):
            j, quarters = turns[int(t)]
            axis = directions[j - 1]
            r = _axis_rotation(axis, quarters)
            new_dirs = directions[:j] + [
                tuple(int(v) for v in r @ np.array(d)) for d in directions[j:]
            ]
            cells = chain_cells(lengths, new_dirs)  # type: ignore[arg-type]
            if not chain_is_clean(cells) or is_rotation_of(cells, question):
                continue
            return cells, {"how": "turned-joint", "joint": j, "quarter_turns": quarters}
        return None

    # -- items -------------------------------------------------------------------------------

    def _try_item(
        self, rng: np.random.Generator, key: int, renderer: Renderer | None
    ) -> dict[str, Any] | None:
        """One item's record with the key at ``key`` (None: a draw to throw away). Without a
        ``renderer`` the views are drawn but not checked for hidden cubes (symbolic records for
        answer-set audits, :meth:`records`)."""
        if self.design == "balanced":
            return self._try_balanced(rng, key, renderer)
        lengths, directions = self._sample_chain(rng)
        base = chain_cells(lengths, directions)
        q_rot = ROTATIONS_3D[int(rng.integers(len(ROTATIONS_3D)))]
        odd = self._odd_shape(rng, lengths, directions, base)
        if odd is None:
            self.rejections["no-odd"] += 1
            return None
        odd_base, odd_how = odd
        question = _rotate(base, q_rot)
        odd_source = _rotate(odd_base, q_rot)
        same_rots = rng.choice(np.arange(1, len(ROTATIONS_3D)), size=3, replace=False)
        odd_rot = ROTATIONS_3D[int(rng.integers(len(ROTATIONS_3D)))]
        candidates: list[dict[str, Any]] = []
        same_iter = iter(same_rots)
        for pos in range(4):
            if pos == key:
                r, cells, same = odd_rot, _rotate(odd_source, odd_rot), False
            else:
                r = ROTATIONS_3D[int(next(same_iter))]
                cells, same = _rotate(question, r), True
            candidates.append(
                {"cells": [list(c) for c in cells], "rotation": r.tolist(), "same": same}
            )
        scale = common_scale([question, odd_source])
        views = self._views(rng, [question, *[c["cells"] for c in candidates]], scale, renderer)
        if views is None:
            return None
        for c, view in zip(candidates, views[1:], strict=True):
            c["view"] = view
        odd_kind = "mirror" if is_mirror_of(question, candidates[key]["cells"]) else "different"
        return {
            "level": self.level,
            "arms": self.arms,
            "arm_lengths": lengths,
            "size": self.size,
            "scale": round(scale, 8),
            "projection": "orthographic",
            "extent": EXTENT,
            "question": {
                "cells": [list(c) for c in question],
                "directions": [list(d) for d in directions],
                "rotation": q_rot.tolist(),
                "view": views[0],
            },
            "candidates": candidates,
            "odd": {"kind": odd_kind, **odd_how, "source_cells": [list(c) for c in odd_source]},
            "key": key,
            "odd_kind": odd_kind,
            "design": "published",
        }

    def _views(
        self,
        rng: np.random.Generator,
        shapes: Sequence[Sequence[Cell]],
        scale: float,
        renderer: Renderer | None,
    ) -> list[dict[str, float]] | None:
        """Five views (question, four candidates) over azimuth quadrants covering all four, one
        twice, in random order; each redrawn within its quadrant while it hides a cube (not
        checked without a renderer). None when a shape shows every cube in no view."""
        quadrants = [*rng.permutation(4).tolist(), int(rng.integers(4))]
        quadrants = [quadrants[int(i)] for i in rng.permutation(5)]
        threshold = min_visible_pixels(self.size)
        views = []
        for shape, quadrant in zip(shapes, quadrants, strict=True):
            for _ in range(VIEW_TRIES):
                view = sample_view(rng, quadrant)
                if (
                    renderer is None
                    or fewest_visible_pixels(renderer, shape, scale, view) >= threshold
                ):
                    views.append(view)
                    break
                self.rejections["hidden-cube"] += 1
            else:
                self.rejections["hidden-cube-shape"] += 1
                return None
        return views

    def _try_balanced(
        self, rng: np.random.Generator, key: int, renderer: Renderer | None
    ) -> dict[str, Any] | None:
        """The balanced design (module docstring): the set {A, A′, B, B′} first, then which of
        them is the question (uniformly), then each candidate turned at random."""
        lengths, directions = self._sample_chain(rng)
        a = chain_cells(lengths, directions)
        if not is_chiral_polycube(a):
            self.rejections["achiral"] += 1
            return None
        turned = self._turned_joint(rng, lengths, directions, a)
        if turned is None:
            self.rejections["no-odd"] += 1
            return None
        b, how = turned
        if not is_chiral_polycube(b):
            self.rejections["achiral"] += 1
            return None
        # the four shapes; which one is the question is drawn uniformly
        shapes = [a, [(-x, y, z) for x, y, z in a], b, [(-x, y, z) for x, y, z in b]]
        names = ["A", "A-mirror", "B", "B-mirror"]
        q_index = int(rng.integers(4))
        q_rot = ROTATIONS_3D[int(rng.integers(len(ROTATIONS_3D)))]
        question = _rotate(shapes[q_index], q_rot)
        # relative to the question: its twin is the mirror; the other pair is "different"
        twin = q_index ^ 1
        kinds = {q_index: "rotation", twin: "mirror"}
        for j in range(4):
            if j not in kinds:
                kinds[j] = "different" if (j & 1) == (q_index & 1) else "different-mirror"
        others = [j for j in (twin, *(j for j in range(4) if j not in (q_index, twin)))]
        order = [int(v) for v in rng.permutation(3)]
        foil_iter = iter(others[i] for i in order)
        candidates: list[dict[str, Any]] = []
        for pos in range(4):
            j = q_index if pos == key else next(foil_iter)
            r = ROTATIONS_3D[int(rng.integers(len(ROTATIONS_3D)))]
            cells = _rotate(question if j == q_index else shapes[j], r)
            candidates.append(
                {
                    "cells": [list(c) for c in cells],
                    "rotation": r.tolist(),
                    "same": j == q_index,
                    "kind": kinds[j],
                    "shape": names[j],
                }
            )
        scale = common_scale([question, *shapes])
        views = self._views(rng, [question, *[c["cells"] for c in candidates]], scale, renderer)
        if views is None:
            return None
        for c, view in zip(candidates, views[1:], strict=True):
            c["view"] = view
        return {
            "level": self.level,
            "arms": self.arms,
            "arm_lengths": arm_lengths_of(question),
            "size": self.size,
            "scale": round(scale, 8),
            "projection": "orthographic",
            "extent": EXTENT,
            "question": {
                "cells": [list(c) for c in question],
                "rotation": q_rot.tolist(),
                "view": views[0],
                "shape": names[q_index],
            },
            "candidates": candidates,
            "set": {
                "shapes": {n: [list(c) for c in s] for n, s in zip(names, shapes, strict=True)},
                "turned_joint": how,
            },
            "key": key,
            "design": "balanced",
        }

    def _turned_joint(
        self,
        rng: np.random.Generator,
        lengths: list[int],
        directions: list[Cell],
        cells: list[Cell],
    ) -> tuple[list[Cell], dict[str, Any]] | None:
        """A clean chain made by turning one joint (arms j … k−1 about arm j−1's axis) that is
        chiral and neither a rotation nor a mirror image of ``cells``; with three arms every
        such turn gives a planar chain or the mirror image, so there the arm lengths are
        permuted instead (the same cubes, arms in another order)."""
        turns = [(j, q) for j in range(2, self.arms) for q in (1, 2, 3)]
        for t in rng.permutation(len(turns)):
            j, quarters = turns[int(t)]
            r = _axis_rotation(directions[j - 1], quarters)
            new_dirs = directions[:j] + [
                tuple(int(v) for v in r @ np.array(d)) for d in directions[j:]
            ]
            out = chain_cells(lengths, new_dirs)  # type: ignore[arg-type]
            if (
                chain_is_clean(out)
                and is_chiral_polycube(out)
                and not is_rotation_of(out, cells)
                and not is_mirror_of(cells, out)
            ):
                return out, {"joint": j, "quarter_turns": quarters}
        perms = [p for p in itertools.permutations(range(len(lengths))) if list(p) != sorted(p)]
        for t in rng.permutation(len(perms)):
            permuted = [lengths[i] for i in perms[int(t)]]
            out = chain_cells(permuted, directions)
            if (
                chain_is_clean(out)
                and is_chiral_polycube(out)
                and not is_rotation_of(out, cells)
                and not is_mirror_of(cells, out)
            ):
                return out, {"arm_lengths": permuted}
        return None

    def _keys(self, count: int, seed: int) -> list[int]:
        """The key's position per item: each permutation of A–D per block of four."""
        key_rng = np.random.default_rng([seed, self.level, 0x6B6579])
        keys: list[int] = []
        for i in range(count):
            if i % 4 == 0:
                keys.extend(int(k) for k in key_rng.permutation(4))
        return keys

    def records(self, count: int, seed: int) -> Iterator[dict[str, Any]]:
        """The symbolic records of :meth:`items` without rendering: views are drawn but not
        checked for hidden cubes, so a record may differ from the rendered item's (answer-set
        audits need the shapes only, and 2,000 of these take seconds, not minutes)."""
        keys = self._keys(count, seed)
        for i in range(count):
            rng = np.random.default_rng([seed, self.level, i])
            for _ in range(MAX_ATTEMPTS):
                record = self._try_item(rng, keys[i], None)
                if record is not None:
                    break
            else:
                raise RuntimeError(f"no polycube record after {MAX_ATTEMPTS} shapes")
            yield record

    def items(
        self,
        count: int,
        seed: int,
        progress: Progress | None = None,
        renderer: Renderer | None = None,
        *,
        workers: int | None = None,
        indices: Iterable[int] | None = None,
    ) -> Iterator[StimulusItem]:
        """``count`` vetted items; item i depends only on ``seed`` and i (its own random stream),
        and the odd candidate's position runs through each permutation of A–D per block of four,
        so positions are balanced. Streams also depend on the level, so levels made with one
        seed do not share their first arms. Renders with ``renderer`` (then in this thread) or
        this thread's own; ``workers``: processes drawing the items (default: every core for a
        large set, :func:`~studio.stimuli.loop.pool_workers`; the same bytes for any number).
        ``indices``: only those items, in order."""
        single = renderer is not None or indices is not None
        n_workers = 1 if single else pool_workers(count, workers, min_items=POOL_MIN_ITEMS)
        if n_workers > 1:
            yield from pooled_items(self, count, seed, n_workers, progress)
            return
        renderer = _renderer_for(self.size, renderer)
        keys = self._keys(count, seed)
        yield from vetted_items(
            FAMILY,
            count,
            seed,
            (self.level,),
            draw=lambda rng, i: self._try_item(rng, keys[i], renderer),
            vet=lambda record: vet_polycube_item(record, renderer),
            render=lambda record: render_item_images(record, renderer),
            sheet=compose_sheet,
            rejections=self.rejections,
            progress=progress,
            attempts=MAX_ATTEMPTS,
            indices=indices,
        )


def _axis_rotation(axis: Sequence[int], quarters: int) -> np.ndarray:
    """The cube rotation by ``quarters`` × 90° about a signed coordinate axis."""
    a = np.asarray(axis, dtype=np.int64)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]], dtype=np.int64)
    quarter = np.outer(a, a) + k  # Rodrigues at 90°: cos 0, sin 1
    return np.linalg.matrix_power(quarter, quarters % 4)


def render_item_images(
    record: Mapping[str, Any], renderer: Renderer | None = None
) -> dict[str, Image.Image]:
    """The five images of an item, re-rendered from its record alone."""
    renderer = _renderer_for(int(record["size"]), renderer)
    scale = float(record["scale"])
    shapes = [record["question"], *record["candidates"]]
    names = ["question", *(f"candidate-{i}" for i in range(len(record["candidates"])))]
    return {
        name: renderer.render([_shape_mesh(s["cells"], scale)], _camera(s["view"]))
        for name, s in zip(names, shapes, strict=True)
    }


def render_polycube_record(
    record: Mapping[str, Any], renderer: Renderer | None = None
) -> tuple[dict[str, Image.Image], Image.Image]:
    """The family's ``render_record``: the question, the candidates and the sheet, re-drawn
    from a stored record (an ``items.jsonl`` line or the bare record) as :meth:`items` draws
    them (:func:`render_item_images`, laid out by :func:`compose_sheet`), with ``renderer``
    or this thread's of the record's size."""
    return drawn_item(dict(record), lambda r: render_item_images(r, renderer), compose_sheet)


def _angle_ok(angle: float) -> bool:
    return OFFSET_MIN <= _interval_offset(angle) < OFFSET_MAX


def vet_polycube_item(record: Mapping[str, Any], renderer: Renderer | None = None) -> Verdict:
    """Check an item from its record alone (an independent pass over what the generator made).

    Published design — errors: the layout (four candidates, one odd at ``key``); every shape a
    clean chain with the recorded arm lengths; every "same" candidate a rotation of the question
    (one-sided canonical
    forms) and equal to its recorded rotation of it; the odd one not a rotation, its label right
    (mirror or different); every view angle inside its interval; every cube visible in every view
    (measure: the fewest pixels any cube shows; rendered with ``renderer`` or this thread's).
    Balanced design (``record["design"]``): the key the only rotation, the foils' kinds, the
    set two mirror pairs (:func:`_balanced_checks`); the chains and views as above."""
    checks: list[Finding] = []
    question = [tuple(c) for c in record["question"]["cells"]]
    cands = list(record["candidates"])
    key = int(record["key"])
    if record.get("design", "published") == "balanced":
        checks += _balanced_checks(record, question, cands, key)
    else:
        checks += _published_checks(record, question, cands, key)
    checks += _view_checks(record, question, cands, renderer)
    return Verdict(tuple(checks))


def _chain_check(record: Mapping[str, Any], question: list[Any], cands: list[Any]) -> Finding:
    """Every shape a clean chain of the recorded arm lengths (balanced design: the question of
    them, a candidate of them in some order — three-arm foils permute the arms)."""
    lengths = [int(v) for v in record["arm_lengths"]]
    balanced = record.get("design") == "balanced"
    expected_arms = LEVEL_ARMS.get(int(record["level"]))
    bad_chains = []
    for name, cells in [
        ("question", question),
        *((f"candidate-{i}", c["cells"]) for i, c in enumerate(cands)),
    ]:
        read = arm_lengths_of(cells)
        if balanced and name != "question" and read is not None:
            read = read if sorted(read) != sorted(lengths) else lengths
        if read != lengths or not chain_is_clean(cells):
            bad_chains.append(name)
    lengths_ok = len(lengths) == expected_arms and all(ARM_MIN <= v <= ARM_MAX for v in lengths)
    return Finding(
        "arm-structure",
        lengths_ok and not bad_chains,
        measure=float(len(bad_chains)),
        detail=f"arms {lengths}"
        + (f"; not clean chains of them: {bad_chains}" if bad_chains else ""),
    )


def _balanced_checks(
    record: Mapping[str, Any], question: list[Any], cands: list[Any], key: int
) -> list[Finding]:
    """The balanced design: the key alone is a rotation of the question (and its recorded
    rotation of it); each foil's kind is what it is; the four candidates are two mirror pairs,
    no two of them rotations of each other (so none is singled out by the candidates alone)."""
    checks: list[Finding] = []
    same_positions = [i for i, c in enumerate(cands) if c["same"]]
    checks.append(
        Finding(
            "layout",
            len(cands) == 4 and same_positions == [key],
            measure=float(len(same_positions)),
            detail=f"{len(cands)} candidates, rotations at {_letters(same_positions)}, "
            f"key {_letter(key)}",
        )
    )
    checks.append(_chain_check(record, question, cands))
    q_canon = canonical_polycube(question)
    forms = [canonical_polycube(c["cells"]) for c in cands]
    rotations = [i for i, f in enumerate(forms) if f == q_canon]
    checks.append(
        Finding(
            "key-only-rotation",
            rotations == [key],
            measure=float(len(rotations)),
            detail=f"rotations of the question at {_letters(rotations)}, key {_letter(key)}",
        )
    )
    faithful = 0 <= key < len(cands) and _rotate(question, np.asarray(cands[key]["rotation"])) == [
        tuple(v) for v in cands[key]["cells"]
    ]
    checks.append(
        Finding(
            "recorded-rotations",
            bool(faithful),
            detail="" if faithful else "the key's cells differ from rotation × question",
        )
    )
    mislabelled = []
    for i, c in enumerate(cands):
        if i == key:
            continue
        mirror = is_mirror_of(question, c["cells"])
        if (c.get("kind") == "mirror") != mirror:
            mislabelled.append(i)
    checks.append(
        Finding(
            "foil-kind-labels",
            not mislabelled,
            measure=float(len(mislabelled)),
            detail=f"kinds wrong at {mislabelled}" if mislabelled else "",
        )
    )
    mirrors = [canonical_polycube(mirror_polycube(c["cells"])) for c in cands]
    twins = [sum(1 for f in forms if f == m) for m in mirrors]
    symmetric = len(set(forms)) == len(forms) and twins == [1] * len(cands)
    checks.append(
        Finding(
            "symmetric-set",
            symmetric,
            measure=float(len(set(forms))),
            detail="two mirror pairs, no two candidates rotations of each other"
            if symmetric
            else f"{len(set(forms))} distinct shapes, mirror twins per candidate {twins}",
        )
    )
    return checks


def _published_checks(
    record: Mapping[str, Any], question: list[Any], cands: list[Any], key: int
) -> list[Finding]:
    checks: list[Finding] = []
    odd_positions = [i for i, c in enumerate(cands) if not c["same"]]
    checks.append(
        Finding(
            "layout",
            len(cands) == 4 and odd_positions == [key],
            measure=float(len(odd_positions)),
            detail=f"{len(cands)} candidates, odd at {_letters(odd_positions)}, key {_letter(key)}",
        )
    )
    checks.append(_chain_check(record, question, cands))
    q_canon = canonical_polycube(question)
    same = [(i, c) for i, c in enumerate(cands) if c["same"]]
    not_rotations = [i for i, c in same if canonical_polycube(c["cells"]) != q_canon]
    checks.append(
        Finding(
            "same-are-rotations",
            len(same) == 3 and not not_rotations,
            measure=float(len(same) - len(not_rotations)),
            detail=f"not rotations of the question: {not_rotations}" if not_rotations else "",
        )
    )
    unfaithful = [
        i
        for i, c in same
        if _rotate(question, np.asarray(c["rotation"])) != [tuple(v) for v in c["cells"]]
    ]
    checks.append(
        Finding(
            "recorded-rotations",
            not unfaithful,
            measure=float(len(unfaithful)),
            detail=f"cells differ from rotation × question: {unfaithful}" if unfaithful else "",
        )
    )
    if 0 <= key < len(cands):
        odd_cells = cands[key]["cells"]
        odd_is_rotation = canonical_polycube(odd_cells) == q_canon
        checks.append(
            Finding(
                "odd-not-rotation",
                not odd_is_rotation,
                measure=float(odd_is_rotation),
                detail="the odd candidate is a rotation of the question" if odd_is_rotation else "",
            )
        )
        kind = (
            "mirror" if is_mirror_of(question, odd_cells) and not odd_is_rotation else "different"
        )
        checks.append(
            Finding(
                "odd-kind-label",
                record.get("odd_kind") == kind,
                detail=f"labelled {record.get('odd_kind')!r}, is {kind!r}",
            )
        )
    return checks


def _view_checks(
    record: Mapping[str, Any], question: list[Any], cands: list[Any], renderer: Renderer | None
) -> list[Finding]:
    checks: list[Finding] = []
    views = [record["question"]["view"], *(c["view"] for c in cands)]
    angles = [(float(v["azimuth"]), float(v["elevation"])) for v in views]
    bad_views = [
        i
        for i, (az, el) in enumerate(angles)
        if not (_angle_ok(az) and OFFSET_MIN <= abs(el) < OFFSET_MAX)
    ]
    margin = min(
        min(_interval_offset(a), 90.0 - _interval_offset(a)) for pair in angles for a in pair
    )
    checks.append(
        Finding(
            "view-intervals",
            not bad_views,
            measure=margin,
            detail=f"views outside [θ+15°, θ+75°): {bad_views}" if bad_views else "",
        )
    )
    renderer = _renderer_for(int(record["size"]), renderer)
    scale = float(record["scale"])
    shapes = [question, *(c["cells"] for c in cands)]
    fewest = [
        fewest_visible_pixels(renderer, s, scale, v) for s, v in zip(shapes, views, strict=True)
    ]
    threshold = min_visible_pixels(int(record["size"]))
    hidden = [i for i, n in enumerate(fewest) if n < threshold]
    checks.append(
        Finding(
            "cubes-visible",
            not hidden,
            measure=float(min(fewest)),
            detail=f"a cube shows fewer than {threshold} px in images {hidden}" if hidden else "",
        )
    )
    return checks
