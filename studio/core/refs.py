"""Lazy references: ``"package.module:attribute"`` strings resolved on first use.

Registries and family definitions name their heavy parts this way, so listing what is installed
costs no import of trimesh, pyrender or torch, and a plugin's code loads only when it is used.
"""

from __future__ import annotations

import importlib
from typing import Any

from studio.core.errors import StudioError


def resolve(ref: Any) -> Any:
    """The object a ``"module:attribute"`` string names; anything else is returned as it is."""
    if not isinstance(ref, str):
        return ref
    module, sep, attr = ref.partition(":")
    if not sep or not module or not attr:
        raise StudioError(f"{ref!r} is not a reference of the form 'package.module:attribute'")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise StudioError(f"{ref!r} cannot be loaded: {e}") from e
    return obj


__all__ = ["resolve"]
