"""Reading fonts, the font catalog and its disk cache, shadowing, and font substitution."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from studio.core.errors import FontError
from studio.glyphs import fonts
from studio.glyphs.fonts import FontCatalog, font_id_for, read_font, system_font_dirs

from .conftest import BAMUM_BOLD, DEJAVU, WQY, make_font, need

# ---------------------------------------------------------------- reading one font


def test_read_symbola(symbola: Path) -> None:
    info, cps = read_font(symbola, source="system")
    assert info.id == "symbola"
    assert (info.family, info.style) == ("Symbola", "Regular")
    assert info.path == symbola and info.index == 0 and info.source == "system"
    assert info.sha256 == hashlib.sha256(symbola.read_bytes()).hexdigest()
    assert info.num_codepoints == len(cps) > 9000
    assert 0x25CC in cps and 0x0378 not in cps


def test_font_ids_from_names() -> None:
    assert font_id_for("Symbola", "Regular") == "symbola"
    assert font_id_for("Noto Sans Bamum", "Bold") == "notosansbamumbold"
    assert font_id_for("DejaVu Sans", "Book") == "dejavusans"
    assert font_id_for("Alfios", "Bold Italic") == "alfiosbolditalic"
    assert font_id_for("Noto Sans Yi", "") == "notosansyi"


def test_style_goes_into_the_id() -> None:
    info, _ = read_font(need(BAMUM_BOLD))
    assert info.id == "notosansbamumbold"


def test_faces_of_a_collection_have_their_own_sha() -> None:
    first, _ = read_font(need(WQY), 0)
    second, cps = read_font(WQY, 1)
    digest = hashlib.sha256(WQY.read_bytes()).hexdigest()
    assert (first.sha256, second.sha256) == (f"{digest}#0", f"{digest}#1")
    assert first.id != second.id and len(cps) > 20_000
    with pytest.raises(FontError, match="no face 2"):
        read_font(WQY, 2)


def test_names_come_from_the_name_table_not_the_file_name(tmp_path: Path) -> None:
    path = make_font(tmp_path / "whatever-file-name.ttf", "Test Sans", "Bold", [0x41])
    info, cps = read_font(path)
    assert info.id == "testsansbold" and cps == frozenset({0x41})


# ---------------------------------------------------------------- broken files


def _assert_names_file(err: FontError, path: Path, *words: str) -> None:
    assert err.path == str(path)
    assert str(path) in str(err)
    for word in words:
        assert word in err.problem


def test_truncated_font_is_refused_naming_the_file(symbola: Path, tmp_path: Path) -> None:
    data = symbola.read_bytes()
    broken = tmp_path / "Truncated.ttf"
    broken.write_bytes(data[: len(data) * 2 // 5])
    with pytest.raises(FontError) as e:
        read_font(broken)
    _assert_names_file(e.value, broken, "truncated")


def test_text_file_renamed_ttf_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "notes.ttf"
    fake.write_text("These are my notes, not a font.\n" * 10)
    with pytest.raises(FontError) as e:
        read_font(fake)
    _assert_names_file(e.value, fake, "not a font")


def test_empty_and_missing_files_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.otf"
    empty.write_bytes(b"")
    with pytest.raises(FontError) as e:
        read_font(empty)
    _assert_names_file(e.value, empty, "empty")
    with pytest.raises(FontError) as e:
        read_font(tmp_path / "absent.ttf")
    _assert_names_file(e.value, tmp_path / "absent.ttf", "cannot be read")


def test_font_without_cmap_is_refused(tmp_path: Path) -> None:
    from fontTools.ttLib import TTFont

    path = make_font(tmp_path / "x.ttf", "No Map", cps=[0x41])
    tt = TTFont(str(path))
    del tt["cmap"]
    tt.save(str(path))
    with pytest.raises(FontError) as e:
        read_font(path)
    _assert_names_file(e.value, path, "cmap")


def test_system_font_dirs_exist() -> None:
    for d in system_font_dirs():
        assert d.is_dir()


# ---------------------------------------------------------------- the catalog


@pytest.fixture
def font_dir(tmp_path: Path) -> Path:
    d = tmp_path / "fonts"
    make_font(d / "a" / "Alpha.ttf", "Alpha", cps=[0x41, 0x42, 0x43])
    make_font(d / "a" / "Beta.ttf", "Beta", cps=[0x41, 0x42, 0x43, 0x44])
    make_font(d / "b" / "Gamma-Bold.ttf", "Gamma", "Bold", cps=[0x58, 0xE000, 0x25CC])
    (d / "b" / "broken.ttf").write_text("not a font")
    (d / "b" / "readme.txt").write_text("ignored: not a font suffix")
    return d


def test_scan_lists_fonts_and_errors(font_dir: Path, tmp_path: Path) -> None:
    seen: list[int] = []
    cat = FontCatalog.scan(
        [font_dir], cache_dir=tmp_path / "cache", progress=lambda done, total, p: seen.append(done)
    )
    assert [f.id for f in cat.fonts] == ["alpha", "beta", "gammabold"]
    assert seen == [1, 2, 3, 4]
    assert [Path(e.path).name for e in cat.errors] == ["broken.ttf"]
    assert cat.get("beta").num_codepoints == 4 and cat.get("nosuch") is None
    assert cat.codepoints("alpha") == frozenset({0x41, 0x42, 0x43})
    assert cat.covers("gammabold", 0x25CC) and not cat.covers("alpha", 0x44)
    assert not cat.covers("nosuch", 0x41)
    assert [f.id for f in cat.covering(0x41)] == ["alpha", "beta"]
    assert cat.covering(0x10FFFD) == []
    assert cat.coverage_by_block("gammabold") == [
        ("Basic Latin", 1),
        ("Geometric Shapes", 1),
        ("Private Use Area", 1),
    ]
    with pytest.raises(KeyError, match="nosuch"):
        cat.codepoints("nosuch")


def test_second_scan_is_served_from_the_cache(
    font_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []
    real = fonts._read_faces

    def counting(path: Path, source: str) -> list[tuple[fonts.FontInfo, object]]:
        calls.append(path)
        return real(path, source)

    monkeypatch.setattr(fonts, "_read_faces", counting)
    first = FontCatalog.scan([font_dir], cache_dir=tmp_path / "cache")
    assert len(calls) == 4  # three fonts and the broken file
    calls.clear()
    second = FontCatalog.scan([font_dir], cache_dir=tmp_path / "cache")
    assert calls == []
    assert second.fonts == first.fonts
    assert [str(e) for e in second.errors] == [str(e) for e in first.errors]
    assert second.codepoints("beta") == first.codepoints("beta")

    # A changed file is read again, and only that one.
    alpha = font_dir / "a" / "Alpha.ttf"
    make_font(alpha, "Alpha", cps=[0x41])
    os.utime(alpha, ns=(alpha.stat().st_atime_ns, alpha.stat().st_mtime_ns + 10**9))
    third = FontCatalog.scan([font_dir], cache_dir=tmp_path / "cache")
    assert calls == [alpha]
    assert third.codepoints("alpha") == frozenset({0x41})


def test_corrupt_cache_entries_are_read_again(font_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    FontCatalog.scan([font_dir], cache_dir=cache)
    for entry in cache.glob("*.json"):
        entry.write_text("{ not json")
    cat = FontCatalog.scan([font_dir], cache_dir=cache)
    assert [f.id for f in cat.fonts] == ["alpha", "beta", "gammabold"]


def test_user_files_shadow_system_files(font_dir: Path, tmp_path: Path) -> None:
    user = make_font(tmp_path / "mine" / "AlphaNew.ttf", "Alpha", cps=[0x41, 0x5A])
    cat = FontCatalog.scan([font_dir], extra_files=[user], cache_dir=tmp_path / "cache")
    assert cat.get("alpha").path == user and cat.get("alpha").source == "user"
    assert [(s.id, s.source) for s in cat.shadowed] == [("alpha", "system")]
    assert cat.codepoints("alpha") == frozenset({0x41, 0x5A})


def test_path_order_decides_between_system_files(tmp_path: Path) -> None:
    d = tmp_path / "fonts"
    make_font(d / "z" / "Same.ttf", "Same", cps=[0x41])
    make_font(d / "a" / "Same.ttf", "Same", cps=[0x42])
    cat = FontCatalog.scan([d], cache_dir=tmp_path / "cache")
    assert cat.get("same").path == d / "a" / "Same.ttf"
    assert [s.path for s in cat.shadowed] == [d / "z" / "Same.ttf"]


def test_add_file(font_dir: Path, tmp_path: Path) -> None:
    cat = FontCatalog.scan([font_dir], cache_dir=tmp_path / "cache")
    project_font = make_font(tmp_path / "p" / "Beta.ttf", "Beta", cps=[0x263A])
    info = cat.add_file(project_font, source="project")
    assert info.id == "beta" and cat.get("beta") == info
    assert cat.covering(0x263A) == [info]
    assert [f.id for f in cat.covering(0x44)] == []  # the system Beta is shadowed now
    bad = tmp_path / "bad.ttf"
    bad.write_bytes(b"\x00\x01\x00\x00 rubbish")
    before = cat.fonts
    with pytest.raises(FontError) as e:
        cat.add_file(bad)
    assert e.value.path == str(bad)
    assert cat.fonts == before


def test_symlinked_file_counts_once(font_dir: Path, tmp_path: Path) -> None:
    (font_dir / "b" / "AlphaLink.ttf").symlink_to(font_dir / "a" / "Alpha.ttf")
    cat = FontCatalog.scan([font_dir], cache_dir=tmp_path / "cache")
    assert cat.shadowed == []


def test_scan_of_system_fonts_is_cached(tmp_path: Path) -> None:
    need(DEJAVU)
    cat = FontCatalog.scan(cache_dir=tmp_path / "cache")
    assert cat.get("dejavusans") is not None
    again = FontCatalog.scan(cache_dir=tmp_path / "cache")
    assert again.fonts == cat.fonts


# ---------------------------------------------------------------- substitution


def test_substitution_ranks_fonts_by_coverage_then_id(font_dir: Path, tmp_path: Path) -> None:
    make_font(font_dir / "a" / "Aardvark.ttf", "Aardvark", cps=[0x41, 0x42, 0x43, 0x44])
    cat = FontCatalog.scan([font_dir], cache_dir=tmp_path / "cache")
    subs = cat.substitute("someoldfont", [0x41, 0x42, 0x44, 0x58, 0x0378])
    # aardvark and beta both cover A, B, D (3 of the request): the tie goes to the smaller id.
    assert subs == {
        0x41: "aardvark",
        0x42: "aardvark",
        0x44: "aardvark",
        0x58: "gammabold",
        0x0378: None,
    }


def test_substitution_prefers_the_font_covering_more(font_dir: Path, tmp_path: Path) -> None:
    cat = FontCatalog.scan([font_dir], cache_dir=tmp_path / "cache")
    # alpha covers A, B; beta covers A, B, D: beta renders all three, not alpha for A and B.
    assert cat.substitute("gone", [0x41, 0x42, 0x44]) == {0x41: "beta", 0x42: "beta", 0x44: "beta"}


def test_private_use_is_never_substituted(font_dir: Path, tmp_path: Path) -> None:
    cat = FontCatalog.scan([font_dir], cache_dir=tmp_path / "cache")
    assert cat.covering(0xE000)  # an installed font has something at U+E000 ...
    subs = cat.substitute("symbolfont", [0xE000, 0xF0001, 0x41])
    assert subs[0xE000] is None and subs[0xF0001] is None  # ... but it means something else
    assert subs[0x41] == "alpha"
    # The font itself, when installed, renders its own private-use glyphs.
    assert cat.substitute("gammabold", [0xE000, 0x41]) == {0xE000: "gammabold", 0x41: "alpha"}


def test_unreadable_cache_dir_costs_speed_only(font_dir: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("x")
    cat = FontCatalog.scan([font_dir], cache_dir=blocker)
    assert len(cat) == 3


def test_copy_of_a_real_font_gets_the_same_id(symbola: Path, tmp_path: Path) -> None:
    copy = tmp_path / "renamed.ttf"
    shutil.copy(symbola, copy)
    cat = FontCatalog.scan([tmp_path], cache_dir=tmp_path / "cache")
    assert [f.id for f in cat.fonts] == ["symbola"]
