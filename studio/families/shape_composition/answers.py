"""What each composition candidate shows, read from the item record (the tag probe and the
answer-set audit; :mod:`studio.stimuli.symbolic`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from studio.stimuli.symbolic import (
    ANGLE_ROUND_DEG,
    EDGE_ROUND_PX,
    EDGE_ROUND_REL,
    PIECE_AREA_BIN,
    TOTAL_AREA_BIN,
    Attributes,
    one,
)


def _polygon_signature(poly: Sequence[Sequence[float]], relative: bool) -> str:
    """The polygon's cyclic sequence of (edge length, turning angle), started where it sorts
    first: equal for two polygons iff one is the other turned (pieces are never mirrored), and,
    with ``relative``, scaled. Vertex order is made counter-clockwise on screen first."""
    pts = [(float(x), float(y)) for x, y in poly]
    area2 = sum(
        pts[i][0] * pts[(i + 1) % len(pts)][1] - pts[(i + 1) % len(pts)][0] * pts[i][1]
        for i in range(len(pts))
    )
    if area2 < 0:
        pts = pts[::-1]
    n = len(pts)
    unit = math.sqrt(abs(area2) / 2) if relative else 1.0
    step = EDGE_ROUND_REL if relative else EDGE_ROUND_PX
    edges = []
    for i in range(n):
        (x0, y0), (x1, y1), (x2, y2) = pts[i - 1], pts[i], pts[(i + 1) % n]
        length = math.hypot(x2 - x1, y2 - y1) / max(unit, 1e-9)
        turn = math.degrees(math.atan2(y2 - y1, x2 - x1) - math.atan2(y1 - y0, x1 - x0)) % 360
        edges.append(
            (round(length / step) * step, round(turn / ANGLE_ROUND_DEG) * ANGLE_ROUND_DEG % 360)
        )
    text = [f"{e:.2f}@{a:.0f}" for e, a in edges]
    return min("/".join(text[i:] + text[:i]) for i in range(n))


def composition_answers(record: Mapping[str, Any]) -> list[Attributes]:
    """Each candidate's pieces: how many, their shapes up to rotation (``piece-shapes``) and up
    to rotation and scale (``piece-forms``: a scaled piece shares it with its original), their
    binned areas, and the candidate's binned total area and its rank among the candidates; and
    the pieces that are not in every candidate (``changed-forms``/``changed-areas``: where the
    candidates differ, so a scaled twin of a changed piece shows as a shared form)."""
    from studio.stimuli.geometry import polygon_area

    totals = [sum(polygon_area(p["polygon"]) for p in c["pieces"]) for c in record["candidates"]]
    order = np.argsort(np.argsort(np.round(totals, 3), kind="stable"), kind="stable")
    scale = (224.0 / float(record.get("size", 224))) ** 2
    shapes_of = [
        [_polygon_signature(p["polygon"], False) for p in c["pieces"]] for c in record["candidates"]
    ]
    common = set.intersection(*(set(s) for s in shapes_of)) if shapes_of else set()
    out: list[Attributes] = []
    for cand, total, rank, sigs in zip(record["candidates"], totals, order, shapes_of, strict=True):
        polys = [p["polygon"] for p in cand["pieces"]]
        areas = [polygon_area(p) * scale for p in polys]
        changed = [p for p, sig in zip(polys, sigs, strict=True) if sig not in common]
        out.append(
            {
                "pieces": one(len(polys)),
                "piece-shapes": frozenset(_polygon_signature(p, False) for p in polys),
                "piece-forms": frozenset(_polygon_signature(p, True) for p in polys),
                "piece-areas": frozenset(f"{int(a // PIECE_AREA_BIN)}" for a in areas),
                "total-area": one(int(total * scale // TOTAL_AREA_BIN)),
                "area-rank": one(int(rank)),
                "changed-forms": frozenset(_polygon_signature(p, True) for p in changed),
                "changed-areas": frozenset(
                    f"{int(polygon_area(p) * scale // PIECE_AREA_BIN)}" for p in changed
                ),
            }
        )
    return out
