"""Another foil for a cube-net item, drawn as its design draws that foil (the family's
``foil_candidates``: the curator's Replace foil, issue 27).

- **Balanced** (the orbit): each foil is one cube of the folded cube's orbit under the item's
  group of changes, so which cube a foil is cannot change without changing the others; what the
  design draws for it is the corner it is seen from — any corner that no other cube of the set
  shows the same way. A replacement is the same cube seen from another such corner.
- **Published**: a foil is the folded cube with one change (two faces' marks swapped, or one
  visible face's mark turned) seen from a random corner, kept when no orientation of the true
  cube shows it. A replacement is drawn the same way, with a kind of change that keeps the
  item's kinds of distractors (what the board lists it by: its concept) as they are.

Core layer: no Qt, no torch.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from studio.families.cube_net.generator import (
    DISTRACTOR_KINDS,
    FAMILY,
    Cube,
    View,
    all_views,
    changed_cube,
    cube_from_net,
    cube_rotations,
    swap_faces,
    turn_face,
    vet_cube_net_item,
    view_from_json,
    view_of,
    view_to_json,
)
from studio.stimuli.foils import check_foil, foil_rng, keep_vetted

#: Published design: changed cubes drawn, at most, for one call.
MAX_DRAWS = 400


def cube_net_foils(
    record: Mapping[str, Any], answer_index: int, seed: int, n: int
) -> list[dict[str, Any]]:
    """Up to ``n`` records of the item with candidate ``answer_index`` (a foil) drawn again by
    the item's design (module docstring); the net, the key and the other candidates unchanged,
    each vetted (:func:`vet_cube_net_item`). Deterministic for ``seed``."""
    candidates = list(record["candidates"])
    check_foil(record, answer_index, int(record["key"]), len(candidates))
    rng = foil_rng(seed, answer_index, FAMILY)
    cube = cube_from_net(record["marks"])
    taken = {view_from_json(c["view"]) for c in candidates}
    if record.get("design") == "balanced":
        drafts = _orbit_drafts(record, answer_index, cube, rng)
    else:
        drafts = _changed_drafts(record, answer_index, cube, rng)
    return keep_vetted(drafts, taken, vet_cube_net_item, n)


def _with(
    record: Mapping[str, Any], i: int, view: View, orientation: Sequence[Sequence[int]], **what: Any
) -> dict[str, Any]:
    """The record with candidate ``i`` showing ``view`` from ``orientation`` (and, published,
    its new ``kind`` and ``modification``)."""
    out = copy.deepcopy(dict(record))
    cand = out["candidates"][i]
    cand.update(view=view_to_json(view), orientation=[list(row) for row in orientation], **what)
    out["distractor_kinds"] = [c["kind"] for c in out["candidates"] if c["kind"] != "key"]
    return out


def _orbit_cube(cube: Cube, modification: Mapping[str, Any] | None) -> Cube:
    """The folded cube changed by a balanced candidate's recorded steps."""
    for step in (modification or {}).get("steps", ()):
        if step["kind"] == "swap":
            cube = swap_faces(cube, *step["faces"])
        else:
            cube = turn_face(cube, step["face"], int(step["by"]))
    return cube


def _orbit_drafts(
    record: Mapping[str, Any], i: int, cube: Cube, rng: np.random.Generator
) -> Iterator[tuple[View, dict[str, Any]]]:
    """The foil's own cube from every corner no other cube of the set shows the same way, in
    a seeded order (the generator draws one of them uniformly)."""
    cubes = [_orbit_cube(cube, c.get("modification")) for c in record["candidates"]]
    others: set[View] = set()
    for j, c in enumerate(cubes):
        if j != i:
            others.update(all_views(c))
    rotations = cube_rotations()
    for r in rng.permutation(len(rotations)).tolist():
        view = view_of(cubes[i], rotations[r])
        if view not in others:
            yield view, _with(record, i, view, rotations[r])


def _changed_drafts(
    record: Mapping[str, Any], i: int, cube: Cube, rng: np.random.Generator
) -> Iterator[tuple[View, dict[str, Any]]]:
    """Changed cubes drawn as the published generator draws a distractor, with a kind that
    keeps the item's set of distractor kinds."""
    truth = set(all_views(cube))
    rotations = cube_rotations()
    cands = record["candidates"]
    kinds_now = {c["kind"] for c in cands if c["kind"] != "key"}
    rest = {c["kind"] for j, c in enumerate(cands) if j != i and c["kind"] != "key"}
    kinds = [k for k in DISTRACTOR_KINDS if rest | {k} == kinds_now]
    for _ in range(MAX_DRAWS if kinds else 0):
        kind = kinds[int(rng.integers(len(kinds)))]
        rot = rotations[int(rng.integers(len(rotations)))]
        modified, mod = changed_cube(cube, kind, rot, rng)
        view = view_of(modified, rot)
        if view not in truth:
            yield view, _with(record, i, view, rot, kind=kind, modification=mod)


__all__ = ["cube_net_foils"]
