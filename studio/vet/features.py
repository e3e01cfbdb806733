"""Image-derived glyph features, and a pseudo concept schema built on them.

Why: a puzzle generator draws foils (wrong answers) from the glyph annotations, but annotations
are sparse — most glyphs carry two or three tags, so a foil may complete a rule the annotators
never marked (three glyphs that all happen to have two holes, or to be tall). Features computed
from each glyph's binarised render catch the most visible of these emergent rules. They are
turned into *pseudo-annotations* (:func:`feature_tags`) over a pseudo schema
(:data:`FEATURE_SCHEMA`), so that the very same rule checker that reads the real annotations can
run over them; a hit is shown to the curator as a warning together with the feature values.

Images are ``uint8`` arrays, 0 = ink and 255 = paper (see :mod:`studio.glyphs.render`); a pixel
is ink when its value is < 128. Every feature is invariant to where the glyph sits on the
canvas (as long as it is not clipped): the symmetries are taken about the ink box's centre.

**Symmetry scores** (``mirror_lr``, ``mirror_tb``, ``rot180``, ``rot90``), precisely. Let ``A``
be the set of ink pixels (``n = |A|``) and ``[x0, x1) × [y0, y1)`` the ink bounding box
(``w = x1 - x0``, ``h = y1 - y0`` pixels) with centre ``c = ((x0 + x1) / 2, (y0 + y1) / 2)``.
``T`` is one transform about ``c``: the mirror in the vertical line through ``c``
(``mirror_lr``: the left half matches the right), in the horizontal line (``mirror_tb``),
the half turn (``rot180``) or the quarter turn (``rot90``). A pixel ``p`` of ``A`` is
*matched* when some ink pixel lies within Chebyshev distance ``r`` of ``T(p)`` (in the
``(2r + 1)``-square around it), on an unbounded canvas: a pixel that ``T`` moves off the image
is unmatched. With ``k`` matched pixels the score is the tolerant intersection over union
``k / (2n - k)``; for ``r = 0`` it is exactly ``|A ∩ T(A)| / |A ∪ T(A)|``. The tolerance is
``r = round(SYMMETRY_TOLERANCE × longer image side)`` = 2 pixels at 80×80.

Why a tolerance rather than the plain IoU: at 80 px a 1-pixel hinting shift or the thick/thin
strokes of a serif face cost a visibly symmetric glyph most of its overlap. On Symbola the
plain IoU scores 'A' left-right 0.54 and 'X' half-turn 0.58 — below 'F' top-bottom (0.72),
which no one calls symmetric — so no threshold separates them; with ``r = 2`` 'A' scores 0.91,
'X' 0.98, 'F' 0.74 and 'L' 0.19 (left-right) / 0.71 (top-bottom).

Mirrors and the half turn map pixel centres onto pixel centres. A quarter turn does so only
when ``w`` and ``h`` have the same parity; otherwise ``T(A)`` lies half a pixel off the grid in
both axes and is moved half a pixel to the grid in each of the four diagonal ways, keeping the
best score (erring towards "symmetric", as the warnings should). An empty image is invariant
under every transform and scores 1.0 on all four.

**Thresholds** (:func:`feature_tags`) were chosen on 80×80 renders of 1,003 Symbola glyphs: the
935 UA-annotated Symbola code points that render, and 68 more ASCII letters, digits and signs.
The constants below say where each bound sits in that sample and why; the resulting tag counts
are in :func:`feature_tags`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import ndimage

from studio.core.schema import (
    Category,
    Concept,
    ConstantMode,
    Rule,
    RuleSpec,
    Schema,
    Value,
    ValueKind,
)

__all__ = [
    "ASPECT_MARGIN",
    "ASPECT_TALL_BELOW",
    "ASPECT_WIDE_ABOVE",
    "FEATURE_SCHEMA",
    "INK_HIGH_ABOVE",
    "INK_LOW_BELOW",
    "INK_MARGIN",
    "MAX_COUNT",
    "MIRROR_THRESHOLD",
    "ROTATION_THRESHOLD",
    "SIZE_LARGE_ABOVE",
    "SIZE_MARGIN",
    "SIZE_SMALL_BELOW",
    "SYMMETRY_TOLERANCE",
    "GlyphFeatures",
    "compute_features",
    "compute_features_batch",
    "feature_tags",
    "symmetry_tolerance",
]

INK_THRESHOLD = 128  # a pixel is ink below this grey value (the renderer's binarisation)

# ---- thresholds ------------------------------------------------------------------------------
#: Aspect ratio ``bbox_w / bbox_h`` below which a glyph is ``tall``: 0.75 = 3:4, visibly
#: narrower than square. In the sample the median is 1.0 and 22 % fall below (Symbola's
#: '8' 0.61, 'S' 0.64, 'I' 0.43 are tall; 'L' 0.81 and most capitals 0.86–1.05 are square).
ASPECT_TALL_BELOW = 0.75
#: Aspect ratio above which a glyph is ``wide``: 4:3, the mirror image of the tall bound
#: (15 % of the sample; 'W' 1.39 is wide, 'M' 1.24 square).
ASPECT_WIDE_ABOVE = 1 / ASPECT_TALL_BELOW
#: Within a factor ``1 + ASPECT_MARGIN`` of an aspect bound, either way (0.69–0.81 round 0.75),
#: a glyph carries both neighbouring values: a viewer may read it either way, so it may
#: complete either rule.
ASPECT_MARGIN = 0.08
#: ``bbox_size`` (longer ink side / image side) below which a glyph is ``small``. The renderer
#: draws at one font size and only shrinks glyphs that overflow, so sizes cluster on even pixel
#: counts: capitals and most symbols 42–46 px of 80 (0.53–0.575), full-height pictographs
#: 56–58 px (0.70–0.725). Below 0.45 (36 px; 11 % of the sample) are punctuation, marks and
#: small signs (UA's ``global-size=small`` glyphs measure 0.09–0.25).
SIZE_SMALL_BELOW = 0.45
#: ``bbox_size`` above which a glyph is ``large``: 0.65 (52 px) sits in the sparse gap below
#: the pictograph cluster, so that it is not split; a third of the sample is large.
SIZE_LARGE_ABOVE = 0.65
#: Within this absolute distance of a size bound a glyph carries both values: 0.02 is 1.6 px,
#: so at 80 px the glyphs one pixel either side of a bound (ink boxes are whole pixels).
SIZE_MARGIN = 0.02
#: ``ink_fraction`` below which a glyph is ``low`` ink: the lightest fifth (thin line signs;
#: UA's ``ink=low`` glyphs measure 0.008–0.05, Latin capitals 0.05–0.10).
INK_LOW_BELOW = 0.04
#: ``ink_fraction`` above which a glyph is ``high`` ink: the darkest fifth (filled shapes,
#: dense pictographs; UA's ``ink=high`` glyphs measure 0.08–0.23).
INK_HIGH_ABOVE = 0.12
#: Within a factor ``1 + INK_MARGIN`` of an ink bound, either way, a glyph carries both.
INK_MARGIN = 0.15
#: Matching tolerance of the symmetry scores, as a share of the longer image side (2 px at
#: 80 px): enough to forgive serif stroke contrast and 1-pixel hinting shifts (module
#: docstring), small against the ~40 px a glyph's strokes span.
SYMMETRY_TOLERANCE = 1 / 40
#: Mirror score at or above which a glyph carries ``left-right`` / ``top-bottom``. Symmetric
#: Symbola letters score 0.87–1.0 ('A' 0.91, 'V' 0.89, 'B' and 'E' top-bottom 1.0); asymmetric
#: ones mostly 0.2–0.75 ('L', 'F', 'P', 'J', '7'), with a few near-symmetric shapes just above
#: ('R' top-bottom 0.88, 'G' 0.91). 0.85 keeps the symmetric ones, erring towards warning.
MIRROR_THRESHOLD = 0.85
#: Rotation score at or above which a glyph carries ``180`` / ``90`` ('H', 'X', 'S', 'Z', 'N'
#: score 0.91–1.0 for the half turn; 'O' only 0.70 for the quarter turn, being an oval).
ROTATION_THRESHOLD = 0.85
#: Counts above this get no value for ``img-components`` / ``img-holes``.
MAX_COUNT = 8

# ---- the pseudo schema -----------------------------------------------------------------------

CATEGORY = "image-features"
ASPECT_VALUES = ("tall", "square", "wide")
SIZE_VALUES = ("small", "medium", "large")
INK_VALUES = ("low", "medium", "high")
MIRROR_VALUES = ("left-right", "top-bottom", "none")
ROTATION_VALUES = ("180", "90", "none")


def _select() -> RuleSpec:
    return RuleSpec(Rule.CONSTANT, ConstantMode.SELECT)


def _negate() -> RuleSpec:
    return RuleSpec(Rule.CONSTANT, ConstantMode.NEGATE)


def _count_concept(cid: str, first: int, label: str, description: str) -> Concept:
    return Concept(
        id=cid,
        category=CATEGORY,
        kind=ValueKind.INTEGER,
        values=tuple(Value(str(n)) for n in range(first, MAX_COUNT + 1)),
        rules={
            Rule.CONSTANT: _select(),
            Rule.PROGRESSION: RuleSpec(Rule.PROGRESSION),
            Rule.ARITHMETIC: RuleSpec(Rule.ARITHMETIC),
        },
        label=label,
        description=description,
    )


def _ordinal_concept(cid: str, values: tuple[str, ...], label: str, description: str) -> Concept:
    return Concept(
        id=cid,
        category=CATEGORY,
        kind=ValueKind.ORDINAL,
        values=tuple(Value(v) for v in values),
        rules={
            Rule.CONSTANT: _select(),
            Rule.PROGRESSION: RuleSpec(Rule.PROGRESSION, values=values),
        },
        label=label,
        description=description,
    )


def _nominal_concept(cid: str, values: tuple[str, ...], label: str, description: str) -> Concept:
    return Concept(
        id=cid,
        category=CATEGORY,
        kind=ValueKind.NOMINAL,
        values=tuple(Value(v) for v in values),
        rules={Rule.CONSTANT: _negate()},
        label=label,
        description=description,
    )


#: The concepts that :func:`feature_tags` assigns values of. Not a schema anyone annotates by
#: hand: it exists so the emergent-rule checker can run unchanged over image features.
FEATURE_SCHEMA: Schema = Schema(
    id="image-features",
    version="1",
    title="Image features",
    description=(
        "Pseudo-concepts computed from each glyph's 80x80 binarised render "
        "(studio.vet.features), used to warn about emergent rules the annotations miss."
    ),
    categories=(Category(CATEGORY, "Image features"),),
    concepts=(
        _count_concept("img-components", 1, "Components", "8-connected ink components (1 to 8)."),
        _count_concept("img-holes", 0, "Holes", "Enclosed 4-connected paper regions (0 to 8)."),
        _ordinal_concept(
            "img-aspect", ASPECT_VALUES, "Aspect", "Ink box width / height: tall, square, wide."
        ),
        _ordinal_concept(
            "img-size", SIZE_VALUES, "Size", "Longer side of the ink box / image side."
        ),
        _ordinal_concept("img-ink", INK_VALUES, "Ink", "Share of the image that is ink."),
        _nominal_concept(
            "img-mirror", MIRROR_VALUES, "Mirror symmetry", "Left-right / top-bottom mirror."
        ),
        _nominal_concept(
            "img-rotation", ROTATION_VALUES, "Rotational symmetry", "Half or quarter turn."
        ),
    ),
)


# ---- features --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GlyphFeatures:
    """What the pixels of one binarised glyph say, independent of where the glyph sits.

    ``bbox_w``/``bbox_h`` are the ink bounding box in pixels (0 without ink); ``aspect_ratio``
    is ``bbox_w / bbox_h`` (1.0 without ink); ``bbox_size`` is ``max(bbox_w, bbox_h)`` over the
    image side (the longer side for a non-square image). ``components`` counts 8-connected ink
    regions, ``holes`` 4-connected paper regions that do not touch the image border (the dual
    connectivities, so that a diagonal ink stroke closes a hole), ``euler`` is their
    difference. The four symmetry scores are defined in the module docstring.
    """

    ink_fraction: float
    bbox_w: int
    bbox_h: int
    aspect_ratio: float
    bbox_size: float
    components: int
    holes: int
    euler: int
    mirror_lr: float
    mirror_tb: float
    rot180: float
    rot90: float

    def to_json(self) -> dict[str, Any]:
        """A plain dict (floats rounded to 4 places) for reports and warnings."""
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()}


_EIGHT = np.ones((3, 3), dtype=bool)
_FOUR = ndimage.generate_binary_structure(2, 1)


def symmetry_tolerance(side: int) -> int:
    """The matching tolerance ``r`` in pixels for an image whose longer side is ``side``."""
    return int(side * SYMMETRY_TOLERANCE + 0.5)


def _iou(hits: int, n: int) -> float:
    """Tolerant IoU of ``n`` ink pixels with their equally large image, ``hits`` matched."""
    return 1.0 if n == 0 else hits / (2 * n - hits)


def _shifted_overlap(a: np.ndarray, b: np.ndarray, dr: int, dc: int) -> int:
    """Pixels set in both ``a`` and ``b`` when ``b``'s top-left sits at ``(dr, dc)`` in a."""
    r0, c0 = max(0, dr), max(0, dc)
    r1, c1 = min(a.shape[0], dr + b.shape[0]), min(a.shape[1], dc + b.shape[1])
    if r1 <= r0 or c1 <= c0:
        return 0
    return int(np.count_nonzero(a[r0:r1, c0:c1] & b[r0 - dr : r1 - dr, c0 - dc : c1 - dc]))


