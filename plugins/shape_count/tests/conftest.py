"""The plugin's tests run against the installed studio, like any third-party plugin's would."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="session", autouse=True)
def _isolated_dirs(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.mktemp("xdg-plugin")
    for name in ("CACHE", "DATA", "CONFIG"):
        os.environ[f"XDG_{name}_HOME"] = str(base / name.lower())
    os.environ["ANALOGY_STUDIO_SETTINGS"] = str(base / "settings.ini")
