"""Fuzzed mesh files (OBJ, STL, PLY, GLB, OFF) imported as objects: each loads into finite
meshes that render, or is refused with a MeshLoadError naming the file (and the part and face
when a face refers to a vertex that is missing or not finite) — never another exception."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import trimesh
from binary_loaders import load_and_use_mesh, mesh_seeds
from conftest import corpus, loader_named, run_one
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.render3d.objects import MeshLoadError, load_object

LOADER = loader_named("mesh")


@pytest.fixture(scope="session")
def mesh_ctx() -> dict[str, bytes]:
    return mesh_seeds()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False))
def test_mutated_meshes_load_or_are_refused_cleanly(
    rng: random.Random, mesh_ctx: Any, tmp_path: Path
) -> None:
    run_one(LOADER, mesh_ctx, LOADER.make(mesh_ctx, rng), tmp_path)


@pytest.mark.parametrize("case", corpus("meshes"), ids=lambda p: p.name)
def test_mesh_corpus_is_refused_naming_the_face(case: Path) -> None:
    """Files whose faces refer to vertices past the end (an IndexError after trimesh.load)."""
    with pytest.raises(MeshLoadError, match=r"face \d+ refers to vertex") as e:
        load_and_use_mesh(case)
    assert e.value.path == str(case)


def test_face_out_of_range_names_file_and_face(tmp_path: Path) -> None:
    path = tmp_path / "bad.ply"
    path.write_text(
        "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
        "property float z\nelement face 2\nproperty list uchar int vertex_indices\n"
        "end_header\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n3 0 2 9\n"
    )
    with pytest.raises(MeshLoadError, match="face 1 refers to vertex 9, but there are only 4"):
        load_object(path)


def test_face_on_a_non_finite_vertex_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nan.obj"
    path.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv nan 0 1\nf 1 2 3\nf 1 2 4\n")
    with pytest.raises(MeshLoadError, match=r"vertex 3 \(used by face 1\) is not a finite point"):
        load_object(path)


def test_unused_non_finite_vertex_is_refused_too(tmp_path: Path) -> None:
    mesh = trimesh.Trimesh(
        [[0, 0, 0], [1, 0, 0], [0, 1, 0], [np.inf, 0, 0]], [[0, 1, 2]], process=False
    )
    path = tmp_path / "extra.ply"
    mesh.export(path)
    with pytest.raises(MeshLoadError, match="vertex 3 is not a finite point"):
        load_object(path)
