"""Exact geometry of convex polygons in image coordinates (x right, y down; one unit a pixel).

Shared stimulus code: the shape-composition family cuts, turns and places its pieces with it, and
the symbolic answer audits (:mod:`studio.stimuli.symbolic`) measure pieces with it. Polygons are
float vertex lists; cuts are exact (both halves share the very same intersection points), so the
pieces of a cut tile their parent up to float rounding, and rasters are sampled from the exact
polygons rather than drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Point = tuple[float, float]
Polygon = list[Point]

#: Decimals a vertex keeps in a record (0.001 px: areas stay exact to well under a pixel).
DECIMALS = 3


def polygon_area(poly: Sequence[Sequence[float]]) -> float:
    """Area of a simple polygon (shoelace); the sign is dropped, so vertex order does not matter."""
    return abs(signed_area(poly))


def signed_area(poly: Sequence[Sequence[float]]) -> float:
    """Shoelace area with sign: rotations keep it, a mirror image flips it (the no-flip test)."""
    s = 0.0
    n = len(poly)
    for i in range(n):
        x0, y0 = poly[i]
        x1, y1 = poly[(i + 1) % n]
        s += x0 * y1 - x1 * y0
    return s / 2.0


def polygon_centroid(poly: Sequence[Sequence[float]]) -> Point:
    """Area centroid: moves with the polygon under rotation, so it pins a piece to its place."""
    a = signed_area(poly)
    if abs(a) < 1e-12:
        xs, ys = zip(*poly, strict=True)
        return (sum(xs) / len(xs), sum(ys) / len(ys))
    cx = cy = 0.0
    n = len(poly)
    for i in range(n):
        x0, y0 = poly[i]
        x1, y1 = poly[(i + 1) % n]
        cross = x0 * y1 - x1 * y0
        cx += (x0 + x1) * cross
        cy += (y0 + y1) * cross
    return (cx / (6 * a), cy / (6 * a))


def _clean(poly: Sequence[Sequence[float]], eps: float = 1e-9) -> Polygon:
    out: Polygon = []
    for x, y in poly:
        p = (float(x), float(y))
        if not out or abs(p[0] - out[-1][0]) > eps or abs(p[1] - out[-1][1]) > eps:
            out.append(p)
    while (
        len(out) > 1 and abs(out[0][0] - out[-1][0]) <= eps and abs(out[0][1] - out[-1][1]) <= eps
    ):
        out.pop()
    if len(out) >= 3 and signed_area(out) < 0:
        out.reverse()
    return out


def split_polygon(poly: Sequence[Point], a: float, b: float, c: float) -> tuple[Polygon, Polygon]:
    """Split a convex polygon by the line ``a·x + b·y = c`` into (negative side, positive side).

    Both halves are built in one pass so that they share the very same intersection points, and
    the pieces of a cut tile their parent exactly (up to float rounding)."""
    neg: Polygon = []
    pos: Polygon = []
    n = len(poly)
    for i in range(n):
        p = poly[i]
        q = poly[(i + 1) % n]
        dp = a * p[0] + b * p[1] - c
        dq = a * q[0] + b * q[1] - c
        if dp <= 0:
            neg.append(p)
        if dp >= 0:
            pos.append(p)
        if (dp < 0 < dq) or (dq < 0 < dp):
            t = dp / (dp - dq)
            x = (p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1]))
            neg.append(x)
            pos.append(x)
    neg = _clean(neg)
    pos = _clean(pos)
    return (neg if len(neg) >= 3 else []), (pos if len(pos) >= 3 else [])


def clip_convex(subject: Sequence[Point], clip: Sequence[Point]) -> Polygon:
    """Intersection of two convex polygons (Sutherland–Hodgman): exact overlap of two pieces."""
    out: Polygon = _clean(subject)
    clip = _clean(clip)
    n = len(clip)
    for i in range(n):
        if len(out) < 3:
            return []
        (x0, y0), (x1, y1) = clip[i], clip[(i + 1) % n]
        # Inside of a positively oriented edge: cross((p1 - p0), (p - p0)) >= 0.
        a, b = y1 - y0, -(x1 - x0)
        c = a * x0 + b * y0
        # cross = (x1-x0)(y-y0) - (y1-y0)(x-x0) = -(a x + b y - c); inside ⇔ a x + b y - c <= 0.
        out, _ = split_polygon(out, a, b, c)
    return out if len(out) >= 3 else []


def rotate_polygon(poly: Sequence[Sequence[float]], degrees: int) -> Polygon:
    """Rotate clockwise on screen by a multiple of 90° about the origin (exact: swaps and signs).

    In image coordinates (y down) a clockwise quarter turn is (x, y) → (−y, x)."""
    if degrees % 90:
        raise ValueError(f"rotations are multiples of 90°, not {degrees}")
    k = (degrees // 90) % 4
    out = [(float(x), float(y)) for x, y in poly]
    for _ in range(k):
        out = [(-y, x) for x, y in out]
    return out


def translate_polygon(poly: Sequence[Sequence[float]], dx: float, dy: float) -> Polygon:
    """Move a polygon; with the quarter turns this is every motion a piece may make."""
    return [(x + dx, y + dy) for x, y in poly]


def scale_polygon(poly: Sequence[Sequence[float]], factor: float) -> Polygon:
    """Scale about the centroid: the scaled piece stays where it was, only its size changes."""
    cx, cy = polygon_centroid(poly)
    return [(cx + factor * (x - cx), cy + factor * (y - cy)) for x, y in poly]


def to_origin(poly: Sequence[Sequence[float]]) -> Polygon:
    """Translate so the bounding box starts at (0, 0): how a piece is stored once it is shown."""
    xs = [p[0] for p in poly]
    ys = [p[1] for p in poly]
    return translate_polygon(poly, -min(xs), -min(ys))


def round_polygon(poly: Sequence[Sequence[float]], decimals: int = DECIMALS) -> list[list[float]]:
    """Vertices rounded for the record (0.001 px: areas stay exact to well under a pixel)."""
    return [[round(float(x), decimals) + 0.0, round(float(y), decimals) + 0.0] for x, y in poly]


def bbox(poly: Sequence[Sequence[float]]) -> tuple[float, float, float, float]:
    """(min x, min y, max x, max y): where a piece lies, for packing and raster windows."""
    xs = [p[0] for p in poly]
    ys = [p[1] for p in poly]
    return min(xs), min(ys), max(xs), max(ys)


def as_points(poly: Sequence[Sequence[float]]) -> Polygon:
    """Float (x, y) tuples from a record's vertex lists, so geometry never sees JSON lists."""
    return [(float(p[0]), float(p[1])) for p in poly]


