"""KiVA's five transformation domains over a symbolic picture state (KiVA §3.2, appendix E).

A :class:`StimulusState` says what a picture shows — how many copies of the object, in which
colour, scaled, turned and mirrored how — and :func:`apply` maps a state through one
:class:`TransformSpec` to the next state. Transforms therefore compose, and every picture can be
re-rendered exactly from its record. Rendering a state is separate, for a 3D object
(:func:`render_state`, pyrender) or a 2D image (:func:`render_image_state`, Pillow), with the
same semantics in the picture:

- **colour** paints the object's paintable parts (2D: tints the ink — dark or opaque pixels);
- **size** scales along the picture's axes: "width ×2" is twice as wide *in the picture*;
- **rotation** turns about the viewing axis, so the picture turns; positive is counter-clockwise;
- **reflection** mirrors through a plane that contains the viewing direction, so the picture is
  mirrored — a real mirror of the mesh, not a flipped image, so the lighting stays correct.
  "x" mirrors across the picture's horizontal (x) axis (upside down), "y" across its vertical (y)
  axis (left and right swap), "both" across both;
- **number** shows ``count`` copies side by side, on a grid that never overlaps them.

The picture of a state is ``A · object`` with ``A = R(rotation) · F(reflection) · S(scale)`` in
the picture plane (2×2, x right, y up), repeated at the layout's offsets. :func:`apply` keeps
that form: a reflection applied after a rotation turns the rotation round (``F R(θ) = R(−θ) F``),
and a width/height change of a picture turned by 90° scales the object's other axis. A
width-only or height-only change of a picture turned by an odd multiple of 45° would shear it,
and is refused.

Copies of one picture are all the same size; pictures that are shown together (a before/after
pair, a trial's options) share one *fit* — the factor that shrinks the layout until the most
crowded of them fits the frame — so a size or number change is seen as it is.

Core layer: no Qt, no torch; pyrender and trimesh are imported only when a 3D state is rendered.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from studio.core.errors import StudioError

if TYPE_CHECKING:
    from studio.render3d.objects import Object3D
    from studio.render3d.scene import Camera, Renderer


DOMAINS: tuple[str, ...] = ("color", "size", "rotation", "reflection", "number")

#: Every value of every domain (KiVA-adults, table 7). Rotation: + is counter-clockwise.
VALUES: dict[str, tuple[str, ...]] = {
    "color": ("red", "green", "blue", "yellow", "grey"),
    "size": ("x2", "x1/2", "width x2", "width x1/2", "height x2", "height x1/2"),
    "rotation": ("+45", "-45", "+90", "-90", "+135", "-135", "180"),
    "reflection": ("x", "y", "both"),
    "number": ("+1", "+2", "-1", "-2", "x2", "x3", "/2", "/3"),
}

#: KiVA's subdomains (§3.2): three colours, ×2 and ×½, ±90° and 180°, x or y, ±1 and ±2.
KIVA_VALUES: dict[str, tuple[str, ...]] = {
    "color": ("red", "green", "blue"),
    "size": ("x2", "x1/2"),
    "rotation": ("+90", "-90", "180"),
    "reflection": ("x", "y"),
    "number": ("+1", "+2", "-1", "-2"),
}

#: KiVA-adults' subdomains (appendix E, table 7): all of :data:`VALUES`.
KIVA_ADULTS_VALUES: dict[str, tuple[str, ...]] = dict(VALUES)

MODES: dict[str, dict[str, tuple[str, ...]]] = {
    "kiva": KIVA_VALUES,
    "kiva-adults": KIVA_ADULTS_VALUES,
}

#: The named colours, the same RGB as the object library's palette (studio.render3d.objects),
#: so "red" paints a mug exactly the red it was made in.
COLORS: dict[str, tuple[int, int, int]] = {
    "red": (214, 40, 40),
    "green": (40, 160, 60),
    "blue": (40, 80, 210),
    "yellow": (235, 200, 30),
    "grey": (128, 128, 128),
}

#: KiVA restricts the number of objects in a picture to under 8 (§3.2); the studio allows 8.
MAX_COUNT = 8
#: Scale factors a state may hold, per axis: ×½ of ×½ is a speck and ×2 of ×2 leaves the frame.
MIN_SCALE, MAX_SCALE = 0.25, 2.0
#: Share of the framed half-width a layout may use, so nothing touches the picture's border.
FRAME_MARGIN = 0.92
#: Gap between neighbouring copies, as a share of a copy's larger side: copies read as separate
#: objects (and can be counted) only with clear space between them.
GAP_SHARE = 0.18
#: 2D pictures use the 3D camera's default framing: the object's larger half-side is 0.5 in a
#: frame of half-width 1.2, so a 2D image at scale 1 fills the picture as a 3D object does.
UNIT_EXTENT = 1.2
OBJECT_HALF_EXTENT = 0.5
#: Largest channel difference at which a named colour counts as the object's own colour: the
#: library paints with exactly these RGB values, and 8 levels is below what anyone can tell apart.
SAME_COLOR_TOLERANCE = 8
#: A grid taller than wide is chosen only when it lets copies be drawn this much larger than the
#: best landscape grid would (a share); otherwise copies stand side by side, as in KiVA's figures.
PORTRAIT_PENALTY = 0.85
#: Opacity (0..1) from which a 2D pixel counts as ink for the object's footprint.
INK_OPACITY = 0.25

_SIZE_FACTORS: dict[str, tuple[float, float]] = {
    "x2": (2.0, 2.0),
    "x1/2": (0.5, 0.5),
    "width x2": (2.0, 1.0),
    "width x1/2": (0.5, 1.0),
    "height x2": (1.0, 2.0),
    "height x1/2": (1.0, 0.5),
}
_ROTATION_LABELS = {
    "+45": "rotate 45° counter-clockwise",
    "-45": "rotate 45° clockwise",
    "+90": "rotate 90° counter-clockwise",
    "-90": "rotate 90° clockwise",
    "+135": "rotate 135° counter-clockwise",
    "-135": "rotate 135° clockwise",
    "180": "rotate 180°",
}
_SIZE_LABELS = {
    "x2": "bigger (×2)",
    "x1/2": "smaller (×½)",
    "width x2": "wider (width ×2)",
    "width x1/2": "narrower (width ×½)",
    "height x2": "taller (height ×2)",
    "height x1/2": "shorter (height ×½)",
}
_REFLECTION_LABELS = {
    "x": "reflect across the x axis (upside down)",
    "y": "reflect across the y axis (left–right)",
    "both": "reflect across both axes",
}
_NUMBER_LABELS = {
    "+1": "one more (+1)",
    "+2": "two more (+2)",
    "-1": "one fewer (−1)",
    "-2": "two fewer (−2)",
    "x2": "twice as many (×2)",
    "x3": "three times as many (×3)",
    "/2": "half as many (÷2)",
    "/3": "a third as many (÷3)",
}
DOMAIN_LABELS = {
    "color": "colour",
    "size": "size",
    "rotation": "rotation",
    "reflection": "reflection",
    "number": "number",
}
NO_CHANGE_LABEL = "no change"


@dataclass(frozen=True)
class TransformSpec:
    """One transformation: a domain of :data:`DOMAINS` and one of its :data:`VALUES`."""

    domain: str
    value: str

    def __post_init__(self) -> None:
        if self.domain not in VALUES:
            raise StudioError(
                f"no transformation domain {self.domain!r} (known: {', '.join(DOMAINS)})"
            )
        if self.value not in VALUES[self.domain]:
            raise StudioError(
                f"{self.domain} has no value {self.value!r} "
                f"(known: {', '.join(VALUES[self.domain])})"
            )

    @property
    def id(self) -> str:
        """Stable text form, ``"domain:value"`` (what records store)."""
        return f"{self.domain}:{self.value}"

    @property
    def label(self) -> str:
        """How a person reads it (a question's option, a GUI list)."""
        if self.domain == "color":
            return f"turns {self.value}"
        table = {
            "size": _SIZE_LABELS,
            "rotation": _ROTATION_LABELS,
            "reflection": _REFLECTION_LABELS,
            "number": _NUMBER_LABELS,
        }[self.domain]
        return table[self.value]

    @classmethod
    def parse(cls, text: str) -> TransformSpec:
        """The spec of an :attr:`id` (``"rotation:+90"``)."""
        domain, sep, value = text.partition(":")
        if not sep:
            raise StudioError(f"{text!r} is not a transformation id (domain:value)")
        return cls(domain.strip(), value.strip())

    def __str__(self) -> str:
        return self.id


@dataclass(frozen=True)
class TransformDomain:
    """A domain as registered in the ``transforms`` registry: its values per mode."""

    name: str
    values: tuple[str, ...]
    kiva_values: tuple[str, ...]
    label: str

    def specs(self, mode: str = "kiva-adults") -> tuple[TransformSpec, ...]:
        """The domain's specs of a mode ("kiva" or "kiva-adults")."""
        values = self.kiva_values if _check_mode(mode) == "kiva" else self.values
        return tuple(TransformSpec(self.name, v) for v in values)

    def apply(self, spec: TransformSpec, state: StimulusState) -> StimulusState:
        if spec.domain != self.name:
            raise StudioError(f"{spec.id} is not a {self.name} transformation")
        return apply(spec, state)


COLOR_TRANSFORM = TransformDomain("color", VALUES["color"], KIVA_VALUES["color"], "colour")
SIZE_TRANSFORM = TransformDomain("size", VALUES["size"], KIVA_VALUES["size"], "size")
ROTATION_TRANSFORM = TransformDomain(
    "rotation", VALUES["rotation"], KIVA_VALUES["rotation"], "rotation"
)
REFLECTION_TRANSFORM = TransformDomain(
    "reflection", VALUES["reflection"], KIVA_VALUES["reflection"], "reflection"
)
NUMBER_TRANSFORM = TransformDomain("number", VALUES["number"], KIVA_VALUES["number"], "number")
TRANSFORM_DOMAINS: dict[str, TransformDomain] = {
    d.name: d
    for d in (
        COLOR_TRANSFORM,
        SIZE_TRANSFORM,
        ROTATION_TRANSFORM,
        REFLECTION_TRANSFORM,
        NUMBER_TRANSFORM,
    )
}


def _check_mode(mode: str) -> str:
    if mode not in MODES:
        raise StudioError(f"no KiVA mode {mode!r} (known: {', '.join(MODES)})")
    return mode


def specs(mode: str = "kiva-adults", domains: Iterable[str] | None = None) -> list[TransformSpec]:
    """Every spec of a mode, in :data:`DOMAINS` then :data:`VALUES` order (a fixed order, so
    seeded sampling over it is reproducible)."""
    table = MODES[_check_mode(mode)]
    wanted = list(DOMAINS) if domains is None else list(domains)
    for d in wanted:
        if d not in table:
            raise StudioError(f"no transformation domain {d!r} (known: {', '.join(DOMAINS)})")
    return [TransformSpec(d, v) for d in DOMAINS if d in wanted for v in table[d]]


def _normal_angle(degrees: float) -> float:
    """The angle in (−180, 180], rounded to 1e-6° so that composed turns compare equal."""
    a = math.fmod(float(degrees), 360.0)
    if a <= -180.0:
        a += 360.0
    elif a > 180.0:
        a -= 360.0
    a = round(a, 6)
    return 180.0 if a == -180.0 else a + 0.0  # + 0.0: no −0.0 in records


@dataclass(frozen=True)
class StimulusState:
    """What one picture shows (symbolically; see the module docstring for the picture's form).

    ``color`` is a name of :data:`COLORS`, or None for the object's own colours; ``scale`` is
    (sx, sy) along the object's picture axes before it is turned; ``rotation`` is in degrees,
    counter-clockwise, in (−180, 180]; ``reflection`` is (flip_x, flip_y): mirrored across the
    picture's x axis (upside down) and across its y axis (left–right)."""

    count: int = 1
    color: str | None = None
    scale: tuple[float, float] = (1.0, 1.0)
    rotation: float = 0.0
    reflection: tuple[bool, bool] = (False, False)

    def __post_init__(self) -> None:
        if not isinstance(self.count, int | np.integer) or not 1 <= int(self.count) <= MAX_COUNT:
            raise StudioError(f"a picture shows 1 to {MAX_COUNT} objects, not {self.count!r}")
        if self.color is not None and self.color not in COLORS:
            raise StudioError(f"no colour {self.color!r} (known: {', '.join(COLORS)})")
        sx, sy = (float(s) for s in self.scale)
        for s in (sx, sy):
            if not MIN_SCALE - 1e-9 <= s <= MAX_SCALE + 1e-9:
                raise StudioError(
                    f"a scale of {s:g} is outside {MIN_SCALE:g}..{MAX_SCALE:g}: the object "
                    "would be too small to see or would not fit the picture"
                )
        object.__setattr__(self, "count", int(self.count))
        object.__setattr__(self, "scale", (sx, sy))
        object.__setattr__(self, "rotation", _normal_angle(self.rotation))
        fx, fy = self.reflection
        object.__setattr__(self, "reflection", (bool(fx), bool(fy)))

    def matrix(self) -> np.ndarray:
        """The 2×2 picture-plane map ``R(rotation) · F(reflection) · S(scale)`` (x right, y up)."""
        t = math.radians(self.rotation)
        c, s = math.cos(t), math.sin(t)
        rot = np.array([[c, -s], [s, c]])
        flip = np.diag([-1.0 if self.reflection[1] else 1.0, -1.0 if self.reflection[0] else 1.0])
        return rot @ flip @ np.diag(self.scale)

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "color": self.color,
            "scale": [self.scale[0], self.scale[1]],
            "rotation": self.rotation,
            "reflection": [self.reflection[0], self.reflection[1]],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StimulusState:
        sx, sy = data.get("scale", (1.0, 1.0))
        fx, fy = data.get("reflection", (False, False))
        return cls(
            count=int(data.get("count", 1)),
            color=data.get("color"),
            scale=(float(sx), float(sy)),
            rotation=float(data.get("rotation", 0.0)),
            reflection=(bool(fx), bool(fy)),
        )

    def describe(self) -> str:
        """A short readable description ("3 × red, ×2, turned 90°, mirrored left–right")."""
        bits = [f"{self.count} ×" if self.count != 1 else "1 ×", self.color or "own colour"]
        if self.scale != (1.0, 1.0):
            sx, sy = self.scale
            bits.append(f"×{sx:g}" if sx == sy else f"width ×{sx:g}, height ×{sy:g}")
        if self.rotation:
            bits.append(f"turned {self.rotation:g}°")
        if self.reflection[0]:
            bits.append("mirrored upside down")
        if self.reflection[1]:
            bits.append("mirrored left–right")
        return ", ".join(bits)


def _turned_by_quarter(rotation: float) -> bool:
    return abs(abs(rotation) - 90.0) < 1e-6


def _multiple_of(rotation: float, step: float) -> bool:
    r = math.fmod(abs(rotation), step)
    return min(r, step - r) < 1e-6


def apply(spec: TransformSpec, state: StimulusState) -> StimulusState:
    """The state after ``spec``. Raises StudioError saying why when it cannot apply (÷3 of 2
    objects, more than :data:`MAX_COUNT` objects, fewer than one, a scale out of range, a
    width-only change of a picture turned by 45°)."""
    d, v = spec.domain, spec.value
    if d == "color":
        return replace(state, color=v)
    if d == "size":
        fx, fy = _SIZE_FACTORS[v]
        if fx != fy:
            if not _multiple_of(state.rotation, 90.0):
                raise StudioError(
                    f"cannot make a picture turned by {state.rotation:g}° {spec.label}: "
                    "it would be sheared, not scaled"
                )
            if _turned_by_quarter(state.rotation):
                fx, fy = fy, fx  # the picture's width is the object's height
        sx, sy = state.scale[0] * fx, state.scale[1] * fy
        for s in (sx, sy):
            if not MIN_SCALE - 1e-9 <= s <= MAX_SCALE + 1e-9:
                raise StudioError(
                    f"cannot make {state.describe()} {spec.label}: a scale of {s:g} is outside "
                    f"{MIN_SCALE:g}..{MAX_SCALE:g}"
                )
        return replace(state, scale=(sx, sy))
    if d == "rotation":
        return replace(state, rotation=state.rotation + float(v))
    if d == "reflection":
        fx, fy = state.reflection
        if v == "both":  # = a half turn, which commutes with the rotation
            return replace(state, reflection=(not fx, not fy))
        flips = (not fx, fy) if v == "x" else (fx, not fy)
        return replace(state, reflection=flips, rotation=-state.rotation)
    # number
    n = state.count
    op, k = v[0], int(v[1:])
    if op == "+":
        new = n + k
    elif op == "-":
        new = n - k
    elif op == "x":
        new = n * k
    else:
        if n % k:
            raise StudioError(f"{n} object(s) cannot be divided by {k} ({spec.label})")
        new = n // k
    if new < 1:
        raise StudioError(f"cannot take {k} away from {n} object(s): a picture shows at least one")
    if new > MAX_COUNT:
        raise StudioError(
            f"{spec.label} of {n} object(s) makes {new}: a picture shows at most {MAX_COUNT}"
        )
    return replace(state, count=new)


def try_apply(spec: TransformSpec, state: StimulusState) -> StimulusState | None:
    """:func:`apply`, or None where it cannot apply (for sampling over candidates)."""
    try:
        return apply(spec, state)
    except StudioError:
        return None


def same_picture(
    a: StimulusState, b: StimulusState, base_color: tuple[int, int, int] | None = None
) -> bool:
    """Whether two states draw the same picture of any object, known without rendering: the
    same number of copies, the same colour (a named colour equal to the object's own
    ``base_color`` counts as its own) and the same picture-plane map (a half turn *is* a
    reflection across both axes)."""
    if a.count != b.count or not np.allclose(a.matrix(), b.matrix(), atol=1e-9):
        return False

    def rgb(s: StimulusState) -> tuple[int, int, int] | None:
        return base_color if s.color is None else COLORS[s.color]

    if a.color == b.color:
        return True
    ca, cb = rgb(a), rgb(b)
    if ca is None or cb is None:
        return False
    return max(abs(x - y) for x, y in zip(ca, cb, strict=True)) <= SAME_COLOR_TOLERANCE


# ---------------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class Layout:
    """Where the copies of one picture go, in object units (x right, y up, frame centred on 0).

    ``offsets`` translate each copy's origin; ``boxes`` are the copies' footprints
    (x0, y0, x1, y1) as drawn; ``fit`` is the factor every copy and offset was scaled by;
    ``grid`` is (columns, rows)."""

    offsets: tuple[tuple[float, float], ...]
    boxes: tuple[tuple[float, float, float, float], ...]
    fit: float
    grid: tuple[int, int]

    def overlaps(self) -> bool:
        """Whether any two footprints intersect (never, by construction; tests check)."""
        for i, a in enumerate(self.boxes):
            for b in self.boxes[i + 1 :]:
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                    return True
        return False


def _footprint(points: np.ndarray, state: StimulusState) -> tuple[float, float, float, float]:
    drawn = points @ state.matrix().T
    lo, hi = drawn.min(axis=0), drawn.max(axis=0)
    return float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1])


