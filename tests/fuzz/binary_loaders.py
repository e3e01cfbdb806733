"""The binary loaders of the fuzz table: font files, meshes and project files.

Each is a :class:`fuzz_kit.Loader` (``make_loaders`` appends them), seeded from real inputs:

- ``font``: a user font as the studio takes one — added to a catalog (which draws every glyph
  small, refusing a damaged font), then its first glyphs rendered at the studio's size. Seeds:
  small fonts ``scripts/setup.sh`` installs (Noto Ogham, DejaVu Sans ExtraLight with its
  hinting programs, the CFF font Alfios) where present, and a font built here with fontTools.
- ``mesh``: ``load_object`` on OBJ, STL (binary and ASCII), PLY (binary and ASCII), GLB and OFF
  files written by trimesh, and the shipped duck; the loaded meshes' triangles and normals are
  then computed, as rendering does.
- ``project``: ``Project.open`` and every read the studio's views make, on a real project (a
  sample of UA's tags, a puzzle set, a queued job) whose bytes are mutated (mostly past the
  SQLite header, in the data pages) or edited with SQL into a sound file holding bad values (a
  format version of '', '3.5' or 'abc', a lower format whose tables exist, a dropped table or
  column, out-of-range cells). A refused file must keep its sha256 and gain no
  ``.bak-format<N>``.
"""

from __future__ import annotations

import io
import random
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from fuzz_kit import Loader, mutate_bytes, sha256, ua_sample_csv

#: fonts that ``scripts/setup.sh`` installs (fonts-noto-core, fonts-dejavu-core,
#: fonts-ancient-scripts): small ones, a plain TrueType, a hinted one and a CFF one
SEED_FONTS = (
    Path("/usr/share/fonts/truetype/noto/NotoSansOgham-Regular.ttf"),
    Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-ExtraLight.ttf"),
    Path("/usr/share/fonts/truetype/ancient-scripts/Alfios_R.otf"),
)
#: how many of a font's code points the fuzz run renders at the studio's size (80 px)
RENDERED_GLYPHS = 8


def _mutate(data: bytes, rng: random.Random, start: int = 0) -> bytes:
    """One to three of fuzz_kit's byte mutations, each of ``data[start:]``."""
    for _ in range(rng.randint(1, 3)):
        data = data[:start] + mutate_bytes(data[start:], rng)
    return data


def _save(value: tuple[str, bytes], path: Path) -> None:
    suffix, data = value
    path.with_name(path.name + suffix).write_bytes(data)


