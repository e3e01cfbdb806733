"""The puzzles of a pilot, read from a split folder of any family (issue 29): for each, its
context in rows of pictures, its answers as pictures, the key and its (rule, concept) group.

A glyph split's pictures are its ``.npz`` frames (UA's 80×80, drawn at twice that size, black
on white as people saw them in UA's study); a stimulus split's are its own PNGs
(``images/<id>/<name>.png``), read through the family's ``baseline_layout`` (KiVA: the
training pair, the new object, the three pictured options of its extrapolation question).

Core layer: no Qt, no torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from studio.core.errors import StudioError

#: glyph frames are drawn at this multiple of UA's 80 px
GLYPH_SCALE = 2
#: what a puzzle id may be to name a pilot's pictures and sit in its page (review: an id
#: like ``../../x" onerror="…`` wrote files outside the export and ran script in it)
PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def check_id(puzzle_id: str, where: Path) -> str:
    """A puzzle id a pilot may use, else StudioError naming the file it came from."""
    if not PLAIN_ID.fullmatch(puzzle_id) or puzzle_id.startswith("catch-"):
        raise StudioError(
            f"puzzle id {puzzle_id[:80]!r} is not a plain name (letters, digits, '.', '_', "
            "'-'; not 'catch-…'): a pilot names its pictures after it",
            where,
        )
    return puzzle_id


@dataclass
class PilotItem:
    id: str
    family: str
    part: str
    group: str
    rows: list[list[Image.Image]]  # the context, row by row (the last row without its answer)
    answers: list[Image.Image]
    key: int


def read_items(source: str | Path) -> list[PilotItem]:
    """Every puzzle of a split folder with its pictures (the first fold of a k-fold split).
    StudioError naming the folder or file when it is no split or is damaged."""
    from studio.stimuli.split import is_stimulus_split

    folder = Path(source)
    if not folder.is_dir():
        raise StudioError(
            "is not a split folder (generate one with `analogy-studio generate`)", folder
        )
    if is_stimulus_split(folder):
        return _stimulus_items(folder)
    return _glyph_items(folder)


def _glyph_items(folder: Path) -> list[PilotItem]:
    from studio.families.glyph_pmp.export import NPZ, fold_dirs, read_fold, read_npz_frames

    fold = fold_dirs(folder)[0]
    _, puzzles = read_fold(fold)
    out = []
    for p in puzzles:
        check_id(p.id, fold / "puzzles.jsonl")
        path = fold / NPZ / f"{p.id}.npz"
        if not path.exists():
            raise StudioError("missing: the puzzle's frames", path)
        frames = read_npz_frames(path)["images"]
        pictures = [_glyph_picture(f) for f in frames]
        rows, start = [], 0
        for row in p.context:
            rows.append(pictures[start : start + len(row)])
            start += len(row)
        answers = pictures[start : start + len(p.answers)]
        out.append(
            PilotItem(p.id, p.family, p.split, f"{p.rule}/{p.concept}", rows, answers, p.key)
        )
    return out


def _glyph_picture(frame: np.ndarray) -> Image.Image:
    ink = np.clip(np.asarray(frame, dtype=np.float32), 0.0, 1.0)
    img = Image.fromarray((255 - ink * 255).astype(np.uint8), "L")
    size = img.width * GLYPH_SCALE
    return img.resize((size, size), Image.Resampling.NEAREST)


def _stimulus_items(folder: Path) -> list[PilotItem]:
    from studio.plugins import family
    from studio.stimuli.split import read_stimulus_split

    meta, records = read_stimulus_split(folder)
    fam = family(str(meta.get("family", "")))
    layout_of = fam.baseline_layout
    if layout_of is None:
        raise StudioError(f"family {fam.id} says nothing of its context and answers", folder)
    out = []
    for r in records:
        check_id(str(r.get("id", "")), folder / "items.jsonl")
        lay = layout_of(r)
        pics = folder / "images" / str(r["id"])
        names = list(lay["context"])
        context = [_picture(pics / f"{n}.png") for n in names]
        rows, start = [], 0
        for k in lay["rows"]:
            rows.append(context[start : start + int(k)])
            start += int(k)
        answers = [_picture(pics / f"{n}.png") for n in lay["answers"]]
        group = f"{lay.get('rule', '')}/{lay.get('concept', '')}"
        out.append(
            PilotItem(str(r["id"]), fam.id, str(r.get("part", "test")), group, rows, answers,
                      int(lay["key"]))
        )  # fmt: skip
    return out


def _picture(path: Path) -> Image.Image:
    """An item's picture decoded and its file closed; StudioError naming it when damaged."""
    from studio.stimuli.split import PICTURE_ERRORS, open_picture

    img = open_picture(path)
    try:
        return img.convert("RGB")
    except PICTURE_ERRORS as e:
        raise StudioError(f"cannot be decoded as a picture: {e}", path) from None
    finally:
        img.close()
