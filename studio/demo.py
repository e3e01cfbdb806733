"""The demo project: UA's public annotations plus all of Symbola, rendered, ready to tag.

Built on first run from the copy shipped in ``resources/ua`` (users have no ``../shared``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from studio.core.keys import GlyphKey
from studio.glyphs.unicode import block
from studio.resources import ua_data_dir

if TYPE_CHECKING:
    from studio.store.project import Project

DEMO_NAME = "ua-demo.studio"
DEMO_FONT = "symbola"
#: The block the demo opens on: real Symbola glyphs (circles, squares, triangles) of which UA
#: tagged more than half, rather than the first glyphs in code point order, which include
#: private-use placeholders of fonts nobody has installed.
DEMO_START_BLOCK = "Geometric Shapes"
#: Project meta key: the Unicode block the annotator shows when the project is opened.
START_BLOCK_META = "start_block"


def demo_path() -> Path:
    return Path(platformdirs.user_data_dir("analogy-studio")) / DEMO_NAME


def start_block(project: Project) -> str | None:
    """The block a project asks to be opened on (the demo's, also for a demo built before the
    project recorded it), or None."""
    name = project.meta(START_BLOCK_META)
    if name:
        return name
    if project.is_database:
        return None
    return DEMO_START_BLOCK if project.path.name == DEMO_NAME else None


def build_demo(
    path: Path | None = None,
    *,
    overwrite: bool = False,
    author: str = "demo",
    blocks: Sequence[str] | None = None,
) -> Iterator[tuple[str, int, int]]:
    """Create the demo project; yields (stage, done, total). Stop iterating to cancel: the file
    is built under a temporary name and only renamed into place when complete.

    ``blocks`` limits the Symbola glyphs added to those Unicode blocks (all of them by default).
    """
    from studio.app import Studio
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.project import Project

    path = Path(path) if path is not None else demo_path()
    if path.exists() and not overwrite:
        yield ("ready", 1, 1)
        return
    tmp = path.with_name(f".{path.name}.building")
    yield ("creating project", 0, 4)
    project = Project.create(tmp, load_schema(bundled_schema_path()), author=author, overwrite=True)
    try:
        project.set_meta(START_BLOCK_META, DEMO_START_BLOCK)
        studio = Studio(project, author=author)
        yield ("importing UA annotations", 1, 4)
        studio.import_annotations(ua_data_dir() / "annotations.csv")
        yield ("adding Symbola glyphs", 2, 4)
        if studio.catalog.get(DEMO_FONT) is not None:
            wanted = {b.lower() for b in blocks} if blocks is not None else None
            studio.add_glyphs(
                GlyphKey(cp, DEMO_FONT)
                for cp in sorted(studio.catalog.codepoints(DEMO_FONT))
                if wanted is None or block(cp).lower() in wanted
            )
        yield ("rendering glyphs", 3, 4)
        for done, total in studio.render_all():
            yield ("rendering glyphs", done, total)
    finally:
        studio.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    # Project.close folds the log into the file; should a log survive, it moves with the file
    for suffix in ("-wal", "-shm"):
        side, target = Path(f"{tmp}{suffix}"), Path(f"{path}{suffix}")
        if side.exists():
            side.replace(target)
        else:
            target.unlink(missing_ok=True)  # a stale log of the old demo must not replay
    tmp.replace(path)
    yield ("ready", 1, 1)
