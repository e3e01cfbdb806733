"""Write the object library to resources/objects/ from the recipes in studio.render3d.objects.

Run after changing a recipe: ``.venv/bin/python scripts/make_objects.py``. The GLB files are
committed so a lab machine loads objects without building them; tests check they still match
the recipes.
"""

from __future__ import annotations

from studio.core.fileio import atomic_write_bytes
from studio.render3d.objects import RECIPES, build_object, glb_bytes, objects_dir


def main() -> None:
    out = objects_dir()
    out.mkdir(parents=True, exist_ok=True)
    for name in sorted(RECIPES):
        atomic_write_bytes(out / f"{name}.glb", glb_bytes(build_object(name)))
        print(out / f"{name}.glb")


if __name__ == "__main__":
    main()
