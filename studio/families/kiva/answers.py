"""What each KiVA extrapolation option shows, read from the trial record (the tag probe and
the answer-set audit; :mod:`studio.stimuli.symbolic`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from studio.core.errors import StudioError
from studio.stimuli.symbolic import (
    Attributes,
    one,
)


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
                "color": one(colour),
                "size": one(size),
                "count": one(count),
                "rotation": one(rotation),
                "reflection": one(reflection),
                "object": one(test),
                "state": one("|".join((count, colour, size, rotation, reflection))),
                "change": one(change),
                "change-domain": one(change.partition(":")[0]),
            }
        )
    return out
