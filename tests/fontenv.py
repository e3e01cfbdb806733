"""A font environment of exactly the fonts set-up installs, for the suite (issue 25).

The studio renders with every font under the system's font folders, so a machine with more
fonts (ImageMagick brings fonts-droid-fallback, fonts-noto-mono, fonts-urw-base35) drew other
glyphs and 7 tests failed. The suite renders only with the files of the ``fonts-*`` packages
that ``scripts/setup.sh`` installs: a folder of links to them, named to the studio by
``ANALOGY_STUDIO_FONT_DIRS`` (:func:`studio.glyphs.fonts.system_font_dirs`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from studio.glyphs.fonts import FONT_DIRS_ENV, FONT_SUFFIXES

SETUP = Path(__file__).resolve().parents[1] / "scripts" / "setup.sh"


def setup_font_packages() -> list[str]:
    """The ``fonts-*`` Debian packages set-up installs (read from scripts/setup.sh)."""
    text = SETUP.read_text()
    start = text.index("DEB_PACKAGES=(")
    listed = text[start : text.index(")", start)]
    lines = [line.split("#", 1)[0] for line in listed.splitlines()]
    return sorted({p for line in lines for p in re.findall(r"\bfonts-[a-z0-9.+-]+", line)})


def package_font_files(packages: list[str]) -> list[Path]:
    """The font files those packages installed, as dpkg lists them; [] without dpkg."""
    if shutil.which("dpkg-query") is None:
        return []
    done = subprocess.run(
        ["dpkg-query", "-L", *packages], capture_output=True, text=True, check=False
    )
    files = [Path(line) for line in done.stdout.splitlines()]
    return sorted(p for p in files if p.name.lower().endswith(FONT_SUFFIXES) and p.is_file())


def hermetic_font_dir(base: Path) -> Path | None:
    """A folder under ``base`` linking to every font file of set-up's packages, set as the
    studio's only font folder in this process and its children; None (the system's folders
    stay) where dpkg cannot say which files those are."""
    files = package_font_files(setup_font_packages())
    if not files:
        return None
    folder = base / "fonts"
    folder.mkdir(parents=True, exist_ok=True)
    for f in files:
        link = folder / "__".join(f.parts[1:])
        if not link.exists():
            link.symlink_to(f)
    os.environ[FONT_DIRS_ENV] = str(folder)
    return folder
