"""The suite renders with set-up's fonts only (issue 25: a machine with ImageMagick's fonts
failed 7 tests, the golden glyph cases among them)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from studio.glyphs.fonts import FONT_DIRS_ENV, FontCatalog, system_font_dirs
from tests.fontenv import package_font_files, setup_font_packages


def test_set_up_s_font_packages_are_read_from_the_set_up_script() -> None:
    packages = setup_font_packages()
    assert {"fonts-symbola", "fonts-noto-core", "fonts-dejavu-core"} <= set(packages)
    assert all(p.startswith("fonts-") for p in packages)


def test_a_font_the_machine_adds_is_not_seen_under_the_suite_s_font_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user font folder with one more font (as a desktop or ImageMagick brings): the
    studio's default scan sees it, the suite's does not."""
    chosen = os.environ.get(FONT_DIRS_ENV)
    if not package_font_files(setup_font_packages()):
        pytest.skip("dpkg cannot say which files set-up's font packages installed")
    assert chosen is not None, "tests/conftest.py sets the suite's font folder"
    home = tmp_path / "home"
    extra = home / ".fonts" / "ExtraFallback.ttf"
    extra.parent.mkdir(parents=True)
    shutil.copy(sorted(Path(chosen).iterdir())[0].resolve(), extra)
    monkeypatch.setenv("HOME", str(home))

    def scanned() -> set[Path]:
        catalog = FontCatalog.scan(dirs=system_font_dirs(), use_cache=False)
        return {Path(f.path) for f in (*catalog.fonts, *catalog.shadowed)}

    assert system_font_dirs() == [Path(chosen)]
    hermetic = scanned()
    assert extra not in hermetic and hermetic
    allowed = {p.resolve() for p in package_font_files(setup_font_packages())}
    assert {p.resolve() for p in hermetic} <= allowed  # nothing but set-up's fonts
    monkeypatch.delenv(FONT_DIRS_ENV)
    assert home / ".fonts" in system_font_dirs()  # what the studio does outside the suite
