"""Another foil for a polycube-rotation item, drawn as its design draws that foil (the family's
``foil_candidates``: the curator's Replace foil, issue 27).

- **Balanced**: the candidates are the set {A, A′, B, B′}, one of them the question, each turned
  by its own random rotation; which shape a foil is cannot change without breaking the two
  mirror pairs that keep every candidate alike when the question is hidden. What the design
  draws for a foil is its turn and its view, so a replacement is the same shape turned by
  another of the 24 rotations and seen anew.
- **Published**: the foils are the question turned by three different rotations (never the
  identity); a replacement is the question turned by a rotation none of them uses, seen anew.

A new view is drawn in the old one's azimuth quadrant (the five pictures keep covering all four
quadrants) and redrawn while it hides a cube, as the generator does; the item's scale holds
(a turn does not change how far a shape reaches from its centre).

Core layer: numpy and :mod:`studio.render3d` (lazily, for the visibility of a view); no Qt.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from studio.families.polycube_rotation.generator import (
    FAMILY,
    VIEW_TRIES,
    Cell,
    _renderer_for,
    _rotate,
    fewest_visible_pixels,
    min_visible_pixels,
    sample_view,
    vet_polycube_item,
)
from studio.stimuli.foils import check_foil, foil_rng, keep_vetted
from studio.stimuli.polycube import ROTATIONS_3D

if TYPE_CHECKING:
    from studio.render3d import Renderer

Shown = tuple[tuple[int, int, int], ...]


def polycube_foils(
    record: Mapping[str, Any],
    answer_index: int,
    seed: int,
    n: int,
    renderer: Renderer | None = None,
) -> list[dict[str, Any]]:
    """Up to ``n`` records of the item with candidate ``answer_index`` (a foil) turned and seen
    anew (module docstring); the question, the key and the other candidates unchanged, each
    vetted (:func:`vet_polycube_item`, with ``renderer`` or this thread's). Deterministic for
    ``seed``."""
    cands = list(record["candidates"])
    check_foil(record, answer_index, int(record["key"]), len(cands))
    rng = foil_rng(seed, answer_index, FAMILY)
    taken = {_shown(c["cells"]) for c in cands}
    return keep_vetted(
        _drafts(record, answer_index, rng, renderer),
        taken,
        lambda r: vet_polycube_item(r, renderer),
        n,
    )


def _shown(cells: Sequence[Sequence[int]]) -> Shown:
    """What a candidate shows, whatever the order of its cubes."""
    return tuple(sorted((int(x), int(y), int(z)) for x, y, z in cells))


def _cell(c: Sequence[int]) -> Cell:
    return (int(c[0]), int(c[1]), int(c[2]))


def _drafts(
    record: Mapping[str, Any],
    i: int,
    rng: np.random.Generator,
    renderer: Renderer | None,
) -> Iterator[tuple[Shown, dict[str, Any]]]:
    cands = record["candidates"]
    foil = cands[i]
    if record.get("design") == "balanced":
        source: list[Cell] = [_cell(c) for c in record["set"]["shapes"][foil["shape"]]]
        turns = list(range(len(ROTATIONS_3D)))
    else:  # the question turned by a rotation no other "same" candidate uses, never identity
        source = [_cell(c) for c in record["question"]["cells"]]
        used = [np.asarray(c["rotation"]) for j, c in enumerate(cands) if j != i and c["same"]]
        turns = [
            t
            for t in range(1, len(ROTATIONS_3D))
            if not any(np.array_equal(ROTATIONS_3D[t], u) for u in used)
        ]
    own = np.asarray(foil["rotation"])
    turns = [t for t in turns if not np.array_equal(ROTATIONS_3D[t], own)]
    quadrant = int(float(foil["view"]["azimuth"]) // 90) % 4
    size, scale = int(record["size"]), float(record["scale"])
    threshold = min_visible_pixels(size)
    for t in rng.permutation(len(turns)).tolist():
        r = ROTATIONS_3D[turns[t]]
        cells = _rotate(source, r)
        for _ in range(VIEW_TRIES):
            view = sample_view(rng, quadrant)
            seen = fewest_visible_pixels(_renderer_for(size, renderer), cells, scale, view)
            if seen >= threshold:
                break
        else:
            continue  # no view shows every cube of this turn
        out = copy.deepcopy(dict(record))
        out["candidates"][i].update(cells=[list(c) for c in cells], rotation=r.tolist(), view=view)
        yield _shown(cells), out


__all__ = ["polycube_foils"]
