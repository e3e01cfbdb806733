"""A benchmark must not change with the fonts a machine happens to have.

A project keeps a copy of every font file it renders with and ``split.json`` names their hashes,
so the same project, seed and command give the same split byte for byte on a machine where the
fonts it used are gone and others were installed; a project that keeps no copy (made before
copies were kept) and meets a different file under a font's id refuses, naming the font and the
glyphs, unless a font change is allowed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from fontTools.ttLib import TTFont

from studio.app import Studio
from studio.core.errors import FontChangedError
from studio.generate.params import SplitParams
from studio.glyphs.fonts import FontCatalog
from studio.glyphs.render import RenderCache
from studio.splits import generate_to_dir, vet_dir
from studio.store.project import Project

PARAMS = SplitParams(n=30, seed=3, sampling="balanced", holdout="none")


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _studio(path: Path, catalog: FontCatalog, cache: Path) -> Studio:
    return Studio(Project.open(path), catalog=catalog, cache=RenderCache(cache), author="t")


def _changed_copy(src: Path, dst: Path) -> Path:
    """The same family under the same id, but another file (a font package upgraded)."""
    font = TTFont(src)
    font["head"].fontRevision = font["head"].fontRevision + 1.0
    glyph = font["glyf"]["A"]  # a visibly different glyph: the upgrade changed a picture
    if glyph.numberOfContours > 0:
        glyph.coordinates.translate((40, 0))
    font.save(dst)
    return dst


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, ua_csv: Path, ua_schema) -> dict:
    """A UA project made on this machine (its installed fonts) and one split from it."""
    root = tmp_path_factory.mktemp("fontrepro")
    catalog = FontCatalog.scan(cache_dir=root / "coverage")
    if catalog.get("symbola") is None or catalog.get("dejavusans") is None:
        pytest.skip("set-up installs fonts-symbola and fonts-dejavu-core")
    path = root / "ua.studio"
    # the session's render cache: renders other tests made of the same font files are reused
    with Studio(Project.create(path, ua_schema), catalog=catalog) as studio:
        studio.import_annotations(ua_csv)
        for _ in studio.render_all(workers=1):
            pass
        generate_to_dir(studio, PARAMS, root / "split1")
        dejavu = catalog.get("dejavusans")
    assert dejavu is not None
    return {"root": root, "path": path, "split": root / "split1", "dejavu": dejavu.path}


def test_split_json_names_the_font_files(made: dict) -> None:
    info = json.loads((made["split"] / "split.json").read_text())
    fonts = info["fonts"]
    assert "symbola" in fonts and all(len(sha.split("#")[0]) == 64 for sha in fonts.values())
    con = sqlite3.connect(made["path"])
    kept = dict(con.execute("SELECT id, sha256 FROM fonts WHERE data IS NOT NULL"))
    con.close()
    assert {k: kept[k] for k in fonts} == fonts  # every font the split used is kept


def test_a_copied_project_remakes_its_split_on_a_machine_with_other_fonts(
    made: dict, tmp_path: Path
) -> None:
    """Every font the project used removed, one it never saw added: the same bytes."""
    copy = tmp_path / "copied.studio"
    shutil.copy(made["path"], copy)
    fonts = tmp_path / "fonts"
    fonts.mkdir()
    _changed_copy(made["dejavu"], fonts / "DejaVuSans.ttf")  # the "same" font, another file
    shutil.copy(Path(made["dejavu"]).resolve().with_name("DejaVuSansMono.ttf"), fonts / "Added.ttf")
    catalog = FontCatalog.scan(dirs=[fonts], use_cache=False)
    assert catalog.get("symbola") is None
    with _studio(copy, catalog, tmp_path / "fresh-cache") as studio:
        generate_to_dir(studio, PARAMS, tmp_path / "split2")
        assert vet_dir(tmp_path / "split2", studio)
    assert _digests(tmp_path / "split2") == _digests(made["split"])


def test_a_project_without_copies_refuses_a_changed_font_and_names_the_glyphs(
    made: dict, tmp_path: Path
) -> None:
    old = tmp_path / "old.studio"
    shutil.copy(made["path"], old)
    fonts = tmp_path / "fonts"
    fonts.mkdir()
    installed = fonts / "DejaVuSans.ttf"
    shutil.copy(made["dejavu"], installed)
    con = sqlite3.connect(old)
    con.execute("UPDATE fonts SET data = NULL")  # as projects were made before copies were kept
    con.execute("UPDATE fonts SET path = ? WHERE id = 'dejavusans'", (str(installed),))
    con.commit()
    con.close()
    before = hashlib.sha256(old.read_bytes()).hexdigest()
    _changed_copy(made["dejavu"], installed)  # the package was upgraded in place
    for name in ("ancient-scripts", "noto", "wqy"):  # the others still installed
        src = Path("/usr/share/fonts/truetype") / name
        if src.is_dir():
            shutil.copytree(src, fonts / name)
    catalog = FontCatalog.scan(dirs=[fonts], use_cache=False)
    with _studio(old, catalog, tmp_path / "cache") as studio:
        with pytest.raises(FontChangedError) as err:
            generate_to_dir(studio, PARAMS, tmp_path / "refused")
        assert err.value.font_id == "dejavusans"
        message = str(err.value)
        assert "dejavusans" in message and "--allow-font-change" in message
        assert "@quivira" in message  # the UA glyphs that DejaVu Sans renders are named
        assert not (tmp_path / "refused").exists()
        studio.allow_font_change = True
        generate_to_dir(studio, PARAMS, tmp_path / "allowed")
    assert hashlib.sha256(old.read_bytes()).hexdigest() == before


def test_vetting_against_a_project_whose_fonts_changed_refuses(made: dict, tmp_path: Path) -> None:
    other = tmp_path / "other.studio"
    shutil.copy(made["path"], other)
    con = sqlite3.connect(other)
    con.execute("UPDATE fonts SET sha256 = 'f' || substr(sha256, 2) WHERE id = 'symbola'")
    con.commit()
    con.close()
    catalog = FontCatalog.scan(dirs=[tmp_path], use_cache=False)
    with _studio(other, catalog, tmp_path / "cache") as studio:
        with pytest.raises(FontChangedError, match="symbola"):
            vet_dir(made["split"], studio)
        studio.allow_font_change = True
        assert vet_dir(made["split"], studio)
