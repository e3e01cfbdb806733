"""Shared fixtures: the real UA data and schema, fresh projects in tmp folders.

Qt runs offscreen and every cache the studio writes goes to a per-session tmp folder, so tests
never touch the user's real cache or settings.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

from studio.core.schema import Schema, bundled_schema_path, load_schema
from studio.resources import ua_data_dir
from tests.fontenv import hermetic_font_dir

SHARED_UA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ua"

# pg_server / pg_database: a throwaway PostgreSQL server (one per xdist worker that asks)
pytest_plugins = ["tests.pgserver"]


@pytest.fixture(scope="session", autouse=True)
def _isolated_dirs(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.mktemp("xdg")
    os.environ["XDG_CACHE_HOME"] = str(base / "cache")
    os.environ["XDG_DATA_HOME"] = str(base / "data")
    os.environ["XDG_CONFIG_HOME"] = str(base / "config")
    os.environ["ANALOGY_STUDIO_SETTINGS"] = str(base / "settings.ini")
    # render with set-up's fonts only, never with whatever else the machine has (issue 25)
    hermetic_font_dir(base)


@pytest.fixture(scope="session")
def ua_schema() -> Schema:
    return load_schema(bundled_schema_path())


@pytest.fixture(scope="session")
def ua_csv() -> Path:
    """The public UA annotation set: ../shared when present (CI), else the shipped copy."""
    shared = SHARED_UA / "annotations.csv"
    return shared if shared.exists() else ua_data_dir() / "annotations.csv"