def _grid(n: int, fw: float, fh: float, half: float) -> tuple[int, int, float]:
    """(columns, rows, largest fit ≤ 1) of the grid that lets n copies be drawn largest, a grid
    with more rows than columns counting :data:`PORTRAIT_PENALTY` less; ties go to fewer empty
    cells, then to more columns (copies side by side, as in KiVA)."""
    gap = GAP_SHARE * max(fw, fh)
    best: tuple[tuple[float, int, int], int, int, float] | None = None
    for cols in range(1, n + 1):
        rows = math.ceil(n / cols)
        if (cols - 1) * rows >= n:
            continue  # a whole column would be empty
        width = cols * fw + (cols - 1) * gap
        height = rows * fh + (rows - 1) * gap
        fit = min(1.0, 2 * half / width, 2 * half / height)
        score = fit * (PORTRAIT_PENALTY if rows > cols else 1.0)
        key = (round(score, 9), -(cols * rows), cols)
        if best is None or key > best[0]:
            best = (key, cols, rows, fit)
    assert best is not None
    return best[1], best[2], best[3]


def fit_scale(points: np.ndarray, states: Iterable[StimulusState], half: float) -> float:
    """One fit for pictures shown together: the largest factor ≤ 1 at which every state's
    layout fits a frame of half-width ``half``."""
    fits = []
    for state in states:
        x0, y0, x1, y1 = _footprint(points, state)
        fits.append(_grid(state.count, x1 - x0, y1 - y0, half)[2])
    return min(fits) if fits else 1.0


