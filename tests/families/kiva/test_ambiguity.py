"""Pixel-level ambiguity checks with known verdicts: confusable transformations are named, a
mirror of a symmetric object and a colour the object already has are refused, a clear change
passes, and identical options are caught."""

from __future__ import annotations

import pytest
import trimesh
from PIL import Image, ImageDraw

from studio.core.verdict import Verdict
from studio.families.kiva.ambiguity import (
    CONFUSABLE_DIFFERENCE,
    MIN_VISIBLE_DIFFERENCE,
    foreground_mask,
    mask_iou,
    pixel_difference,
    vet_options,
    vet_transform,
)
from studio.families.kiva.transforms import StateRenderer, StimulusState, TransformSpec, specs
from studio.render3d import Camera, Renderer
from studio.render3d.objects import Object3D, Part, library_object, normalised

SIZE = 64
FACE_ON = Camera(azimuth=0, elevation=0)


@pytest.fixture(scope="module")
def renderer():
    with Renderer(SIZE) as r:
        yield r


def box_object(extents: tuple[float, float, float] = (1.0, 1.0, 1.0)) -> Object3D:
    """A box: symmetric under both mirrors and a quarter turn when seen face on."""
    mesh = trimesh.creation.box(extents=extents)
    mesh.visual = trimesh.visual.ColorVisuals(mesh, face_colors=[40, 80, 210, 255])
    return Object3D("box", normalised([Part(mesh, True, "box")]), base_color=(40, 80, 210))


def vet(
    obj, spec: tuple[str, str], renderer: Renderer, *, state=None, camera=None, mode="kiva-adults"
):
    return vet_transform(
        obj,
        TransformSpec(*spec),
        state,
        renderer,
        camera or Camera(),
        SIZE,
        candidates=specs(mode),
    )


def check(verdict: Verdict, name: str):
    (found,) = [c for c in verdict.findings if c.check == name]
    return found


def square(fill: str = "black", box: tuple[int, int, int, int] = (10, 10, 30, 30)) -> Image.Image:
    im = Image.new("RGB", (40, 40), "white")
    ImageDraw.Draw(im).rectangle(box, fill=fill)
    return im


# ---- the measures ----------------------------------------------------------------------------


def test_pixel_difference_and_mask_iou() -> None:
    a = square()
    assert pixel_difference(a, a.copy()) == 0.0 and mask_iou(a, a) == 1.0
    assert pixel_difference(a, square("red")) == 1.0  # every drawn pixel changed colour
    assert mask_iou(a, square("red")) == 1.0  # same silhouette
    moved = square(box=(20, 10, 40, 30))
    assert 0.3 < mask_iou(a, moved) < 0.5
    blank = Image.new("RGB", (40, 40), "white")
    assert pixel_difference(blank, blank) == 0.0 and mask_iou(blank, blank) == 1.0
    assert foreground_mask(a).sum() == 21 * 21
    with pytest.raises(ValueError, match="different sizes"):
        pixel_difference(a, Image.new("RGB", (10, 10)))


# ---- known verdicts ----------------------------------------------------------------------------


def test_half_turn_and_double_mirror_are_flagged(renderer: Renderer) -> None:
    verdict = vet(library_object("l-block"), ("rotation", "180"), renderer)
    unique = check(verdict, "unique-transform")
    assert not verdict.valid and not unique.ok
    assert "reflection:both" in unique.detail and unique.measure == 0.0
    assert check(verdict, "visible-change").ok  # the change itself is plain to see
    mirrored = check(
        vet(library_object("l-block"), ("reflection", "both"), renderer), "unique-transform"
    )
    assert not mirrored.ok and "rotation:180" in mirrored.detail
    # KiVA has no double mirror, so there a half turn is fine
    assert vet(library_object("l-block"), ("rotation", "180"), renderer, mode="kiva").valid


def test_mirror_of_a_symmetric_object_is_refused(renderer: Renderer) -> None:
    verdict = vet(box_object(), ("reflection", "y"), renderer, camera=FACE_ON, mode="kiva")
    refused = check(verdict, "reflection-visible")
    assert not verdict.valid and not refused.ok
    assert refused.measure is not None and refused.measure < MIN_VISIBLE_DIFFERENCE
    assert "looks the same in this mirror" in refused.detail
    assert not check(verdict, "visible-change").ok


def test_turn_of_a_rotationally_symmetric_object_is_flagged(renderer: Renderer) -> None:
    verdict = vet(box_object(), ("rotation", "+90"), renderer, camera=FACE_ON, mode="kiva")
    assert not check(verdict, "visible-change").ok
    unique = check(verdict, "unique-transform")
    assert not unique.ok and "no change" in unique.detail
    assert unique.measure is not None and unique.measure < CONFUSABLE_DIFFERENCE


def test_colour_the_object_already_has_is_flagged(renderer: Renderer) -> None:
    mug = library_object("mug")  # made in the library's red
    verdict = vet(mug, ("color", "red"), renderer)
    assert not verdict.valid
    assert check(verdict, "visible-change").measure == 0.0
    unique = check(verdict, "unique-transform")
    assert not unique.ok and "no change" in unique.detail
    assert vet(mug, ("color", "blue"), renderer).valid


def test_one_more_and_twice_as_many_of_one_object_are_flagged(renderer: Renderer) -> None:
    duck = library_object("duck")
    verdict = vet(duck, ("number", "+1"), renderer)
    unique = check(verdict, "unique-transform")
    assert not unique.ok and "number:x2" in unique.detail
    # from three objects +1 makes four and ×2 six: no confusion
    assert vet(duck, ("number", "+1"), renderer, state=StimulusState(count=3)).valid


def test_a_clearly_different_transform_passes(renderer: Renderer) -> None:
    verdict = vet(library_object("l-block"), ("rotation", "+90"), renderer, mode="kiva")
    assert verdict.valid, verdict.errors
    for c in verdict.findings:
        assert c.measure is not None and c.measure > 0.1, c
    key = vet(library_object("key"), ("reflection", "y"), renderer)
    assert key.valid and check(key, "reflection-visible").ok


def test_vetting_reuses_a_drawer_and_works_on_2d_images(renderer: Renderer) -> None:
    drawer = StateRenderer(library_object("boot"), renderer, Camera(), SIZE)
    first = vet_transform(library_object("boot"), TransformSpec("size", "x2"), drawer=drawer)
    cached = len(drawer._cache)
    again = vet_transform(library_object("boot"), TransformSpec("size", "x2"), drawer=drawer)
    assert first == again and len(drawer._cache) == cached  # nothing drawn twice
    ring = Image.new("L", (100, 100), 255)
    ImageDraw.Draw(ring).ellipse([10, 10, 90, 90], outline=0, width=12)
    turned = vet_transform(ring, TransformSpec("rotation", "+90"), size=SIZE)
    assert not turned.valid and "no change" in check(turned, "unique-transform").detail
    assert vet_transform(ring, TransformSpec("size", "x1/2"), size=SIZE).valid


def test_identical_options_are_refused(renderer: Renderer) -> None:
    drawer = StateRenderer(library_object("chair"), renderer, Camera(), SIZE)
    key = drawer.image(StimulusState(rotation=90))
    same = drawer.image(StimulusState(rotation=90))
    other = drawer.image(StimulusState(rotation=-90))
    verdict = vet_options(key, [other, same.copy()])
    first, second = verdict.findings
    assert first.ok and not second.ok and not verdict.valid
    assert second.measure == 0.0 and "looks the same as the key" in second.detail
    assert vet_options(key, [other, drawer.image(StimulusState())]).valid
