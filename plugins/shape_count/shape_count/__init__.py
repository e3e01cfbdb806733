"""Shape-count matrices: a RAVEN-style family over polyominoes, added by a plugin.

Each of the three rows shows one polyomino (fixed size ``cells``), repeated 1-9 times per panel;
the count follows the row's rule (``progression``: +1 per panel; ``constant``: the same count).
The last panel is asked for. The answer set is symmetric (issue 11's lesson): the key's shape
and count each appear in exactly one foil too — ``{(S, c), (S, c'), (S', c), (S', c')}`` — so
no candidate stands out by what it shows alone, and only the rows tell which one is right. The
answers are drawn first and the rows from the key (issue 24): the two shapes and the two counts
each come from the values a key can take (a progression row ends on 3-9 copies), either one the
key's, so every answer could have been the key and an answers-only reader is at chance.

This module is light: the studio lists the family without importing numpy or Pillow; the
generator lives in :mod:`shape_count.generator`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from studio.families import Family, Option

RULES = ("progression", "constant")
#: The context panels (row-major, the asked-for panel left out) and the candidates.
CONTEXT = tuple(f"panel-{r}-{c}" for r in range(3) for c in range(3) if (r, c) != (2, 2))


def baseline_layout(record: Mapping[str, Any]) -> dict[str, Any]:
    """A 3×3 matrix with the last panel asked for, as the baselines read it."""
    return {
        "context": list(CONTEXT),
        "rows": (3, 3, 2),
        "answers": [f"candidate-{k}" for k in range(len(record["candidates"]))],
        "key": int(record["key"]),
        "rule": str(record["rule"]),
        "concept": f"{record['cells']}-cell",
        "layout": "matrix-3x3",
    }


def answer_attributes(record: Mapping[str, Any]) -> list[dict[str, frozenset[str]]]:
    """What each candidate shows on its own: its shape (up to rotation and reflection) and
    its count."""
    return [
        {"shape": frozenset({c["shape_id"]}), "count": frozenset({str(c["count"])})}
        for c in record["candidates"]
    ]


FAMILY = Family(
    id="shape-count",
    kind="stimulus",
    label="Shape-count matrices (plugin)",
    description="RAVEN-style 3×3 matrices: how many polyominoes complete the row",
    options=(
        Option(
            "rule",
            "choice",
            "progression",
            "progression: one more copy per panel; constant: the same count along the row",
            choices=RULES,
        ),
        Option(
            "cells",
            "int",
            4,
            "polyomino size in cells (4-5: an item needs four shapes, and there are two free "
            "triominoes)",
            minimum=4,
            maximum=5,
            flag="cells",
        ),
        Option("size", "int", 96, "panel size in pixels", minimum=48, maximum=512, preview=False),
    ),
    generator="shape_count.generator:ShapeCountGenerator",
    vet_record="shape_count.generator:vet_record",
    render_record="shape_count.generator:render_record",
    baseline_layout=baseline_layout,
    answer_attributes=answer_attributes,
)


def register(registries: Mapping[str, Any]) -> None:
    """The entry point (``analogy_studio.plugins``): add the family to the studio."""
    registries["families"].register(FAMILY.id, FAMILY)


__all__ = ["FAMILY", "answer_attributes", "baseline_layout", "register"]