# ---- fonts ----------------------------------------------------------------------------------
def built_font() -> bytes:
    """A small TrueType font made with fontTools: boxes and a triangle for A-Z."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.ttGlyphPen import TTGlyphPen

    def shape(i: int) -> Any:
        pen = TTGlyphPen(None)
        pen.moveTo((50, 0))
        pen.lineTo((50 + 10 * i, 700))
        pen.lineTo((550, 700 - 10 * i))
        if i % 2:
            pen.lineTo((550, 0))
        pen.closePath()
        return pen.glyph()

    names = [".notdef", *(f"g{i}" for i in range(26))]
    fb = FontBuilder(1000, isTTF=True)
    fb.setupGlyphOrder(names)
    fb.setupCharacterMap({0x41 + i: f"g{i}" for i in range(26)})
    fb.setupGlyf({".notdef": shape(0), **{f"g{i}": shape(i) for i in range(26)}})
    fb.setupHorizontalMetrics({n: (600, 50) for n in names})
    fb.setupHorizontalHeader(ascent=800, descent=-200)
    fb.setupNameTable({"familyName": "Fuzz Seed", "styleName": "Regular"})
    fb.setupOS2()
    fb.setupPost()
    out = io.BytesIO()
    fb.save(out)
    return out.getvalue()


def font_seeds() -> dict[str, bytes]:
    seeds = {"built.ttf": built_font()}
    seeds.update({p.name: p.read_bytes() for p in SEED_FONTS if p.exists()})
    return seeds


def _font_make(ctx: dict[str, bytes], rng: random.Random) -> tuple[str, bytes]:
    name = rng.choice(sorted(ctx))
    return Path(name).suffix, _mutate(ctx[name], rng)


def add_and_render_font(path: Path) -> None:
    """What the studio does with a user's font file: add it (FontError when refused), then
    render its first glyphs (a damaged glyph is reported, not raised)."""
    from studio.glyphs.fonts import FontCatalog
    from studio.glyphs.render import GlyphRenderer

    catalog = FontCatalog()
    info = catalog.add_file(path, source="user")
    with GlyphRenderer(path, info.index) as renderer:
        for cp in sorted(catalog.codepoints(info.id))[:RENDERED_GLYPHS]:
            image, reason = renderer.render_or_reason(cp)
            assert (image is None) != (reason is None)


def _font_run(ctx: Any, value: tuple[str, bytes], work: Path) -> None:
    suffix, data = value
    path = work / f"fuzzed{suffix}"
    path.write_bytes(data)
    add_and_render_font(path)


# ---- meshes ---------------------------------------------------------------------------------
def mesh_seeds() -> dict[str, bytes]:
    import trimesh

    from studio.resources import resources_dir

    mesh = trimesh.creation.icosphere(subdivisions=1)
    seeds: dict[str, bytes] = {}
    for name, kind, options in (
        ("sphere.obj", "obj", {}),
        ("sphere.stl", "stl", {}),
        ("ascii.stl", "stl_ascii", {}),
        ("sphere.ply", "ply", {}),
        ("ascii.ply", "ply", {"encoding": "ascii"}),
        ("sphere.glb", "glb", {}),
        ("sphere.off", "off", {}),
    ):
        data = mesh.export(file_type=kind, **options)
        seeds[name] = data.encode() if isinstance(data, str) else bytes(data)
    duck = resources_dir() / "objects" / "duck.glb"
    if duck.exists():
        seeds["duck.glb"] = duck.read_bytes()
    return seeds


def _mesh_make(ctx: dict[str, bytes], rng: random.Random) -> tuple[str, bytes]:
    name = rng.choice(sorted(ctx))
    return Path(name).suffix, _mutate(ctx[name], rng)


def load_and_use_mesh(path: Path) -> None:
    """``load_object`` (MeshLoadError when refused), then what rendering computes from it."""
    import warnings

    from studio.render3d.objects import load_object

    with warnings.catch_warnings():
        # trimesh warns about odd but readable files (and logs the rest); not our contract
        warnings.simplefilter("ignore")
        obj = load_object(path)
        for mesh in obj.meshes():
            assert np.isfinite(mesh.vertices).all(), "a loaded mesh has non-finite vertices"
            _ = (mesh.triangles, mesh.face_normals, mesh.vertex_normals, mesh.bounds)


def _mesh_run(ctx: Any, value: tuple[str, bytes], work: Path) -> None:
    suffix, data = value
    path = work / f"fuzzed{suffix}"
    path.write_bytes(data)
    load_and_use_mesh(path)


# ---- project files --------------------------------------------------------------------------
#: SQL that leaves a sound SQLite file holding something the studio must refuse (or, for a
#: lower format whose tables exist, migrate again without harm)
PROJECT_EDITS = (
    *(
        f"UPDATE meta SET value='{v}' WHERE key='format_version'"
        for v in ("", "3.5", "abc", " 5", "0", "-1", "99", "1", "2", "3", "4", "5", "1e3", "٣")
    ),
    "DELETE FROM meta WHERE key='format_version'",
    "UPDATE meta SET value='other' WHERE key='application'",
    "DROP TABLE puzzles",
    "DROP TABLE jobs",
    "DROP TABLE tags",
    "DROP TABLE schema_versions",
    "ALTER TABLE tags DROP COLUMN author",
    "UPDATE glyphs SET codepoint=1114112 WHERE id=1",
    "UPDATE glyphs SET codepoint=-1 WHERE id=2",
    "UPDATE glyphs SET codepoint='abc' WHERE id=3",
    "UPDATE glyphs SET codepoint=3.5 WHERE id=3",
    "UPDATE glyphs SET status='bogus' WHERE id=4",
    "UPDATE glyphs SET font='Bad Font' WHERE id=5",
    "UPDATE tags SET glyph_id='x' WHERE id=1",
    "UPDATE puzzles SET status='bogus' WHERE id=1",
    "UPDATE puzzles SET record='{' WHERE id=2",
    "UPDATE puzzles SET record='[]' WHERE id=2",
    "UPDATE puzzles SET findings='{}' WHERE id=3",
    "UPDATE puzzles SET position='first' WHERE id=3",
    "UPDATE puzzle_sets SET params='nope'",
    "DROP TRIGGER puzzle_events_no_update; UPDATE puzzle_events SET detail='' WHERE id=1",
    "UPDATE jobs SET status='zzz'",
    "UPDATE jobs SET params='{'",
    "UPDATE jobs SET progress='half'",
    "UPDATE schema_versions SET json='{}'",
    "UPDATE schema_versions SET json='not json'",
    "DELETE FROM schema_versions",
)


def puzzle_record(pid: str) -> dict[str, Any]:
    return {
        "id": pid,
        "family": "glyph-pmp",
        "layout": "two-row",
        "rule": "constant",
        "concept": "aspect",
        "shift": False,
        "context": [["U+25CB@symbola"] * 3, ["U+25CF@symbola"] * 2],
        "answers": ["U+25A0@symbola", "U+25A1@symbola", "U+25CF@symbola", "U+25B2@symbola"],
        "key": 2,
        "split": pid.split("-")[0],
        "seed": 1,
    }


def make_seed_project(path: Path) -> Path:
    """A real project: a sample of UA's tags, a puzzle set of 12 and a queued job."""
    from studio.core.annotations import parse_annotation_csv
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.project import NewPuzzle, Project

    schema = load_schema(bundled_schema_path())
    rows = parse_annotation_csv(ua_sample_csv(150), schema)
    with Project.create(path, schema, author="seed") as p:
        p.import_rows(rows, "seed")
        puzzles = [NewPuzzle(puzzle_record(f"test-{i:05d}")) for i in range(12)]
        set_id = p.add_puzzle_set("seed", {"seed": 1}, {"n": 12}, puzzles, "seed")
        p.jobs.submit("baseline", {"set": set_id}, "seed job")
    return path


