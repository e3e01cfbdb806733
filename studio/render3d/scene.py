"""Offscreen renders of trimesh meshes with fixed framing, for before/after comparisons.

The camera always looks at the origin and frames a square of ``2 * extent`` world units, whatever
the meshes are: a mesh scaled ×2 therefore renders twice as large, which is what a size change in
KiVA must look like. Lighting is a key light from the upper left of the camera plus a weaker fill
from the right and an ambient term, with flat shading: faces of different orientation read as
different shades, so a mirror image is not mistaken for the original and hues stay recognisable.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import trimesh
from PIL import Image

from studio.render3d.backend import RenderBackendError, import_pyrender

Projection = Literal["orthographic", "perspective"]
Background = Literal["white", "transparent"]


@dataclass(frozen=True)
class Camera:
    """A camera on a sphere around the origin; angles in degrees.

    ``azimuth`` turns about the vertical (y) axis, 0 looking along −z; ``elevation`` raises the
    camera above the horizontal plane. ``extent`` is the half-width of the framed square in
    world units, for both projections (perspective places the camera so the square at the
    origin fills the frame)."""

    azimuth: float = 30.0
    elevation: float = 20.0
    projection: Projection = "orthographic"
    extent: float = 1.2
    fov: float = 35.0  # vertical field of view (perspective only)

    def position(self) -> np.ndarray:
        distance = self.distance()
        az, el = math.radians(self.azimuth), math.radians(self.elevation)
        return distance * np.array(
            [math.sin(az) * math.cos(el), math.sin(el), math.cos(az) * math.cos(el)]
        )

    def distance(self) -> float:
        if self.projection == "perspective":
            return self.extent / math.tan(math.radians(self.fov) / 2)
        return 4.0 * self.extent + 2.0

    def pose(self) -> np.ndarray:
        """Camera-to-world matrix (OpenGL convention: the camera looks down its −z)."""
        eye = self.position()
        forward = -eye / np.linalg.norm(eye)
        up = np.array([0.0, 1.0, 0.0])
        if abs(float(np.dot(forward, up))) > 0.999:  # looking straight down or up
            up = np.array([0.0, 0.0, -1.0])
        right = np.cross(forward, up)
        right /= np.linalg.norm(right)
        true_up = np.cross(right, forward)
        pose = np.eye(4)
        pose[:3, 0], pose[:3, 1], pose[:3, 2], pose[:3, 3] = right, true_up, -forward, eye
        return pose


def _light_pose(camera_pose: np.ndarray, yaw: float, pitch: float) -> np.ndarray:
    """A directional light turned from the camera's own direction (degrees)."""
    ry = trimesh.transformations.rotation_matrix(math.radians(yaw), [0, 1, 0])
    rx = trimesh.transformations.rotation_matrix(math.radians(pitch), [1, 0, 0])
    return camera_pose @ ry @ rx


_ordered_scene_class: Any = None


def ordered_scene_class(pr: Any) -> Any:
    """A ``pyrender.Scene`` whose meshes and lights are drawn in the order they were added.

    pyrender keeps a scene's nodes in sets and draws its meshes in set order (after a stable
    sort by distance from the camera, a tie for meshes placed at the origin), so the order
    follows the nodes' memory addresses: where two parts meet at equal depth the first drawn
    wins the pixel, and the lights' contributions are summed in set order too. A picture then
    depends on what the process allocated before it (a trial drawn in a pool worker, or with
    kept pictures, differed by a pixel from the same trial drawn alone). This scene hands the
    renderer its mesh and light nodes in insertion order, so a picture is a function of the
    meshes and camera alone, in any process."""
    global _ordered_scene_class
    if _ordered_scene_class is None:

        class OrderedScene(pr.Scene):  # type: ignore[misc, name-defined]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                self._added: dict[Any, int] = {}
                self._next = itertools.count()
                super().__init__(*args, **kwargs)

            def add_node(self, node: Any, parent_node: Any = None) -> None:
                super().add_node(node, parent_node=parent_node)
                if node not in self._added:
                    self._added[node] = next(self._next)

            def remove_node(self, node: Any) -> None:
                super().remove_node(node)
                self._added = {n: i for n, i in self._added.items() if n in self.nodes}

            def _in_order(self, nodes: Any) -> list[Any]:
                return sorted(nodes, key=self._added.__getitem__)

            @property
            def mesh_nodes(self) -> list[Any]:
                return self._in_order(self._mesh_nodes)

            @property
            def light_nodes(self) -> list[Any]:
                return self._in_order(
                    self._point_light_nodes | self._spot_light_nodes | self._directional_light_nodes
                )

        _ordered_scene_class = OrderedScene
    return _ordered_scene_class