def _quarter_offsets(h: int, w: int) -> tuple[list[int], list[int]]:
    """Where the quarter-turned box (w × h) goes relative to the box (h × w): top-left rows
    and columns, both roundings when the exact place is half a pixel off the grid."""
    d = h - w
    return sorted({d // 2, -(-d // 2)}), sorted({(-d) // 2, -(d // 2)})


def compute_features(img: np.ndarray) -> GlyphFeatures:
    """Features of one ``h × w`` uint8 image (ink where the value is < 128).

    Written plainly, image by image, straight from the definitions; the vectorised
    :func:`compute_features_batch` must give the same numbers, and the tests hold one to the
    other.
    """
    if img.ndim != 2:
        raise ValueError(f"expected one h×w image, got shape {img.shape}")
    ink = np.asarray(img) < INK_THRESHOLD
    n = int(np.count_nonzero(ink))
    side = max(ink.shape)
    if n == 0:
        return GlyphFeatures(0.0, 0, 0, 1.0, 0.0, 0, 0, 0, 1.0, 1.0, 1.0, 1.0)
    rows = np.flatnonzero(ink.any(axis=1))
    cols = np.flatnonzero(ink.any(axis=0))
    box = ink[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    h, w = box.shape
    _, components = ndimage.label(ink, _EIGHT)
    # A paper frame makes all border-touching paper one region; every other region is a hole.
    _, paper_regions = ndimage.label(np.pad(~ink, 1, constant_values=True), _FOUR)
    holes = paper_regions - 1

    # Symmetry: the box with r pixels of paper round it, so that its centre stays the box's
    # centre and the dilation (ink within r pixels) has room; transforms of the padded box
    # are then transforms about the centre of the ink box.
    r = symmetry_tolerance(side)
    padded = np.pad(box, r)
    near = ndimage.binary_dilation(padded, np.ones((2 * r + 1, 2 * r + 1), bool)) if r else padded
    drs, dcs = _quarter_offsets(h, w)
    quarter = np.rot90(padded)
    k90 = max(_shifted_overlap(near, quarter, dr, dc) for dr in drs for dc in dcs)
    return GlyphFeatures(
        ink_fraction=n / ink.size,
        bbox_w=w,
        bbox_h=h,
        aspect_ratio=w / h,
        bbox_size=max(w, h) / side,
        components=components,
        holes=holes,
        euler=components - holes,
        mirror_lr=_iou(int(np.count_nonzero(near & padded[:, ::-1])), n),
        mirror_tb=_iou(int(np.count_nonzero(near & padded[::-1, :])), n),
        rot180=_iou(int(np.count_nonzero(near & padded[::-1, ::-1])), n),
        rot90=_iou(k90, n),
    )


_BATCH_CHUNK = 512  # images per vectorised step: small enough to stay in cache (fastest here)


def _components_per_image(ink: np.ndarray) -> np.ndarray:
    """8-connected ink regions of each image of an N×h×w stack, with one ``ndimage.label``.

    The images are stacked into one tall mosaic with a paper row after each, which no
    8-connected region can cross. scipy numbers labels in raster order of first appearance, so
    each image's labels form one run of consecutive numbers and its count is the length of
    that run; since that order is scipy's behaviour rather than its promise, the runs are
    checked to partition the labels, and ``find_objects`` (slower) counts them otherwise.
    """
    num, height, width = ink.shape
    mosaic = np.zeros((num, height + 1, width), dtype=bool)
    mosaic[:, :height] = ink
    labels, count = ndimage.label(mosaic.reshape(num * (height + 1), width), _EIGHT)
    per_image = labels.reshape(num, -1)
    top = per_image.max(axis=1).astype(np.int64)
    # Smallest nonzero label: 0 wraps round to the largest unsigned value, so min skips it.
    unsigned = per_image.view(f"u{per_image.itemsize}")
    low = (unsigned - unsigned.dtype.type(1)).min(axis=1).astype(np.int64) + 1
    spans = np.where(top > 0, top - low + 1, 0)
    if spans.sum() == count:
        # Every label lies in one image and within its [low, top]; spans adding up to the
        # number of labels means the spans do not overlap, so each image holds its whole span.
        return spans
    rows = np.fromiter(
        (s[0].start for s in ndimage.find_objects(labels)), dtype=np.int64, count=count
    )
    return np.bincount(rows // (height + 1), minlength=num)


#: Weights of the 2×2 ink patterns (bit 1 top-left, 2 top-right, 4 bottom-left, 8
#: bottom-right) in Gray's bit-quad formula: the Euler number of 8-connected ink (with
#: 4-connected paper) is (#one-pixel quads − #three-pixel quads − 2 × #diagonal quads) / 4.
_QUAD_WEIGHTS = np.zeros(16, dtype=np.int8)
_QUAD_WEIGHTS[[1, 2, 4, 8]] = 1
_QUAD_WEIGHTS[[7, 11, 13, 14]] = -1
_QUAD_WEIGHTS[[6, 9]] = -2


def _euler_per_image(ink: np.ndarray) -> np.ndarray:
    """Components − holes of each image of a stack, from counts of 2×2 pixel patterns."""
    num, height, width = ink.shape
    padded = np.zeros((num, height + 2, width + 2), dtype=np.uint8)
    padded[:, 1:-1, 1:-1] = ink
    quad = padded[:, :-1, :-1] + 2 * padded[:, :-1, 1:] + 4 * padded[:, 1:, :-1]
    quad += 8 * padded[:, 1:, 1:]
    return _QUAD_WEIGHTS[quad].reshape(num, -1).sum(axis=1, dtype=np.int64) // 4


def _batch_chunk(stack: np.ndarray) -> list[GlyphFeatures]:
    ink = stack < INK_THRESHOLD
    num, height, width = ink.shape
    n = ink.reshape(num, -1).sum(axis=1)
    has = n > 0
    rows_any = ink.any(axis=2)
    cols_any = ink.any(axis=1)
    r0 = rows_any.argmax(axis=1)
    r1 = height - rows_any[:, ::-1].argmax(axis=1)
    c0 = cols_any.argmax(axis=1)
    c1 = width - cols_any[:, ::-1].argmax(axis=1)
    h = np.where(has, r1 - r0, 0)
    w = np.where(has, c1 - c0, 0)

    components = _components_per_image(ink)
    euler = _euler_per_image(ink)
    holes = components - euler

    # Symmetry: for every ink pixel, does its image under the transform land within r
    # pixels of ink? "Within r of ink" is the ink dilated by a (2r+1)-square, computed on a
    # canvas padded by r (the dilation of ink on the unbounded canvas never reaches further).
    r = symmetry_tolerance(max(height, width))
    ph, pw = height + 2 * r, width + 2 * r
    near = np.zeros((num, ph, pw), dtype=bool)
    near[:, r : r + height, r : r + width] = ink
    for axis in (2, 1):
        source = near.copy()
        for step in range(1, r + 1):
            ahead = [slice(None)] * 3
            behind = [slice(None)] * 3
            ahead[axis], behind[axis] = slice(step, None), slice(None, -step)
            near[tuple(ahead)] |= source[tuple(behind)]
            near[tuple(behind)] |= source[tuple(ahead)]
    flat = near.reshape(-1)

    k, rr, cc = np.nonzero(ink)
    at = k * (ph * pw) + r * pw + r  # (0, 0) of the image inside the padded canvas
    pr0, pc0 = r0[k], c0[k]
    mr = pr0 + r1[k] - 1 - rr  # mirrored row about the box centre (always inside the box)
    mc = pc0 + c1[k] - 1 - cc

    def count(found: np.ndarray, which: np.ndarray = k) -> np.ndarray:
        return np.bincount(which, weights=found, minlength=num)

    k_lr = count(flat[at + rr * pw + mc])
    k_tb = count(flat[at + mr * pw + cc])
    k_180 = count(flat[at + mr * pw + mc])
    # Quarter turn (np.rot90 of the box): box pixel (i, j) goes to (w-1-j, i) of a w×h box
    # placed at (r0 + dr, c0 + dc), dr and dc the roundings of (h - w)/2 and (w - h)/2. Only
    # when h - w is odd do the roundings differ; then all four placements are tried.
    d = (h - w)[k]
    base_r = pr0 + w[k] - 1 - (cc - pc0) + d // 2
    base_c = pc0 + (rr - pr0) + (-d) // 2

    def quarter(tr: np.ndarray, tc: np.ndarray, which: np.ndarray) -> np.ndarray:
        tr, tc = tr + r, tc + r  # in padded coordinates
        valid = (tr >= 0) & (tr < ph) & (tc >= 0) & (tc < pw)
        idx = which * (ph * pw) + np.clip(tr, 0, ph - 1) * pw + np.clip(tc, 0, pw - 1)
        return count(valid & flat[idx], which)

    k_90 = quarter(base_r, base_c, k)
    odd = np.flatnonzero(d & 1)
    if odd.size:
        ko, tr, tc = k[odd], base_r[odd], base_c[odd]
        for dr, dc in ((0, 1), (1, 0), (1, 1)):
            k_90 = np.maximum(k_90, quarter(tr + dr, tc + dc, ko))

    def iou(hits: np.ndarray) -> np.ndarray:
        return np.where(has, hits / np.maximum(2 * n - hits, 1), 1.0)

    side = max(height, width)
    ink_fraction = n / (height * width)
    aspect = np.where(has, w / np.maximum(h, 1), 1.0)
    size = np.maximum(w, h) / side
    lr, tb, r180, r90 = iou(k_lr), iou(k_tb), iou(k_180), iou(k_90)
    return [
        GlyphFeatures(
            ink_fraction=float(ink_fraction[i]),
            bbox_w=int(w[i]),
            bbox_h=int(h[i]),
            aspect_ratio=float(aspect[i]),
            bbox_size=float(size[i]),
            components=int(components[i]),
            holes=int(holes[i]),
            euler=int(euler[i]),
            mirror_lr=float(lr[i]),
            mirror_tb=float(tb[i]),
            rot180=float(r180[i]),
            rot90=float(r90[i]),
        )
        for i in range(num)
    ]


def compute_features_batch(images: np.ndarray) -> list[GlyphFeatures]:
    """Features of every image of an ``N × h × w`` uint8 stack, equal to
    :func:`compute_features` image by image.

    Why a second implementation: vetting a generated split featurises every glyph involved,
    up to a whole annotated set. Here bounding boxes, counts and the dilation are numpy
    operations over a chunk of 512 images (small enough to stay in cache), the symmetry tests
    gather only at ink pixels, the components of a chunk take one ``scipy.ndimage.label`` call
    and the holes come from the Euler number (2×2 pattern counts), not a second labelling.

    Measured on all 9,430 Symbola glyphs that render, 80×80, one thread of a 2-core machine:
    1.6–1.8 s (about 0.18 ms a glyph, so under 2 s for 10,000), against 2.6 s for
    :func:`compute_features` in a loop; the two agree on every glyph. Chunks are independent
    and numpy releases the GIL for most of the work, so a caller may split a stack over
    threads (two threads took about 0.65× the time).
    """
    stack = np.asarray(images)
    if stack.ndim != 3:
        raise ValueError(f"expected an N×h×w stack, got shape {stack.shape}")
    out: list[GlyphFeatures] = []
    for start in range(0, stack.shape[0], _BATCH_CHUNK):
        out.extend(_batch_chunk(stack[start : start + _BATCH_CHUNK]))
    return out


# ---- pseudo-annotations ----------------------------------------------------------------------


Near = Callable[[float, float], bool]  # (value, bound) -> is the value within the margin?


def _near_factor(margin: float) -> Near:
    """Within a factor ``1 + margin`` of the bound, either way (for ratios and shares)."""
    limit = math.log1p(margin)
    return lambda x, bound: x > 0 and abs(math.log(x / bound)) <= limit


def _near_distance(margin: float) -> Near:
    """Within ``margin`` of the bound, either way."""
    return lambda x, bound: abs(x - bound) <= margin


def _ordinal(
    x: float, low: float, high: float, values: tuple[str, ...], near: Near
) -> frozenset[str]:
    """The one or two values ``x`` carries on a three-step scale with bounds ``low < high``."""
    out: set[str] = set()
    if x < low or near(x, low):
        out.add(values[0])
    if low <= x <= high or near(x, low) or near(x, high):
        out.add(values[1])
    if x > high or near(x, high):
        out.add(values[2])
    return frozenset(out)


def feature_tags(f: GlyphFeatures) -> dict[str, frozenset[str]]:
    """The pseudo-annotations of one glyph: concept id of :data:`FEATURE_SCHEMA` → values.

    Counts (components, holes) carry their number when it is a value of the concept (1–8
    components, 0–8 holes), else nothing (a blank image has no component value). The ordinal
    concepts carry one value, or both neighbours within the margin of a bound (see the
    constants): an ambiguous glyph could complete either rule in a viewer's eyes, and the
    check errs towards warning. ``img-mirror`` carries ``left-right`` and/or ``top-bottom``
    for each mirror score at or above :data:`MIRROR_THRESHOLD`, and ``none`` only when it
    carries neither; ``img-rotation`` likewise ``180`` / ``90`` (a glyph can score the quarter
    turn a little above the half turn, the quarter turn having four placements to choose from).

    On the 1,003-glyph Symbola sample (module docstring) the tags come out as:

    - img-components: 1 → 692, 2 → 161, 3 → 68, 4 → 35, 5–8 → 33; 14 glyphs above 8 get none;
    - img-holes: 0 → 516, 1 → 277, 2 → 120, 3 → 32, 4 → 26, 5–8 → 17; 15 above 8;
    - img-aspect: square 545, tall 188, wide 136, {tall, square} 98, {square, wide} 36;
    - img-size: medium 514, large 328, small 109, {medium, large} 37, {small, medium} 15;
    - img-ink: medium 491, low 161, high 148, {medium, high} 125, {low, medium} 78;
    - img-mirror: both 373, left-right 215, top-bottom 164, none 251;
    - img-rotation: 180 273, {180, 90} 165, 90 12, none 553.
    """
    tags: dict[str, frozenset[str]] = {}
    if 1 <= f.components <= MAX_COUNT:
        tags["img-components"] = frozenset({str(f.components)})
    if 0 <= f.holes <= MAX_COUNT:
        tags["img-holes"] = frozenset({str(f.holes)})

    tags["img-aspect"] = _ordinal(
        f.aspect_ratio,
        ASPECT_TALL_BELOW,
        ASPECT_WIDE_ABOVE,
        ASPECT_VALUES,
        _near_factor(ASPECT_MARGIN),
    )
    tags["img-size"] = _ordinal(
        f.bbox_size, SIZE_SMALL_BELOW, SIZE_LARGE_ABOVE, SIZE_VALUES, _near_distance(SIZE_MARGIN)
    )
    tags["img-ink"] = _ordinal(
        f.ink_fraction, INK_LOW_BELOW, INK_HIGH_ABOVE, INK_VALUES, _near_factor(INK_MARGIN)
    )
    mirror = {
        v
        for v, score in (("left-right", f.mirror_lr), ("top-bottom", f.mirror_tb))
        if score >= MIRROR_THRESHOLD
    }
    tags["img-mirror"] = frozenset(mirror or {"none"})
    rotation = {
        v for v, score in (("180", f.rot180), ("90", f.rot90)) if score >= ROTATION_THRESHOLD
    }
    tags["img-rotation"] = frozenset(rotation or {"none"})
    return tags
