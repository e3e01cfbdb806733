from __future__ import annotations

import numpy as np
import pytest
import trimesh

from studio.render3d import Camera
from studio.render3d.objects import (
    RECIPES,
    MeshLoadError,
    build_object,
    library_names,
    library_object,
    load_object,
    objects_dir,
)


def test_the_library_ships_every_recipe_with_a_licence():
    assert library_names() == sorted(RECIPES)
    assert len(library_names()) >= 8
    licence = (objects_dir() / "LICENSE.md").read_text()
    assert "CC0" in licence
    for name in library_names():
        assert f"{name}.glb" in licence


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_shipped_files_match_their_recipes(name):
    shipped, built = library_object(name), build_object(name)
    assert [len(p.mesh.faces) for p in shipped.parts] == [len(p.mesh.faces) for p in built.parts]
    assert np.allclose(shipped.bounds(), built.bounds(), atol=1e-4)
    assert [p.paintable for p in shipped.parts] == [p.paintable for p in built.parts]
    half = (shipped.bounds()[1] - shipped.bounds()[0]).max() / 2
    assert half == pytest.approx(0.5, abs=1e-4)
    assert np.allclose(shipped.bounds().mean(axis=0), 0, atol=1e-4)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_library_objects_are_chiral_in_view(renderer, name):
    """The mirror image of each object differs from the object in the default view, so a
    reflection trial with it shows a visible change."""
    obj = library_object(name)
    mirror = obj.transformed(np.diag([-1.0, 1, 1, 1]))
    cam = Camera(azimuth=30, elevation=20)
    a = np.asarray(renderer.render(obj.meshes(), cam), dtype=int)
    b = np.asarray(renderer.render(mirror.meshes(), cam), dtype=int)
    assert (np.abs(a - b).max(axis=2) > 40).mean() > 0.01


def test_painting_keeps_the_kept_parts(renderer):
    car = library_object("toy-car")
    red = car.painted((220, 20, 20))
    assert red.base_color == (220, 20, 20)
    for before, after in zip(car.parts, red.parts, strict=True):
        same = np.array_equal(before.mesh.visual.face_colors, after.mesh.visual.face_colors)
        assert same != before.paintable


@pytest.mark.parametrize("suffix", [".obj", ".stl", ".ply", ".glb"])
def test_mesh_files_import_as_objects(tmp_path, suffix):
    mesh = trimesh.creation.box(extents=[2, 1, 1])
    mesh.apply_translation([5, 5, 5])
    path = tmp_path / f"thing{suffix}"
    mesh.export(path)
    obj = load_object(path)
    assert obj.name == "thing" and obj.source == str(path)
    assert np.allclose(obj.bounds(), [[-0.5, -0.25, -0.25], [0.5, 0.25, 0.25]], atol=1e-6)


def test_bad_mesh_files_name_the_file_and_the_problem(tmp_path):
    with pytest.raises(MeshLoadError, match="no such file") as e:
        load_object(tmp_path / "missing.obj")
    assert "missing.obj" in str(e.value)
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(MeshLoadError, match="not a mesh format"):
        load_object(tmp_path / "notes.txt")
    (tmp_path / "broken.glb").write_bytes(b"glTF\x02\x00\x00\x00garbage")
    with pytest.raises(MeshLoadError, match=r"broken\.glb"):
        load_object(tmp_path / "broken.glb")
    (tmp_path / "empty.obj").write_text("# no faces here\nv 0 0 0\n")
    with pytest.raises(MeshLoadError, match=r"empty\.obj"):
        load_object(tmp_path / "empty.obj")


def test_unknown_library_object():
    with pytest.raises(Exception, match=r"known: .*mug"):
        library_object("unicorn")