def layout(
    points: np.ndarray, state: StimulusState, half: float, fit: float | None = None
) -> Layout:
    """The copies of ``state`` on their grid, centred in the frame. ``fit`` (from
    :func:`fit_scale` over the pictures shown together) is lowered to this state's own fit if
    it is larger, so a layout never leaves the frame."""
    x0, y0, x1, y1 = _footprint(points, state)
    fw, fh = x1 - x0, y1 - y0
    cols, rows, own = _grid(state.count, fw, fh, half)
    k = own if fit is None else min(float(fit), own)
    gap = GAP_SHARE * max(fw, fh)
    centre = ((x0 + x1) / 2, (y0 + y1) / 2)
    offsets, boxes = [], []
    for i in range(state.count):
        r, c = divmod(i, cols)
        in_row = min(cols, state.count - r * cols)
        cx = (c - (in_row - 1) / 2) * (fw + gap)
        cy = ((rows - 1) / 2 - r) * (fh + gap)
        offsets.append((k * (cx - centre[0]), k * (cy - centre[1])))
        boxes.append((k * (cx - fw / 2), k * (cy - fh / 2), k * (cx + fw / 2), k * (cy + fh / 2)))
    lay = Layout(tuple(offsets), tuple(boxes), k, (cols, rows))
    if lay.overlaps():  # cannot happen (cells are disjoint); checked so a regression is loud
        raise StudioError(f"the layout of {state.count} copies overlaps: {lay.boxes}")
    return lay


