"""Offscreen 3D rendering (pyrender through EGL, OSMesa as the fallback) and the object library.

Core layer: no Qt. Nothing heavy is imported until a Renderer is made, so importing this package
is cheap on the path to the first window.
"""

from studio.render3d.backend import RenderBackendError, choose_platform
from studio.render3d.scene import Camera, Renderer, render_meshes, thread_renderer

__all__ = [
    "Camera",
    "RenderBackendError",
    "Renderer",
    "choose_platform",
    "render_meshes",
    "thread_renderer",
]
