"""The shape-composition task of Spatial-IQ (Kim et al.): which set of pieces makes the shape?

Construction, following §3.2 of the paper ("Data Construction … Shape Composition"):

    "We generated 224 × 224 initial images coloured in black. We linearly cut the initial images
    twice. We use an initial image as an original image only if its size is larger than 25,000,
    where the size denotes the number of remaining pixels coloured in black after cutting
    linearly. Here, the linear operation has the following two requirements: 1) The slope of the
    cutting line is either 0°, 30°, 45° or 60°, 2) The point corresponding to the y-intercept is
    between 1/4 and 3/4 of the image height. We then linearly cut the original image into m number
    of pieces. When m is 2, 3, or 4, the size of each piece is in the range of 3,000 to 30,000 and
    when m = 5, the size of each piece is in the range of 2,000 to 30,000. The cut pieces are then
    rotated by 0°, 90°, 180° or 270°, but never flipped. […] For two of the incorrect candidate
    answers, m pieces are also from the same original image but only one piece is randomly
    replaced with another piece of similar size. For the remaining incorrect candidate answer,
    one of the pieces of the correct answer is scaled, which makes it impossible to form the
    original image."  (levels: m ∈ {2, 3, 4, 5}, §2.2 and Table 1)

Choices the paper leaves open, and ours:

- Geometry is exact: the shape and its pieces are convex polygons (a square cut by half-planes,
  then split by lines), kept as float vertex lists in image coordinates (x right, y down, the
  unit is one pixel of the 224 image; "size" = polygon area in px²). Rasters are made from them.
- A cutting line rises to the right at the angle θ and crosses the left image edge at height b
  (measured from the top; the range [H/4, 3H/4] is symmetric so the direction does not matter):
  ``y = b − tan θ · x``. Both requirements apply to every cut, the two shape cuts and the m − 1
  piece cuts. A piece cut splits *one* piece (so m − 1 cuts give exactly m pieces).
- Instead of rejecting blindly, values are narrowed before sampling (CONVENTIONS): for a slope
  the area on one side of the line is monotone in b, so the interval of b that keeps the area
  limits is found by bisection and b is drawn uniformly from it. What still fails is counted in
  :attr:`ShapeCompositionGenerator.rejections`.
- "Similar size" for a replacement: a piece of another generated shape whose area differs from
  the replaced piece by 3 % to 25 % — close enough to look plausible, far enough that the total
  area proves the candidate wrong (see :func:`vet_composition_item`).
- All three distractors change the *same* piece of the key (two replacements and one scaling),
  so every other piece appears in all four candidates and the changed position holds four
  different variants: no "most common piece" shortcut finds the key without the question (the
  RAVEN flaw the conventions warn about). Likewise the number of distractors whose changed
  piece is smaller than the key's is drawn uniformly (``key_area_rank``), so the key's total
  area is not the middle one more often than chance.
- **Designs** (``design``, recorded per item). In ``"published"`` (the paper's foils above) the
  scaled distractor's changed piece has the key's changed piece's exact form, only larger or
  smaller, while the replaced ones have other forms: comparing the candidates alone, the key is
  one of the two candidates whose changed pieces are alike (issue 11). ``"balanced"`` (the
  default) drops the scaled foil and chooses the answer set first, the I-RAVEN way: four
  shapes are cut into m pieces each and one piece of each is taken so that the four pieces'
  areas lie pairwise within 3–25 % of each other; the key is then drawn uniformly among the
  four, its shape becomes the question and the other three are the donors of three replaced
  distractors. Every changed piece is thus a natural piece of a cut shape like every other, the
  key's rank by area is uniform, and only the question tells which piece belongs.
- The question is the shape at its place in the 224 image. A candidate shows its m pieces packed
  in rows (tallest first, never overlapping), all pieces of all four candidates at one common
  scale (``piece_scale``, at most 1), so sizes compare across candidates and the scaled piece
  stays visibly wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw
from scipy.optimize import linear_sum_assignment

from studio.core.verdict import Finding, Verdict
from studio.stimuli.geometry import (
    DECIMALS,
    Point,
    Polygon,
    as_points,
    bbox,
    cover_iou,
    coverage,
    polygon_area,
    polygon_centroid,
    polygon_iou,
    rotate_polygon,
    round_polygon,
    scale_polygon,
    signed_area,
    split_polygon,
    to_origin,
    translate_polygon,
)
from studio.stimuli.items import StimulusItem
from studio.stimuli.loop import (
    ItemGenerator,
    drawn_item,
    pool_workers,
    pooled_items,
    vetted_items,
)
from studio.stimuli.sheet import stitch_sheet

FAMILY = "shape-composition"
LEVELS: tuple[int, ...] = (2, 3, 4, 5)
#: Allowed slopes of a cutting line, degrees (§3.2, requirement 1).
CUT_ANGLES: tuple[int, ...] = (0, 30, 45, 60)
#: The y-intercept lies between these fractions of the image height (§3.2, requirement 2).
INTERCEPT_RANGE: tuple[float, float] = (0.25, 0.75)
#: The original image must keep more than this many black pixels after the two cuts (§3.2).
SHAPE_MIN_AREA = 25_000.0
PIECE_MAX_AREA = 30_000.0
ROTATIONS: tuple[int, ...] = (0, 90, 180, 270)
#: Relative area difference of a replacement piece ("similar size"), see the module docstring.
REPLACEMENT_AREA_BAND: tuple[float, float] = (0.03, 0.25)
#: Scale factors of the scaled distractor: visibly smaller or visibly larger.
SCALE_BANDS: tuple[tuple[float, float], ...] = ((0.75, 0.87), (1.15, 1.3))
#: Relative area tolerance of "the pieces' areas add up to the shape's" (rounding of vertices).
AREA_TOLERANCE = 5e-4
#: Raster IoU (covered exactly once vs the shape, see :func:`cover_iou`) from which a placement
#: counts as reproducing the shape; rounding of vertices costs a few edge samples at most.
PLACEMENT_IOU = 0.99
#: IoU from which two pieces count as the same piece (exact polygons, so near 1).
SAME_PIECE_IOU = 0.999
_RASTER_SCALE = 2
#: Answer-set designs (module docstring); the first is the default.
DESIGNS: tuple[str, ...] = ("balanced", "published")
#: Balanced design: the larger of two varying pieces' areas over the smaller, for every pair.
BALANCED_AREA_RATIO: tuple[float, float] = (1.03, 1.25)
#: Balanced design: shapes cut before an item gives up on finding four pieces of like area.
BALANCED_SHAPE_TRIES = 16


def piece_area_limits(m: int) -> tuple[float, float]:
    """Smallest and largest piece area for m pieces (§3.2: 3,000–30,000; 2,000 when m = 5)."""
    if m not in LEVELS:
        raise ValueError(f"m must be one of {LEVELS}, not {m}")
    return (2_000.0 if m == 5 else 3_000.0), PIECE_MAX_AREA


# --------------------------------------------------------------------------------------------
# Cutting lines


def _line(angle: int, intercept: float) -> tuple[float, float, float]:
    """The cutting line ``y = b − tan θ · x`` as ``a·x + b·y = c`` (negative side = above it)."""
    return math.tan(math.radians(angle)), 1.0, intercept


def _area_above(poly: Sequence[Point], angle: int, intercept: float) -> float:
    above, _ = split_polygon(poly, *_line(angle, intercept))
    return polygon_area(above) if above else 0.0


def _intercept_interval(
    poly: Sequence[Point], angle: int, lo_area: float, hi_area: float, b_range: tuple[float, float]
) -> tuple[float, float] | None:
    """The intercepts in ``b_range`` where the area above the line lies in [lo_area, hi_area].

    The area above ``y = b − tan θ·x`` grows monotonically with b, so each bound is one
    bisection; None when no intercept satisfies both."""
    b0, b1 = b_range
    f0, f1 = _area_above(poly, angle, b0), _area_above(poly, angle, b1)
    if f1 < lo_area or f0 > hi_area or lo_area > hi_area:
        return None

    def first_at_least(target: float) -> float:
        if f0 >= target:
            return b0
        lo, hi = b0, b1
        for _ in range(32):
            mid = (lo + hi) / 2
            if _area_above(poly, angle, mid) >= target:
                hi = mid
            else:
                lo = mid
        return hi

    def last_at_most(target: float) -> float:
        if f1 <= target:
            return b1
        lo, hi = b0, b1
        for _ in range(32):
            mid = (lo + hi) / 2
            if _area_above(poly, angle, mid) <= target:
                lo = mid
            else:
                hi = mid
        return lo

    start, end = first_at_least(lo_area), last_at_most(hi_area)
    return (start, end) if end - start > 1e-6 else None


class _Rejected(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _square(size: int) -> Polygon:
    s = float(size)
    return [(0.0, 0.0), (s, 0.0), (s, s), (0.0, s)]


def make_shape(rng: np.random.Generator, size: int = 224) -> tuple[Polygon, list[dict[str, Any]]]:
    """The original image: the square cut twice, more than 25,000 px² left (§3.2).

    Each cut draws a slope and a kept side among those that can still leave the area limit and
    actually remove something, then an intercept from the interval that does."""
    b_range = (INTERCEPT_RANGE[0] * size, INTERCEPT_RANGE[1] * size)
    min_area = SHAPE_MIN_AREA * (size / 224.0) ** 2
    poly = _square(size)
    cuts: list[dict[str, Any]] = []
    for _ in range(2):
        area = polygon_area(poly)
        removed_min = 0.02 * area
        options: list[tuple[int, str, tuple[float, float]]] = []
        for angle in CUT_ANGLES:
            # keep "above": area_above in (min_area, area - removed_min]
            iv = _intercept_interval(poly, angle, min_area + 1.0, area - removed_min, b_range)
            if iv:
                options.append((angle, "above", iv))
            # keep "below": area - area_above > min_area, area_above >= removed_min
            iv = _intercept_interval(poly, angle, removed_min, area - min_area - 1.0, b_range)
            if iv:
                options.append((angle, "below", iv))
        if not options:
            raise _Rejected("shape-too-small")
        angle, side, (lo, hi) = options[int(rng.integers(len(options)))]
        intercept = float(rng.uniform(lo, hi))
        above, below = split_polygon(poly, *_line(angle, intercept))
        poly = above if side == "above" else below
        cuts.append({"angle": angle, "intercept": round(intercept, DECIMALS), "kept": side})
    return poly, cuts


def cut_into_pieces(
    shape: Sequence[Point], m: int, rng: np.random.Generator, size: int = 224
) -> tuple[list[Polygon], list[dict[str, Any]]]:
    """Cut the shape into m convex pieces by m − 1 straight cuts within the area limits (§3.2).

    A piece above the maximum is always cut next; otherwise a piece is drawn with probability
    proportional to its area. The last cut also keeps both halves under the maximum."""
    min_a, max_a = piece_area_limits(m)
    scale2 = (size / 224.0) ** 2
    min_a, max_a = min_a * scale2, max_a * scale2
    b_range = (INTERCEPT_RANGE[0] * size, INTERCEPT_RANGE[1] * size)
    pieces: list[Polygon] = [list(shape)]
    cuts: list[dict[str, Any]] = []
    for step in range(m - 1):
        last = step == m - 2
        areas = np.array([polygon_area(p) for p in pieces])
        if (areas > max_a).sum() > m - 1 - step:
            raise _Rejected("piece-too-large")
        oversized = np.flatnonzero(areas > max_a)
        if len(oversized):
            order = [int(oversized[np.argmax(areas[oversized])])]
        else:
            weights = np.where(areas >= 2 * min_a, areas, 0.0)
            if weights.sum() <= 0:
                raise _Rejected("no-feasible-cut")
            first = int(rng.choice(len(pieces), p=weights / weights.sum()))
            order = [first] + [i for i in np.argsort(-areas).tolist() if i != first]
        chosen: tuple[int, int, tuple[float, float]] | None = None
        for idx in order:
            a = float(areas[idx])
            lo, hi = min_a, a - min_a
            if last:
                lo, hi = max(lo, a - max_a), min(hi, max_a)
            options = [
                (angle, iv)
                for angle in CUT_ANGLES
                if (iv := _intercept_interval(pieces[idx], angle, lo, hi, b_range))
            ]
            if options:
                angle, iv = options[int(rng.integers(len(options)))]
                chosen = (idx, angle, iv)
                break
        if chosen is None:
            raise _Rejected("no-feasible-cut")
        idx, angle, (lo, hi) = chosen
        intercept = float(rng.uniform(lo, hi))
        above, below = split_polygon(pieces[idx], *_line(angle, intercept))
        pieces[idx : idx + 1] = [above, below]
        cuts.append({"piece": idx, "angle": angle, "intercept": round(intercept, DECIMALS)})
    if max(polygon_area(p) for p in pieces) > max_a:
        raise _Rejected("piece-too-large")
    return pieces, cuts


# --------------------------------------------------------------------------------------------
# Layout and rendering


def _shelf_pack(
    dims: Sequence[tuple[float, float]], scale: float, size: int, pad: float
) -> list[list[float]] | None:
    """Boxes for pieces of these (width, height) at ``scale``, packed in rows (tallest first).

    Rows are filled left to right and wrapped; the rows are centred in the image and each row
    in its width, with ``pad`` between pieces and around the border. None when they do not fit."""
    avail = size - 2 * pad
    order = sorted(range(len(dims)), key=lambda i: (-dims[i][1], i))
    rows: list[list[int]] = [[]]
    row_w = 0.0
    for i in order:
        w = dims[i][0] * scale
        if w > avail:
            return None
        if rows[-1] and row_w + pad + w > avail:
            rows.append([])
            row_w = 0.0
        row_w += (pad if rows[-1] else 0.0) + w
        rows[-1].append(i)
    heights = [max(dims[i][1] * scale for i in row) for row in rows]
    total_h = sum(heights) + pad * (len(rows) - 1)
    if total_h > avail:
        return None
    boxes: list[list[float]] = [[] for _ in dims]
    y = (size - total_h) / 2
    for row, h in zip(rows, heights, strict=True):
        row_w = sum(dims[i][0] * scale for i in row) + pad * (len(row) - 1)
        x = (size - row_w) / 2
        for i in row:
            w, hi = dims[i][0] * scale, dims[i][1] * scale
            y0 = y + (h - hi) / 2
            boxes[i] = [round(x, 2), round(y0, 2), round(x + w, 2), round(y0 + hi, 2)]
            x += w + pad
        y += h + pad
    return boxes


def _layout(
    shown: Sequence[Sequence[Sequence[Sequence[float]]]], size: int, pad: float
) -> tuple[float, list[list[list[float]]]]:
    """The largest common scale (at most 1) at which every candidate's pieces pack, and the boxes.

    One scale for all candidates keeps sizes comparable, which the scaled distractor needs."""
    dims = [[(bbox(p)[2], bbox(p)[3]) for p in cand] for cand in shown]  # shown start at 0

    def pack_all(s: float) -> list[list[list[float]]] | None:
        out = []
        for d in dims:
            boxes = _shelf_pack(d, s, size, pad)
            if boxes is None:
                return None
            out.append(boxes)
        return out

    lo, hi = 0.0, 1.0
    if pack_all(hi) is not None:
        lo = hi
    else:
        for _ in range(20):
            mid = (lo + hi) / 2
            if pack_all(mid) is not None:
                lo = mid
            else:
                hi = mid
    scale = math.floor(lo * 1e4) / 1e4
    boxes = pack_all(scale) if scale > 0 else None
    return scale, boxes or []


def draw_polygons(
    polys: Sequence[Sequence[Sequence[float]]],
    size: int,
    offsets: Sequence[Sequence[float]] | None = None,
    scale: float = 1.0,
) -> Image.Image:
    """Black polygons on white, each scaled then moved to its offset (RGB, like the paper's)."""
    img = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(img)
    for i, poly in enumerate(polys):
        ox, oy = (offsets[i][0], offsets[i][1]) if offsets is not None else (0.0, 0.0)
        draw.polygon([(ox + scale * x, oy + scale * y) for x, y in poly], fill="black")
    return img


# --------------------------------------------------------------------------------------------
# Vetting


def _shown_from_source(source: Sequence[Sequence[float]], rotation: int, factor: float) -> Polygon:
    poly = as_points(source)
    if factor != 1.0:
        poly = scale_polygon(poly, factor)
    return to_origin(rotate_polygon(poly, rotation))


def _same_vertices(p: Sequence[Sequence[float]], q: Sequence[Sequence[float]], tol: float) -> bool:
    if len(p) != len(q):
        return False
    n = len(p)
    for shift in range(n):
        if all(
            abs(p[i][0] - q[(i + shift) % n][0]) <= tol
            and abs(p[i][1] - q[(i + shift) % n][1]) <= tol
            for i in range(n)
        ):
            return True
    return False


def _place_like(poly: Sequence[Point], target: Sequence[Point]) -> Polygon:
    cx, cy = polygon_centroid(poly)
    tx, ty = polygon_centroid(target)
    return translate_polygon(poly, tx - cx, ty - cy)


def best_placement(
    shown: Sequence[Sequence[Sequence[float]]],
    partition: Sequence[Sequence[Sequence[float]]],
) -> tuple[list[Polygon], np.ndarray, list[int]]:
    """Place shown pieces onto the shape's pieces as well as quarter turns allow.

    Every shown piece is tried in each of the 4 rotations against every piece of the partition,
    centroid on centroid (the best translation when the two are congruent), scored by exact IoU;
    the assignment maximizing the total IoU decides where each piece goes. Returns the placed
    polygons, the per-pair best IoU matrix and the assignment (shown piece → partition piece)."""
    parts = [as_points(q) for q in partition]
    n, k = len(shown), len(parts)
    iou = np.zeros((n, k))
    best_rot = np.zeros((n, k), dtype=int)
    for i, p in enumerate(shown):
        pts = as_points(p)
        for j, q in enumerate(parts):
            for rot in ROTATIONS:
                v = polygon_iou(_place_like(rotate_polygon(pts, rot), q), q)
                if v > iou[i, j]:
                    iou[i, j], best_rot[i, j] = v, rot
    rows, cols = linear_sum_assignment(-iou)
    assign = [-1] * n
    placed: list[Polygon] = []
    for i, j in zip(rows.tolist(), cols.tolist(), strict=True):
        assign[i] = j
    for i, p in enumerate(shown):
        j = assign[i]
        pts = as_points(p)
        if j < 0:  # more shown pieces than parts: leave it where it is
            placed.append(pts)
        else:
            placed.append(_place_like(rotate_polygon(pts, int(best_rot[i, j])), parts[j]))
    return placed, iou, assign


def vet_composition_item(record: dict[str, Any]) -> Verdict:
    """Check a shape-composition item from its record alone: only the key reassembles the shape.

    - the partition tiles the shape (areas add up; the union of pieces rasterises to the shape);
    - the area limits of §3.2 hold; every candidate shows m pieces;
    - every shown piece is its source rotated by a multiple of 90° (scaled where the record says
      so) and never mirrored (vertex lists compared; orientation sign kept);
    - the key reassembles: its areas add up and its pieces, turned back and moved to their
      places, cover the shape (raster IoU);
    - no distractor reassembles: its total area differs from the shape's, or the best placement
      with quarter turns (:func:`best_placement`) stays below :data:`PLACEMENT_IOU`;
    - each distractor differs from the key in exactly one piece (up to rotation);
    - the laid-out pieces do not overlap and stay inside the image."""
    checks: list[Finding] = []
    size = int(record["size"])
    m = int(record["m"])
    shape = as_points(record["shape"]["polygon"])
    shape_area = polygon_area(shape)
    partition = [as_points(p["polygon"]) for p in record["pieces"]]
    donors = [[as_points(p["polygon"]) for p in d["pieces"]] for d in record.get("donors", [])]
    shape_mask = coverage([shape], size, _RASTER_SCALE) > 0
    min_a, max_a = piece_area_limits(m)
    scale2 = (size / 224.0) ** 2

    # Partition
    part_areas = [polygon_area(p) for p in partition]
    rel = abs(sum(part_areas) - shape_area) / shape_area
    union_iou = cover_iou(coverage(partition, size, _RASTER_SCALE), shape_mask)
    checks.append(
        Finding(
            "partition-tiles-shape",
            len(partition) == m and rel <= AREA_TOLERANCE and union_iou >= PLACEMENT_IOU,
            union_iou,
            f"{len(partition)} pieces, relative area difference {rel:.2e}",
        )
    )
    ok_limits = shape_area > SHAPE_MIN_AREA * scale2 and all(
        min_a * scale2 - 1e-6 <= a <= max_a * scale2 + 1e-6 for a in part_areas
    )
    checks.append(
        Finding(
            "area-limits",
            ok_limits,
            min(part_areas) if part_areas else 0.0,
            f"shape {shape_area:.0f} px², pieces {', '.join(f'{a:.0f}' for a in part_areas)}",
        )
    )

    candidates = record["candidates"]
    key = int(record["key"])
    counts_ok = len(candidates) == 4 and all(len(c["pieces"]) == m for c in candidates)
    checks.append(Finding("piece-count", counts_ok, float(m), f"{len(candidates)} candidates"))
    if not counts_ok or not 0 <= key < len(candidates):
        checks.append(Finding("key-index", False, float(key), "no such candidate"))
        return Verdict(tuple(checks))

    # Rotations and sources
    bad_rot, bad_src = [], []
    for ci, cand in enumerate(candidates):
        for pi, piece in enumerate(cand["pieces"]):
            rot = piece["rotation"]
            if not isinstance(rot, int) or rot not in ROTATIONS:
                bad_rot.append(f"{ci}.{pi}")
                continue
            src = piece["source"]
            pool = (
                partition if src["shape"] == "original" else donors[int(src["shape"].split("-")[1])]
            )
            mod = piece.get("modification") or {}
            factor = float(mod.get("factor", 1.0)) if mod.get("kind") == "scaled" else 1.0
            expected = _shown_from_source(pool[int(src["piece"])], rot, factor)
            shown = as_points(piece["polygon"])
            if signed_area(shown) <= 0 or not _same_vertices(shown, expected, 0.01):
                bad_src.append(f"{ci}.{pi}")
    checks.append(
        Finding("rotations-multiple-of-90", not bad_rot, float(len(bad_rot)), " ".join(bad_rot))
    )
    checks.append(
        Finding(
            "shown-pieces-match-sources",
            not bad_src,
            float(len(bad_src)),
            "rotated copies of their sources, never mirrored" if not bad_src else " ".join(bad_src),
        )
    )

    # Key reassembles
    key_pieces = candidates[key]["pieces"]
    key_area = sum(polygon_area(p["polygon"]) for p in key_pieces)
    key_rel = abs(key_area - shape_area) / shape_area
    checks.append(
        Finding(
            "key-area-matches",
            key_rel <= AREA_TOLERANCE,
            key_rel,
            f"pieces {key_area:.1f} px², shape {shape_area:.1f} px²",
        )
    )
    placed = []
    for p in key_pieces:
        back = rotate_polygon(as_points(p["polygon"]), -int(p["rotation"]) % 360)
        src = p["source"]
        target = partition[int(src["piece"])] if src["shape"] == "original" else back
        placed.append(_place_like(back, target))
    key_iou = cover_iou(coverage(placed, size, _RASTER_SCALE), shape_mask)
    checks.append(
        Finding(
            "key-placement-covers-shape",
            key_iou >= PLACEMENT_IOU,
            key_iou,
            "each piece turned back and moved onto its place",
        )
    )

    # Distractors
    for ci, cand in enumerate(candidates):
        if ci == key:
            continue
        shown = [p["polygon"] for p in cand["pieces"]]
        area = sum(polygon_area(p) for p in shown)
        d_rel = abs(area - shape_area) / shape_area
        placed_d, iou_matrix, assign = best_placement(shown, partition)
        d_iou = cover_iou(coverage(placed_d, size, _RASTER_SCALE), shape_mask)
        reassembles = d_rel <= AREA_TOLERANCE and d_iou >= PLACEMENT_IOU
        checks.append(
            Finding(
                f"candidate-{ci}-does-not-reassemble",
                not reassembles,
                d_iou,
                f"relative area difference {d_rel:.2e}, best placement IoU {d_iou:.4f}",
            )
        )
        differing = sum(
            1 for i, j in enumerate(assign) if j < 0 or iou_matrix[i, j] < SAME_PIECE_IOU
        )
        checks.append(
            Finding(
                f"candidate-{ci}-one-piece-changed",
                differing == 1,
                float(differing),
                f"{differing} {'piece' if differing == 1 else 'pieces'} not found in the shape",
            )
        )

    # Layout
    overlaps = 0
    outside = 0
    for cand in candidates:
        boxes = [p["box"] for p in cand["pieces"]]
        for i, a in enumerate(boxes):
            if a[0] < -0.5 or a[1] < -0.5 or a[2] > size + 0.5 or a[3] > size + 0.5:
                outside += 1
            for b in boxes[i + 1 :]:
                if min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1]):
                    overlaps += 1
    checks.append(
        Finding(
            "layout-no-overlap",
            overlaps == 0 and outside == 0,
            float(overlaps + outside),
            f"{overlaps} overlapping, {outside} outside",
        )
    )
    return Verdict(tuple(checks))