# ---------------------------------------------------------------------------------- 2D images


@dataclass(frozen=True)
class _Sprite:
    """A 2D source as straight-alpha RGBA, cropped to its ink, with its footprint points."""

    rgba: np.ndarray  # float32, h × w × 4, colour 0..255, alpha 0..1
    points: np.ndarray  # ink outline points in object units, centred, larger half-side 0.5


def _sprite(image: Image.Image) -> _Sprite:
    """Ink is what differs from the background: opaque pixels of an image with transparency,
    else pixels away from the corner colour (dark pixels of a glyph on white paper). Colour is
    un-mixed from the background so that redrawing on white gives the original back."""
    rgba = np.asarray(image.convert("RGBA"), dtype=np.float32)
    rgb, alpha = rgba[..., :3], rgba[..., 3] / 255.0
    if alpha.min() < 250 / 255:
        ink_rgb = rgb
    else:
        corners = np.array([rgb[0, 0], rgb[0, -1], rgb[-1, 0], rgb[-1, -1]])
        bg = np.median(corners, axis=0)
        dist = np.abs(rgb - bg).max(axis=2)
        ref = max(float(np.percentile(dist[dist > 8], 99)) if (dist > 8).any() else 0.0, 64.0)
        alpha = np.clip(dist / ref, 0.0, 1.0)
        safe = np.where(alpha > 0, alpha, 1.0)[..., None]
        ink_rgb = np.clip((rgb - (1 - alpha[..., None]) * bg) / safe, 0, 255)
    ink = alpha >= INK_OPACITY
    if not ink.any():
        raise StudioError("the image is blank: there is no ink to transform")
    ys, xs = np.nonzero(ink)
    top, bottom, left, right = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    out = np.concatenate([ink_rgb, alpha[..., None]], axis=2)[top:bottom, left:right]
    crop = ink[top:bottom, left:right]
    h, w = crop.shape
    # each ink row's outermost pixel corners: their hull is the hull of all the ink
    rows = np.nonzero(crop.any(axis=1))[0]
    first = crop[rows].argmax(axis=1)
    last = w - 1 - crop[rows, ::-1].argmax(axis=1)
    pts = np.concatenate(
        [
            np.c_[first, rows],
            np.c_[first, rows + 1],
            np.c_[last + 1, rows],
            np.c_[last + 1, rows + 1],
        ]
    ).astype(np.float64)
    side = float(max(w, h))
    unit = 2 * OBJECT_HALF_EXTENT / side
    points = np.c_[(pts[:, 0] - w / 2) * unit, (h / 2 - pts[:, 1]) * unit]
    return _Sprite(np.ascontiguousarray(out, dtype=np.float32), points)