def polygon_iou(p: Sequence[Point], q: Sequence[Point]) -> float:
    """Exact IoU of two convex polygons as placed."""
    inter = clip_convex(p, q)
    ai = polygon_area(inter) if inter else 0.0
    union = polygon_area(p) + polygon_area(q) - ai
    return ai / union if union > 0 else 0.0


def coverage(polys: Sequence[Sequence[Sequence[float]]], size: int, scale: int = 1) -> np.ndarray:
    """How many of the convex polygons cover each pixel centre of a ``size·scale`` grid.

    Sampled exactly with half-plane tests (not a drawing routine, which paints shared edges
    into both neighbours), so pieces that tile the shape cover each pixel once and an overlap
    shows up as a count of 2."""
    n = size * scale
    counts = np.zeros((n, n), dtype=np.int16)
    for poly in polys:
        pts = _clean(poly)
        if len(pts) < 3:
            continue
        x0, y0, x1, y1 = bbox(pts)
        c0, c1 = max(0, math.floor(x0 * scale)), min(n, math.ceil(x1 * scale) + 1)
        r0, r1 = max(0, math.floor(y0 * scale)), min(n, math.ceil(y1 * scale) + 1)
        if c0 >= c1 or r0 >= r1:
            continue
        xs = (np.arange(c0, c1) + 0.5) / scale
        ys = (np.arange(r0, r1) + 0.5) / scale
        inside = np.ones((r1 - r0, c1 - c0), dtype=bool)
        for i in range(len(pts)):
            (ax, ay), (bx, by) = pts[i], pts[(i + 1) % len(pts)]
            # inside of a positively oriented edge: cross(b − a, p − a) ≥ 0
            inside &= ((bx - ax) * (ys[:, None] - ay) - (by - ay) * (xs[None, :] - ax)) >= 0
        counts[r0:r1, c0:c1] += inside
    return counts


def cover_iou(counts: np.ndarray, target: np.ndarray) -> float:
    """IoU of "covered exactly once" with the target mask; overlaps and gaps both count against.

    A plain union would forgive a too-large piece that spills over its neighbours."""
    once = counts == 1
    union = np.logical_or(counts > 0, target).sum()
    return float(np.logical_and(once, target).sum() / union) if union else 0.0
