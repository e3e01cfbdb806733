"""Offscreen renders of trimesh meshes with fixed framing, for before/after comparisons.

The camera always looks at the origin and frames a square of ``2 * extent`` world units, whatever
the meshes are: a mesh scaled ×2 therefore renders twice as large, which is what a size change in
KiVA must look like. Lighting is a key light from the upper left of the camera plus a weaker fill
from the right and an ambient term, with flat shading: faces of different orientation read as
different shades, so a mirror image is not mistaken for the original and hues stay recognisable.
"""

from __future__ import annotations

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


class Renderer:
    """An offscreen renderer of one image size.

    Thread-bound: an EGL context belongs to the thread that made it, so create the Renderer in
    the thread that uses it (the GUI's preview worker does) and close it there."""

    def __init__(self, size: int = 224, background: Background = "white") -> None:
        if size < 8 or size > 4096:
            raise ValueError(f"image size {size} is outside 8..4096")
        self.size = size
        self.background = background
        self._pyrender = import_pyrender()
        self._thread = threading.get_ident()
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

    def _scene(self, meshes: Sequence[trimesh.Trimesh], camera: Camera) -> tuple[Any, list[Any]]:
        pr = self._pyrender
        bg = [1.0, 1.0, 1.0, 0.0 if self.background == "transparent" else 1.0]
        scene = pr.Scene(bg_color=bg, ambient_light=[0.3, 0.3, 0.3])
        nodes = []
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

    def _check_thread(self) -> None:
        if self._renderer is None:
            raise RuntimeError("this Renderer is closed")
        if threading.get_ident() != self._thread:
            raise RuntimeError("a Renderer must be used in the thread that created it")

    def render_array(self, meshes: Sequence[trimesh.Trimesh], camera: Camera) -> np.ndarray:
        """RGB (or RGBA for a transparent background) uint8, C-contiguous, size × size."""
        self._check_thread()
        pr = self._pyrender
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