def _tinted(rgba: np.ndarray, rgb: tuple[int, int, int]) -> np.ndarray:
    """The ink in one colour, keeping its light and shade: flat for dark ink (a glyph), scaled
    by the ink's own brightness for a coloured picture."""
    out = rgba.copy()
    lum = rgba[..., :3] @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    ink = rgba[..., 3] >= INK_OPACITY
    top = float(np.percentile(lum[ink], 95)) if ink.any() else 0.0
    shade = np.ones_like(lum) if top < 64 else np.clip(lum / top, 0.45, 1.0)
    out[..., :3] = shade[..., None] * np.array(rgb, dtype=np.float32)
    return out


def _draw_sprite(sprite: _Sprite, state: StimulusState, lay: Layout, size: int) -> Image.Image:
    rgba = sprite.rgba if state.color is None else _tinted(sprite.rgba, COLORS[state.color])
    h, w = rgba.shape[:2]
    ppu = size / (2 * UNIT_EXTENT)  # pixels per object unit
    f = ppu * lay.fit * (2 * OBJECT_HALF_EXTENT) / max(w, h)
    premultiplied = rgba.copy()
    premultiplied[..., :3] *= premultiplied[..., 3:4]
    im = Image.fromarray(
        np.clip(
            np.rint(
                np.concatenate([premultiplied[..., :3], premultiplied[..., 3:4] * 255], axis=2)
            ),
            0,
            255,
        ).astype(np.uint8),
        "RGBa",
    )
    sx, sy = state.scale
    im = im.resize((max(1, round(w * f * sx)), max(1, round(h * f * sy))), Image.Resampling.LANCZOS)
    if state.reflection[0]:
        im = im.transpose(Image.Transpose.FLIP_TOP_BOTTOM)
    if state.reflection[1]:
        im = im.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    if state.rotation:
        im = im.rotate(state.rotation, resample=Image.Resampling.BICUBIC, expand=True)
    im = im.convert("RGBA")
    colour, opacity = im.convert("RGB"), im.getchannel("A")
    canvas = Image.new("RGB", (size, size), (255, 255, 255))
    for ox, oy in lay.offsets:
        x = round(size / 2 + ox * ppu - im.width / 2)
        y = round(size / 2 - oy * ppu - im.height / 2)
        canvas.paste(colour, (x, y), opacity)
    return canvas


