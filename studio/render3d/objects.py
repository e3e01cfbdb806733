"""3D objects: the shipped library (made here from trimesh primitives) and imported mesh files.

An :class:`Object3D` is a set of parts; a part is *paintable* when a colour change applies to it
(a car's body) or not (its black tyres). Objects are normalised on load: centred on the origin
with the largest half-extent of their bounding box 0.5, so every object fills the same share of
the fixed camera frame and a size change is a visible change.

The library's meshes are built by the recipes below and written as GLB files to
``resources/objects/`` by ``scripts/make_objects.py``; ``resources/objects/LICENSE.md`` states
their licence (CC0, made by this project). Most are chiral in view: their mirror image differs
from any turn of them, so reflections are visible.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import trimesh

from studio.core.errors import StudioError
from studio.resources import resources_dir

MESH_SUFFIXES = (".obj", ".glb", ".gltf", ".ply", ".stl", ".off")
PAINT_PREFIX = "paint:"
KEEP_PREFIX = "keep:"
NORMAL_HALF_EXTENT = 0.5


class MeshLoadError(StudioError):
    """A mesh file that cannot be used as an object; the message names the file."""


@dataclass(frozen=True)
class Part:
    mesh: trimesh.Trimesh
    paintable: bool = True
    name: str = "part"


@dataclass(frozen=True)
class Object3D:
    """A named object made of parts, normalised to the unit frame (see the module docstring)."""

    name: str
    parts: tuple[Part, ...]
    source: str = "library"
    licence: str = "CC0-1.0"
    base_color: tuple[int, int, int] | None = None
    notes: dict[str, str] = field(default_factory=dict)

    def meshes(self) -> list[trimesh.Trimesh]:
        return [p.mesh for p in self.parts]

    def bounds(self) -> np.ndarray:
        return np.array(
            [
                np.min([p.mesh.bounds[0] for p in self.parts], axis=0),
                np.max([p.mesh.bounds[1] for p in self.parts], axis=0),
            ]
        )

    def transformed(self, matrix: np.ndarray) -> Object3D:
        """A copy with every part transformed by a 4×4 matrix (a reflection flips winding,
        which trimesh fixes so faces still point outwards)."""
        parts = []
        for p in self.parts:
            m = p.mesh.copy()
            m.apply_transform(matrix)
            parts.append(Part(m, p.paintable, p.name))
        return Object3D(self.name, tuple(parts), self.source, self.licence, self.base_color)

    def painted(self, rgb: tuple[int, int, int]) -> Object3D:
        """A copy with the paintable parts in one colour (unpainted parts keep theirs)."""
        parts = []
        for p in self.parts:
            m = p.mesh.copy()
            if p.paintable:
                m.visual = trimesh.visual.ColorVisuals(m, face_colors=[*rgb, 255])
            parts.append(Part(m, p.paintable, p.name))
        return Object3D(self.name, tuple(parts), self.source, self.licence, tuple(rgb))


def normalised(parts: Sequence[Part]) -> tuple[Part, ...]:
    """Centre the parts' common bounding box on the origin and scale it to half-extent 0.5."""
    lo = np.min([p.mesh.bounds[0] for p in parts], axis=0)
    hi = np.max([p.mesh.bounds[1] for p in parts], axis=0)
    half = float(np.max(hi - lo)) / 2
    if not math.isfinite(half) or half <= 0:
        raise ValueError("the object has no extent")
    matrix = np.eye(4)
    matrix[:3, :3] *= NORMAL_HALF_EXTENT / half
    matrix[:3, 3] = -(lo + hi) / 2 * (NORMAL_HALF_EXTENT / half)
    out = []
    for p in parts:
        m = p.mesh.copy()
        m.apply_transform(matrix)
        out.append(Part(m, p.paintable, p.name))
    return tuple(out)


def _paint_color(parts: Sequence[Part]) -> tuple[int, int, int] | None:
    for p in parts:
        if p.paintable:
            colors = p.mesh.visual.face_colors
            if len(colors):
                return tuple(int(c) for c in np.median(colors[:, :3], axis=0))  # type: ignore[return-value]
    return None


