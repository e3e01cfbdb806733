"""Fuzzed font files added and rendered as a user's font: each is accepted (its glyphs render
or are reported missing, "render-error" for one FreeType cannot draw), or refused with a
FontError naming the file (and the code point it cannot draw) — never another exception."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from binary_loaders import add_and_render_font, built_font, font_seeds
from conftest import corpus, loader_named, run_one
from fontTools.ttLib import TTFont
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.core.errors import FontError
from studio.glyphs.render import RENDER_ERROR, GlyphRenderer

LOADER = loader_named("font")


@pytest.fixture(scope="session")
def font_ctx() -> dict[str, bytes]:
    return font_seeds()


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False))
def test_mutated_fonts_are_accepted_or_refused_cleanly(
    rng: random.Random, font_ctx: Any, tmp_path: Path
) -> None:
    run_one(LOADER, font_ctx, LOADER.make(font_ctx, rng), tmp_path)


@pytest.mark.parametrize("case", corpus("fonts"), ids=lambda p: p.name)
def test_font_corpus_is_refused_naming_the_glyph(case: Path) -> None:
    """Fonts that were accepted, then crashed the renderer with FreeType's OSError (invalid
    outline, raster overflow, invalid reference) or a damaged loca table."""
    with pytest.raises(FontError) as e:
        add_and_render_font(case)
    assert e.value.path == str(case)


def _damaged_glyph_font(tmp_path: Path) -> tuple[Path, int]:
    """The built font with one glyph's outline made unreadable for FreeType but not for the
    studio's own checks: its contour end point beyond its point count."""
    tt = TTFont(__import__("io").BytesIO(built_font()))
    glyph = tt["glyf"]["g3"]
    glyph.endPtsOfContours = [glyph.endPtsOfContours[0] + 40]
    path = tmp_path / "damaged.ttf"
    tt.save(path)
    return path, 0x41 + 3


def test_a_glyph_freetype_cannot_draw_is_reported_not_raised(tmp_path: Path) -> None:
    path, cp = _damaged_glyph_font(tmp_path)
    with GlyphRenderer(path) as renderer:
        try:
            renderer.render(cp)
        except FontError as e:
            assert f"U+{cp:04X}" in str(e) and e.path == str(path)
            assert renderer.render_or_reason(cp) == (None, RENDER_ERROR)
            assert renderer.render_or_reason(cp - 1)[1] is None  # the others still render
        else:
            pytest.skip("this FreeType draws the damaged outline")
    with pytest.raises(FontError, match=f"U\\+{cp:04X}"):
        add_and_render_font(path)
