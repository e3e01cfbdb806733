"""The application object: import with font substitution, undoable tagging and schema edits."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.app import (
    UNCOVERED_NO_FONT,
    UNCOVERED_PRIVATE,
    PuzzlesChanged,
    Studio,
    resolve_fonts,
)
from studio.core.annotations import format_annotation_csv
from studio.core.errors import AnnotationImportError, FontError
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.glyphs.fonts import FontCatalog
from studio.glyphs.render import RenderCache
from studio.store.project import Project, TagChange

K = GlyphKey(0x25CF, "symbola")


@pytest.fixture(scope="session")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> FontCatalog:
    return FontCatalog.scan(cache_dir=tmp_path_factory.mktemp("fonts"))


@pytest.fixture
def studio(tmp_path: Path, ua_schema: Schema, catalog: FontCatalog) -> Studio:
    s = Studio(
        Project.create(tmp_path / "p.studio", ua_schema),
        catalog=catalog,
        cache=RenderCache(tmp_path / "renders"),
        author="ann",
    )
    yield s
    s.close()


def test_ua_import_keeps_every_row_and_reports_fonts(studio: Studio, ua_csv: Path) -> None:
    if studio.catalog.get("symbola") is None:
        pytest.skip("fonts-symbola is not installed")
    report = studio.import_annotations(ua_csv)
    assert report.rows == report.new_tags == 1512
    assert format_annotation_csv(studio.project.tag_rows()) == ua_csv.read_text()
    # UA's fonts that are not installed are substituted; the key keeps the original font id
    subs = report.substitutions
    assert any(orig == "yi" for orig, _ in subs)
    yi = next(g for g in studio.project.glyphs() if g.key.font == "yi")
    assert yi.substituted and yi.render_font != "yi"
    # private-use code points (e.g. Sutton SignWriting's) are never substituted, only listed
    pua = [k for k, why in report.uncovered.items() if why == UNCOVERED_PRIVATE]
    assert pua and all(0xE000 <= k.codepoint <= 0xF8FF or k.codepoint >= 0xF0000 for k in pua)
    text = "\n".join(report.lines())
    assert "substitute" in text and str(pua[0]) in text
    rec = studio.project.glyph(pua[0])
    assert rec is not None and rec.status == "uncovered" and rec.reason == UNCOVERED_PRIVATE


def test_resolution_prefers_the_named_font(catalog: FontCatalog) -> None:
    if catalog.get("symbola") is None:
        pytest.skip("fonts-symbola is not installed")
    res = resolve_fonts(
        [K, GlyphKey(0x10FFFD, "symbola"), GlyphKey(0xE0001 + 0x300, "nofont")], catalog
    )
    assert res.render_font[K] == "symbola"
    assert res.uncovered[GlyphKey(0x10FFFD, "symbola")] == UNCOVERED_PRIVATE
    assert res.uncovered[GlyphKey(0xE0301, "nofont")] == UNCOVERED_NO_FONT


def test_bad_import_changes_nothing(studio: Studio, tmp_path: Path) -> None:
    studio.tag([K], "closure", "circle")
    before = studio.project.tag_rows()
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "concept,value,codepoint,font\naspect,tall,25A0,symbola\nclosure,oval,25A1,symbola\n"
    )
    with pytest.raises(AnnotationImportError, match="line 3"):
        studio.import_annotations(bad)
    assert studio.project.tag_rows() == before
    assert studio.project.glyph(GlyphKey(0x25A0, "symbola")) is None


def test_tag_undo_redo_labels(studio: Studio) -> None:
    studio.tag([K], "closure", "circle")
    assert studio.undo_stack.undo_label == "Tag 1 glyph closure = circle"
    studio.untag([K], "closure", "circle")
    assert studio.project.tags_of(K) == []
    studio.undo_stack.undo()
    [t] = studio.project.tags_of(K)
    assert t.author == "ann"
    studio.undo_stack.undo()
    assert studio.project.tags_of(K) == []
    studio.undo_stack.redo()
    assert len(studio.project.tags_of(K)) == 1


def test_schema_edit_with_tags_is_undoable(studio: Studio) -> None:
    studio.tag([K], "closure", "circle")
    studio.tag([K], "aspect", "square")
    s = studio.schema
    new = s.with_concept_removed("closure").with_concept_renamed("aspect", "ratio")
    studio.set_schema(
        new,
        [
            TagChange("remove_concept", "closure"),
            TagChange("rename_concept", "aspect", None, "ratio"),
        ],
        "Tidy",
    )
    assert {(t.concept, t.value) for t in studio.project.tags_of(K)} == {("ratio", "square")}
    studio.undo_stack.undo()
    assert studio.schema == s
    tags = studio.project.tags_of(K)
    assert {(t.concept, t.value, t.author) for t in tags} == {
        ("closure", "circle", "ann"),
        ("aspect", "square", "ann"),
    }
    assert studio.project.schema_version == 3  # edits are versions, undo included


def test_broken_font_file_is_named(studio: Studio, tmp_path: Path) -> None:
    bad = tmp_path / "broken.ttf"
    bad.write_bytes(b"\x00\x01\x00\x00" + b"garbage" * 10)
    with pytest.raises(FontError) as e:
        studio.add_font_file(bad)
    assert str(bad) in str(e.value)
    assert all(f.id != "broken" for f in studio.project.fonts())


def test_user_font_is_kept_inside_the_project(
    studio: Studio, tmp_path: Path, catalog: FontCatalog
) -> None:
    info = catalog.get("dejavusans")
    if info is None:
        pytest.skip("DejaVu Sans is not installed")
    copy = tmp_path / "MyFont.ttf"
    copy.write_bytes(info.path.read_bytes())
    font_id = studio.add_font_file(copy)
    assert [f.has_data for f in studio.project.fonts() if f.id == font_id] == [True]
    studio.add_glyphs([GlyphKey(0x41, font_id)])
    for _ in studio.render_all(workers=1):
        pass
    copy.unlink()  # the file is gone; the project still renders from its own copy
    g = studio.project.glyph(GlyphKey(0x41, font_id))
    assert g is not None and g.status == "ok"
    assert studio._font_path(font_id).exists()


def test_every_change_fires_its_typed_event(studio: Studio) -> None:
    got: list[tuple[str, object]] = []
    ev = studio.events
    ev.tags_changed.connect(lambda keys: got.append(("tags", keys)))
    ev.schema_changed.connect(lambda: got.append(("schema", None)))
    ev.glyphs_changed.connect(lambda: got.append(("glyphs", None)))
    ev.puzzle_sets_changed.connect(lambda ids: got.append(("sets", ids)))
    ev.puzzles_changed.connect(lambda change: got.append(("puzzles", change)))
    ev.baseline_flags_changed.connect(lambda set_id: got.append(("flags", set_id)))
    studio.tag([K], "closure", "circle")
    studio.undo_stack.undo()
    new = studio.schema.with_concept_renamed("aspect", "ratio")
    studio.set_schema(new, [TagChange("rename_concept", "aspect", None, "ratio")], "Rename")
    studio.add_glyphs([])
    studio.puzzle_sets_changed((4, 5))
    studio.puzzles_changed(4, ["test-00001"])
    studio.baseline_flags_changed(4)
    assert got == [
        ("tags", [K]),
        ("tags", [K]),
        ("schema", None),
        ("glyphs", None),
        ("sets", [4, 5]),
        ("puzzles", PuzzlesChanged(4, ("test-00001",))),
        ("flags", 4),
    ]


def test_studio_closes_as_a_context_manager_even_after_an_error(
    tmp_path: Path, ua_schema: Schema, catalog: FontCatalog
) -> None:
    project = Project.create(tmp_path / "p.studio", ua_schema)
    closed: list[bool] = []
    close = project.close
    project.close = lambda: (closed.append(True), close())  # type: ignore[method-assign]
    with pytest.raises(RuntimeError), Studio(project, catalog=catalog) as studio:
        assert studio.project is project
        raise RuntimeError("boom")
    assert closed == [True]


def test_other_clients_changes_reach_the_views_as_the_studio_s_events(tmp_path: Path) -> None:
    """Issue 27: live changes and the lab's writes go through the studio, which tells every
    view; the window no longer emits the studio's events itself."""
    from studio.core.keys import GlyphKey
    from studio.core.schema import bundled_schema_path, load_schema

    studio = Studio(Project.create(tmp_path / "p.studio", load_schema(bundled_schema_path())))
    heard: list[tuple[str, object]] = []
    ev = studio.events
    ev.tags_changed.connect(lambda keys: heard.append(("tags", list(keys))))
    ev.glyphs_changed.connect(lambda: heard.append(("glyphs", None)))
    ev.changed_elsewhere.connect(lambda tables: heard.append(("elsewhere", set(tables))))
    key = GlyphKey(0x25CB, "symbola")
    try:
        studio.external_change({"tags"}, [key])
        assert heard == [("tags", [key]), ("elsewhere", {"tags"})]
        heard.clear()
        studio.external_change({"annotator_tags"}, [])  # glyphs this client does not show
        assert heard == [("glyphs", None), ("elsewhere", {"annotator_tags"})]
        heard.clear()
        studio.external_change({"*"})  # reconnected: anything may have changed
        assert heard == [("glyphs", None), ("elsewhere", {"*"})]
        heard.clear()
        studio.external_change({"puzzles"})
        assert heard == [("elsewhere", {"puzzles"})]
        heard.clear()
        studio.add_glyphs([key])
        heard.clear()
        studio.settle(key, [("closure", "circle")], "clearly closed")  # a file: a lab of one
        assert heard == [("tags", [key])]
        assert ("closure", "circle") in {(t.concept, t.value) for t in studio.project.tags_of(key)}
    finally:
        studio.close()


def test_the_undo_stack_speaks_through_the_studio_s_events(tmp_path: Path) -> None:
    """Issue 27: a view hears of a push, an undo, a redo or a clear as of any other change."""
    from studio.core.schema import bundled_schema_path, load_schema

    studio = Studio(Project.create(tmp_path / "p.studio", load_schema(bundled_schema_path())))
    heard: list[str | None] = []
    studio.events.undo_changed.connect(lambda: heard.append(studio.undo_stack.undo_label))
    key = GlyphKey(0x25CB, "symbola")
    try:
        studio.add_glyphs([key])
        studio.tag([key], "closure", "circle")
        studio.undo_stack.undo()
        studio.undo_stack.redo()
        studio.undo_stack.clear()
        assert len(heard) == 4 and heard[0] == heard[2] and heard[0] and heard[1] != heard[0]
    finally:
        studio.close()
