"""What each cube view shows, read from the item record (the tag probe and the answer-set
audit; :mod:`studio.stimuli.symbolic`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from studio.stimuli.symbolic import (
    Attributes,
    one,
)


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
        "mark-set": one(",".join(sorted(marks))),
        "slot-marks": frozenset(f"{s}:{m}:{r}" for s, (m, r) in sorted(by_slot.items())),
        "turns": frozenset(str(r) for _, r in by_slot.values()),
        "edges": frozenset(edges),
        "corner": one(",".join(corner)),
    }


def cube_net_answers(record: Mapping[str, Any]) -> list[Attributes]:
    return [_cube_view(c["view"]) for c in record["candidates"]]