def _parts_of(loaded: trimesh.Scene | trimesh.Trimesh, path: Path) -> list[Part]:
    if isinstance(loaded, trimesh.Trimesh):
        part = Part(loaded, True, path.stem)
        return [part] if _checked_faces(part, path) else []
    if not isinstance(loaded, trimesh.Scene):
        raise MeshLoadError(f"holds a {type(loaded).__name__}, not a mesh", path)
    parts = []
    for node in loaded.graph.nodes_geometry:
        matrix, geom_name = loaded.graph[node]
        geom = loaded.geometry[geom_name]
        if not isinstance(geom, trimesh.Trimesh):
            continue  # point clouds and paths are not surfaces
        label = str(node)
        if not _checked_faces(Part(geom, True, label), path):
            continue  # checked before copying: a copy computes colours from the faces
        m = geom.copy()
        m.apply_transform(matrix)
        paintable = not (label.startswith(KEEP_PREFIX) or geom_name.startswith(KEEP_PREFIX))
        parts.append(Part(m, paintable, label.removeprefix(PAINT_PREFIX).removeprefix(KEEP_PREFIX)))
    parts.sort(key=lambda p: p.name)
    return parts


def _checked_faces(part: Part, path: Path) -> bool:
    """Whether the part has triangles to render (False: skip it); raises MeshLoadError naming
    the file, the part and the first bad face when a face refers to a vertex the part lacks,
    or the first vertex (and a face using it) that is not a finite point."""
    faces = np.asarray(part.mesh.faces)
    if faces.size == 0:
        return False
    label = f"part {part.name!r}: " if part.name else ""
    if faces.ndim != 2 or faces.shape[1] != 3 or not np.issubdtype(faces.dtype, np.integer):
        raise MeshLoadError(f"{label}faces are not triangles of vertex indices", path)
    vertices = np.asarray(part.mesh.vertices)
    n = len(vertices)
    if vertices.ndim != 2 or vertices.shape[1] != 3:
        raise MeshLoadError(f"{label}vertices are not 3D points", path)
    out_of_range = (faces < 0) | (faces >= n)
    if out_of_range.any():
        face = int(np.flatnonzero(out_of_range.any(axis=1))[0])
        index = int(faces[face][out_of_range[face]][0])
        raise MeshLoadError(
            f"{label}face {face} refers to vertex {index}, but there are only {n} vertices "
            f"(0 to {n - 1}); the file is damaged",
            path,
        )
    finite = np.isfinite(vertices).all(axis=1)
    if not finite.all():
        index = int(np.flatnonzero(~finite)[0])
        users = np.flatnonzero((faces == index).any(axis=1))
        used = f" (used by face {int(users[0])})" if len(users) else ""
        raise MeshLoadError(
            f"{label}vertex {index}{used} is not a finite point "
            f"({', '.join(str(float(c)) for c in vertices[index])})",
            path,
        )
    return True


def load_object(path: str | Path, name: str | None = None) -> Object3D:
    """Import an OBJ, GLB/GLTF, PLY, STL or OFF file as an object.

    Raises MeshLoadError naming the file when it is missing, of another type, unreadable,
    holds no triangles, or has a face that refers to a missing or non-finite vertex (naming
    the part and the face)."""
    path = Path(path)
    if not path.is_file():
        raise MeshLoadError("no such file", path)
    if path.suffix.lower() not in MESH_SUFFIXES:
        raise MeshLoadError(
            f"{path.suffix or 'no extension'} is not a mesh format; use one of "
            + ", ".join(MESH_SUFFIXES),
            path,
        )
    try:
        loaded = trimesh.load(path, process=False)
    except Exception as e:  # trimesh raises many types for malformed files
        raise MeshLoadError(f"cannot be read as {path.suffix[1:].upper()}: {e}", path) from e
    parts = _parts_of(loaded, path)
    if not parts:
        raise MeshLoadError("holds no triangles to render", path)
    try:
        parts = list(normalised(parts))
    except ValueError as e:
        raise MeshLoadError(str(e), path) from None
    return Object3D(
        name or path.stem,
        tuple(parts),
        source=str(path),
        licence="as the file's",
        base_color=_paint_color(parts),
    )


# ---------------------------------------------------------------------------------- recipes

RED, GREEN, BLUE, YELLOW, GREY = (
    (214, 40, 40),
    (40, 160, 60),
    (40, 80, 210),
    (235, 200, 30),
    (128, 128, 128),
)
DARK, WHITE, ORANGE = (35, 35, 35), (235, 235, 235), (240, 130, 20)


