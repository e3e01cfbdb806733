from __future__ import annotations

import threading

import numpy as np
import pytest
import trimesh

from studio.render3d import Camera, Renderer, backend, choose_platform


def _box(size: float = 0.5, color=(210, 30, 30)) -> trimesh.Trimesh:
    m = trimesh.creation.box(extents=[size, size, size])
    m.visual = trimesh.visual.ColorVisuals(m, face_colors=[*color, 255])
    return m


def _ink(image) -> np.ndarray:
    a = np.asarray(image.convert("RGB"), dtype=int)
    return (a < 245).any(axis=2)


def test_a_platform_is_chosen():
    assert choose_platform() in ("egl", "osmesa")


def test_no_platform_gives_a_message_naming_the_packages(monkeypatch):
    monkeypatch.setattr(backend, "_chosen", None)
    monkeypatch.delenv("PYOPENGL_PLATFORM", raising=False)
    monkeypatch.setattr(backend, "_egl_works", lambda: False)
    monkeypatch.setattr(backend, "_osmesa_works", lambda: False)
    with pytest.raises(backend.RenderBackendError, match="libegl1 libegl-mesa0 libgl1"):
        backend.choose_platform()
    # the platform the session already uses is left as it was
    monkeypatch.undo()
    assert choose_platform() in ("egl", "osmesa")


def test_a_red_box_on_white(renderer):
    img = renderer.render([_box()], Camera(azimuth=0, elevation=0))
    a = np.asarray(img)
    assert img.size == (96, 96)
    assert tuple(a[0, 0]) == (255, 255, 255)
    r, g, b = (int(v) for v in a[48, 48])
    assert r > 150 and g < 90 and b < 90  # the lit face still reads as red


def test_fixed_framing_shows_a_size_change_as_a_size_change(renderer):
    cam = Camera(azimuth=0, elevation=0)
    small = _ink(renderer.render([_box(0.4)], cam)).sum()
    large = _ink(renderer.render([_box(0.8)], cam)).sum()
    assert large / small == pytest.approx(4.0, rel=0.15)


def test_transparent_background(renderer):
    with Renderer(64, background="transparent") as r:
        img = r.render([_box()], Camera())
    a = np.asarray(img)
    assert img.mode == "RGBA"
    assert a[0, 0, 3] == 0 and a[32, 32, 3] == 255


def test_perspective_frames_the_same_square(renderer):
    ortho = _ink(renderer.render([_box(0.5)], Camera(azimuth=0, elevation=0))).sum()
    persp = _ink(
        renderer.render([_box(0.5)], Camera(azimuth=0, elevation=0, projection="perspective"))
    ).sum()
    assert persp > 0 and 0.7 < persp / ortho < 1.6


def test_segment_names_the_mesh_at_each_pixel(renderer):
    left, right = _box(0.4), _box(0.4, (30, 200, 30))
    left.apply_translation([-0.5, 0, 0])
    right.apply_translation([0.5, 0, 0])
    ids = renderer.segment([left, right], Camera(azimuth=0, elevation=0))
    assert ids.dtype == np.int32 and ids.shape == (96, 96)
    assert ids[0, 0] == -1
    assert ids[48, 28] == 0 and ids[48, 68] == 1
    # a box hidden behind another one is not seen at all
    front, behind = _box(0.6), _box(0.3)
    behind.apply_translation([0, 0, -0.8])
    ids = renderer.segment([front, behind], Camera(azimuth=0, elevation=0))
    assert (ids == 1).sum() == 0 and (ids == 0).sum() > 0


def test_mirror_image_is_not_mistaken_for_the_original(renderer):
    """An L of boxes and its mirror image render differently (lighting is not symmetric)."""
    parts = [_box(0.3) for _ in range(3)]
    for m, at in zip(parts, ([0, 0, 0], [0, 0.3, 0], [0.3, 0, 0]), strict=True):
        m.apply_translation(at)
    shape = trimesh.util.concatenate(parts)
    mirror = shape.copy()
    mirror.apply_transform(np.diag([-1.0, 1, 1, 1]))
    cam = Camera(azimuth=30, elevation=20)
    a = np.asarray(renderer.render([shape], cam), dtype=int)
    b = np.asarray(renderer.render([mirror], cam), dtype=int)
    assert (np.abs(a - b).max(axis=2) > 30).mean() > 0.02


