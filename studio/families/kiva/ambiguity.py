"""Pixel-level ambiguity of KiVA transformations and answer options.

A trial is fair only when its change can be seen and read one way. The symbolic state says what
was *meant*; these checks look at what is *drawn*, for this object from this camera:

- ``visible-change``: the after-picture differs from the before-picture in enough of the drawn
  pixels (a colour change to the colour the object already has, a turn of a round object, are
  no change at all);
- ``reflection-visible``: a reflection of an object that looks the same in the mirror (a mug
  seen with its handle hidden, a box seen face on) is refused — it shows nothing to reflect;
- ``unique-transform``: no *other* candidate transformation, of any domain, draws (nearly) the
  same after-picture — a half turn against a reflection across both axes, +1 against ×2 from
  one object, a quarter turn of a square object against no change. The detail names the
  confusable transformation(s);
- ``distinct-option``: no distractor of the extrapolation question draws (nearly) the key.

Measures: :func:`pixel_difference` is the share of the drawn pixels (those of either picture that
are not background) that differ beyond :data:`PIXEL_TOLERANCE`; it is normalised by what is
drawn, not by the frame, so a small object and a large one are judged alike. :func:`mask_iou` is
the intersection over union of the two silhouettes. Every check carries its measure.

Core layer: no Qt, no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from studio.core.verdict import Finding, Verdict
from studio.families.kiva.transforms import (
    StateRenderer,
    StimulusState,
    TransformSpec,
    apply,
    same_picture,
    specs,
    try_apply,
)

if TYPE_CHECKING:
    from studio.render3d.objects import Object3D
    from studio.render3d.scene import Camera, Renderer

#: Largest per-channel difference (0..255) two pixels may have and still count as the same:
#: above the rounding and anti-aliasing noise of a re-render or a resample (a few levels), below
#: the smallest colour step that people notice on a flat face (the library's shades differ by
#: far more than 40).
PIXEL_TOLERANCE = 40
#: Distance (0..255, largest channel) from the background colour from which a pixel is drawn.
BACKGROUND_TOLERANCE = 16
#: A change is visible when at least this share of the drawn pixels differs. Measured on the
#: library at 64–224 px: turns and mirrors of chiral objects differ in 20–90 % of them, an
#: identical re-render in 0 %, a quarter turn of a square seen face on in under 2 % (edge
#: pixels); 5 % keeps a clear margin on both sides.
MIN_VISIBLE_DIFFERENCE = 0.05
#: A reflection must change more than a generic change: a mirror image that differs only in a
#: few shaded pixels (a nearly symmetric object) is not seen as mirrored. Mirrors of the
#: library's chiral objects differ in 25 % or more of the drawn pixels.
MIN_REFLECTION_DIFFERENCE = 0.10
#: Two pictures are confusable (nearly the same) below this share of differing drawn pixels:
#: a re-render of the same geometry along another path (a half turn and a double mirror round
#: differently) stays under 1 %, anti-aliased edges of a turned square under 2 %.
CONFUSABLE_DIFFERENCE = 0.03
#: ... unless their silhouettes differ: the pictures also need an IoU at or above this to be
#: confusable, so a small object whose change is mostly its outline is not merged by the
#: pixel share alone.
CONFUSABLE_MIN_IOU = 0.95


#: Rival after-pictures are compared at this size at most (the thresholds above were measured
#: at 64–224 px, and the share of differing pixels hardly depends on it): a verdict then costs
#: about a third of the renders' time at 224 px, which keeps the GUI's preview verdict and the
#: trial builder quick.
COMPARE_SIZE = 96


@dataclass(frozen=True)
class _Pixels:
    """A picture as int16 RGB and its drawn mask, computed once per comparison."""

    rgb: np.ndarray
    mask: np.ndarray


def _channel_max(x: np.ndarray) -> np.ndarray:
    return np.maximum(np.maximum(x[..., 0], x[..., 1]), x[..., 2])


def _pixels(image: Image.Image) -> _Pixels:
    has_alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
    arr = np.asarray(image.convert("RGBA") if has_alpha else image.convert("RGB"))
    rgb = arr[..., :3].astype(np.int16)
    if has_alpha and arr[..., 3].min() < 250:
        return _Pixels(rgb, arr[..., 3] > BACKGROUND_TOLERANCE)
    corners = np.array([rgb[0, 0], rgb[0, -1], rgb[-1, 0], rgb[-1, -1]])
    bg = np.median(corners, axis=0).astype(np.int16)
    return _Pixels(rgb, _channel_max(np.abs(rgb - bg)) > BACKGROUND_TOLERANCE)


def foreground_mask(image: Image.Image) -> np.ndarray:
    """What is drawn: opaque pixels of an image with transparency, else pixels away from the
    background colour (the median of the four corners; white for renders)."""
    return _pixels(image).mask


def _same_size(a: Image.Image, b: Image.Image) -> None:
    if a.size != b.size:
        raise ValueError(f"pictures of different sizes cannot be compared: {a.size} and {b.size}")


def _difference(a: _Pixels, b: _Pixels) -> float:
    drawn = a.mask | b.mask
    n = int(drawn.sum())
    if n == 0:
        return 0.0
    differs = _channel_max(np.abs(a.rgb - b.rgb)) > PIXEL_TOLERANCE
    return float((differs & drawn).sum() / n)


def _iou(a: _Pixels, b: _Pixels) -> float:
    union = int((a.mask | b.mask).sum())
    return 1.0 if union == 0 else float((a.mask & b.mask).sum() / union)


def pixel_difference(a: Image.Image, b: Image.Image) -> float:
    """Share (0..1) of the drawn pixels — drawn in either picture — whose colour differs by more
    than :data:`PIXEL_TOLERANCE` in some channel; 0 when neither draws anything."""
    _same_size(a, b)
    return _difference(_pixels(a), _pixels(b))


def mask_iou(a: Image.Image, b: Image.Image) -> float:
    """Intersection over union (0..1) of the two pictures' drawn masks; 1 when both are blank."""
    _same_size(a, b)
    return _iou(_pixels(a), _pixels(b))