# ---------------------------------------------------------------------------------- rendering


class PictureCache:
    """3D pictures kept across drawers (and so across a run's trials), least recently used
    first out once they hold more than ``max_bytes`` of pixels.

    A picture is a pure function of what is drawn — the object, the state, the exact fit, the
    camera, the renderer's size and the picture's size — so a kept picture is the one a new
    render would make, byte for byte: trial i's output does not depend on which trials the
    same process drew before it (generation over any number of workers gives the same bytes).
    Objects are keyed by identity and held, so an id is never reused while its pictures are.
    Not thread-safe: one per thread or process (a generator run's)."""

    def __init__(self, max_bytes: int = 96 * 2**20) -> None:
        self.max_bytes = int(max_bytes)
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._pictures: OrderedDict[tuple[Any, ...], Image.Image] = OrderedDict()
        self._sources: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self._pictures)

    def key(self, source: Any, *rest: Any) -> tuple[Any, ...]:
        self._sources.setdefault(id(source), source)
        return (id(source), *rest)

    def get(self, key: tuple[Any, ...]) -> Image.Image | None:
        image = self._pictures.get(key)
        if image is None:
            self.misses += 1
            return None
        self.hits += 1
        self._pictures.move_to_end(key)
        return image

    def put(self, key: tuple[Any, ...], image: Image.Image) -> None:
        if key in self._pictures:
            return
        self._pictures[key] = image
        self.bytes += _image_bytes(image)
        while self.bytes > self.max_bytes and len(self._pictures) > 1:
            _, old = self._pictures.popitem(last=False)
            self.bytes -= _image_bytes(old)


