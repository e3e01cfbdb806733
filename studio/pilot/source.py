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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    #: questions asked in words before the pictured one (KiVA's "what changed" and "how"):
    #: ``{"id", "prompt", "options": [labels], "key"}``, in the order the family asks them
    questions: list[dict[str, Any]] = field(default_factory=list)


#: the most words a question's prompt or option may take in a pilot (a record is data)
MAX_TEXT = 300


def text_questions(record: Mapping[str, Any], where: Path) -> list[dict[str, Any]]:
    """The questions of a stimulus record that are asked in words — those with text options
    and no pictures, asked before the pictured one — checked, else StudioError naming the
    file. KiVA asks three questions on each
    trial (§3.1): what changed, how, and the pictured extrapolation."""
    out = []
    for q in record.get("questions") or ():
        if not isinstance(q, Mapping) or q.get("images") or not q.get("options"):
            continue
        options = [str(o)[:MAX_TEXT] for o in q["options"]]
        key = q.get("key")
        qid = str(q.get("id", ""))
        if (
            not PLAIN_ID.fullmatch(qid)
            or type(key) is not int
            or not 0 <= key < len(options)
            or any(x["id"] == qid for x in out)
        ):
            raise StudioError(
                f"item {record.get('id', '?')}: question {qid[:40]!r} has no plain id of its "
                "own or no key among its options",
                where,
            )
        prompt = str(q.get("prompt", ""))[:MAX_TEXT]
        out.append({"id": qid, "prompt": prompt, "options": options, "key": key})
    return out


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
        asked = text_questions(r, folder / "items.jsonl")
        out.append(
            PilotItem(str(r["id"]), fam.id, str(r.get("part", "test")), group, rows, answers,
                      int(lay["key"]), asked)
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