class Renderer:
    """An offscreen renderer of one image size.

    Thread-bound: an EGL context belongs to the thread that made it, so create the Renderer in
    the thread that uses it (the GUI's preview worker does) and close it there. A render with
    the camera of the one before reuses its scene (camera and lights) and draws its meshes as
    one primitive: the same picture as a new scene drawn mesh by mesh, at a fraction of
    pyrender's cost per scene, node and primitive."""

    #: Reuse the scene and merge the meshes (False: a new scene, mesh by mesh, as pyrender
    #: draws it; the benchmark's reference in the same run; the pictures are the same).
    keep_scene = True

    def __init__(self, size: int = 224, background: Background = "white") -> None:
        if size < 8 or size > 4096:
            raise ValueError(f"image size {size} is outside 8..4096")
        self.size = size
        self.background = background
        self._pyrender = import_pyrender()
        self._thread = threading.get_ident()
        # the scene of the last render, kept with its camera and lights: a render with the
        # same camera swaps its meshes only (pyrender's cost per scene and node is high)
        self._kept: tuple[Camera, Any, list[Any]] | None = None
        try:
            self._renderer = self._pyrender.OffscreenRenderer(size, size)
        except Exception as e:
            raise RenderBackendError(f"could not create an offscreen OpenGL context: {e}") from e

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # Dropped without close(): free the context our way, or pyrender's own finaliser
        # terminates the shared EGL display under every other renderer of the process.
        try:
            if threading.get_ident() == getattr(self, "_thread", None):
                self.close()
            elif getattr(self, "_renderer", None) is not None:
                self._renderer._platform._egl_display = None  # leak the context, not the display
        except Exception:
            pass

    def close(self) -> None:
        """Free this renderer's context. On EGL the display is left initialised: pyrender's own
        ``delete`` terminates it, and Mesa shares one display per device, which would kill every
        other renderer of the process (the GUI's preview and a test's, say)."""
        self._kept = None
        if self._renderer is None:
            return
        offscreen, self._renderer = self._renderer, None
        platform = offscreen._platform
        if type(platform).__name__ != "EGLPlatform":
            offscreen.delete()
            return
        from OpenGL import EGL

        platform.make_current()
        offscreen._renderer.delete()
        display = platform._egl_display
        EGL.eglMakeCurrent(display, EGL.EGL_NO_SURFACE, EGL.EGL_NO_SURFACE, EGL.EGL_NO_CONTEXT)
        if platform._egl_context is not None:
            EGL.eglDestroyContext(display, platform._egl_context)
            platform._egl_context = None
        platform._egl_display = None

    def _merged(self, meshes: Sequence[trimesh.Trimesh]) -> Any:
        """The meshes as one pyrender mesh of one primitive, drawn in one call, or None when
        some mesh is coloured otherwise than by faces or vertices (a texture).

        The primitive holds what ``Mesh.from_trimesh(mesh, smooth=False)`` makes of each mesh,
        one after the other: the same positions, flat normals and colours, and the same
        material. OpenGL processes a draw call's triangles in order, so the picture is the one
        drawn mesh by mesh in the order given (where two meet at equal depth the earlier wins
        either way), at a fraction of pyrender's per-mesh cost (a program bind, the lights'
        uniforms and a buffer upload each)."""
        pr = self._pyrender
        positions, normals, colors = [], [], []
        for mesh in meshes:
            kind = mesh.visual.kind if mesh.visual.defined else None
            faces = mesh.faces
            if kind == "face":
                rgba = np.repeat(mesh.visual.face_colors, 3, axis=0)
            elif kind == "vertex":
                vc = mesh.visual.vertex_colors
                rgba = vc[faces].reshape((3 * len(faces), vc.shape[1]))
            else:
                return None
            positions.append(mesh.vertices[faces].reshape((3 * len(faces), 3)))
            normals.append(np.repeat(mesh.face_normals, 3, axis=0))
            colors.append(rgba)
        material = pr.MetallicRoughnessMaterial(
            alphaMode="BLEND", baseColorFactor=[1.0, 1.0, 1.0, 1.0], metallicFactor=0.2,
            roughnessFactor=0.8,
        )  # fmt: skip
        primitive = pr.Primitive(
            positions=np.concatenate(positions),
            normals=np.concatenate(normals),
            color_0=np.concatenate(colors),
            material=material,
            mode=pr.constants.GLTF.TRIANGLES,
        )
        return pr.Mesh(primitives=[primitive])

    def _scene(
        self, meshes: Sequence[trimesh.Trimesh], camera: Camera, merge: bool = False
    ) -> tuple[Any, list[Any]]:
        pr = self._pyrender
        bg = [1.0, 1.0, 1.0, 0.0 if self.background == "transparent" else 1.0]
        scene = ordered_scene_class(pr)(bg_color=bg, ambient_light=[0.3, 0.3, 0.3])
        nodes = []
        merged = self._merged(meshes) if merge and len(meshes) > 1 else None
        if merged is not None:
            nodes.append(scene.add(merged))
        else:
            for mesh in meshes:
                nodes.append(scene.add(pr.Mesh.from_trimesh(mesh, smooth=False)))
        if camera.projection == "perspective":
            cam = pr.PerspectiveCamera(yfov=math.radians(camera.fov), aspectRatio=1.0)
        else:
            cam = pr.OrthographicCamera(xmag=camera.extent, ymag=camera.extent)
        pose = camera.pose()
        scene.add(cam, pose=pose)
        scene.add(pr.DirectionalLight(intensity=2.4), pose=_light_pose(pose, -35, 40))
        scene.add(pr.DirectionalLight(intensity=0.8), pose=_light_pose(pose, 50, -10))
        return scene, nodes

    def _kept_scene(self, meshes: Sequence[trimesh.Trimesh], camera: Camera) -> Any:
        """The scene for a render: the last one with its meshes swapped when the camera is the
        same (the same nodes in the same order as a new scene: the same picture), else new."""
        if self._kept is None or self._kept[0] != camera:
            scene, nodes = self._scene(meshes, camera, merge=True)
            self._kept = (camera, scene, nodes)
            return scene
        _, scene, old = self._kept
        for node in old:
            scene.remove_node(node)
        merged = self._merged(meshes) if len(meshes) > 1 else None
        if merged is not None:
            nodes = [scene.add(merged)]
        else:
            pr = self._pyrender
            nodes = [scene.add(pr.Mesh.from_trimesh(m, smooth=False)) for m in meshes]
        self._kept = (camera, scene, nodes)
        return scene

    def _check_thread(self) -> None:
        if self._renderer is None:
            raise RuntimeError("this Renderer is closed")
        if threading.get_ident() != self._thread:
            raise RuntimeError("a Renderer must be used in the thread that created it")

    def render_array(self, meshes: Sequence[trimesh.Trimesh], camera: Camera) -> np.ndarray:
        """RGB (or RGBA for a transparent background) uint8, C-contiguous, size × size."""
        self._check_thread()
        pr = self._pyrender
        if self.keep_scene:
            scene = self._kept_scene(meshes, camera)
        else:
            scene, _ = self._scene(meshes, camera)
        flags = pr.RenderFlags.RGBA if self.background == "transparent" else pr.RenderFlags.NONE
        color, _depth = self._renderer.render(scene, flags=flags)
        return np.ascontiguousarray(color)

    def render(self, meshes: Sequence[trimesh.Trimesh], camera: Camera) -> Image.Image:
        array = self.render_array(meshes, camera)
        return Image.fromarray(array, "RGBA" if array.shape[2] == 4 else "RGB")

    def segment(self, meshes: Sequence[trimesh.Trimesh], camera: Camera) -> np.ndarray:
        """Which mesh is seen at each pixel: int32 indices into ``meshes``, −1 for background.

        Used to tell whether every part of a shape (a cube of a polycube, an object of a
        group) is visible at all from a camera."""
        self._check_thread()
        pr = self._pyrender
        scene, nodes = self._scene(meshes, camera)
        seg_map = {}
        for i, node in enumerate(nodes):
            code = i + 1
            seg_map[node] = np.array([code & 255, (code >> 8) & 255, (code >> 16) & 255])
        color, _ = self._renderer.render(scene, flags=pr.RenderFlags.SEG, seg_node_map=seg_map)
        color = color.astype(np.int32)
        code = color[..., 0] | (color[..., 1] << 8) | (color[..., 2] << 16)
        return np.ascontiguousarray(code - 1, dtype=np.int32)


_local = threading.local()


def thread_renderer(size: int = 224, background: Background = "white") -> Renderer:
    """A Renderer kept for this thread and size (created on first use)."""
    cache: dict[tuple[int, str], Renderer] = getattr(_local, "renderers", None) or {}
    _local.renderers = cache
    key = (size, background)
    if key not in cache:
        cache[key] = Renderer(size, background)
    return cache[key]


def render_meshes(
    meshes: Sequence[trimesh.Trimesh],
    camera: Camera | None = None,
    size: int = 224,
    background: Background = "white",
) -> Image.Image:
    """One render with this thread's renderer of that size."""
    return thread_renderer(size, background).render(meshes, camera or Camera())