def _image_bytes(image: Image.Image) -> int:
    return image.width * image.height * len(image.getbands())


@dataclass
class StateRenderer:
    """Draws states of one source — a 3D :class:`~studio.render3d.objects.Object3D` or a 2D
    ``PIL.Image`` — at one size, and keeps the pictures it drew (states are frozen, so a state
    and a fit name one picture).

    3D: ``renderer`` (thread-bound; this thread's shared one of ``size`` when None) and
    ``camera`` (the default :class:`~studio.render3d.scene.Camera` when None). A renderer of
    another size is used as is and its pictures resized to ``size``. ``shared``: a
    :class:`PictureCache` that keeps 3D pictures beyond this drawer (a generator run's)."""

    source: Any
    renderer: Renderer | None = None
    camera: Camera | None = None
    size: int = 224
    shared: PictureCache | None = None
    _points: np.ndarray | None = field(default=None, init=False, repr=False)
    _sprite: _Sprite | None = field(default=None, init=False, repr=False)
    _cache: dict[tuple[StimulusState, float], Image.Image] = field(
        default_factory=dict, init=False, repr=False
    )

    @property
    def is_image(self) -> bool:
        return isinstance(self.source, Image.Image)

    @property
    def half(self) -> float:
        """Half-width of the frame a layout may fill, in object units."""
        if self.is_image:
            return UNIT_EXTENT * FRAME_MARGIN
        return self.resolved_camera().extent * FRAME_MARGIN

    def resolved_camera(self) -> Camera:
        """The camera in use (the default one when none was given)."""
        if self.camera is None:
            from studio.render3d.scene import Camera

            self.camera = Camera()
        return self.camera

    def points(self) -> np.ndarray:
        """The source's outline in the picture plane, object units (x right, y up)."""
        if self._points is None:
            if self.is_image:
                self._sprite = _sprite(self.source)
                self._points = self._sprite.points
            else:
                pose = self.resolved_camera().pose()
                verts = np.concatenate([m.vertices for m in self.source.meshes()])
                self._points = np.asarray(verts, dtype=np.float64) @ pose[:3, :2]
        return self._points

    def fit(self, states: Iterable[StimulusState]) -> float:
        """The one fit for pictures of these states shown together (:func:`fit_scale`)."""
        return fit_scale(self.points(), states, self.half)

    def layout(self, state: StimulusState, fit: float | None = None) -> Layout:
        return layout(self.points(), state, self.half, fit)

    def image(self, state: StimulusState, fit: float | None = None) -> Image.Image:
        """The picture of ``state``; ``fit`` None is the state's own fit. Cached: the same
        state and fit give the same Image object, so copy it before drawing on it."""
        lay = self.layout(state, fit)
        key = (state, round(lay.fit, 9))
        if key not in self._cache:
            if self.is_image:
                self.points()
                assert self._sprite is not None
                self._cache[key] = _draw_sprite(self._sprite, state, lay, self.size)
            elif self.shared is None:
                self._cache[key] = self._render3d(state, lay)
            else:
                renderer_size = self.size if self.renderer is None else self.renderer.size
                shared_key = self.shared.key(
                    self.source, self.resolved_camera(), renderer_size, self.size, state, lay.fit
                )
                image = self.shared.get(shared_key)
                if image is None:
                    image = self._render3d(state, lay)
                    self.shared.put(shared_key, image)
                self._cache[key] = image
        return self._cache[key]

    def world_matrix(
        self, state: StimulusState, fit: float, offset: tuple[float, float]
    ) -> np.ndarray:
        """The 4×4 world transform of one copy: the picture-plane map ``A`` (and a matching
        depth scale, so a uniformly scaled object keeps its shading) conjugated into the
        camera's frame, then moved along the picture's axes by ``offset``."""
        pose = self.resolved_camera().pose()
        basis = pose[:3, :3]  # columns: picture right, picture up, towards the viewer
        sx, sy = state.scale
        depth = min(sx, sy)
        in_camera = np.eye(3)
        in_camera[:2, :2] = state.matrix()
        in_camera[2, 2] = depth
        matrix = np.eye(4)
        matrix[:3, :3] = basis @ (fit * in_camera) @ basis.T
        matrix[:3, 3] = offset[0] * basis[:, 0] + offset[1] * basis[:, 1]
        return matrix

    def _render3d(self, state: StimulusState, lay: Layout) -> Image.Image:
        obj = self.source
        if state.color is not None:
            obj = obj.painted(COLORS[state.color])
        meshes = []
        for offset in lay.offsets:
            matrix = self.world_matrix(state, lay.fit, offset)
            for part in obj.parts:
                mesh = part.mesh.copy()
                mesh.apply_transform(matrix)
                meshes.append(mesh)
        renderer = self.renderer
        if renderer is None:
            from studio.render3d.scene import thread_renderer

            renderer = thread_renderer(self.size)
        image = renderer.render(meshes, self.resolved_camera())
        if image.size != (self.size, self.size):
            image = image.resize((self.size, self.size), Image.Resampling.LANCZOS)
        return image