# --------------------------------------------------------------------------------------------
# Generator


def _pairwise_triple(
    pool: Sequence[tuple[int, int, float]], anchor: float, rng: np.random.Generator
) -> list[tuple[int, int]] | None:
    """Three pieces of the pool from three different shapes whose areas, with the anchor's, lie
    pairwise within :data:`BALANCED_AREA_RATIO` (a random one of them, or None)."""
    lo, hi = BALANCED_AREA_RATIO

    def close(a: float, b: float) -> bool:
        return lo <= max(a, b) / min(a, b) <= hi

    order = [pool[int(i)] for i in rng.permutation(len(pool))]
    for i, x in enumerate(order):
        for j in range(i + 1, len(order)):
            y = order[j]
            if y[0] == x[0] or not close(x[2], y[2]):
                continue
            for z in order[j + 1 :]:
                if z[0] in (x[0], y[0]) or not (close(x[2], z[2]) and close(y[2], z[2])):
                    continue
                return [(x[0], x[1]), (y[0], y[1]), (z[0], z[1])]
    return None


class ShapeCompositionGenerator(ItemGenerator):
    """Shape-composition items at one level (m pieces), deterministic for a seed.

    ``rejections`` counts, by reason, the attempts that did not become items (construction
    dead ends and failed vet checks)."""

    family = FAMILY

    def __init__(self, pieces: int = 3, size: int = 224, design: str = "balanced") -> None:
        if pieces not in LEVELS:
            raise ValueError(f"pieces must be one of {LEVELS}, not {pieces}")
        super().__init__(design, DESIGNS)
        self.pieces = pieces
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
        """Yield ``count`` vetted items; item i depends only on (seed, m, size, i), so they are
        the same bytes over any number of ``workers`` (default: every core for a large set,
        :func:`~studio.stimuli.loop.pool_workers`). ``indices``: only those items, in order."""
        n_workers = 1 if indices is not None else pool_workers(count, workers)
        if n_workers > 1:
            return pooled_items(self, count, seed, n_workers, progress)
        return vetted_items(
            FAMILY,
            count,
            seed,
            (self.pieces, self.size),
            draw=self._draw,
            vet=vet_composition_item,
            render=self.render,
            sheet=stitch_sheet,
            rejections=self.rejections,
            progress=progress,
            indices=indices,
        )

    def _draw(self, rng: np.random.Generator, _index: int) -> dict[str, Any] | None:
        """One record, or None for a construction dead end (counted by its reason)."""
        try:
            return self._record(rng)
        except _Rejected as exc:
            self._reject(exc.reason)
            return None

    def _record(self, rng: np.random.Generator) -> dict[str, Any]:
        """One item's record in the generator's design (raises _Rejected for a dead end)."""
        if self.design == "balanced":
            return self._record_balanced(rng)
        return self._record_published(rng)

    def _record_balanced(self, rng: np.random.Generator) -> dict[str, Any]:
        """The balanced design: four pieces, one from each of four cut shapes, whose areas all
        lie pairwise within :data:`BALANCED_AREA_RATIO` of each other; then the key uniformly
        among them — its shape is the question, the other three shapes are the donors."""
        m, size = self.pieces, self.size
        lo, hi = BALANCED_AREA_RATIO
        shapes: list[tuple[Polygon, list[dict[str, Any]], list[Polygon], list[dict[str, Any]]]] = []
        first_target = -1
        found: list[tuple[int, int]] | None = None
        pool: list[tuple[int, int, float]] = []  # (shape, piece, area) near the first piece
        for _ in range(BALANCED_SHAPE_TRIES):
            try:
                shape, shape_cuts = make_shape(rng, size)
                pieces, piece_cuts = cut_into_pieces(shape, m, rng, size)
            except _Rejected:
                continue
            shape_r = as_points(round_polygon(shape))
            pieces_r = [as_points(round_polygon(p)) for p in pieces]
            shapes.append((shape_r, shape_cuts, pieces_r, piece_cuts))
            d = len(shapes) - 1
            if first_target < 0:
                first_target = int(rng.integers(m))
                anchor = polygon_area(pieces_r[first_target])
                continue
            for k, p in enumerate(pieces_r):
                a = polygon_area(p)
                if lo <= max(a, anchor) / min(a, anchor) <= hi:
                    pool.append((d, k, a))
            found = _pairwise_triple(pool, anchor, rng)
            if found is not None:
                break
        if found is None:
            raise _Rejected("no-similar-donor")
        members = [(0, first_target), *found]
        key_member = int(rng.integers(4))
        key_shape, target = members[key_member]
        foils = [mb for i, mb in enumerate(members) if i != key_member]
        shape_r, shape_cuts, pieces_r, piece_cuts = shapes[key_shape]
        shape_area = polygon_area(shape_r)
        key_area = polygon_area(pieces_r[target])
        donors = [shapes[d][2] for d, _ in foils]
        donor_shapes = [shapes[d][0] for d, _ in foils]
        foil_areas = [polygon_area(donors[i][k]) for i, (_, k) in enumerate(foils)]
        if min(abs(a - key_area) for a in foil_areas) < 2 * AREA_TOLERANCE * shape_area:
            raise _Rejected("no-similar-donor")
        rank = sum(1 for a in foil_areas if a < key_area)
        return self._assemble(
            rng,
            (shape_r, shape_cuts, pieces_r, piece_cuts),
            target,
            (donors, donor_shapes),
            ["key", "replaced", "replaced", "replaced"],
            [None, *((i, k) for i, (_, k) in enumerate(foils))],
            rank,
        ) | {"design": "balanced"}

    def _record_published(self, rng: np.random.Generator) -> dict[str, Any]:
        m, size = self.pieces, self.size
        shape, shape_cuts = make_shape(rng, size)
        pieces, piece_cuts = cut_into_pieces(shape, m, rng, size)
        shape_r = as_points(round_polygon(shape))
        pieces_r = [as_points(round_polygon(p)) for p in pieces]
        areas = [polygon_area(p) for p in pieces_r]
        shape_area = polygon_area(shape_r)
        target = int(rng.integers(m))

        # Which distractors show a smaller changed piece than the key: as many as a uniformly
        # drawn rank, so the key's piece (and total area) is not the middle one more often
        # than chance; a symmetric ± per distractor would make it the middle one 3 times in 4.
        below_count = int(rng.integers(4))
        smaller = [bool(v) for v in rng.permutation([1] * below_count + [0] * (3 - below_count))]
        # distractor slots: 0, 1 replaced; 2 scaled

        # Donor pieces of similar area from other shapes, narrowed to the band before drawing.
        lo, hi = REPLACEMENT_AREA_BAND
        min_abs = 2 * AREA_TOLERANCE * shape_area
        donors: list[list[Polygon]] = []
        donor_shapes: list[Polygon] = []
        pools: dict[bool, list[tuple[int, int]]] = {True: [], False: []}
        needed = {flag: smaller[:2].count(flag) for flag in (True, False)}
        for _ in range(12):
            try:
                dshape, _ = make_shape(rng, size)
                dpieces, _ = cut_into_pieces(dshape, m, rng, size)
            except _Rejected:
                continue
            d = len(donors)
            donors.append([as_points(round_polygon(p)) for p in dpieces])
            donor_shapes.append(as_points(round_polygon(dshape)))
            for k, p in enumerate(donors[-1]):
                delta = polygon_area(p) - areas[target]
                if lo * areas[target] <= abs(delta) <= hi * areas[target] and abs(delta) >= min_abs:
                    pools[delta < 0].append((d, k))
            if all(len({d for d, _ in pools[f]}) >= n for f, n in needed.items()):
                break
        if any(len(pools[f]) < n for f, n in needed.items()):
            raise _Rejected("no-similar-donor")
        # two replacements, from two different donor shapes where the pools allow
        first = pools[smaller[0]][int(rng.integers(len(pools[smaller[0]])))]
        rest = [p for p in pools[smaller[1]] if p != first]
        others = [p for p in rest if p[0] != first[0]] or rest
        second = others[int(rng.integers(len(others)))]
        band = SCALE_BANDS[0] if smaller[2] else SCALE_BANDS[1]
        factor = round(float(rng.uniform(*band)), 3)

        kinds = ["key", "replaced", "replaced", "scaled"]
        return self._assemble(
            rng,
            (shape_r, shape_cuts, pieces_r, piece_cuts),
            target,
            (donors, donor_shapes),
            kinds,
            [None, first, second, factor],
            below_count,
        )

    def _assemble(
        self,
        rng: np.random.Generator,
        original: tuple[Polygon, list[dict[str, Any]], list[Polygon], list[dict[str, Any]]],
        target: int,
        donor_sets: tuple[list[list[Polygon]], list[Polygon]],
        kinds: list[str],
        changes: list[Any],
        key_area_rank: int,
    ) -> dict[str, Any]:
        """The record: candidate k of ``kinds`` (k = 0 the key) shows the shape's pieces with
        the target piece replaced by donor piece ``changes[k]`` (d, k) or scaled by it; the
        candidates in random order, each piece turned at random, pieces shuffled, laid out."""
        m, size = self.pieces, self.size
        shape_r, shape_cuts, pieces_r, piece_cuts = original
        donors, donor_shapes = donor_sets
        areas = [polygon_area(p) for p in pieces_r]
        shape_area = polygon_area(shape_r)
        order = rng.permutation(4).tolist()  # candidate position → kind index
        key = order.index(0)
        cand_specs: list[list[dict[str, Any]]] = []
        for pos in range(4):
            kind = kinds[order[pos]]
            spec = []
            for j in range(m):
                entry: dict[str, Any] = {
                    "source": {"shape": "original", "piece": j},
                    "modification": None,
                }
                if j == target and kind == "replaced":
                    d, k = changes[order[pos]]
                    entry["source"] = {"shape": f"donor-{d}", "piece": k}
                    entry["modification"] = {
                        "kind": "replaced",
                        "replaces": j,
                        "area_ratio": round(polygon_area(donors[d][k]) / areas[j], 4),
                    }
                elif j == target and kind == "scaled":
                    entry["modification"] = {"kind": "scaled", "factor": changes[order[pos]]}
                entry["rotation"] = int(ROTATIONS[int(rng.integers(4))])
                spec.append(entry)
            perm = rng.permutation(m).tolist()
            cand_specs.append([spec[p] for p in perm])

        shown_all: list[list[list[list[float]]]] = []
        for spec in cand_specs:
            shown_c = []
            for entry in spec:
                src = entry["source"]
                poly = (
                    pieces_r[src["piece"]]
                    if src["shape"] == "original"
                    else donors[int(src["shape"].split("-")[1])][src["piece"]]
                )
                mod = entry["modification"] or {}
                f = mod.get("factor", 1.0) if mod.get("kind") == "scaled" else 1.0
                shown_c.append(round_polygon(_shown_from_source(poly, entry["rotation"], f)))
            shown_all.append(shown_c)
        pad = max(4.0, size / 28)
        scale, all_boxes = _layout(shown_all, size, pad)
        if scale < 0.2:
            raise _Rejected("pieces-too-large-to-lay-out")
        candidates = []
        for pos, (spec, shown_c) in enumerate(zip(cand_specs, shown_all, strict=True)):
            pieces_out = []
            for entry, poly, box in zip(spec, shown_c, all_boxes[pos], strict=True):
                pieces_out.append({**entry, "polygon": poly, "box": box})
            kind = kinds[order[pos]]
            candidates.append(
                {
                    "kind": kind,
                    "modified_piece": None if kind == "key" else target,
                    "pieces": pieces_out,
                }
            )
        return {
            "task": FAMILY,
            "size": size,
            "m": m,
            "level": LEVELS.index(m) + 1,
            "area_limits": {
                "shape_min": SHAPE_MIN_AREA,
                "piece_min": piece_area_limits(m)[0],
                "piece_max": PIECE_MAX_AREA,
            },
            "shape": {
                "polygon": round_polygon(shape_r),
                "area": round(shape_area, 2),
                "cuts": shape_cuts,
            },
            "pieces": [
                {"polygon": round_polygon(p), "area": round(a, 2)}
                for p, a in zip(pieces_r, areas, strict=True)
            ],
            "piece_cuts": piece_cuts,
            "donors": [
                {
                    "polygon": round_polygon(ds),
                    "pieces": [
                        {"polygon": round_polygon(p), "area": round(polygon_area(p), 2)} for p in dp
                    ],
                }
                for ds, dp in zip(donor_shapes, donors, strict=True)
            ],
            "target_piece": target,
            "key_area_rank": key_area_rank,
            "candidates": candidates,
            "key": key,
            "piece_scale": scale,
        }

    @staticmethod
    def render(record: dict[str, Any]) -> dict[str, Image.Image]:
        """The question and the four candidate images, re-made from the record alone."""
        size = int(record["size"])
        images = {"question": draw_polygons([record["shape"]["polygon"]], size)}
        scale = float(record["piece_scale"])
        for k, cand in enumerate(record["candidates"]):
            polys = [p["polygon"] for p in cand["pieces"]]
            offsets = [p["box"][:2] for p in cand["pieces"]]
            images[f"candidate-{k}"] = draw_polygons(polys, size, offsets, scale)
        return images


def render_composition_record(
    record: Mapping[str, Any],
) -> tuple[dict[str, Image.Image], Image.Image]:
    """The family's ``render_record``: the question, the four candidates and the sheet,
    re-drawn from a stored record (an ``items.jsonl`` line or the bare record) by the
    generator's own drawing and layout (:func:`~studio.stimuli.loop.drawn_item`): generation's
    pictures, to the byte."""
    return drawn_item(dict(record), ShapeCompositionGenerator.render, stitch_sheet)
