"""What each answer of a non-glyph item shows, read from its symbolic record (issue 11).

A blind solver that never looks at the question can still pick the key when the answer set
gives it away: KiVA's no-change option that is never the key, the polycube candidate that is
not a rotation of the other three, the composition candidate whose changed piece has a scaled
twin. The answers-only probes (:mod:`studio.baselines.probes`) look for exactly that, but they
need each answer described by what a person could read off it *alone*; this module provides
those descriptions for every stimulus family, from the record in ``items.jsonl``.

:func:`answer_attributes` returns one dict per answer, in answer order, mapping an attribute to
the set of its values (a set because some attributes hold several: the marks a cube view shows,
the pieces a candidate holds). Values are strings chosen so that *equality across answers of one
item means something a person could see* — the same shape up to rotation, the same mark turned
the same way next to the same neighbour — because the probes count how many other answers share
a value, and that count is where a candidate-only giveaway shows.

Core layer: numpy and the stimulus modules only; no torch, no Qt.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from studio.core.errors import StudioError

Attributes = dict[str, frozenset[str]]

#: Bins of areas (px² at 224 px): fine enough to tell a scaled piece, coarse enough to repeat
#: across items so a one-hot weight can be learnt.
PIECE_AREA_BIN = 2_000.0
TOTAL_AREA_BIN = 4_000.0
#: Rounding of polygon signatures: edge lengths in px (shape up to rotation) and in units of the
#: square root of the area (shape up to rotation and scale), angles in degrees.
EDGE_ROUND_PX = 0.5
EDGE_ROUND_REL = 0.02
ANGLE_ROUND_DEG = 2.0


def _one(value: Any) -> frozenset[str]:
    return frozenset({str(value)})


# ---------------------------------------------------------------------------------- KiVA


def kiva_answers(record: Mapping[str, Any]) -> list[Attributes]:
    """The extrapolation options (the pictured answers): what each after-picture shows, and the
    change from the test input it stands for (``change``: a transformation id or "no-change")."""
    question = next((q for q in record["questions"] if q.get("id") == "extrapolate"), None)
    if question is None:
        raise StudioError("a KiVA record without an extrapolation question")
    states = list(question["option_states"])
    ids = list(question["option_ids"])[: len(states)]
    test = record.get("objects", {}).get("test", {}).get("name", "?")
    out: list[Attributes] = []
    for state, change in zip(states, ids, strict=True):
        sx, sy = (float(v) for v in state.get("scale", (1.0, 1.0)))
        fx, fy = (bool(v) for v in state.get("reflection", (False, False)))
        colour = state.get("color") or "own"
        size = f"{sx:g}x{sy:g}"
        rotation = f"{float(state.get('rotation', 0.0)):g}"
        reflection = {(False, False): "none", (True, False): "x", (False, True): "y"}.get(
            (fx, fy), "both"
        )
        count = str(int(state.get("count", 1)))
        out.append(
            {
                "color": _one(colour),
                "size": _one(size),
                "count": _one(count),
                "rotation": _one(rotation),
                "reflection": _one(reflection),
                "object": _one(test),
                "state": _one("|".join((count, colour, size, rotation, reflection))),
                "change": _one(change),
                "change-domain": _one(change.partition(":")[0]),
            }
        )
    return out


# ---------------------------------------------------------------------------------- polycubes


def _shape_text(shape: Sequence[Sequence[int]]) -> str:
    return ";".join(",".join(str(int(v)) for v in c) for c in shape)


def polycube_answers(record: Mapping[str, Any]) -> list[Attributes]:
    """Each candidate's shape up to rotation (``one-sided``: two candidates share it iff one is
    a rotation of the other), up to rotation and reflection (``free``: mirror images share it),
    its chirality and, for a chiral shape, which of the two mirror images it is (``hand``: the
    one whose one-sided form sorts first is "L"; a generator that favours one hand shows here)."""
    from studio.stimuli.polycube import canonical_polycube, is_chiral_polycube, mirror_polycube

    out: list[Attributes] = []
    for cand in record["candidates"]:
        cells = [tuple(int(v) for v in c) for c in cand["cells"]]
        one_sided = canonical_polycube(cells, "one-sided")
        chiral = is_chiral_polycube(cells)
        if chiral:
            other = canonical_polycube(mirror_polycube(cells), "one-sided")
            hand = "L" if one_sided < other else "R"
        else:
            hand = "achiral"
        out.append(
            {
                "one-sided": _one(_shape_text(one_sided)),
                "free": _one(_shape_text(canonical_polycube(cells, "free"))),
                "chirality": _one("chiral" if chiral else "achiral"),
                "hand": _one(hand),
                "cubes": _one(len(cells)),
            }
        )
    return out


# ---------------------------------------------------------------------------------- composition


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
    from studio.families.shape_composition.generator import polygon_area

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
                "pieces": _one(len(polys)),
                "piece-shapes": frozenset(_polygon_signature(p, False) for p in polys),
                "piece-forms": frozenset(_polygon_signature(p, True) for p in polys),
                "piece-areas": frozenset(f"{int(a // PIECE_AREA_BIN)}" for a in areas),
                "total-area": _one(int(total * scale // TOTAL_AREA_BIN)),
                "area-rank": _one(int(rank)),
                "changed-forms": frozenset(_polygon_signature(p, True) for p in changed),
                "changed-areas": frozenset(
                    f"{int(polygon_area(p) * scale // PIECE_AREA_BIN)}" for p in changed
                ),
            }
        )
    return out


# ---------------------------------------------------------------------------------- cube nets


def _cube_view(view: Sequence[Mapping[str, Any]]) -> Attributes:
    """One cube view: its marks, each mark with its turn in its slot, the edge tokens (two
    neighbouring faces' marks, each turned relative to the shared edge — the same in every view
    of one cube that shows both faces) and the corner (the marks in cyclic order around the
    viewed corner, which a swap of two visible faces reverses)."""
    from studio.families.cube_net.generator import SLOTS, quarter_turns, turn_clockwise

    by_slot = {str(v["slot"]): (str(v["mark"]), int(v["rotation"])) for v in view}
    faces = []  # (mark, normal, up) in the viewer's frame
    for slot, normal, ref in SLOTS:
        mark, rot = by_slot[slot]
        faces.append((mark, normal, turn_clockwise(ref, normal, rot // 90)))
    edges = set()
    for i in range(3):
        for j in range(i + 1, 3):
            (ma, na, ua), (mb, nb, ub) = faces[i], faces[j]
            ka, kb = quarter_turns(nb, ua, na), quarter_turns(na, ub, nb)
            edges.add("|".join(sorted((f"{ma}:{ka}", f"{mb}:{kb}"))))
    marks = [f[0] for f in faces]
    start = marks.index(min(marks))
    corner = marks[start:] + marks[:start]
    return {
        "marks": frozenset(marks),
        "mark-set": _one(",".join(sorted(marks))),
        "slot-marks": frozenset(f"{s}:{m}:{r}" for s, (m, r) in sorted(by_slot.items())),
        "turns": frozenset(str(r) for _, r in by_slot.values()),
        "edges": frozenset(edges),
        "corner": _one(",".join(corner)),
    }


def cube_net_answers(record: Mapping[str, Any]) -> list[Attributes]:
    return [_cube_view(c["view"]) for c in record["candidates"]]


def symbolic_families() -> list[str]:
    """The registered families whose records describe their answers."""
    from studio.plugins import registry

    fams = registry("families")
    return [f for f in fams.ids() if fams.get(f).answer_attributes is not None]


def answer_attributes(family: str, record: Mapping[str, Any]) -> list[dict[str, frozenset[str]]]:
    """One dict per answer of an item record (as written in items.jsonl), in answer order:
    attribute → its values, read from the symbolic record only (see the module docstring),
    by the family's ``answer_attributes`` reader.

    KiVA: the three pictured extrapolation options. Polycube rotation, shape composition, cube
    nets: the four candidates. Raises StudioError for an unknown family or a record that lacks
    what the family's answers are made of."""
    from studio.plugins import registry

    fams = registry("families")
    known = symbolic_families()
    if family not in known:
        raise StudioError(
            f"no symbolic answer reader for family {family!r} (known: {', '.join(known)})"
        )
    reader = fams.get(family).load("answer_attributes")
    try:
        return reader(record)  # type: ignore[no-any-return]
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise StudioError(f"a {family} record cannot be read for its answers: {e!r}") from e
