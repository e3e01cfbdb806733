"""Rendering single glyphs: the UA rule, fitting, missing glyphs, and the render cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFont

from studio.core.errors import FontError
from studio.glyphs.render import (
    EMPTY_OUTLINE,
    MARGIN,
    MASTER_SIZE,
    NOT_IN_CMAP,
    NOTDEF,
    ZERO_INK,
    GlyphRenderer,
    RenderCache,
    render_glyph,
)

from .conftest import make_font

WIDE = 0x2E3B  # THREE-EM DASH: 1200 px wide at size 400 in Symbola
MAP = 0x1F5FA  # WORLD MAP: 863 × 392 px at size 400
SAMPLE = [0x41, 0x67, 0x25CC, 0x25CF, 0x2603, 0x1F341, WIDE, MAP, 0x2167, 0x23B3]


@pytest.fixture(scope="module")
def renderer(symbola: Path) -> GlyphRenderer:
    with GlyphRenderer(symbola) as r:
        yield r


def _ink_box(a: np.ndarray, ink: int = 128) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(a < ink)
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def test_shape_dtype_and_values(renderer: GlyphRenderer) -> None:
    img = renderer.render(0x25CC)
    assert img.shape == (80, 80) and img.dtype == np.uint8
    assert set(np.unique(img).tolist()) == {0, 255}
    assert renderer.render(0x25CC, 64).shape == (64, 64)
    master = renderer.master(0x25CC)
    assert master.mode == "L" and master.size == (MASTER_SIZE, MASTER_SIZE)


@pytest.mark.parametrize("size", [80, 64, 100, 81])
def test_render_equals_the_master_downscaled_and_thresholded(
    renderer: GlyphRenderer, size: int
) -> None:
    for cp in SAMPLE:
        grey = np.asarray(renderer.master(cp).resize((size, size), Image.Resampling.BOX))
        expected = np.where(grey < 128, 0, 255).astype(np.uint8)
        assert np.array_equal(renderer.render(cp, size), expected), hex(cp)


def test_ink_box_is_centred(renderer: GlyphRenderer) -> None:
    for cp in (0x25CF, 0x41, 0x2603):  # BLACK CIRCLE, A, SNOWMAN
        x0, y0, x1, y1 = _ink_box(np.asarray(renderer.master(cp)))
        assert abs((x0 + x1) / 2 - MASTER_SIZE / 2) <= 1.5, hex(cp)
        assert abs((y0 + y1) / 2 - MASTER_SIZE / 2) <= 1.5, hex(cp)
        sx0, sy0, sx1, sy1 = _ink_box(renderer.render(cp))
        assert abs((sx0 + sx1) / 2 - 40) <= 1.5 and abs((sy0 + sy1) / 2 - 40) <= 1.5


@pytest.mark.parametrize("cp", [WIDE, MAP])
def test_overflowing_glyph_is_fitted_not_clipped(
    symbola: Path, renderer: GlyphRenderer, cp: int
) -> None:
    font = ImageFont.truetype(str(symbola), 400, layout_engine=ImageFont.Layout.BASIC)
    x0, y0, x1, y1 = font.getbbox(chr(cp))
    assert max(x1 - x0, y1 - y0) > MASTER_SIZE  # the test does exercise fitting
    master = np.asarray(renderer.master(cp))
    bx0, by0, bx1, by1 = _ink_box(master, ink=255)
    assert bx0 >= MARGIN - 1 and by0 >= MARGIN - 1
    assert bx1 <= MASTER_SIZE - MARGIN + 1 and by1 <= MASTER_SIZE - MARGIN + 1
    assert bx1 - bx0 >= MASTER_SIZE - 2 * MARGIN - 2  # fitted to the margin, not shrunk more
    small = renderer.render(cp)
    assert (small[0] == 255).all() and (small[-1] == 255).all()
    assert (small[:, 0] == 255).all() and (small[:, -1] == 255).all()


def test_missing_reasons_in_symbola(renderer: GlyphRenderer) -> None:
    assert renderer.missing_reason(0x0020) in (EMPTY_OUTLINE, ZERO_INK)
    assert renderer.missing_reason(0x0020) == EMPTY_OUTLINE
    assert renderer.missing_reason(0x0378) == NOT_IN_CMAP
    assert renderer.missing_reason(0x25CC) is None
    image, reason = renderer.render_or_reason(0x0378)
    assert image is None and reason == NOT_IN_CMAP


def test_every_missing_reason(tmp_path: Path) -> None:
    path = make_font(
        tmp_path / "Odd.ttf",
        "Odd",
        cps=[0x41],
        empty=[0x20],
        to_notdef=[0x42],
        tiny=[0x2E],
    )
    with GlyphRenderer(path) as r:
        assert r.missing_reason(0x41) is None
        assert r.missing_reason(0x20) == EMPTY_OUTLINE
        assert r.missing_reason(0x42) == NOTDEF
        assert r.missing_reason(0x2E) == ZERO_INK
        assert r.missing_reason(0x2E, size=500) is None  # a speck is ink at full size
        assert r.missing_reason(0x43) == NOT_IN_CMAP
        assert not r.in_cmap(0x42) and r.in_cmap(0x41)
        # render() still draws what FreeType draws: the .notdef box for an unmapped code point
        assert (r.render(0x43) == 0).any()


def test_render_glyph_convenience(symbola: Path, renderer: GlyphRenderer) -> None:
    assert np.array_equal(render_glyph(symbola, 0x1F341), renderer.render(0x1F341))


def test_sha256_matches_the_catalog(symbola: Path, renderer: GlyphRenderer) -> None:
    from studio.glyphs.fonts import read_font

    assert renderer.sha256 == read_font(symbola)[0].sha256


def test_unreadable_font_raises_font_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ttf"
    bad.write_text("no font here")
    with pytest.raises(FontError) as e:
        GlyphRenderer(bad)
    assert e.value.path == str(bad)
    with pytest.raises(ValueError, match="size"):
        render_glyph(bad, 0x41, size=0)


# ---------------------------------------------------------------- the render cache


def test_cache_round_trip(tmp_path: Path, renderer: GlyphRenderer) -> None:
    cache = RenderCache(tmp_path / "renders")
    sha = "ab" + "0" * 62
    img = renderer.render(0x25CC)
    assert cache.get(sha, 0x25CC, 80) is None and cache.lookup(sha, 0x25CC, 80) is None
    cache.put(sha, 0x25CC, 80, img)
    path = tmp_path / "renders" / "ab" / sha / "80" / "25CC.png"
    assert path.is_file()
    with Image.open(path) as im:
        assert im.mode == "1"
    got = cache.get(sha, 0x25CC, 80)
    assert got is not None and got.dtype == np.uint8 and np.array_equal(got, img)
    assert cache.get(sha, 0x25CC, 64) is None  # size is part of the key

    cache.put_missing(sha, 0x20, 80, EMPTY_OUTLINE)
    assert cache.get_missing(sha, 0x20, 80) == EMPTY_OUTLINE
    assert cache.lookup(sha, 0x20, 80) == EMPTY_OUTLINE
    with pytest.raises(ValueError):
        cache.put_missing(sha, 0x20, 80, "bored")
    with pytest.raises(ValueError):
        cache.put(sha, 0x20, 80, img[:10])


def test_corrupt_cache_files_are_misses(tmp_path: Path, renderer: GlyphRenderer) -> None:
    cache = RenderCache(tmp_path)
    sha = "cd" * 32
    img = renderer.render(0x41)
    cache.put(sha, 0x41, 80, img)
    path = cache.image_path(sha, 0x41, 80)
    path.write_bytes(path.read_bytes()[:30])  # truncated PNG
    assert cache.get(sha, 0x41, 80) is None
    path.write_bytes(b"GIF89a not really")
    assert cache.get(sha, 0x41, 80) is None
    Image.new("L", (64, 64), 255).save(path, "PNG")  # a readable image of the wrong size
    assert cache.get(sha, 0x41, 80) is None
    cache.put(sha, 0x41, 80, img)  # overwrite heals it
    assert np.array_equal(cache.get(sha, 0x41, 80), img)
    cache.missing_path(sha, 0x42, 80).write_text("{broken")
    assert cache.get_missing(sha, 0x42, 80) is None


def test_collection_face_sha_is_a_safe_folder_name(tmp_path: Path) -> None:
    cache = RenderCache(tmp_path)
    folder = cache.folder("ef" * 32 + "#1", 80)
    assert "#" not in str(folder) and folder.name == "80"
    assert cache.folder("ef" * 32 + "#0", 80) != folder
