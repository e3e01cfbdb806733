"""Sheets: an item's question and candidate images laid out as one picture, what a person sees.

Shared stimulus code, so that a family borrows a layout from here rather than from another
family's generator. Deterministic: the same images give the same sheet, byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PIL import Image, ImageDraw, ImageFont

#: The candidates' labels under :func:`stitch_sheet`, left to right.
NUMBER_LABELS: tuple[str, ...] = ("1", "2", "3", "4")


def label_font(size: int) -> Any:
    """Pillow's default font at ``size`` px, or its fixed bitmap font where Pillow has no
    FreeType (the labels are then small, but the sheet is still made)."""
    try:
        return ImageFont.load_default(size=size)
    except (OSError, TypeError):
        return ImageFont.load_default()


def stitch_sheet(
    question: Image.Image, candidates: Sequence[Image.Image], labels: Sequence[str] = NUMBER_LABELS
) -> Image.Image:
    """Question above, the numbered candidates in a row below, on white: what a person sees.

    The key is not marked. Used by the shape-composition and cube-net generators alike."""
    w, h = candidates[0].size
    gap = max(8, w // 14)
    label_h = max(16, h // 9)
    width = len(candidates) * w + (len(candidates) + 1) * gap
    height = gap + question.size[1] + 2 * gap + h + label_h + gap
    sheet = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(sheet)
    qx = (width - question.size[0]) // 2
    sheet.paste(question.convert("RGB"), (qx, gap))
    draw.rectangle(
        (qx - 1, gap - 1, qx + question.size[0], gap + question.size[1]), outline=(150,) * 3
    )
    sep = gap + question.size[1] + gap
    draw.line((gap, sep, width - gap, sep), fill=(90,) * 3)
    font = label_font(max(12, label_h - 4))
    top = sep + gap
    for i, cand in enumerate(candidates):
        x = gap + i * (w + gap)
        sheet.paste(cand.convert("RGB"), (x, top))
        draw.rectangle((x - 1, top - 1, x + w, top + h), outline=(150,) * 3)
        tx0, ty0, tx1, ty1 = draw.textbbox((0, 0), labels[i], font=font)
        draw.text(
            (x + (w - (tx1 - tx0)) // 2 - tx0, top + h + (label_h - (ty1 - ty0)) // 2 - ty0),
            labels[i],
            fill="black",
            font=font,
        )
    return sheet
