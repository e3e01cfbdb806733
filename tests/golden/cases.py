"""The golden cases: one small split per family and layout, and the annotation exports.

Each case is a command line of ``analogy-studio``; :func:`digest` hashes every file the command
writes. ``python -m tests.golden.cases write`` records the digests in ``golden.json`` (only
when a change of output is intended, and said so in the commit); ``test_golden.py`` runs the
same commands and compares. What a file holds is compared to the byte, with one exception:
``studio_version`` and the fonts' hashes in ``split.json`` are blanked, so a version bump or
another build of a font package alone is not a change.
Pictures (PNG sheets, ``.npz`` frames) come from FreeType and Mesa; they are compared where the
rendering stack is the one recorded (:func:`stack`), the records always.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

GOLDEN = Path(__file__).with_name("golden.json")

#: ``generate`` arguments common to the glyph cases (small, balanced, one seed)
GLYPH = ["--n", "40", "--seed", "1", "--sampling", "balanced", "--holdout", "none"]

#: case name → (needs the UA project, arguments after ``generate [PROJECT] OUT``)
CASES: dict[str, tuple[bool, list[str]]] = {
    "glyph-two-row": (True, [*GLYPH]),
    "glyph-two-row-shift-ua": (
        True, [*GLYPH, "--shift", "--answer-sets", "ua", "--no-strict", "--folds", "2"],
    ),
    "glyph-matrix-3x3": (True, [*GLYPH, "--layout", "matrix-3x3"]),
    "glyph-sequence": (True, [*GLYPH, "--layout", "sequence"]),
    "glyph-odd-one-out": (True, [*GLYPH, "--layout", "odd-one-out"]),
    "glyph-analogy": (True, [*GLYPH, "--layout", "analogy"]),
    "kiva": (False, ["--family", "kiva", "--n", "6", "--seed", "2", "--size", "96"]),
    "kiva-adults-published": (
        False,
        ["--family", "kiva", "--mode", "kiva-adults", "--design", "published", "--n", "5",
         "--seed", "4", "--size", "96", "--no-change-share", "0.2"],
    ),
    "polycube-rotation": (
        False, ["--family", "polycube-rotation", "--n", "6", "--seed", "2", "--level", "2"],
    ),
    "shape-composition": (
        False, ["--family", "shape-composition", "--n", "6", "--seed", "2", "--level", "3"],
    ),
    "shape-composition-published": (
        False,
        ["--family", "shape-composition", "--n", "4", "--seed", "5", "--design", "published",
         "--size", "160"],
    ),
    "cube-net": (False, ["--family", "cube-net", "--n", "6", "--seed", "2"]),
}  # fmt: skip

PICTURES = (".png", ".npz")


def stack(project: str) -> dict[str, str]:
    """The versions that draw the pictures, and the font files that draw the UA project's
    glyphs (one hash over each font id's sha256, as ``split.json`` records them); pictures are
    compared only where all of them match."""
    import freetype
    import numpy
    import PIL
    import pyrender
    import trimesh

    from studio.app import Studio
    from studio.store.project import Project

    studio = Studio(Project.open(project))
    try:
        fonts = json.dumps(studio.font_manifest(), sort_keys=True)
    finally:
        studio.close()
    return {
        "freetype": ".".join(map(str, freetype.version())),
        "numpy": numpy.__version__,
        "pillow": PIL.__version__,
        "pyrender": pyrender.__version__,
        "trimesh": trimesh.__version__,
        "fonts": hashlib.sha256(fonts.encode()).hexdigest(),
    }


def _bytes_of(path: Path) -> bytes:
    data = path.read_bytes()
    if path.name == "split.json":
        meta = json.loads(data)
        if isinstance(meta, dict) and "studio_version" in meta:
            meta["studio_version"] = ""
            # the hashes of the machine's font files: which fonts, not which font versions
            if isinstance(meta.get("fonts"), dict):
                meta["fonts"] = dict.fromkeys(meta["fonts"], "")
            return json.dumps(meta, sort_keys=True).encode()
    return data


def digest(folder: Path) -> dict[str, str]:
    """sha256 of every file below ``folder``, by relative path."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(_bytes_of(p)).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def make_project(folder: Path, ua_csv: Path) -> str:
    from studio.cli import main

    path = str(folder / "ua.studio")
    assert main(["-q", "init", path]) == 0
    assert main(["-q", "import-annotations", path, str(ua_csv), "--render"]) == 0
    return path


def run_case(name: str, project: str, out: Path) -> dict[str, str]:
    from studio.cli import main

    glyph, args = CASES[name]
    paths = [project, str(out)] if glyph else [str(out)]
    code = main(["-q", "generate", *paths, *args])
    if code != 0:
        raise AssertionError(f"golden case {name}: generate exited {code}")
    return digest(out)


def run_exports(project: str, out: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """``export-annotations`` to a CSV and to a UA-layout folder."""
    from studio.cli import main

    out.mkdir(parents=True, exist_ok=True)
    assert main(["-q", "export-annotations", project, str(out / "tags.csv")]) == 0
    yield "export-csv", digest_file(out / "tags.csv")
    assert main(["-q", "export-annotations", project, str(out / "ua")]) == 0
    yield "export-ua-folder", digest(out / "ua")


def digest_file(path: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()}


def write(tmp: Path) -> None:
    from tests.conftest import SHARED_UA
    from tests.fontenv import hermetic_font_dir

    hermetic_font_dir(tmp)  # the suite's fonts, so what is recorded is what it compares
    project = make_project(tmp, SHARED_UA / "annotations.csv")
    cases = {name: run_case(name, project, tmp / name) for name in CASES}
    cases.update(run_exports(project, tmp / "exports"))
    GOLDEN.write_text(
        json.dumps({"stack": stack(project), "cases": cases}, indent=1, sort_keys=True) + "\n"
    )
    print(f"wrote {GOLDEN}: {len(cases)} cases, {sum(map(len, cases.values()))} files")


if __name__ == "__main__":  # python -m tests.golden.cases write
    if sys.argv[1:] != ["write"]:
        sys.exit("usage: python -m tests.golden.cases write")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        write(Path(d))
