"""What each polycube view shows, read from the item record (the tag probe and the answer-set
audit; :mod:`studio.stimuli.symbolic`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from studio.stimuli.symbolic import (
    Attributes,
    one,
)


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
                "one-sided": one(_shape_text(one_sided)),
                "free": one(_shape_text(canonical_polycube(cells, "free"))),
                "chirality": one("chiral" if chiral else "achiral"),
                "hand": one(hand),
                "cubes": one(len(cells)),
            }
        )
    return out