def _box(
    extents: Sequence[float], at: Sequence[float], color: tuple[int, int, int]
) -> trimesh.Trimesh:
    m = trimesh.creation.box(extents=extents)
    m.apply_translation(at)
    m.visual = trimesh.visual.ColorVisuals(m, face_colors=[*color, 255])
    return m


def _colored(m: trimesh.Trimesh, color: tuple[int, int, int]) -> trimesh.Trimesh:
    m.visual = trimesh.visual.ColorVisuals(m, face_colors=[*color, 255])
    return m


def _rot(axis: Sequence[float], degrees: float) -> np.ndarray:
    return trimesh.transformations.rotation_matrix(math.radians(degrees), axis)


def _merge(meshes: Sequence[trimesh.Trimesh]) -> trimesh.Trimesh:
    return trimesh.util.concatenate(list(meshes))


def _mug() -> list[Part]:
    body = _colored(trimesh.creation.annulus(r_min=0.34, r_max=0.4, height=0.8, sections=48), RED)
    body.apply_transform(_rot([1, 0, 0], -90))
    bottom = _colored(trimesh.creation.cylinder(radius=0.36, height=0.06, sections=48), RED)
    bottom.apply_transform(_rot([1, 0, 0], -90))
    bottom.apply_translation([0, -0.37, 0])
    handle = _colored(trimesh.creation.torus(0.2, 0.05, major_sections=32, minor_sections=12), RED)
    handle.apply_translation([0.42, 0.02, 0])
    # keep only the outer half of the ring so the handle does not pierce the cup
    outer = np.where(handle.triangles_center[:, 0] > 0.34)[0]  # open ends sit inside the wall
    handle = handle.submesh([outer], append=True)
    handle = _colored(handle, RED)
    return [Part(_merge([body, bottom, handle]), True, "mug")]


def _key() -> list[Part]:
    ring = _colored(
        trimesh.creation.annulus(r_min=0.12, r_max=0.26, height=0.08, sections=40), YELLOW
    )
    ring.apply_translation([-0.55, 0, 0])
    shaft = _box([0.9, 0.1, 0.08], [0.15, 0, 0], YELLOW)
    teeth = [_box([0.08, 0.16, 0.08], [x, -0.12, 0], YELLOW) for x in (0.3, 0.45, 0.56)]
    tip = _box([0.08, 0.1, 0.08], [0.16, -0.1, 0], YELLOW)
    key = _merge([ring, shaft, tip, *teeth])
    key.apply_transform(_rot([1, 0, 0], -20))
    return [Part(key, True, "key")]


def _toy_car() -> list[Part]:
    body = _box([1.2, 0.3, 0.6], [0, 0.05, 0], BLUE)
    cabin = _box([0.55, 0.28, 0.5], [-0.15, 0.34, 0], BLUE)
    spoiler = _box([0.08, 0.18, 0.6], [-0.58, 0.3, 0], BLUE)
    wheels = []
    for x in (-0.38, 0.38):
        for z in (-0.3, 0.3):
            w = _colored(trimesh.creation.cylinder(radius=0.16, height=0.1, sections=32), DARK)
            w.apply_translation([x, -0.12, z])
            wheels.append(w)
    lamp = _box([0.04, 0.08, 0.14], [0.61, 0.1, 0.18], WHITE)
    return [
        Part(_merge([body, cabin, spoiler]), True, "body"),
        Part(_merge(wheels), False, "wheels"),
        Part(lamp, False, "headlamp"),
    ]


def _chair() -> list[Part]:
    seat = _box([0.6, 0.08, 0.6], [0, 0, 0], GREEN)
    legs = [
        _box([0.07, 0.5, 0.07], [x, -0.29, z], GREEN) for x in (-0.26, 0.26) for z in (-0.26, 0.26)
    ]
    back = _box([0.07, 0.6, 0.6], [-0.265, 0.34, 0], GREEN)
    arm = _box([0.5, 0.06, 0.06], [0.0, 0.22, 0.27], GREEN)
    arm_post = _box([0.06, 0.2, 0.06], [0.22, 0.12, 0.27], GREEN)
    return [Part(_merge([seat, *legs, back, arm, arm_post]), True, "chair")]


