"""The shape-count generator, its record vetting and its pictures (numpy and Pillow only).

Item ``i`` depends only on ``(seed, cells, rule, size, i)``: the same seed gives the same bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from shape_count import RULES
from studio.core.verdict import Finding, Verdict
from studio.stimuli.items import StimulusItem
from studio.stimuli.polyomino import canonical_form, enumerate_polyominoes

MAX_COUNT = 9
#: Copies sit on a 3×3 grid of slots in a panel.
SLOTS = 3
INK, PAPER, FRAME = (30, 30, 30), (255, 255, 255), (160, 160, 160)


def shape_id(cells: Sequence[Sequence[int]]) -> str:
    """A name for a shape up to rotation and reflection (equal names, same shape)."""
    return ";".join(f"{x},{y}" for x, y in canonical_form(cells, "free"))


def row_counts(rule: str, start: int) -> list[int]:
    return [start, start + 1, start + 2] if rule == "progression" else [start] * 3


def vet_record(record: Mapping[str, Any]) -> Verdict:
    """From the record alone: every row follows the rule with its own shape; the key completes
    the last row; no foil does; the candidates are distinct."""
    rule = record["rule"]
    rows = record["rows"]
    follows = all(
        len(r["counts"]) == (3 if i < 2 else 2)
        and r["counts"] == row_counts(rule, r["counts"][0])[: len(r["counts"])]
        for i, r in enumerate(rows)
    )
    last = rows[2]
    want = {"shape_id": last["shape_id"], "count": row_counts(rule, last["counts"][0])[2]}

    def completes(c: Mapping[str, Any]) -> bool:
        return c["shape_id"] == want["shape_id"] and c["count"] == want["count"]

    cands = record["candidates"]
    key = int(record["key"])
    foils = [k for k, c in enumerate(cands) if k != key and completes(c)]
    distinct = len({(c["shape_id"], c["count"]) for c in cands}) == len(cands)
    shown = [c["count"] for c in cands] + [n for r in rows for n in r["counts"]]
    return Verdict(
        (
            Finding("rows-follow-rule", follows, detail=f"every row's counts follow {rule}"),
            Finding("key-completes", completes(cands[key]), detail=f"the key shows {want}"),
            Finding(
                "no-foil-completes",
                not foils,
                float(len(foils)),
                f"foils completing the row: {foils}" if foils else "",
            ),
            Finding("distinct-candidates", distinct, detail="four different (shape, count)"),
            Finding(
                "counts-drawable",
                all(1 <= n <= MAX_COUNT for n in shown),
                detail=f"1-{MAX_COUNT} copies fit a panel",
            ),
        )
    )


def draw_panel(cells: Sequence[Sequence[int]], count: int, size: int) -> Image.Image:
    """``count`` copies of the polyomino on a 3×3 grid of slots, in reading order."""
    img = Image.new("RGB", (size, size), PAPER)
    d = ImageDraw.Draw(img)
    d.rectangle((0, 0, size - 1, size - 1), outline=FRAME)
    slot = size / SLOTS
    xs = [x for x, _ in cells]
    ys = [y for _, y in cells]
    span = max(max(xs) - min(xs), max(ys) - min(ys)) + 1
    unit = slot * 0.8 / span
    for k in range(count):
        sx, sy = (k % SLOTS) * slot, (k // SLOTS) * slot
        ox = sx + (slot - unit * (max(xs) - min(xs) + 1)) / 2
        oy = sy + (slot - unit * (max(ys) - min(ys) + 1)) / 2
        for x, y in cells:
            x0, y0 = ox + (x - min(xs)) * unit, oy + (y - min(ys)) * unit
            d.rectangle((x0, y0, x0 + unit - 1, y0 + unit - 1), fill=INK)
    return img


def render(record: Mapping[str, Any], size: int) -> tuple[dict[str, Image.Image], Image.Image]:
    """The separate pictures by name and the sheet: the matrix, then the four candidates."""
    images: dict[str, Image.Image] = {}
    for r, row in enumerate(record["rows"]):
        for c, count in enumerate(row["counts"]):
            images[f"panel-{r}-{c}"] = draw_panel(row["shape"], count, size)
    for k, cand in enumerate(record["candidates"]):
        images[f"candidate-{k}"] = draw_panel(cand["shape"], cand["count"], size)
    gap = size // 8
    width = 4 * size + 5 * gap
    sheet = Image.new("RGB", (width, 3 * size + size + 6 * gap), PAPER)
    d = ImageDraw.Draw(sheet)
    left = (width - 3 * size - 2 * gap) // 2
    for r in range(3):
        for c in range(3):
            box = (left + c * (size + gap), gap + r * (size + gap))
            name = f"panel-{r}-{c}"
            if name in images:
                sheet.paste(images[name], box)
            else:
                d.rectangle((*box, box[0] + size - 1, box[1] + size - 1), outline=INK, width=2)
                d.text((box[0] + size // 2 - 3, box[1] + size // 2 - 6), "?", fill=INK)
    top = 3 * (size + gap) + 2 * gap
    for k in range(len(record["candidates"])):
        x = gap + k * (size + gap)
        sheet.paste(images[f"candidate-{k}"], (x, top))
        d.text((x + 2, top - gap + 1), str(k + 1), fill=INK)
    return images, sheet


def render_record(record: Mapping[str, Any]) -> tuple[dict[str, Image.Image], Image.Image]:
    """The family's ``render_record``: the pictures and the sheet of a stored item (an
    ``items.jsonl`` line or the bare record), drawn by :func:`render` as generation drew them,
    at the record's panel size (records written before they held it: the option's default)."""
    from shape_count import FAMILY

    return render(record, int(record.get("size", FAMILY.option("size").default)))


class ShapeCountGenerator:
    """Shape-count matrix items; ``rejections`` counts the draws refused and why."""

    def __init__(self, rule: str = "progression", cells: int = 4, size: int = 96) -> None:
        if rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(RULES)}, not {rule!r}")
        self.rule, self.cells, self.size = rule, int(cells), int(size)
        #: the rows' first counts that keep a row within 1-MAX_COUNT, and the counts they end on
        #: (what a key's count can be: 3-9 under progression, 1-9 constant)
        self.starts = [s for s in range(1, MAX_COUNT + 1) if row_counts(rule, s)[2] <= MAX_COUNT]
        self.key_counts = [row_counts(rule, s)[2] for s in self.starts]
        self.shapes = enumerate_polyominoes(self.cells, "free")
        if len(self.shapes) < 4:
            raise ValueError(f"too few {cells}-cell polyominoes for four rows and a foil")
        self.rejections: Counter[str] = Counter()

    def _record(self, rng: np.random.Generator) -> dict[str, Any]:
        """The answers first, then the rows from the key, so that every answer's shape and count
        is one the key could have had (an answers-only reader learns nothing): four distinct
        shapes (the first two rows', the key's, which is the last row's, and the foil's) and
        two distinct counts, both from the counts a row can end on (``key_counts``); which of
        each pair is the key's is the draw's order, exchangeable. The last row is the one that
        ends on the key's count; the first two start anywhere a row fits."""
        picks = rng.choice(len(self.shapes), size=4, replace=False)
        shapes = [[list(map(int, c)) for c in self.shapes[int(i)]] for i in picks]
        key_count, foil_count = (int(n) for n in rng.choice(self.key_counts, 2, replace=False))
        rows = []
        for r in range(3):
            if r < 2:
                start = self.starts[int(rng.integers(len(self.starts)))]
            else:
                start = self.starts[self.key_counts.index(key_count)]
            counts = row_counts(self.rule, start)
            rows.append({"shape": shapes[r], "shape_id": shape_id(shapes[r]), "counts": counts})
        rows[2]["counts"] = rows[2]["counts"][:2]
        foil_shape = shapes[3]
        cands = [
            (shapes[2], key_count),
            (shapes[2], foil_count),
            (foil_shape, key_count),
            (foil_shape, foil_count),
        ]
        order = [int(k) for k in rng.permutation(4)]
        candidates = [
            {"shape": cands[k][0], "shape_id": shape_id(cands[k][0]), "count": cands[k][1]}
            for k in order
        ]
        return {
            "rule": self.rule,
            "cells": self.cells,
            "design": "balanced",
            "rows": rows,
            "candidates": candidates,
            "key": order.index(0),
            # the panel size, so that the record alone re-draws the item (render_record)
            "size": self.size,
        }

    def items(
        self, count: int, seed: int, progress: Callable[[int, int], None] | None = None
    ) -> Iterator[StimulusItem]:
        for i in range(count):
            rng = np.random.default_rng(np.random.SeedSequence([seed, self.cells, self.size, i]))
            for _attempt in range(100):
                record = self._record(rng)
                verdict = vet_record(record)
                if verdict.valid:
                    break
                self.rejections.update(f"vet:{c.check}" for c in verdict.errors)
            images, sheet = render(record, self.size)
            yield StimulusItem(
                f"shape-count-{i:05d}", "shape-count", record, images, sheet, verdict
            )
            if progress is not None:
                progress(i + 1, count)


__all__ = [
    "ShapeCountGenerator",
    "draw_panel",
    "render",
    "render_record",
    "shape_id",
    "vet_record",
]
