"""Another foil for a shape-composition item, drawn as its design draws that foil (the family's
``foil_candidates``: the curator's Replace foil, issue 27).

Every foil changes the same piece of the key (the item's ``target_piece``), so a replacement
changes that piece too, and the other pieces stay the shape's own:

- a **replaced** foil gets a piece of a freshly cut shape (:func:`make_shape`,
  :func:`cut_into_pieces`, the generator's own cuts), of "similar size" as its design says —
  balanced: its area within :data:`BALANCED_AREA_RATIO` of the key's piece and of the other
  foils' changed pieces, pairwise, as the four were drawn; published: within
  :data:`REPLACEMENT_AREA_BAND` of the key's piece;
- a **scaled** foil (published) gets a new factor from the same band (smaller or larger).

The new piece lies on the same side of the key's piece by area as the old one, so the item's
``key_area_rank`` (how many foils' changed pieces are smaller than the key's, drawn uniformly)
holds. Each piece of the new foil is turned at random and the pieces are shuffled, as the
generator lays out a candidate; it must pack at the item's common ``piece_scale`` (the other
candidates are drawn at that scale, unchanged). The new donor shape takes the old one's place
in ``donors`` when no other candidate used it, else it is added.

Core layer: no Qt, no torch.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from studio.families.shape_composition.generator import (
    AREA_TOLERANCE,
    BALANCED_AREA_RATIO,
    FAMILY,
    REPLACEMENT_AREA_BAND,
    ROTATIONS,
    SCALE_BANDS,
    _Rejected,
    _shelf_pack,
    _shown_from_source,
    cut_into_pieces,
    make_shape,
    vet_composition_item,
)
from studio.stimuli.foils import check_foil, foil_rng, keep_vetted
from studio.stimuli.geometry import Polygon, as_points, bbox, polygon_area, round_polygon

#: New shapes cut, at most, for one call (each gives m pieces to choose from).
MAX_SHAPES = 400


def composition_foils(
    record: Mapping[str, Any], answer_index: int, seed: int, n: int
) -> list[dict[str, Any]]:
    """Up to ``n`` records of the item with candidate ``answer_index`` (a foil) drawn again by
    the item's design (module docstring); the shape, its pieces, the key and the other
    candidates unchanged, each vetted (:func:`vet_composition_item`). Deterministic for
    ``seed``."""
    cands = list(record["candidates"])
    check_foil(record, answer_index, int(record["key"]), len(cands))
    rng = foil_rng(seed, answer_index, FAMILY)
    taken = {_changed(c) for c in cands}
    return keep_vetted(_drafts(record, answer_index, rng), taken, vet_composition_item, n)


def _changed_piece(cand: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((p for p in cand["pieces"] if p.get("modification")), None)


def _changed(cand: Mapping[str, Any]) -> Hashable:
    """What a candidate changes, whatever its layout: its donor piece's outline, or its scale
    factor (the key changes nothing)."""
    piece = _changed_piece(cand)
    if piece is None:
        return ("key",)
    mod = piece["modification"]
    if mod["kind"] == "scaled":
        return ("scaled", float(mod["factor"]))
    return ("replaced", _outline(piece["polygon"], -int(piece["rotation"]) % 360))


def _outline(poly: Sequence[Sequence[float]], turn: int = 0) -> tuple[tuple[float, ...], ...]:
    """A piece turned by ``turn`` degrees and placed at the origin, to a tenth of a pixel: a
    shown piece turned back compares with its source."""
    return tuple(tuple(round(v, 1) + 0.0 for v in p) for p in _shown_from_source(poly, turn, 1.0))


def _drafts(
    record: Mapping[str, Any], i: int, rng: np.random.Generator
) -> Iterator[tuple[Hashable, dict[str, Any]]]:
    cands = record["candidates"]
    key, target = int(record["key"]), int(record["target_piece"])
    shape_area = polygon_area(as_points(record["shape"]["polygon"]))
    key_area = polygon_area(as_points(record["pieces"][target]["polygon"]))
    changed = {
        j: polygon_area(as_points(p["polygon"]))
        for j, c in enumerate(cands)
        if j != key and (p := _changed_piece(c)) is not None
    }
    old = changed.pop(i, key_area)
    smaller = old < key_area
    if cands[i]["kind"] == "scaled":
        band = SCALE_BANDS[0] if smaller else SCALE_BANDS[1]
        for _ in range(MAX_SHAPES):
            factor = round(float(rng.uniform(*band)), 3)
            out = _with_foil(record, i, rng, None, factor)
            if out is not None:
                yield ("scaled", factor), out
        return
    balanced = record.get("design") == "balanced"
    lo, hi = BALANCED_AREA_RATIO if balanced else REPLACEMENT_AREA_BAND
    min_abs = 2 * AREA_TOLERANCE * shape_area

    def fits(a: float) -> bool:
        delta = a - key_area
        if (delta < 0) != smaller or abs(delta) < min_abs:
            return False
        if not balanced:
            return lo * key_area <= abs(delta) <= hi * key_area
        return all(lo <= max(a, b) / min(a, b) <= hi for b in (key_area, *changed.values()))

    m, size = int(record["m"]), int(record["size"])
    for _ in range(MAX_SHAPES):
        try:
            shape, _cuts = make_shape(rng, size)
            pieces, _ = cut_into_pieces(shape, m, rng, size)
        except _Rejected:
            continue
        rounded = [as_points(round_polygon(p)) for p in pieces]
        good = [k for k in rng.permutation(m).tolist() if fits(polygon_area(rounded[k]))]
        if not good:
            continue
        donor = (as_points(round_polygon(shape)), rounded)
        out = _with_foil(record, i, rng, (donor, good[0]), None)
        if out is not None:
            yield ("replaced", _outline(rounded[good[0]])), out


def _with_foil(
    record: Mapping[str, Any],
    i: int,
    rng: np.random.Generator,
    donor: tuple[tuple[Polygon, list[Polygon]], int] | None,
    factor: float | None,
) -> dict[str, Any] | None:
    """The record with candidate ``i`` showing the shape's pieces with the target piece
    replaced by ``donor`` (its shape and pieces, the piece taken) or scaled by ``factor``,
    each piece turned at random and the pieces shuffled, packed at the item's scale; None
    when they do not pack there."""
    out = copy.deepcopy(dict(record))
    m, size, target = int(out["m"]), int(out["size"]), int(out["target_piece"])
    partition = [as_points(p["polygon"]) for p in out["pieces"]]
    donors = out.setdefault("donors", [])
    cand = out["candidates"][i]
    polys: dict[str, list[Polygon]] = {"original": partition}
    if donor is not None:
        (dshape, dpieces), k = donor
        old = _changed_piece(cand)
        old_src = str(old["source"]["shape"]) if old is not None else ""
        shared = any(
            p["source"]["shape"] == old_src
            for j, c in enumerate(out["candidates"])
            if j != i
            for p in c["pieces"]
        )
        entry = {
            "polygon": round_polygon(dshape),
            "pieces": [
                {"polygon": round_polygon(p), "area": round(polygon_area(p), 2)} for p in dpieces
            ],
        }
        if old_src.startswith("donor-") and not shared:
            d = int(old_src.split("-")[1])
            donors[d] = entry
        else:
            d = len(donors)
            donors.append(entry)
        polys[f"donor-{d}"] = list(dpieces)
    spec = []
    for j in range(m):
        piece: dict[str, Any] = {"source": {"shape": "original", "piece": j}, "modification": None}
        if j == target and donor is not None:
            piece["source"] = {"shape": f"donor-{d}", "piece": k}
            piece["modification"] = {
                "kind": "replaced",
                "replaces": j,
                "area_ratio": round(polygon_area(dpieces[k]) / polygon_area(partition[j]), 4),
            }
        elif j == target:
            piece["modification"] = {"kind": "scaled", "factor": factor}
        piece["rotation"] = int(ROTATIONS[int(rng.integers(4))])
        spec.append(piece)
    spec = [spec[p] for p in rng.permutation(m).tolist()]
    shown = []
    for piece in spec:
        src = piece["source"]
        scaled = (piece["modification"] or {}).get("kind") == "scaled"
        f = float(factor) if scaled and factor is not None else 1.0
        source = polys[src["shape"]][int(src["piece"])]
        shown.append(round_polygon(_shown_from_source(source, piece["rotation"], f)))
    pad = max(4.0, size / 28)
    boxes = _shelf_pack(
        [(bbox(p)[2], bbox(p)[3]) for p in shown], float(out["piece_scale"]), size, pad
    )
    if boxes is None:
        return None
    cand["pieces"] = [
        {**piece, "polygon": poly, "box": box}
        for piece, poly, box in zip(spec, shown, boxes, strict=True)
    ]
    return out


__all__ = ["composition_foils"]
