"""Choose the OpenGL platform for offscreen rendering before pyrender is imported.

pyrender reads ``PYOPENGL_PLATFORM`` once, when PyOpenGL is first imported, so the choice must be
made before that and cannot be changed afterwards in the same process. EGL (Mesa's llvmpipe on a
machine without a GPU, the driver's EGL on one with) is preferred; OSMesa is the fallback. Which
one works is probed through ctypes, without importing PyOpenGL, so a failed probe costs nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from types import ModuleType

from studio.core.errors import StudioError

PLATFORMS = ("egl", "osmesa")
DEBIAN_PACKAGES = "libegl1 libegl-mesa0 libgl1 (EGL) or libosmesa6 (OSMesa)"
_lock = threading.Lock()
_chosen: str | None = None


class RenderBackendError(StudioError):
    """No offscreen OpenGL platform works; the message says what to install."""


def _egl_works() -> bool:
    """Initialise an EGL display the way pyrender does: the first EGL device (Mesa's software
    device when there is no GPU), else the default display."""
    name = ctypes.util.find_library("EGL") or "libEGL.so.1"
    try:
        egl = ctypes.CDLL(name)
    except OSError:
        return False
    egl.eglGetProcAddress.restype = ctypes.c_void_p
    egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]
    egl.eglInitialize.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    display = None
    query = egl.eglGetProcAddress(b"eglQueryDevicesEXT")
    get_display = egl.eglGetProcAddress(b"eglGetPlatformDisplayEXT")
    if query and get_display:
        query_devices = ctypes.CFUNCTYPE(
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.POINTER(ctypes.c_int),
        )(query)
        devices = (ctypes.c_void_p * 8)()
        count = ctypes.c_int()
        if query_devices(8, devices, ctypes.byref(count)) and count.value > 0:
            platform_display = ctypes.CFUNCTYPE(
                ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p
            )(get_display)
            display = platform_display(0x313F, devices[0], None)  # EGL_PLATFORM_DEVICE_EXT
    if not display:
        egl.eglGetDisplay.restype = ctypes.c_void_p
        egl.eglGetDisplay.argtypes = [ctypes.c_void_p]
        display = egl.eglGetDisplay(None)
    if not display:
        return False
    major, minor = ctypes.c_int(), ctypes.c_int()
    return bool(egl.eglInitialize(display, ctypes.byref(major), ctypes.byref(minor)))


def _osmesa_works() -> bool:
    name = ctypes.util.find_library("OSMesa") or "libOSMesa.so.8"
    try:
        ctypes.CDLL(name)
    except OSError:
        return False
    return True


def choose_platform() -> str:
    """The platform in use: ``PYOPENGL_PLATFORM`` when the user set it, else EGL, else OSMesa.

    Raises RenderBackendError naming the Debian packages when neither is available."""
    global _chosen
    with _lock:
        if _chosen is not None:
            return _chosen
        wanted = os.environ.get("PYOPENGL_PLATFORM", "").strip().lower()
        if wanted:
            _chosen = wanted
            return wanted
        for platform, works in (("egl", _egl_works), ("osmesa", _osmesa_works)):
            if works():
                os.environ["PYOPENGL_PLATFORM"] = platform
                _chosen = platform
                return platform
        raise RenderBackendError(
            "3D rendering needs an offscreen OpenGL platform and none works here: "
            f"install {DEBIAN_PACKAGES} (sudo apt-get install libegl1 libegl-mesa0 libgl1)"
        )


def import_pyrender() -> ModuleType:
    """pyrender, imported after the platform is chosen (and after numpy 2's ``np.infty``
    removal is patched: pyrender 0.1.45 still uses it for bounds and directional shadows)."""
    choose_platform()
    import numpy as np

    if not hasattr(np, "infty"):
        np.infty = np.inf  # type: ignore[attr-defined]  # the one place this alias lives
    try:
        import pyrender
    except Exception as e:  # ImportError, or PyOpenGL failing to load its platform library
        raise RenderBackendError(
            f"pyrender could not be loaded on the {os.environ.get('PYOPENGL_PLATFORM')} "
            f"platform: {e}. Install {DEBIAN_PACKAGES}."
        ) from e
    return pyrender
