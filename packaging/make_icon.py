"""Draw the Analogy Studio icon: two glyph tiles, ``A`` : ``A′``, on a dark rounded square.

Usage: ``python packaging/make_icon.py OUT.png [SIZE]`` (SIZE defaults to 256).

The letters come from Pillow's built-in scalable font (``ImageFont.load_default(size=...)``),
so the icon is the same on every build machine, whatever fonts it has installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

BACKGROUND = (31, 58, 95, 255)  # dark blue
TILE = (250, 248, 240, 255)  # paper
INK = (20, 20, 20, 255)
ACCENT = (242, 169, 0, 255)  # amber: the "changed" frame and the colon


def _centred(
    draw: ImageDraw.ImageDraw,
    box: tuple[float, float, float, float],
    text: str,
    font: ImageFont.FreeTypeFont,
    fill: tuple[int, int, int, int],
) -> None:
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    x = (box[0] + box[2]) / 2 - (left + right) / 2
    y = (box[1] + box[3]) / 2 - (top + bottom) / 2
    draw.text((x, y), text, font=font, fill=fill)


def make_icon(size: int = 256) -> Image.Image:
    # Draw at 4× and downsample, for smooth edges.
    s = size * 4
    im = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    d = ImageDraw.Draw(im)
    u = s / 256  # one unit of the 256-px design grid
    d.rounded_rectangle((8 * u, 8 * u, s - 8 * u, s - 8 * u), radius=44 * u, fill=BACKGROUND)

    tile_w, tile_h, gap = 88 * u, 120 * u, 32 * u
    top = (s - tile_h) / 2
    left_tile = (s / 2 - gap / 2 - tile_w, top, s / 2 - gap / 2, top + tile_h)
    right_tile = (s / 2 + gap / 2, top, s / 2 + gap / 2 + tile_w, top + tile_h)
    for box, outline in ((left_tile, TILE), (right_tile, ACCENT)):
        d.rounded_rectangle(box, radius=14 * u, fill=TILE, outline=outline, width=int(6 * u))

    letter = ImageFont.load_default(size=int(92 * u))
    _centred(d, left_tile, "A", letter, INK)
    # A′: the same letter with a prime, the transformed frame of the analogy.
    _centred(d, (right_tile[0] - 10 * u, *right_tile[1:]), "A", letter, INK)
    # The prime is drawn as a wedge (the built-in font has no U+2032).
    px, py = right_tile[2] - 22 * u, right_tile[1] + 16 * u
    d.polygon(
        [(px, py), (px + 11 * u, py), (px - 2 * u, py + 30 * u), (px - 7 * u, py + 30 * u)],
        fill=ACCENT,
    )

    # The ratio colon between the tiles.
    r = 7 * u
    cx = s / 2
    for cy in (s / 2 - 18 * u, s / 2 + 18 * u):
        d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=ACCENT)

    return im.resize((size, size), Image.Resampling.LANCZOS)


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    out = Path(argv[0])
    size = int(argv[1]) if len(argv) > 1 else 256
    out.parent.mkdir(parents=True, exist_ok=True)
    make_icon(size).save(out, "PNG", optimize=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
