"""Where the bundled files live: the source tree, an installed checkout or a PyInstaller bundle."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path


@cache
def root() -> Path:
    """The folder that holds ``resources/`` and ``schemas/``."""
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        return Path(frozen)
    return Path(__file__).resolve().parent.parent


def resources_dir() -> Path:
    return root() / "resources"


def schemas_dir() -> Path:
    return root() / "schemas"


def ua_data_dir() -> Path:
    """The shipped copy of the public UA annotation set (see resources/ua/PROVENANCE.md)."""
    return resources_dir() / "ua"
