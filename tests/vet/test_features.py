"""Image features of glyphs (studio.vet.features): real Symbola renders and exact synthetic cases.

The real-glyph tests need the Symbola font that UA used and skip, naming the file, without it.
The synthetic images pin the definitions down exactly: images under 20 px have a symmetry
tolerance of 0 pixels, so their scores are the plain intersection over union.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from studio.core.schema import (
    Rule,
    ValueKind,
    schema_from_json,
    validate_semantics,
    validate_structure,
)
from studio.glyphs.render import GlyphRenderer
from studio.vet.features import (
    ASPECT_MARGIN,
    ASPECT_TALL_BELOW,
    ASPECT_WIDE_ABOVE,
    FEATURE_SCHEMA,
    INK_HIGH_ABOVE,
    INK_LOW_BELOW,
    MIRROR_THRESHOLD,
    ROTATION_THRESHOLD,
    SIZE_LARGE_ABOVE,
    SIZE_MARGIN,
    SIZE_SMALL_BELOW,
    GlyphFeatures,
    compute_features,
    compute_features_batch,
    feature_tags,
    symmetry_tolerance,
)

SYMBOLA = Path("/usr/share/fonts/truetype/ancient-scripts/Symbola_hint.ttf")
INK, PAPER = 0, 255


@pytest.fixture(scope="module")
def renderer() -> Iterator[GlyphRenderer]:
    if not SYMBOLA.exists():
        pytest.skip(f"{SYMBOLA} is not installed (Debian: fonts-symbola)")
    with GlyphRenderer(SYMBOLA) as r:
        yield r


@pytest.fixture(scope="module")
def glyph(renderer: GlyphRenderer) -> Callable[[str], GlyphFeatures]:
    cache: dict[str, GlyphFeatures] = {}

    def features(ch: str) -> GlyphFeatures:
        if ch not in cache:
            cache[ch] = compute_features(renderer.render(ord(ch), 80))
        return cache[ch]

    return features


def canvas(size: int = 80) -> np.ndarray:
    return np.full((size, size), PAPER, dtype=np.uint8)


def draw(img: np.ndarray, pixels: list[tuple[int, int]]) -> np.ndarray:
    for r, c in pixels:
        img[r, c] = INK
    return img


# ---- real glyphs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ch", "components", "holes"),
    [("O", 1, 1), ("B", 1, 2), ("8", 1, 2), (":", 2, 0), ("÷", 3, 0), ("L", 1, 0)],
)
def test_topology_of_real_glyphs(glyph, ch: str, components: int, holes: int) -> None:
    f = glyph(ch)
    assert (f.components, f.holes, f.euler) == (components, holes, components - holes)
    tags = feature_tags(f)
    assert tags["img-components"] == {str(components)}
    assert tags["img-holes"] == {str(holes)}


def test_mirror_symmetry_of_real_glyphs(glyph) -> None:
    a = glyph("A")
    assert a.mirror_lr >= MIRROR_THRESHOLD > a.mirror_tb
    assert feature_tags(a)["img-mirror"] == {"left-right"}
    assert feature_tags(glyph("B"))["img-mirror"] == {"top-bottom"}
    assert feature_tags(glyph("H"))["img-mirror"] == {"left-right", "top-bottom"}
    el = glyph("L")
    assert max(el.mirror_lr, el.mirror_tb) < MIRROR_THRESHOLD
    assert feature_tags(el)["img-mirror"] == {"none"}
    assert feature_tags(el)["img-rotation"] == {"none"}


@pytest.mark.parametrize("ch", ["H", "X", "S", "Z"])
def test_half_turn_symmetry_of_real_glyphs(glyph, ch: str) -> None:
    f = glyph(ch)
    assert f.rot180 >= ROTATION_THRESHOLD
    assert "180" in feature_tags(f)["img-rotation"]


def test_aspect_of_real_glyphs(glyph) -> None:
    for ch in "|l":
        assert glyph(ch).aspect_ratio < ASPECT_TALL_BELOW
        assert feature_tags(glyph(ch))["img-aspect"] == {"tall"}
    dash = glyph("\u2014")
    assert dash.aspect_ratio > ASPECT_WIDE_ABOVE
    assert feature_tags(dash)["img-aspect"] == {"wide"}
    assert feature_tags(glyph("H"))["img-aspect"] == {"square"}


def test_position_does_not_matter_for_a_real_glyph(renderer: GlyphRenderer) -> None:
    img = renderer.render(ord("R"), 80)
    moved = np.roll(img, (-7, 9), axis=(0, 1))  # R sits well inside the canvas: nothing wraps
    assert (moved < 128).sum() == (img < 128).sum()
    assert compute_features(moved) == compute_features(img)


def test_batch_equals_single_on_real_glyphs(renderer: GlyphRenderer) -> None:
    cps = [ord(c) for c in "ABOXLR8:÷|—gQ%&@"]
    cps += [cp for cp in range(0x2190, 0x2800, 7) if renderer.in_cmap(cp)][:200]
    images = np.stack([renderer.render(cp, 80) for cp in cps])
    images = np.concatenate([images, canvas()[None]])  # and a blank one
    batch = compute_features_batch(images)
    assert len(batch) == len(images) > 200
    for cp, img, f in zip([*cps, None], images, batch, strict=True):
        assert f == compute_features(img), cp
    # The stack is cut into chunks; results keep their order across them.
    assert compute_features_batch(np.concatenate([images] * 3)) == batch * 3


def test_tags_use_only_schema_values_on_real_glyphs(renderer: GlyphRenderer) -> None:
    images = np.stack([renderer.render(cp, 80) for cp in range(0x25A0, 0x2600)])
    for f in compute_features_batch(images):
        for concept, values in feature_tags(f).items():
            assert values, concept
            assert values <= set(FEATURE_SCHEMA.concept(concept).value_ids), concept


# ---- exact synthetic cases ---------------------------------------------------------------------


def test_blank_image() -> None:
    f = compute_features(canvas())
    assert f == GlyphFeatures(0.0, 0, 0, 1.0, 0.0, 0, 0, 0, 1.0, 1.0, 1.0, 1.0)
    assert compute_features_batch(canvas()[None]) == [f]
    tags = feature_tags(f)
    assert "img-components" not in tags
    assert tags["img-holes"] == {"0"}


def test_filled_square() -> None:
    img = canvas()
    img[30:50, 20:40] = INK
    f = compute_features(img)
    assert f.ink_fraction == 400 / 6400
    assert (f.bbox_w, f.bbox_h, f.aspect_ratio, f.bbox_size) == (20, 20, 1.0, 0.25)
    assert (f.components, f.holes, f.euler) == (1, 0, 1)
    assert (f.mirror_lr, f.mirror_tb, f.rot180, f.rot90) == (1.0, 1.0, 1.0, 1.0)
    tags = feature_tags(f)
    assert tags["img-mirror"] == {"left-right", "top-bottom"}
    assert tags["img-rotation"] == {"180", "90"}


def test_ring_has_one_hole_and_a_dot_inside_is_a_component() -> None:
    img = canvas()
    img[20:60, 20:60] = INK
    img[25:55, 25:55] = PAPER
    f = compute_features(img)
    assert (f.components, f.holes, f.euler) == (1, 1, 0)
    img[38:42, 38:42] = INK
    f = compute_features(img)
    assert (f.components, f.holes, f.euler) == (2, 1, 1)
    assert compute_features_batch(img[None]) == [f]


def test_diagonal_strokes_close_a_hole_and_join_a_component() -> None:
    """Ink is 8-connected and paper 4-connected: a one-pixel diamond outline is one piece
    of ink around one hole (with 4-connected ink it would fall into four pieces)."""
    img = canvas(40)
    pixels = []
    for t in range(8):
        pixels += [(10 + t, 20 + t), (18 + t, 28 - t), (26 - t, 20 - t), (18 - t, 12 + t)]
    f = compute_features(draw(img, pixels))
    assert (f.components, f.holes) == (1, 1)
    assert compute_features_batch(img[None]) == [f]


def test_image_touching_the_border() -> None:
    """Paper cut off by ink along the border is no hole; ink on the border is fine."""
    img = canvas(30)
    img[:, 10] = INK  # a full-height bar splits the paper in two, both touch the border
    img[0, :] = INK
    f = compute_features(img)
    assert (f.components, f.holes, f.bbox_w, f.bbox_h) == (1, 0, 30, 30)
    assert compute_features_batch(img[None]) == [f]


def test_exact_scores_of_an_l_shape() -> None:
    """A 5×3 'L' (7 pixels): scores by hand, with no tolerance (image under 20 px)."""
    img = canvas(12)
    assert symmetry_tolerance(12) == 0
    draw(img, [(2 + r, 4) for r in range(5)] + [(6, 5), (6, 6)])
    f = compute_features(img)
    assert (f.bbox_w, f.bbox_h, f.components, f.holes) == (3, 5, 1, 0)
    assert f.mirror_lr == pytest.approx(3 / 11)  # shared: bar foot, foot middle, foot end
    assert f.mirror_tb == pytest.approx(5 / 9)  # the bar maps onto itself
    assert f.rot180 == pytest.approx(2 / 12)
    assert compute_features_batch(img[None]) == [f]


@pytest.mark.parametrize(
    ("h", "w", "rot90"),
    [(2, 4, 4 / 12), (2, 3, 4 / 8), (3, 3, 1.0), (1, 6, 1 / 11)],
)
def test_quarter_turn_of_rectangles(h: int, w: int, rot90: float) -> None:
    """A quarter-turned h×w box overlaps min(h, w)² pixels; when h − w is odd the turned box
    lies half a pixel off the grid and the best of the four roundings is taken."""
    img = canvas(16)
    img[5 : 5 + h, 4 : 4 + w] = INK
    f = compute_features(img)
    assert f.rot90 == pytest.approx(rot90)
    assert (f.mirror_lr, f.mirror_tb, f.rot180) == (1.0, 1.0, 1.0)
    assert compute_features_batch(img[None]) == [f]


def test_tolerance_forgives_stroke_contrast() -> None:
    """A '∧' with a 5-pixel left stroke and a 2-pixel right one: far from mirror symmetric
    pixel for pixel, symmetric to the eye, and so within the 2-pixel tolerance at 80 px."""
    assert symmetry_tolerance(80) == 2
    img = canvas()
    for t in range(40):
        img[60 - t, 20 + t // 2 : 25 + t // 2] = INK  # thick, rising to the right
        img[60 - t, 59 - t // 2 : 61 - t // 2] = INK  # thin, rising to the left
    f = compute_features(img)
    assert f.mirror_lr >= MIRROR_THRESHOLD
    assert f.mirror_tb < MIRROR_THRESHOLD
    assert compute_features_batch(img[None]) == [f]
    # Without tolerance (a 16 px image) a thick and a thin bar score only the plain IoU.
    small = canvas(16)
    small[2:14, 2:5] = INK
    small[2:14, 12] = INK
    assert compute_features(small).mirror_lr < 0.5


def test_shifted_shapes_have_the_same_features() -> None:
    pixels = [(r, 0) for r in range(9)] + [(8, 1), (8, 2), (8, 3), (4, 1), (4, 2), (0, 5)]
    here = draw(canvas(), [(10 + r, 12 + c) for r, c in pixels])
    there = draw(canvas(), [(55 + r, 60 + c) for r, c in pixels])
    f = compute_features(here)
    assert compute_features(there) == f
    assert compute_features_batch(np.stack([here, there])) == [f, f]


def test_non_square_images_and_bad_shapes() -> None:
    img = np.full((30, 50), PAPER, dtype=np.uint8)
    img[5:15, 10:35] = INK
    f = compute_features(img)
    assert (f.bbox_w, f.bbox_h, f.bbox_size, f.aspect_ratio) == (25, 10, 0.5, 2.5)
    assert compute_features_batch(np.stack([img, img])) == [f, f]
    with pytest.raises(ValueError):
        compute_features(img[None])
    with pytest.raises(ValueError):
        compute_features_batch(img)


def test_to_json_is_plain_and_rounded() -> None:
    img = canvas()
    img[10:17, 10:13] = INK
    data = compute_features(img).to_json()
    assert data["ink_fraction"] == round(21 / 6400, 4)
    assert data["components"] == 1 and isinstance(data["components"], int)
    assert json.loads(json.dumps(data)) == data
    assert set(data) == {
        "ink_fraction", "bbox_w", "bbox_h", "aspect_ratio", "bbox_size", "components",
        "holes", "euler", "mirror_lr", "mirror_tb", "rot180", "rot90",
    }  # fmt: skip


# ---- tags ------------------------------------------------------------------------------------

BASE = GlyphFeatures(0.07, 40, 40, 1.0, 0.55, 1, 0, 1, 0.2, 0.3, 0.1, 0.1)


def test_plain_tags() -> None:
    assert feature_tags(BASE) == {
        "img-components": {"1"},
        "img-holes": {"0"},
        "img-aspect": {"square"},
        "img-size": {"medium"},
        "img-ink": {"medium"},
        "img-mirror": {"none"},
        "img-rotation": {"none"},
    }


@pytest.mark.parametrize(
    ("field", "value", "concept", "expected"),
    [
        ("aspect_ratio", ASPECT_TALL_BELOW, "img-aspect", {"tall", "square"}),
        ("aspect_ratio", ASPECT_TALL_BELOW * (1 + ASPECT_MARGIN / 2), "img-aspect",
         {"tall", "square"}),
        ("aspect_ratio", ASPECT_TALL_BELOW * (1 - ASPECT_MARGIN / 2), "img-aspect",
         {"tall", "square"}),
        ("aspect_ratio", ASPECT_TALL_BELOW * (1 - 2 * ASPECT_MARGIN), "img-aspect", {"tall"}),
        ("aspect_ratio", ASPECT_WIDE_ABOVE * 1.02, "img-aspect", {"square", "wide"}),
        ("aspect_ratio", ASPECT_WIDE_ABOVE * 1.5, "img-aspect", {"wide"}),
        ("bbox_size", SIZE_SMALL_BELOW - SIZE_MARGIN / 2, "img-size", {"small", "medium"}),
        ("bbox_size", SIZE_LARGE_ABOVE + SIZE_MARGIN / 2, "img-size", {"medium", "large"}),
        ("bbox_size", SIZE_LARGE_ABOVE + 2 * SIZE_MARGIN, "img-size", {"large"}),
        ("bbox_size", 0.1, "img-size", {"small"}),
        ("ink_fraction", INK_LOW_BELOW, "img-ink", {"low", "medium"}),
        ("ink_fraction", INK_HIGH_ABOVE * 1.05, "img-ink", {"medium", "high"}),
        ("ink_fraction", 0.5, "img-ink", {"high"}),
        ("ink_fraction", 0.0, "img-ink", {"low"}),
        ("mirror_tb", MIRROR_THRESHOLD, "img-mirror", {"top-bottom"}),
        ("rot90", ROTATION_THRESHOLD, "img-rotation", {"90"}),
    ],
)  # fmt: skip
def test_tags_near_and_far_from_bounds(
    field: str, value: float, concept: str, expected: set[str]
) -> None:
    assert feature_tags(replace(BASE, **{field: value}))[concept] == expected


def test_counts_above_eight_carry_nothing() -> None:
    tags = feature_tags(replace(BASE, components=9, holes=12, euler=-3))
    assert "img-components" not in tags and "img-holes" not in tags
    tags = feature_tags(replace(BASE, components=8, holes=8, euler=0))
    assert tags["img-components"] == {"8"} and tags["img-holes"] == {"8"}


# ---- the pseudo schema -------------------------------------------------------------------------


def test_feature_schema_is_valid_and_round_trips() -> None:
    data = FEATURE_SCHEMA.to_json()
    validate_structure(data, None)
    validate_semantics(data, None)
    assert schema_from_json(json.loads(FEATURE_SCHEMA.dumps())) == FEATURE_SCHEMA
    assert (FEATURE_SCHEMA.id, FEATURE_SCHEMA.version) == ("image-features", "1")
    assert [c.id for c in FEATURE_SCHEMA.categories] == ["image-features"]
    assert all(c.id.startswith("img-") for c in FEATURE_SCHEMA.concepts)


def test_feature_schema_concepts() -> None:
    s = FEATURE_SCHEMA
    comps, holes = s.concept("img-components"), s.concept("img-holes")
    assert comps.value_ids == tuple(str(n) for n in range(1, 9))
    assert holes.value_ids == tuple(str(n) for n in range(9))
    for c in (comps, holes):
        assert c.kind is ValueKind.INTEGER
        assert set(c.rules) == {Rule.CONSTANT, Rule.PROGRESSION, Rule.ARITHMETIC}
        assert not c.negate
    for cid, order in [
        ("img-aspect", ("tall", "square", "wide")),
        ("img-size", ("small", "medium", "large")),
        ("img-ink", ("low", "medium", "high")),
    ]:
        c = s.concept(cid)
        assert c.kind is ValueKind.ORDINAL and c.value_ids == order and not c.negate
        assert set(c.rules) == {Rule.CONSTANT, Rule.PROGRESSION}
        assert c.rules[Rule.PROGRESSION].values == order
    for cid, values in [
        ("img-mirror", ("left-right", "top-bottom", "none")),
        ("img-rotation", ("180", "90", "none")),
    ]:
        c = s.concept(cid)
        assert c.kind is ValueKind.NOMINAL and c.value_ids == values
        assert set(c.rules) == {Rule.CONSTANT} and c.negate