def _confusable(a: _Pixels, b: _Pixels) -> tuple[bool, float, float]:
    diff, iou = _difference(a, b), _iou(a, b)
    return diff < CONFUSABLE_DIFFERENCE and iou >= CONFUSABLE_MIN_IOU, diff, iou


def confusable(a: Image.Image, b: Image.Image) -> tuple[bool, float, float]:
    """(nearly the same?, pixel difference, mask IoU) of two pictures."""
    _same_size(a, b)
    return _confusable(_pixels(a), _pixels(b))


def comparison_drawer(drawer: StateRenderer) -> StateRenderer:
    """A drawer of the same source and camera at :data:`COMPARE_SIZE` (``drawer`` itself when it
    is no larger); 3D pictures come from this thread's shared renderer of that size, and are
    kept in the drawer's :class:`~studio.families.kiva.transforms.PictureCache` if it has one."""
    if drawer.size <= COMPARE_SIZE:
        return drawer
    return StateRenderer(
        drawer.source, None, drawer.resolved_camera(), COMPARE_SIZE, shared=drawer.shared
    )


def vet_transform(
    source: Object3D | Image.Image,
    spec: TransformSpec,
    state: StimulusState | None = None,
    renderer: Renderer | None = None,
    camera: Camera | None = None,
    size: int = 224,
    *,
    candidates: Sequence[TransformSpec] | None = None,
    fit: float | None = None,
    drawer: StateRenderer | None = None,
    compare: StateRenderer | None = None,
) -> Verdict:
    """Whether ``spec`` applied to ``state`` of this source reads unambiguously (the module
    docstring lists the checks).

    ``candidates`` are the transformations it must not be confused with (default: every spec
    of KiVA-adults; "no change" always counts); ``fit`` is the one fit of the pictures shown
    with it (default: the pair's own). ``drawer`` reuses a :class:`StateRenderer`'s pictures
    (the preview's, the trial builder's), so nothing is drawn twice; ``compare`` draws the
    rivals (default: :func:`comparison_drawer`). A spec that cannot apply raises StudioError,
    as :func:`~studio.families.kiva.transforms.apply` does."""
    before = state or StimulusState()
    after = apply(spec, before)
    drawer = drawer or StateRenderer(source, renderer, camera, size)
    pair_fit = drawer.fit([before, after]) if fit is None else fit
    px_before = _pixels(drawer.image(before, pair_fit))
    px_after = _pixels(drawer.image(after, pair_fit))
    checks: list[Finding] = []

    diff = _difference(px_before, px_after)
    checks.append(
        Finding(
            "visible-change",
            diff >= MIN_VISIBLE_DIFFERENCE,
            diff,
            f"{spec.label}: {diff:.1%} of the drawn pixels change "
            f"(at least {MIN_VISIBLE_DIFFERENCE:.0%} needed)",
        )
    )
    if spec.domain == "reflection":
        iou = _iou(px_before, px_after)
        ok = diff >= MIN_REFLECTION_DIFFERENCE
        checks.append(
            Finding(
                "reflection-visible",
                ok,
                diff,
                f"{spec.label}: the mirror image differs in {diff:.1%} of the drawn pixels "
                f"(silhouette IoU {iou:.3f})"
                + ("" if ok else "; the object looks the same in this mirror"),
            )
        )
    checks.append(
        _unique_transform(
            source, spec, before, after, pair_fit, candidates, compare or comparison_drawer(drawer)
        )
    )
    return Verdict(tuple(checks))


