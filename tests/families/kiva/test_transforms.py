"""KiVA transformations: the symbolic state and its composition, the layout of copies, and the
pictures of 2D images (Pillow) and 3D objects (pyrender) — small renders throughout."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageChops, ImageDraw, ImageOps
from scipy import ndimage

from studio.core.errors import StudioError
from studio.families.kiva.ambiguity import foreground_mask, mask_iou, pixel_difference
from studio.families.kiva.transforms import (
    COLORS,
    DOMAINS,
    FRAME_MARGIN,
    KIVA_ADULTS_VALUES,
    KIVA_VALUES,
    MAX_COUNT,
    TRANSFORM_DOMAINS,
    UNIT_EXTENT,
    VALUES,
    StateRenderer,
    StimulusState,
    TransformSpec,
    apply,
    fit_scale,
    layout,
    preview_pair,
    render_image_state,
    render_state,
    same_picture,
    specs,
    try_apply,
)
from studio.render3d import Camera, Renderer
from studio.render3d.objects import BLUE, GREEN, GREY, RED, YELLOW, library_object

SIZE = 64


@pytest.fixture(scope="module")
def renderer():
    with Renderer(SIZE) as r:
        yield r


def glyph() -> Image.Image:
    """An 'F'-like glyph: black ink on white paper, chiral under every mirror and turn."""
    im = Image.new("L", (120, 120), 255)
    d = ImageDraw.Draw(im)
    d.rectangle([30, 10, 48, 110], fill=0)
    d.rectangle([30, 10, 95, 26], fill=0)
    d.rectangle([30, 50, 80, 64], fill=0)
    return im


def ink_box(image: Image.Image) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(foreground_mask(image))
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())


def shifted_difference(a: Image.Image, b: Image.Image) -> float:
    """The pixel difference of a and b, b moved by up to a pixel either way: an odd-sized
    picture cannot be centred on an even canvas both ways, so a mirror lands a pixel off."""
    return min(
        pixel_difference(a, ImageChops.offset(b, dx, dy)) for dx in (-1, 0, 1) for dy in (-1, 0, 1)
    )


def components(image: Image.Image) -> int:
    return int(ndimage.label(foreground_mask(image))[1])


# ---- the symbolic state ---------------------------------------------------------------------


def test_domains_values_and_the_papers_subsets() -> None:
    assert DOMAINS == ("color", "size", "rotation", "reflection", "number")
    assert KIVA_VALUES["color"] == ("red", "green", "blue")
    assert set(KIVA_VALUES["rotation"]) == {"+90", "-90", "180"}
    assert set(KIVA_VALUES["number"]) == {"+1", "+2", "-1", "-2"}
    assert KIVA_ADULTS_VALUES == VALUES
    for d in DOMAINS:
        assert set(KIVA_VALUES[d]) <= set(VALUES[d])
    assert len(specs("kiva")) == 3 + 2 + 3 + 2 + 4  # 14 subdomains, as in the paper
    assert len(specs("kiva-adults")) == 29  # KiVA-adults' 29 subdomains
    assert {TRANSFORM_DOMAINS[d].name for d in DOMAINS} == set(DOMAINS)
    # the named colours are the object library's palette
    assert COLORS == {"red": RED, "green": GREEN, "blue": BLUE, "yellow": YELLOW, "grey": GREY}


def test_spec_ids_labels_and_errors() -> None:
    spec = TransformSpec("rotation", "+90")
    assert spec.id == "rotation:+90" and TransformSpec.parse(spec.id) == spec
    assert "counter-clockwise" in spec.label
    assert TransformSpec("number", "/3").label == "a third as many (÷3)"
    with pytest.raises(StudioError, match="no transformation domain 'hue'"):
        TransformSpec("hue", "red")
    with pytest.raises(StudioError, match="size has no value 'x3'"):
        TransformSpec("size", "x3")
    with pytest.raises(StudioError, match="1 to 8 objects"):
        StimulusState(count=9)


def test_apply_each_domain() -> None:
    s = StimulusState()
    assert apply(TransformSpec("color", "green"), s).color == "green"
    assert apply(TransformSpec("size", "x2"), s).scale == (2.0, 2.0)
    assert apply(TransformSpec("size", "height x1/2"), s).scale == (1.0, 0.5)
    assert apply(TransformSpec("rotation", "-45"), s).rotation == -45.0
    turned = apply(TransformSpec("rotation", "+135"), StimulusState(rotation=135))
    assert turned.rotation == -90.0  # normalised to (−180, 180]
    assert apply(TransformSpec("rotation", "180"), s).rotation == 180.0
    assert apply(TransformSpec("reflection", "x"), s).reflection == (True, False)
    assert apply(TransformSpec("reflection", "both"), s).reflection == (True, True)
    assert apply(TransformSpec("number", "x3"), StimulusState(count=2)).count == 6
    assert apply(TransformSpec("number", "/2"), StimulusState(count=8)).count == 4
    assert apply(TransformSpec("number", "-2"), StimulusState(count=3)).count == 1


@pytest.mark.parametrize(
    ("spec", "state", "message"),
    [
        (("number", "/3"), StimulusState(count=2), "cannot be divided by 3"),
        (("number", "x3"), StimulusState(count=3), "at most 8"),
        (("number", "+2"), StimulusState(count=7), "at most 8"),
        (("number", "-2"), StimulusState(count=1), "at least one"),
        (("size", "x2"), StimulusState(scale=(2.0, 2.0)), "outside"),
        (("size", "width x2"), StimulusState(rotation=45), "sheared"),
    ],
)
def test_apply_refuses_with_a_reason(
    spec: tuple[str, str], state: StimulusState, message: str
) -> None:
    with pytest.raises(StudioError, match=message):
        apply(TransformSpec(*spec), state)
    assert try_apply(TransformSpec(*spec), state) is None


def _picture_op(spec: TransformSpec) -> np.ndarray:
    """What a geometric spec does to the picture, as a 2×2 map (x right, y up)."""
    if spec.domain == "rotation":
        t = math.radians(float(spec.value))
        return np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    if spec.domain == "reflection":
        return {"x": np.diag([1.0, -1.0]), "y": np.diag([-1.0, 1.0]), "both": -np.eye(2)}[
            spec.value
        ]
    factors = {
        "x2": (2, 2),
        "x1/2": (0.5, 0.5),
        "width x2": (2, 1),
        "width x1/2": (0.5, 1),
        "height x2": (1, 2),
        "height x1/2": (1, 0.5),
    }[spec.value]
    return np.diag(np.array(factors, dtype=float))


GEOMETRIC = [s for s in specs("kiva-adults") if s.domain in ("size", "rotation", "reflection")]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(GEOMETRIC), min_size=1, max_size=6))
def test_composition_acts_on_the_picture(chain: list[TransformSpec]) -> None:
    """Whatever came before, each spec acts on the picture as seen: a width change after a
    quarter turn widens the picture, a mirror after a turn mirrors the turned picture."""
    state, matrix = StimulusState(), np.eye(2)
    for spec in chain:
        nxt = try_apply(spec, state)
        if nxt is None:
            continue
        matrix = _picture_op(spec) @ matrix
        state = nxt
        assert np.allclose(state.matrix(), matrix, atol=1e-9)
        assert StimulusState.from_json(state.to_json()) == state


def test_same_picture_knows_the_equivalences() -> None:
    one = StimulusState()
    half_turn = apply(TransformSpec("rotation", "180"), one)
    mirrored_twice = apply(TransformSpec("reflection", "both"), one)
    assert half_turn != mirrored_twice and same_picture(half_turn, mirrored_twice)
    assert same_picture(
        apply(TransformSpec("number", "+1"), one), apply(TransformSpec("number", "x2"), one)
    )
    red = apply(TransformSpec("color", "red"), one)
    assert same_picture(red, one, base_color=RED) and not same_picture(red, one, BLUE)
    assert not same_picture(apply(TransformSpec("reflection", "x"), one), one)


# ---- layout ------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, MAX_COUNT),
    st.floats(0.1, 1.0),
    st.floats(0.1, 1.0),
    st.sampled_from([0.0, 45.0, 90.0, -135.0]),
    st.sampled_from([(1.0, 1.0), (2.0, 2.0), (2.0, 1.0), (0.5, 2.0)]),
)
def test_copies_never_overlap_and_stay_in_the_frame(
    count: int, w: float, h: float, rotation: float, scale: tuple[float, float]
) -> None:
    corners = np.array([[-w, -h], [w, -h], [w, h], [-w, h]]) / 2 / max(w, h)
    state = StimulusState(count=count, rotation=rotation, scale=scale)
    half = 1.2 * FRAME_MARGIN
    lay = layout(corners, state, half, fit_scale(corners, [state, StimulusState()], half))
    assert len(lay.boxes) == count <= MAX_COUNT
    assert not lay.overlaps()
    for x0, y0, x1, y1 in lay.boxes:
        assert -half - 1e-9 <= x0 < x1 <= half + 1e-9 and -half - 1e-9 <= y0 < y1 <= half + 1e-9


def test_one_fit_for_pictures_shown_together() -> None:
    square = np.array([[-0.5, -0.5], [0.5, 0.5]])
    one, eight = StimulusState(count=1), StimulusState(count=8)
    half = UNIT_EXTENT * FRAME_MARGIN
    fit = fit_scale(square, [one, eight], half)
    assert fit < 1.0 == fit_scale(square, [one], half)
    a, b = layout(square, one, half, fit), layout(square, eight, half, fit)
    width = [x1 - x0 for x0, _, x1, _ in a.boxes + b.boxes]
    assert max(width) - min(width) < 1e-9  # every copy the same size in both pictures


# ---- 2D images ------------------------------------------------------------------------------


def test_2d_colour_tints_the_ink() -> None:
    before, after = preview_pair(glyph(), TransformSpec("color", "red"), size=SIZE)
    ink = foreground_mask(before)
    rgb = np.asarray(after.convert("RGB")).astype(int)
    core = ndimage.binary_erosion(ink, iterations=1)
    assert np.abs(np.median(rgb[core], axis=0) - np.array(RED)).max() <= 2  # the ink is red
    assert np.abs(rgb[core] - np.array(RED)).max() <= 24  # resampling ripples at most
    near = ndimage.binary_dilation(foreground_mask(after), iterations=2)
    assert (rgb[~near] >= 250).all()  # the paper stays white (resampling ripples aside)
    assert mask_iou(before, after) > 0.97


def test_2d_geometry_matches_the_picture_operations() -> None:
    g = glyph()
    before, mirrored = preview_pair(g, TransformSpec("reflection", "y"), size=SIZE)
    assert shifted_difference(mirrored, ImageOps.mirror(before)) < 0.05
    _, upside_down = preview_pair(g, TransformSpec("reflection", "x"), size=SIZE)
    assert shifted_difference(upside_down, ImageOps.flip(before)) < 0.05
    _, turned = preview_pair(g, TransformSpec("rotation", "+90"), size=SIZE)
    assert shifted_difference(turned, before.rotate(90)) < 0.08  # counter-clockwise
    assert pixel_difference(turned, before.rotate(-90)) > 0.3
    x0, y0, x1, y1 = ink_box(before)
    _, bigger = preview_pair(g, TransformSpec("size", "x2"), size=SIZE)
    bx0, by0, bx1, by1 = ink_box(bigger)
    assert abs((bx1 - bx0 + 1) - 2 * (x1 - x0 + 1)) <= 2
    assert abs((by1 - by0 + 1) - 2 * (y1 - y0 + 1)) <= 2
    _, wider = preview_pair(g, TransformSpec("size", "width x2"), size=SIZE)
    wx0, wy0, wx1, wy1 = ink_box(wider)
    assert abs((wx1 - wx0 + 1) - 2 * (x1 - x0 + 1)) <= 2
    assert abs((wy1 - wy0) - (y1 - y0)) <= 1


def test_2d_number_lays_out_separate_copies() -> None:
    before, after = preview_pair(
        glyph(), TransformSpec("number", "x3"), state=StimulusState(count=2), size=96
    )
    assert components(before) == 2 and components(after) == 6
    drawer = StateRenderer(glyph(), size=96)
    fit = drawer.fit([StimulusState(count=2), StimulusState(count=6)])
    assert not drawer.layout(StimulusState(count=6), fit).overlaps()


def test_2d_transparent_png_keeps_its_colours() -> None:
    png = Image.new("RGBA", (80, 60), (0, 0, 0, 0))
    ImageDraw.Draw(png).polygon([(5, 55), (40, 5), (75, 55)], fill=(40, 160, 60, 255))
    plain = render_image_state(png, StimulusState(), SIZE)
    rgb = np.asarray(plain).astype(int)
    assert np.abs(rgb[foreground_mask(plain)] - np.array(GREEN)).max(axis=1).min() <= 4
    blue = render_image_state(png, StimulusState(color="blue"), SIZE)
    assert pixel_difference(plain, blue) > 0.8 and mask_iou(plain, blue) > 0.97
    with pytest.raises(StudioError, match="blank"):
        render_image_state(Image.new("RGB", (20, 20), "white"), StimulusState(), SIZE)


# ---- 3D objects -----------------------------------------------------------------------------


def test_3d_turn_and_mirror_act_in_the_picture(renderer: Renderer) -> None:
    key = library_object("key")
    before, turned = preview_pair(
        key, TransformSpec("rotation", "+90"), renderer=renderer, size=SIZE
    )
    assert mask_iou(turned, before.rotate(90)) > 0.9  # the picture turns counter-clockwise
    _, mirrored = preview_pair(key, TransformSpec("reflection", "y"), renderer=renderer, size=SIZE)
    assert mask_iou(mirrored, ImageOps.mirror(before)) > 0.9
    # a mirrored mesh under the same lights, not a flipped image (that would move the light)
    assert pixel_difference(mirrored, ImageOps.mirror(before)) > 0.05
    _, upside_down = preview_pair(
        key, TransformSpec("reflection", "x"), renderer=renderer, size=SIZE
    )
    assert mask_iou(upside_down, ImageOps.flip(before)) > 0.9


def test_3d_reflection_is_a_mirror_through_the_viewing_direction() -> None:
    camera = Camera(azimuth=-50, elevation=35)
    drawer = StateRenderer(library_object("chair"), camera=camera, size=SIZE)
    matrix = drawer.world_matrix(StimulusState(reflection=(False, True)), 1.0, (0.0, 0.0))
    pose = camera.pose()
    right, up, back = pose[:3, 0], pose[:3, 1], pose[:3, 2]
    assert np.linalg.det(matrix[:3, :3]) == pytest.approx(-1.0)
    assert np.allclose(matrix[:3, :3] @ right, -right)
    assert np.allclose(matrix[:3, :3] @ up, up) and np.allclose(matrix[:3, :3] @ back, back)


def test_3d_size_scales_the_picture_axes(renderer: Renderer) -> None:
    car = library_object("toy-car")
    camera = Camera(azimuth=60, elevation=30)
    drawer = StateRenderer(car, renderer, camera, SIZE)
    states = [StimulusState(), StimulusState(scale=(2.0, 1.0)), StimulusState(scale=(1.0, 2.0))]
    fit = drawer.fit(states)
    boxes = [ink_box(drawer.image(s, fit)) for s in states]
    (x0, y0, x1, y1), (wx0, wy0, wx1, wy1), (hx0, hy0, hx1, hy1) = boxes
    assert (wx1 - wx0) / (x1 - x0) == pytest.approx(2.0, abs=0.15)
    assert (wy1 - wy0) / (y1 - y0) == pytest.approx(1.0, abs=0.1)
    assert (hy1 - hy0) / (y1 - y0) == pytest.approx(2.0, abs=0.15)
    assert (hx1 - hx0) / (x1 - x0) == pytest.approx(1.0, abs=0.1)


def test_3d_colour_paints_only_the_paintable_parts(renderer: Renderer) -> None:
    car = library_object("toy-car")  # blue body, dark wheels that are not painted
    image = render_state(car, StimulusState(color="yellow"), renderer, Camera())
    rgb = np.asarray(image).astype(int)
    drawn = foreground_mask(image)
    yellowish = (rgb[..., 0] > 150) & (rgb[..., 1] > 120) & (rgb[..., 2] < 110)
    dark = rgb.max(axis=2) < 110
    assert (yellowish & drawn).sum() > 0.3 * drawn.sum()
    assert (dark & drawn).sum() > 10  # the wheels keep their colour
    assert not ((rgb[..., 2] > rgb[..., 0] + 60) & drawn).any()  # no blue left


def test_3d_number_eight_copies_fit_without_overlap(renderer: Renderer) -> None:
    mug = library_object("mug")
    before, after = preview_pair(
        mug,
        TransformSpec("number", "x2"),
        state=StimulusState(count=4),
        renderer=renderer,
        size=SIZE,
    )
    assert components(before) == 4 and components(after) == 8
    mask = foreground_mask(after)
    assert not (mask[0].any() or mask[-1].any() or mask[:, 0].any() or mask[:, -1].any())
    drawer = StateRenderer(mug, renderer, Camera(), SIZE)
    fit = drawer.fit([StimulusState(count=4), StimulusState(count=8)])
    lay = drawer.layout(StimulusState(count=8), fit)
    assert len(lay.offsets) == 8 and not lay.overlaps()
    # every copy the same size in both pictures
    sizes = [ndimage.find_objects(ndimage.label(foreground_mask(im))[0]) for im in (before, after)]
    widths = {sl[1].stop - sl[1].start for boxes in sizes for sl in boxes}
    assert max(widths) - min(widths) <= 1


def test_3d_symmetric_box_renders_and_preview_size(renderer: Renderer) -> None:
    from studio.render3d.objects import Object3D, Part, normalised

    box = trimesh.creation.box(extents=(1.0, 1.0, 1.0))
    obj = Object3D("box", normalised([Part(box, True, "box")]))
    before, after = preview_pair(
        obj,
        TransformSpec("rotation", "+90"),
        renderer=renderer,
        camera=Camera(azimuth=0, elevation=0),
        size=SIZE,
    )
    assert before.size == after.size == (SIZE, SIZE)
    assert pixel_difference(before, after) < 0.02  # a square turned a quarter is the square