def _l_block() -> list[Part]:
    cubes = [_box([0.4, 0.4, 0.4], [0, y, 0], RED) for y in (0.4, 0.0, -0.4)]
    cubes.append(_box([0.4, 0.4, 0.4], [0.4, -0.4, 0], RED))
    cubes.append(_box([0.4, 0.4, 0.4], [0.4, -0.4, -0.4], RED))
    return [Part(_merge(cubes), True, "l-block")]


def _hammer() -> list[Part]:
    handle = _colored(trimesh.creation.cylinder(radius=0.08, height=1.0, sections=24), GREY)
    head = _box([0.5, 0.22, 0.22], [0.12, 0.5, 0], GREY)
    claw = _box([0.3, 0.1, 0.14], [-0.25, 0.56, 0], GREY)
    claw.apply_transform(_rot([0, 0, 1], -15))
    handle.apply_transform(_rot([1, 0, 0], -90))
    return [Part(_merge([handle, head, claw]), True, "hammer")]


def _flag() -> list[Part]:
    pole = _colored(trimesh.creation.cylinder(radius=0.03, height=1.2, sections=16), DARK)
    pole.apply_transform(_rot([1, 0, 0], -90))
    outline = np.array([[0, 0], [0.6, 0], [0.45, 0.2], [0.6, 0.4], [0, 0.4]])
    cloth = _colored(_extrude(outline, 0.03), YELLOW)
    cloth.apply_translation([0.03, 0.15, -0.015])
    base = _box([0.3, 0.06, 0.3], [0, -0.6, 0], DARK)
    return [Part(cloth, True, "cloth"), Part(_merge([pole, base]), False, "pole")]


def _boot() -> list[Part]:
    leg = _box([0.3, 0.7, 0.3], [-0.15, 0.2, 0], BLUE)
    foot = _box([0.75, 0.25, 0.32], [0.07, -0.28, 0], BLUE)
    toe = _colored(trimesh.creation.cylinder(radius=0.125, height=0.32, sections=24), BLUE)
    toe.apply_translation([0.45, -0.28, 0])
    sole = _box([0.95, 0.06, 0.34], [0.12, -0.43, 0], DARK)
    return [Part(_merge([leg, foot, toe]), True, "boot"), Part(sole, False, "sole")]


def _duck() -> list[Part]:
    body = _colored(trimesh.creation.icosphere(subdivisions=3, radius=0.4), YELLOW)
    body.apply_scale([1.3, 0.8, 0.9])
    head = _colored(trimesh.creation.icosphere(subdivisions=3, radius=0.22), YELLOW)
    head.apply_translation([0.38, 0.38, 0])
    tail = _colored(trimesh.creation.cone(radius=0.14, height=0.3, sections=24), YELLOW)
    tail.apply_transform(_rot([0, 0, 1], 120))
    tail.apply_translation([-0.5, 0.12, 0])
    beak = _colored(trimesh.creation.cone(radius=0.08, height=0.22, sections=24), ORANGE)
    beak.apply_transform(_rot([0, 1, 0], 90))
    beak.apply_translation([0.56, 0.36, 0])
    eye = _colored(trimesh.creation.icosphere(subdivisions=2, radius=0.04), DARK)
    eye.apply_translation([0.46, 0.46, 0.15])
    return [
        Part(_merge([body, head, tail]), True, "duck"),
        Part(_merge([beak, eye]), False, "beak and eye"),
    ]


def _arrow() -> list[Part]:
    outline = np.array(
        [[0, 0.1], [0.6, 0.1], [0.6, 0.25], [0.9, 0], [0.6, -0.25], [0.6, -0.1], [0, -0.1]]
    )
    shaft = _extrude(outline, 0.12)
    bend = _extrude(np.array([[0, -0.1], [0.2, -0.1], [0.2, -0.55], [0, -0.55]]), 0.12)
    arrow = _colored(_merge([shaft, bend]), GREEN)
    return [Part(arrow, True, "arrow")]


def _extrude(outline: np.ndarray, height: float) -> trimesh.Trimesh:
    """A prism over a simple polygon outline, triangulated by ear clipping (trimesh's own
    extrude needs shapely, which is not a dependency)."""
    pts = np.asarray(outline, dtype=float)
    if _signed_area(pts) < 0:
        pts = pts[::-1]
    tris = _ear_clip(pts)
    n = len(pts)
    verts = np.vstack([np.c_[pts, np.zeros(n)], np.c_[pts, np.full(n, height)]])
    faces = [[c, b, a] for a, b, c in tris] + [[a + n, b + n, c + n] for a, b, c in tris]
    for i in range(n):
        j = (i + 1) % n
        faces += [[i, j, j + n], [i, j + n, i + n]]
    return trimesh.Trimesh(verts, np.array(faces), process=True)


