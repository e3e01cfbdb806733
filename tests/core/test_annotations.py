from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.core.annotations import (
    TagRow,
    format_annotation_csv,
    parse_annotation_csv,
    read_annotation_folder,
    read_annotations,
    split_folder_name,
    write_annotation_folder,
)
from studio.core.errors import AnnotationImportError
from studio.core.inputs import codepoint_problem
from studio.core.schema import Schema


def test_ua_csv_parses_every_row(ua_schema: Schema, ua_csv: Path) -> None:
    rows = read_annotations(ua_csv, ua_schema)
    assert len(rows) == 1512
    assert format_annotation_csv(rows) == ua_csv.read_text()


def test_unknown_concepts_and_values_are_reported_with_lines(ua_schema: Schema) -> None:
    text = (
        "concept,value,codepoint,font\n"
        "aspect,tall,29,symbola\n"
        "sparkle,high,2A,symbola\n"
        "aspect,huge,2B,symbola\n"
        "aspect,wide,ZZ,symbola\n"
        "aspect,tall,29,symbola\n"
    )
    with pytest.raises(AnnotationImportError) as e:
        parse_annotation_csv(text, ua_schema, "x.csv")
    msgs = [str(p) for p in e.value.problems]
    assert msgs[0].startswith("line 3: unknown concept 'sparkle'")
    assert msgs[1].startswith("line 4: concept 'aspect' has no value 'huge'")
    assert msgs[2].startswith("line 5:") and "hexadecimal" in msgs[2]
    assert msgs[3] == "line 6: repeats line 2"
    assert "x.csv" in str(e.value) and "nothing was imported" in str(e.value)


def test_bad_header(ua_schema: Schema) -> None:
    with pytest.raises(AnnotationImportError, match="header"):
        parse_annotation_csv("a,b,c,d\n", ua_schema)


def test_folder_names(ua_schema: Schema) -> None:
    assert split_folder_name("stroke-dot-quantity-3", ua_schema) == ("stroke-dot-quantity", "3")
    assert split_folder_name("horns", ua_schema) == ("horns", "")
    assert split_folder_name("horns-none", ua_schema) == ("horns", "none")
    assert split_folder_name("shape-type-1-regular", ua_schema) == ("shape-type", "1-regular")
    assert split_folder_name("zzz-1", ua_schema) is None


def test_folder_layout_round_trip(tmp_path: Path, ua_schema: Schema, ua_csv: Path) -> None:
    rows = read_annotations(ua_csv, ua_schema)
    write_annotation_folder(rows, tmp_path, lambda key: b"\x89PNG fake bytes are fine here")
    again = read_annotation_folder(tmp_path, ua_schema)
    assert again == sorted(rows)
    # a presence concept's positive value is the bare concept folder, as in UA
    assert any((tmp_path / "Annotations" / "horns").iterdir())
    assert any((tmp_path / "Annotations" / "horns-none").iterdir())


def test_folder_with_unknown_concept_names_the_path(tmp_path: Path, ua_schema: Schema) -> None:
    (tmp_path / "Annotations" / "sparkle-1").mkdir(parents=True)
    (tmp_path / "Annotations" / "sparkle-1" / "0x41_symbola.png").write_bytes(b"")
    (tmp_path / "Annotations" / "aspect-tall").mkdir(parents=True)
    (tmp_path / "Annotations" / "aspect-tall" / "notes.txt").write_text("x")
    with pytest.raises(AnnotationImportError) as e:
        read_annotation_folder(tmp_path, ua_schema)
    wheres = {p.where for p in e.value.problems}
    assert wheres == {"Annotations/sparkle-1", "Annotations/aspect-tall/notes.txt"}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["aspect", "closure", "horns", "stroke-dot-quantity"]),
            # code points a tag may name (no controls, no surrogates: codepoint_problem)
            st.integers(0x21, 0x2FFFF).filter(lambda cp: codepoint_problem(cp) is None),
        ),
        max_size=30,
    )
)
def test_csv_round_trip_property(ua_schema: Schema, picks: list[tuple[str, int]]) -> None:
    rows = {TagRow(c, ua_schema.concept(c).value_ids[0], f"{cp:X}", "symbola") for c, cp in picks}
    text = format_annotation_csv(rows)
    assert parse_annotation_csv(text, ua_schema) == sorted(rows)


@pytest.mark.parametrize(
    ("concept", "value"),
    [("../../../escape_rel", "x"), ("shape", "../up"), ("..", ""), ("a\\b", "c"), ("nul\0", "v")],
)
def test_a_tag_that_is_no_plain_folder_name_is_refused_before_anything_is_written(
    tmp_path: Path, concept: str, value: str
) -> None:
    """Issue 25: a tag put into a lab database with psql (or a crafted project file) made the
    UA-folder export create folders outside its output."""
    from studio.core.annotations import TagRow, write_annotation_folder
    from studio.core.errors import StudioError
    from studio.core.keys import GlyphKey

    out = tmp_path / "deep" / "er" / "out"
    key = GlyphKey(0x25CB, "symbola")
    rows = [TagRow.of("closure", "circle", key), TagRow.of(concept, value, key)]
    with pytest.raises(StudioError, match="cannot name a folder of UA's layout, so nothing"):
        write_annotation_folder(rows, out, lambda k: b"png")
    assert list(tmp_path.rglob("*")) == []  # not a folder made, here or above
    write_annotation_folder(rows[:1], out, lambda k: b"png")  # a plain one still goes
    assert (out / "Annotations" / "closure-circle" / "0x25CB_symbola.png").read_bytes() == b"png"
