"""Where the bundled data lives: the concept schemas and the shipped resources.

The repository keeps them at its top, in ``schemas/`` and ``resources/``; pyproject's
``package-dir`` maps those folders to the packages ``studio._schemas`` and ``studio._resources``,
so a wheel carries them inside ``studio/`` and an editable install (``pip install -e .``) maps
the packages back onto the repository's folders. Either way they are found with
:mod:`importlib.resources`, never through the source tree, so an installed studio works from any
folder.

The PyInstaller bundle is the exception: ``packaging/analogy-studio.spec`` copies the two folders
to the top of ``sys._MEIPASS`` (``_internal/resources``, ``_internal/schemas``), where lab IT and
``packaging/smoke.sh`` expect them.
"""

from __future__ import annotations

import sys
from functools import cache
from importlib.resources import files
from pathlib import Path

SCHEMAS_PACKAGE = "studio._schemas"
RESOURCES_PACKAGE = "studio._resources"


def _frozen_root() -> Path | None:
    """``sys._MEIPASS`` in a PyInstaller bundle, else None."""
    frozen = getattr(sys, "_MEIPASS", None)
    return Path(frozen) if frozen else None


@cache
def _package_folder(package: str, bundle_folder: str) -> Path:
    """The folder of a data package, as a real path: callers glob it and hand its files to
    libraries that want file names, so a zipped install (no files on disk) is refused here,
    with a message, rather than failing later somewhere less clear."""
    frozen = _frozen_root()
    if frozen is not None:
        return frozen / bundle_folder
    folder = files(package)
    if not isinstance(folder, Path):
        raise RuntimeError(
            f"{package} is not installed as files on disk ({folder!r}); "
            "install Analogy Studio from its wheel or with `pip install -e .`"
        )
    return folder


def resources_dir() -> Path:
    """The shipped resources (``resources/`` in the repository): UA's data set, 3D objects."""
    return _package_folder(RESOURCES_PACKAGE, "resources")


def schemas_dir() -> Path:
    """The shipped concept schemas and their JSON Schema (``schemas/`` in the repository)."""
    return _package_folder(SCHEMAS_PACKAGE, "schemas")


def ua_data_dir() -> Path:
    """The shipped copy of the public UA annotation set (see resources/ua/README.md)."""
    return resources_dir() / "ua"
