"""The curated project (tests/publish/curated.py), built once per session; each test works on
its own copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.publish.curated import CuratedProject, build_curated_project


@pytest.fixture(scope="session")
def curated_project(tmp_path_factory: pytest.TempPathFactory) -> CuratedProject:
    return build_curated_project(tmp_path_factory.mktemp("publish") / "curated.studio")


@pytest.fixture
def project_copy(curated_project: CuratedProject, tmp_path: Path) -> Path:
    path = tmp_path / "work.studio"
    shutil.copy(curated_project.path, path)
    return path
