"""Benchmark `preview3d`: milliseconds per before/after pair of the transform preview (CPU GL).

Workload: four library objects (mug, toy car, duck, key) × five transformations (rotation +90°,
reflection y, size ×2, colour blue, number +2 from two objects), each pair drawn by
``studio.families.kiva.transforms.preview_pair`` at 224 × 224 with one ``Renderer`` — what the GUI's
preview worker does on every change. Each call starts from a fresh ``StateRenderer``, so
nothing is cached between pairs. ``vet_ms_per_pair`` is the ambiguity verdict the preview shows
next to the pair (``vet_transform`` against every KiVA-adults transformation, reusing the
pair's pictures).

Reference, in the same run and thread: plain pyrender — one ``OffscreenRenderer`` of the same
size, two single-box scenes (a unit box, and the box turned 90°, each with the studio's
orthographic camera and two directional lights) rendered one after the other; that is the
least a before/after pair can cost. ``ratio`` = preview ms / reference ms.
``reference_rebuilt_ms_per_pair`` builds the two box scenes anew for every pair (meshes uploaded
again, as every preview must) and ``ratio_to_rebuilt`` compares with that.

Timing: best of ``--repeats`` passes over the workload (after one untimed warm-up pass each),
alternating preview and reference so a burst of load elsewhere hurts neither more.

Prints one JSON object on stdout (with the OpenGL renderer string: ``llvmpipe`` is Mesa's CPU
rasteriser).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any

OBJECTS = ("mug", "toy-car", "duck", "key")
TRANSFORMS = (
    ("rotation", "+90", 1),
    ("reflection", "y", 1),
    ("size", "x2", 1),
    ("color", "blue", 1),
    ("number", "+2", 2),
)


def _box_scenes(pr: Any) -> list[Any]:
    import trimesh

    from studio.render3d.scene import Camera, _light_pose

    camera = Camera()
    pose = camera.pose()
    scenes = []
    for turn in (0.0, 90.0):
        box = trimesh.creation.box(extents=(1.0, 0.6, 0.4))
        box.apply_transform(trimesh.transformations.rotation_matrix(math.radians(turn), [0, 0, 1]))
        box.visual = trimesh.visual.ColorVisuals(box, face_colors=[214, 40, 40, 255])
        scene = pr.Scene(bg_color=[1.0, 1.0, 1.0, 1.0], ambient_light=[0.32, 0.32, 0.32])
        scene.add(pr.Mesh.from_trimesh(box, smooth=False))
        scene.add(pr.OrthographicCamera(xmag=camera.extent, ymag=camera.extent), pose=pose)
        scene.add(pr.DirectionalLight(intensity=3.2), pose=_light_pose(pose, -35, 40))
        scene.add(pr.DirectionalLight(intensity=1.1), pose=_light_pose(pose, 50, -10))
        scenes.append(scene)
    return scenes


def _reference_scenes(pr: Any, size: int) -> tuple[Any, list[Any]]:
    import numpy as np

    scenes = _box_scenes(pr)
    renderer = pr.OffscreenRenderer(size, size)
    np.asarray(renderer.render(scenes[0])[0])  # warm-up: shaders compiled once
    return renderer, scenes


def _reference_pass(renderer: Any, scenes: list[Any], pairs: int) -> float:
    import numpy as np

    t = time.perf_counter()
    for _ in range(pairs):
        for scene in scenes:
            np.ascontiguousarray(renderer.render(scene)[0])
    return (time.perf_counter() - t) * 1000 / pairs


def _rebuild_pass(pr: Any, renderer: Any, pairs: int) -> float:
    """The reference with its two scenes built anew for every pair, as a preview must."""
    import numpy as np

    t = time.perf_counter()
    for _ in range(pairs):
        for scene in _box_scenes(pr):
            np.ascontiguousarray(renderer.render(scene)[0])
    return (time.perf_counter() - t) * 1000 / pairs


def _preview_pass(renderer: Any, work: list[tuple[Any, Any, Any]], size: int) -> float:
    from studio.families.kiva.transforms import preview_pair

    t = time.perf_counter()
    for obj, spec, state in work:
        preview_pair(obj, spec, state=state, renderer=renderer, size=size)
    return (time.perf_counter() - t) * 1000 / len(work)


def _vet_pass(renderer: Any, work: list[tuple[Any, Any, Any]], size: int) -> float:
    from studio.families.kiva.ambiguity import vet_transform
    from studio.families.kiva.transforms import StateRenderer, preview_pair
    from studio.render3d.scene import Camera

    total = 0.0
    for obj, spec, state in work:
        drawer = StateRenderer(obj, renderer, Camera(), size)
        preview_pair(obj, spec, state=state, size=size, drawer=drawer)
        t = time.perf_counter()
        vet_transform(obj, spec, state, size=size, drawer=drawer)
        total += time.perf_counter() - t
    return total * 1000 / len(work)


def _gl_info() -> dict[str, str]:
    try:
        from OpenGL import GL

        return {
            "gl_renderer": GL.glGetString(GL.GL_RENDERER).decode(),
            "gl_version": GL.glGetString(GL.GL_VERSION).decode(),
            "gl_vendor": GL.glGetString(GL.GL_VENDOR).decode(),
        }
    except Exception as e:  # no current context, or PyOpenGL without the platform
        return {"gl_renderer": f"unknown ({type(e).__name__})"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    from studio.families.kiva.transforms import StimulusState, TransformSpec
    from studio.render3d.backend import choose_platform, import_pyrender
    from studio.render3d.objects import library_object
    from studio.render3d.scene import Renderer

    work = [
        (library_object(name), TransformSpec(domain, value), StimulusState(count=count))
        for name in OBJECTS
        for domain, value, count in TRANSFORMS
    ]
    pr = import_pyrender()
    renderer = Renderer(args.size)
    reference, scenes = _reference_scenes(pr, args.size)
    try:
        _preview_pass(renderer, work, args.size)  # warm-up
        _reference_pass(reference, scenes, len(work))
        preview_runs, reference_runs, rebuild_runs = [], [], []
        for _ in range(max(1, args.repeats)):
            preview_runs.append(_preview_pass(renderer, work, args.size))
            reference_runs.append(_reference_pass(reference, scenes, len(work)))
            rebuild_runs.append(_rebuild_pass(pr, reference, len(work)))
        vet_ms = _vet_pass(renderer, work, args.size)
        gl = _gl_info()  # the reference's context is current after its last render
    finally:
        renderer.close()  # first: pyrender's own delete() terminates the shared EGL display
        reference.delete()
    preview_ms, reference_ms = min(preview_runs), min(reference_runs)
    result = {
        "name": "preview3d",
        "size": args.size,
        "pairs_per_pass": len(work),
        "objects": list(OBJECTS),
        "transforms": [f"{d}:{v}" for d, v, _ in TRANSFORMS],
        "preview_ms_per_pair": round(preview_ms, 2),
        "reference_ms_per_pair": round(reference_ms, 2),
        "ratio": round(preview_ms / reference_ms, 2),
        "reference_rebuilt_ms_per_pair": round(min(rebuild_runs), 2),
        "ratio_to_rebuilt": round(preview_ms / min(rebuild_runs), 2),
        "vet_ms_per_pair": round(vet_ms, 1),
        "preview_runs_ms": [round(t, 2) for t in preview_runs],
        "reference_runs_ms": [round(t, 2) for t in reference_runs],
        "timing": f"best of {len(preview_runs)} alternating passes after one warm-up pass each",
        "platform": choose_platform(),
        **gl,
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "python": sys.version.split()[0],
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