def _signed_area(pts: np.ndarray) -> float:
    x, y = pts[:, 0], pts[:, 1]
    return float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) / 2


def _ear_clip(pts: np.ndarray) -> list[tuple[int, int, int]]:
    idx = list(range(len(pts)))
    tris: list[tuple[int, int, int]] = []

    def cross(u: np.ndarray, v: np.ndarray) -> float:
        return float(u[0] * v[1] - u[1] * v[0])

    def inside(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> bool:
        d = [cross(b - a, p - a), cross(c - b, p - b), cross(a - c, p - c)]
        return all(x >= 0 for x in d)

    while len(idx) > 3:
        for k in range(len(idx)):
            i0, i1, i2 = idx[k - 1], idx[k], idx[(k + 1) % len(idx)]
            a, b, c = pts[i0], pts[i1], pts[i2]
            if cross(b - a, c - b) <= 0:
                continue  # reflex corner
            if any(inside(pts[j], a, b, c) for j in idx if j not in (i0, i1, i2)):
                continue
            tris.append((i0, i1, i2))
            idx.pop(k)
            break
        else:
            raise ValueError("outline is not a simple polygon")
    tris.append((idx[0], idx[1], idx[2]))
    return tris


RECIPES: dict[str, tuple[Callable[[], list[Part]], str]] = {
    "mug": (_mug, "a mug with a handle on one side"),
    "key": (_key, "a door key with teeth on one side"),
    "toy-car": (_toy_car, "a toy car with a spoiler at the back and a headlamp"),
    "chair": (_chair, "a chair with a back and one armrest"),
    "l-block": (_l_block, "a bent block of five cubes (a chiral pentacube)"),
    "hammer": (_hammer, "a claw hammer"),
    "flag": (_flag, "a swallow-tailed flag on a pole"),
    "boot": (_boot, "a boot"),
    "duck": (_duck, "a rubber duck"),
    "arrow": (_arrow, "a bent arrow sign"),
}


def build_object(name: str) -> Object3D:
    """Build a library object from its recipe (what scripts/make_objects.py writes)."""
    if name not in RECIPES:
        raise StudioError(f"no library object {name!r} (known: {', '.join(sorted(RECIPES))})")
    recipe, description = RECIPES[name]
    parts = normalised(recipe())
    return Object3D(name, parts, base_color=_paint_color(parts), notes={"description": description})


def objects_dir() -> Path:
    return resources_dir() / "objects"


def glb_bytes(obj: Object3D) -> bytes:
    scene = trimesh.Scene()
    for i, p in enumerate(obj.parts):
        prefix = PAINT_PREFIX if p.paintable else KEEP_PREFIX
        label = f"{prefix}{i}-{p.name}"
        scene.add_geometry(p.mesh, node_name=label, geom_name=label)
    return scene.export(file_type="glb")


def _part_order(part: Part) -> int:
    """Library parts are stored as ``<index>-<name>`` (glb_bytes); GLB readers don't keep
    node order, and part order decides which colour is the object's base colour."""
    head = part.name.partition("-")[0]
    return int(head) if head.isdigit() else 0


def library_names() -> list[str]:
    folder = objects_dir()
    return sorted(p.stem for p in folder.glob("*.glb")) if folder.is_dir() else []


_library_cache: dict[str, Object3D] = {}


def library_object(name: str) -> Object3D:
    """A shipped object, read from its GLB in resources/objects (cached; objects are frozen)."""
    if name not in _library_cache:
        path = objects_dir() / f"{name}.glb"
        if not path.is_file():
            known = ", ".join(library_names()) or "none"
            raise StudioError(f"no library object {name!r} (known: {known})")
        loaded = trimesh.load(io.BytesIO(path.read_bytes()), file_type="glb", process=False)
        parts = normalised(sorted(_parts_of(loaded, path), key=_part_order))
        description = RECIPES[name][1] if name in RECIPES else ""
        _library_cache[name] = Object3D(
            name, parts, base_color=_paint_color(parts), notes={"description": description}
        )
    return _library_cache[name]