@dataclass
class ProjectContext:
    seed: bytes
    scratch: Path


def _project_prepare(work: Path) -> ProjectContext:
    work.mkdir(parents=True, exist_ok=True)
    seed = make_seed_project(work / "seed.studio")
    return ProjectContext(seed.read_bytes(), work / "scratch")


def edited_project(seed: bytes, sql: str, scratch: Path) -> bytes:
    """The seed project with ``sql`` applied (constraints and triggers the SQL needs to get
    past are switched off for it), as one self-contained file."""
    scratch.mkdir(parents=True, exist_ok=True)
    path = scratch / "edited.studio"
    for f in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        f.unlink(missing_ok=True)
    path.write_bytes(seed)
    con = sqlite3.connect(path)
    try:
        con.executescript("PRAGMA ignore_check_constraints=ON;" + sql)
        con.commit()
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    return path.read_bytes()


def _project_make(ctx: ProjectContext, rng: random.Random) -> tuple[str, bytes]:
    roll = rng.random()
    if roll < 0.2:
        data = edited_project(ctx.seed, rng.choice(PROJECT_EDITS), ctx.scratch)
        if rng.random() < 0.5:
            return ".studio", data
        return ".studio", _mutate(data, rng, start=100)
    # mostly the data pages (past the 100-byte header); sometimes anywhere
    return ".studio", _mutate(ctx.seed, rng, start=100 if roll < 0.85 else 0)


def open_and_read_project(path: Path) -> None:
    """Open a project and make every read the studio's views make on it."""
    from studio.store.project import Project

    with Project.open(path) as p:
        p.glyphs()
        p.all_tags()
        p.tag_rows()
        p.tag_counts()
        p.tag_map()
        p.fonts()
        p.schema_history()
        for s in p.puzzle_sets():
            p.stored_puzzles(s.id)
            p.puzzle_summaries(s.id)
        p.puzzle_events()
        for job in p.jobs.jobs():
            p.jobs.logs(job.id)


def check_refusal_keeps_project(path: Path, before: str | None) -> None:
    """Open ``path``; when it is refused (StudioError), mark the error ``_project_changed``
    if the file's bytes changed or a ``.bak-format<N>`` appeared beside it."""
    from studio.core.errors import StudioError

    try:
        open_and_read_project(path)
    except StudioError as e:
        backups = list(path.parent.glob(f"{path.name}.bak-format*"))
        e._project_changed = sha256(path) != before or bool(backups)  # type: ignore[attr-defined]
        raise


def _project_run(ctx: ProjectContext, value: tuple[str, bytes], work: Path) -> None:
    path = work / "fuzzed.studio"
    for f in work.glob("fuzzed.studio*"):
        f.unlink()
    path.write_bytes(value[1])
    check_refusal_keeps_project(path, sha256(path))


def _copy_file(value: tuple[str, bytes], path: Path) -> None:
    _save(value, path)


def binary_loaders() -> list[Loader]:
    """The font, mesh and project-file loaders, for ``fuzz_kit.make_loaders``."""

    def prepared(seeds: Any) -> Any:
        return lambda work: seeds()

    return [
        Loader("font", prepared(font_seeds), _font_make, _font_run, _copy_file),
        Loader("mesh", prepared(mesh_seeds), _mesh_make, _mesh_run, _copy_file),
        Loader("project", _project_prepare, _project_make, _project_run, _copy_file),
    ]


__all__ = [
    "PROJECT_EDITS",
    "add_and_render_font",
    "binary_loaders",
    "check_refusal_keeps_project",
    "edited_project",
    "font_seeds",
    "load_and_use_mesh",
    "make_seed_project",
    "mesh_seeds",
    "open_and_read_project",
]