def render_state(
    obj: Object3D,
    state: StimulusState,
    renderer: Renderer,
    camera: Camera,
    *,
    fit: float | None = None,
) -> Image.Image:
    """The picture of ``state`` for a 3D object, at the renderer's size (see the module
    docstring for what each part of the state looks like). Pass the ``fit`` of the pictures
    shown with it (:meth:`StateRenderer.fit`) so copies have one size across them."""
    return StateRenderer(obj, renderer, camera, renderer.size).image(state, fit)


def render_image_state(
    image: Image.Image, state: StimulusState, size: int, *, fit: float | None = None
) -> Image.Image:
    """The picture of ``state`` for a 2D image (a glyph render or an imported PNG), RGB on
    white, ``size`` × ``size``: the same semantics as :func:`render_state`, drawn with Pillow;
    colour tints the ink."""
    return StateRenderer(image, size=size).image(state, fit)


def preview_pair(
    source: Object3D | Image.Image,
    spec: TransformSpec,
    *,
    state: StimulusState | None = None,
    renderer: Renderer | None = None,
    camera: Camera | None = None,
    size: int = 224,
    drawer: StateRenderer | None = None,
) -> tuple[Image.Image, Image.Image]:
    """The before/after pictures of ``spec`` applied to ``state`` (one object by default), with
    one fit for both. 3D sources render with ``renderer`` or, when None, this thread's shared
    renderer of ``size`` — call it from the thread that will keep rendering (the GUI's preview
    worker). Pass a ``drawer`` (a :class:`StateRenderer` of this source) to keep its pictures
    for :func:`studio.families.kiva.ambiguity.vet_transform`, which then draws nothing twice. Raises
    StudioError when the spec cannot apply to the state."""
    before = state or StimulusState()
    after = apply(spec, before)
    drawer = drawer or StateRenderer(source, renderer, camera, size)
    fit = drawer.fit([before, after])
    return drawer.image(before, fit), drawer.image(after, fit)
