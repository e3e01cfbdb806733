"""Re-draw a generated stimulus split from its records (issue 27's ``Family.render_record``)
and compare with the pictures generation wrote: the families' tests share it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from studio.plugins import family
from studio.stimuli.split import ITEMS, generate_stimulus_split, png_bytes, render_record

#: What StimulusItem.to_json and the split writer add to the family's own record.
ADDED = ("id", "family", "images", "verdict", "part")


def redraws_exactly(
    family_id: str, out: Path, n: int, seed: int, options: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Generate a split, re-draw every item from its items.jsonl line through
    :func:`render_record` and from the bare record through the family's own function, and
    assert each picture and sheet is the file generation wrote, byte for byte (the drawing is
    deterministic: Pillow, and pyrender on a fixed draw order). Returns the records."""
    generate_stimulus_split(family_id, out, n, seed=seed, options=options)
    records = [json.loads(line) for line in (out / ITEMS).read_text().splitlines()]
    assert len(records) == n
    fam = family(family_id)
    own = fam.load("render_record")
    both = fam.load("vet_render_record") if fam.vet_render_record is not None else None
    for record in records:
        folder = out / "images" / record["id"]
        written = {p.stem: p.read_bytes() for p in folder.glob("*.png")}
        sheet_file = (out / "sheets" / f"{record['id']}.png").read_bytes()
        bare = {k: v for k, v in record.items() if k not in ADDED}
        drawings = [render_record(record), own(bare)]
        if both is not None:  # vetted and drawn at once (export-set): the same pictures
            verdict, images, sheet = both(bare)
            assert verdict == fam.load("vet_record")(bare) and verdict.valid
            drawings.append((images, sheet))
        for images, sheet in drawings:
            # every picture generation wrote, and no other, is re-drawn
            assert sorted(images) == sorted(written) == sorted(record["images"])
            for name, image in images.items():
                assert png_bytes(image) == written[name], f"{record['id']}/{name}"
            assert png_bytes(sheet) == sheet_file, f"the sheet of {record['id']}"
    return records
