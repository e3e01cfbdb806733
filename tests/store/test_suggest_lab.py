"""The suggestion queue on a lab database deals from the annotator's assignment (issue 30)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from studio.app import Studio
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.store.project import Project
from studio.suggest.queue import dealt_from
from tests.pgserver import PgServer

KEYS = [GlyphKey(cp, "symbola") for cp in range(0x25A0, 0x25B0)]


@pytest.fixture
def lab_url(pg_server: PgServer, ua_schema: Schema) -> Iterator[str]:
    """16 glyphs dealt between ann and bea with a quarter in both assignments (overlap)."""
    url = pg_server.fresh_database("suggest")
    project = Project.create(url, ua_schema)
    with Studio(project, author="setup") as studio:
        studio.add_glyphs(KEYS)
        project.add_person("ann", "annotator")
        project.add_person("bea", "annotator")
        project.add_person("cy", "curator")
        project.assign(KEYS, ["ann", "bea"], overlap=0.25, per_overlap_glyph=2, seed=1)
    yield url
    pg_server.drop_database(url.rsplit("/", 1)[1])


def as_user(url: str, name: str) -> str:
    return url.replace("//postgres@", f"//{name}@")


def test_each_annotator_is_dealt_their_own_glyphs(lab_url: str, tmp_path) -> None:
    dealt = {}
    for name in ("ann", "bea"):
        with Studio(Project.open(as_user(lab_url, name)), author=name) as studio:
            dealt[name] = dealt_from(studio)
            assigned = {k for k, _ in studio.project.assigned()}
            assert dealt[name] == assigned and dealt[name]
            # a glyph marked done is not dealt again
            first = sorted(assigned)[0]
            studio.project.mark_done([first], name)
            got = dealt_from(studio)
            assert got is not None and first not in got
    both = dealt["ann"] & dealt["bea"]
    assert both and both != dealt["ann"]  # only the overlap glyphs are shown to both
    # the curator has no assignment: any glyph; a project file: any glyph
    with Studio(Project.open(as_user(lab_url, "cy")), author="cy") as studio:
        assert dealt_from(studio) is None
    from studio.core.schema import bundled_schema_path, load_schema

    with Studio(Project.create(tmp_path / "f.studio", load_schema(bundled_schema_path()))) as s:
        assert dealt_from(s) is None