def test_a_renderer_refuses_another_thread(renderer):
    errors = []

    def use():
        try:
            renderer.render([_box()], Camera())
        except RuntimeError as e:
            errors.append(str(e))

    t = threading.Thread(target=use)
    t.start()
    t.join()
    assert errors and "thread that created it" in errors[0]


def test_a_dropped_renderer_does_not_break_the_others():
    """pyrender's own finaliser terminates the EGL display that every renderer shares."""
    keep = Renderer(48)
    dropped = Renderer(64)
    del dropped
    import gc

    gc.collect()
    img = keep.render([_box()], Camera())
    assert np.asarray(img)[24, 24].tolist() != [255, 255, 255]
    keep.close()


def _square(color: tuple[int, int, int]) -> trimesh.Trimesh:
    """A flat square facing the default camera's direction, the same for every colour."""
    m = trimesh.creation.box(extents=[0.8, 0.8, 0.0001])
    m.visual = trimesh.visual.ColorVisuals(m, face_colors=[*color, 255])
    return m


def test_meshes_at_equal_depth_are_drawn_in_the_order_given(renderer):
    """pyrender keeps nodes in a set, so which of two coincident meshes wins a pixel followed
    memory addresses; our scene draws them in the order given: the first one wins (depth test
    GL_LESS), whatever the meshes' ids, many times over."""
    camera = Camera(azimuth=0, elevation=0)
    red, blue = (220, 20, 20), (20, 20, 220)
    centre = renderer.size // 2
    for _ in range(6):  # fresh meshes (fresh ids) each time
        first_red = np.asarray(renderer.render([_square(red), _square(blue)], camera))
        first_blue = np.asarray(renderer.render([_square(blue), _square(red)], camera))
        assert first_red[centre, centre, 0] > 150 > first_red[centre, centre, 2]
        assert first_blue[centre, centre, 2] > 150 > first_blue[centre, centre, 0]


def test_the_scene_hands_pyrender_its_nodes_in_insertion_order():
    from studio.render3d.backend import import_pyrender
    from studio.render3d.scene import ordered_scene_class

    pr = import_pyrender()
    scene = ordered_scene_class(pr)()
    boxes = [pr.Mesh.from_trimesh(_box(0.1 + 0.05 * i), smooth=False) for i in range(12)]
    meshes = [scene.add(box) for box in boxes]
    lights = [scene.add(pr.DirectionalLight(intensity=1.0 + i)) for i in range(3)]
    assert list(scene.mesh_nodes) == meshes
    assert list(scene.light_nodes) == lights
    scene.remove_node(meshes[4])
    assert list(scene.mesh_nodes) == meshes[:4] + meshes[5:]


def test_a_kept_scene_draws_what_a_new_scene_draws_mesh_by_mesh():
    """The renderer reuses its scene and merges the meshes into one primitive; the pictures
    must be those of pyrender's own way, byte for byte, across camera changes."""
    from studio.render3d.objects import library_names, library_object

    shown = [library_object(name) for name in library_names()[:4]]
    cameras = [Camera(), Camera(), Camera(azimuth=-60, elevation=40, projection="perspective")]
    with Renderer(64) as kept, Renderer(64) as plain:
        plain.keep_scene = False
        for obj in shown:
            meshes = [part.mesh for part in obj.parts]
            two = meshes + [m.copy().apply_translation([0.4, 0.0, 0.0]) for m in meshes]
            for camera in cameras:
                for group in (meshes, two, meshes[:1]):
                    got = np.asarray(kept.render(group, camera))
                    assert np.array_equal(got, np.asarray(plain.render(group, camera)))