def _unique_transform(
    source: Any,
    spec: TransformSpec,
    before: StimulusState,
    after: StimulusState,
    pair_fit: float,
    candidates: Sequence[TransformSpec] | None,
    drawer: StateRenderer,
) -> Finding:
    """Compare the after-picture with every rival's (no change and each other candidate that
    applies and shows as many copies); name those that draw nearly the same."""
    base = _base_color(source)
    pool = list(candidates) if candidates is not None else specs("kiva-adults")
    rivals: list[tuple[str, StimulusState]] = [("no change", before)]
    for other in pool:
        if other != spec and (other_state := try_apply(other, before)) is not None:
            rivals.append((f"{other.label} ({other.id})", other_state))
    confusions: list[str] = []
    closest = 1.0
    px_after: _Pixels | None = None
    for name, other_state in rivals:
        if other_state.count != after.count:
            continue  # another number of copies is always seen
        if same_picture(other_state, after, base):
            confusions.append(name)  # the same picture by construction: no need to draw it
            closest = 0.0
            continue
        if px_after is None:
            px_after = _pixels(drawer.image(after, pair_fit))
        other_fit = min(pair_fit, drawer.fit([other_state]))
        same, d, _ = _confusable(px_after, _pixels(drawer.image(other_state, other_fit)))
        closest = min(closest, d)
        if same:
            confusions.append(name)
    return Finding(
        "unique-transform",
        not confusions,
        closest,
        (
            f"{spec.label} draws nearly the same picture as: " + "; ".join(confusions)
            if confusions
            else f"{spec.label}: every other candidate differs in at least {closest:.1%} "
            "of the drawn pixels"
        ),
    )


def _base_color(source: Any) -> tuple[int, int, int] | None:
    return None if isinstance(source, Image.Image) else getattr(source, "base_color", None)


def vet_options(key_image: Image.Image, distractor_images: Sequence[Image.Image]) -> Verdict:
    """One ``distinct-option`` check per distractor: refused when it draws (nearly) the key's
    picture, so the question would have two right answers."""
    checks = []
    key = _pixels(key_image)
    for i, other in enumerate(distractor_images):
        _same_size(key_image, other)
        same, diff, iou = _confusable(key, _pixels(other))
        checks.append(
            Finding(
                "distinct-option",
                not same,
                diff,
                f"distractor {i} differs from the key in {diff:.1%} of the drawn pixels "
                f"(silhouette IoU {iou:.3f})" + ("; it looks the same as the key" if same else ""),
            )
        )
    return Verdict(tuple(checks))
