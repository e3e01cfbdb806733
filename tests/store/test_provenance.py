"""Provenance of tags (issue 30): a tag accepted from a suggestion says so in the store (each
person's own tag and the consensus), through undo and redo, in the CSV export and back in an
import, and in a copy to a lab database; the store refuses any other source, on PostgreSQL
too (an annotator writing with psql); agreement can be measured on either kind alone."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from studio.app import Studio
from studio.cli import main
from studio.core.agreement import ratings_of_source
from studio.core.annotations import TagRow, format_annotation_csv, parse_annotation_csv
from studio.core.errors import AnnotationImportError, StudioError
from studio.core.keys import GlyphKey
from studio.core.schema import Schema
from studio.store import lab
from studio.store.copy import copy_project
from studio.store.project import Project
from tests.pgserver import PgServer

CIRCLE = GlyphKey(0x25CB, "symbola")  # ○
DOT = GlyphKey(0x25CF, "symbola")  # ●
SQUARE = GlyphKey(0x25A1, "symbola")  # □


def _state(project: Project) -> dict[str, Any]:
    """Every row of both tag tables, ids aside: what an undo must give back exactly."""
    with project._engine.connect() as conn:
        return {
            table: sorted(
                tuple(r)
                for r in conn.execute(
                    text(f"SELECT glyph_id, concept, value, {who}, created_at, source FROM {table}")
                )
            )
            for table, who in (("annotator_tags", "annotator"), ("tags", "author"))
        }


def _sources(project: Project) -> dict[tuple[GlyphKey, str, str], str]:
    return {(t.key, t.concept, t.value): t.source for t in project.all_tags()}


def test_a_suggested_tag_survives_undo_and_redo_and_its_undo_restores_exactly(
    project_location: str, ua_schema: Schema
) -> None:
    with Studio(Project.create(project_location, ua_schema), author="me") as studio:
        project = studio.project
        # another person's tag (by hand) that the suggestion will agree with
        project.add_glyphs([(DOT, "symbola", "ok", None)])
        with project._tx() as conn:
            gid = project._glyph_ids(conn, [DOT])[DOT]
            lab.add_own_tags(conn, "other", [gid], "closed", "full", "2000-01-01T00:00:00+00:00")
        me = project.author_for("me")
        before = _state(project)
        assert studio.tag([CIRCLE, DOT], "closed", "full", source="suggestion") == 2
        assert studio.undo_stack.undo_label.endswith("(suggested)")
        own = {(t.key, t.annotator): t for k in (CIRCLE, DOT) for t in project.own_tags_of(k)}
        assert set(own) == {(CIRCLE, me), (DOT, me), (DOT, "other")}
        assert {k: t.source for k, t in own.items()} == {
            (CIRCLE, me): "suggestion",
            (DOT, me): "suggestion",
            (DOT, "other"): "hand",
        }
        sourced = _state(project)["annotator_tags"]
        assert sorted(r[5] for r in sourced) == ["hand", "suggestion", "suggestion"]
        # the consensus: from a suggestion when any person's tag of it was
        assert _sources(project) == {
            (CIRCLE, "closed", "full"): "suggestion",
            (DOT, "closed", "full"): "suggestion",
        }
        after = _state(project)
        studio.undo_stack.undo()
        assert _state(project) == before  # the other person's tag is untouched, 'hand' again
        studio.undo_stack.redo()
        assert _sources(project) == {
            (CIRCLE, "closed", "full"): "suggestion",
            (DOT, "closed", "full"): "suggestion",
        }
        redone = _state(project)
        assert [r[:4] + r[5:] for r in redone["tags"]] == [r[:4] + r[5:] for r in after["tags"]]
        # removing and undoing the removal puts the tags back with their source
        studio.untag([CIRCLE, DOT], "closed", "full")
        # a file's one user removes the tag outright; a lab's login removes its own
        left = {(DOT, "closed", "full"): "hand"} if project.is_database else {}
        assert _sources(project) == left
        studio.undo_stack.undo()
        assert _state(project) == redone
        # a source the store does not know is refused before anything is written
        with pytest.raises(StudioError, match="'robot' is not one of hand, suggestion"):
            studio.tag([SQUARE], "closed", "empty", source="robot")
        with pytest.raises(StudioError, match="'robot'"):
            project.add_tags([SQUARE], "closed", "empty", "me", "robot")
        assert _state(project) == redone


def test_a_tag_the_author_has_keeps_its_source(tmp_path: Path, ua_schema: Schema) -> None:
    with Studio(Project.create(tmp_path / "p.studio", ua_schema), author="me") as studio:
        studio.tag([DOT], "closed", "full")
        before = _state(studio.project)
        assert studio.tag([DOT], "closed", "full", source="suggestion") == 0
        assert _state(studio.project) == before
        studio.undo_stack.undo()
        assert _state(studio.project) == before


def test_the_store_refuses_any_other_source(tmp_path: Path, ua_schema: Schema) -> None:
    path = tmp_path / "p.studio"
    with Project.create(path, ua_schema) as project:
        project.add_tags([DOT], "closed", "full", "me")
    con = sqlite3.connect(path)
    try:
        for sql in (
            "INSERT INTO annotator_tags (glyph_id, concept, value, annotator, source)"
            " VALUES (1, 'closed', 'empty', 'me', 'robot')",
            "UPDATE annotator_tags SET source = 'robot'",
            "INSERT INTO tags (glyph_id, concept, value, source)"
            " VALUES (1, 'closed', 'empty', 'robot')",
            "UPDATE tags SET source = ''",
        ):
            with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
                con.execute(sql)
        assert con.execute("SELECT source FROM tags").fetchall() == [("hand",)]
    finally:
        con.close()


def test_an_annotator_with_psql_cannot_write_another_source(
    pg_server: PgServer, ua_schema: Schema
) -> None:
    """The CHECK is the server's: an annotator's own INSERT with 'robot' is refused."""
    url = pg_server.fresh_database("provenance")
    with Project.create(url, ua_schema) as project:
        project.add_person("ann", "annotator", password="pw-of-ann")
        project.add_tags([DOT], "closed", "full", "owner")
    ann = create_engine(url.replace("//postgres@", "//ann:pw-of-ann@"))
    try:
        with pytest.raises(DBAPIError) as info, ann.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO annotator_tags (glyph_id, concept, value, annotator, source)"
                    " VALUES (1, 'closed', 'full', 'ann', 'robot')"
                )
            )
        assert "annotator_tags_source_check" in str(info.value.orig)
        with ann.begin() as conn:  # the same tag with a known source: accepted
            conn.execute(
                text(
                    "INSERT INTO annotator_tags (glyph_id, concept, value, annotator, source)"
                    " VALUES (1, 'closed', 'full', 'ann', 'suggestion')"
                )
            )
            conn.execute(text("SELECT studio_refresh_consensus(ARRAY[1]::bigint[])"))
    finally:
        ann.dispose()
    owner = create_engine(url)
    try:
        with pytest.raises(DBAPIError) as info, owner.begin() as conn:
            conn.execute(text("UPDATE tags SET source = 'robot'"))
        assert "tags_source_check" in str(info.value.orig)
        with owner.connect() as conn:  # the server's consensus carries the source
            assert conn.execute(text("SELECT source FROM tags")).scalars().all() == ["suggestion"]
    finally:
        owner.dispose()


def test_the_consensus_of_an_overlap_glyph_carries_the_source(
    project_location: str, ua_schema: Schema
) -> None:
    """Two annotators on one glyph: the agreed tag is from a suggestion once either's is, and
    back to 'hand' when that one goes; what they do not agree on is no tag at all."""
    with Project.create(project_location, ua_schema) as project:
        project.add_glyphs([(DOT, "symbola", "ok", None)])
        project.add_person("ann", "annotator")
        project.add_person("bea", "annotator")
        project.assign([DOT], ["ann", "bea"], overlap=1.0)
        with project._tx() as conn:  # the owner writes for them (an admin may)
            gid = project._glyph_ids(conn, [DOT])[DOT]
            lab.mark_done(conn, "bea", [gid], "t0")  # bea looked at it: she takes part
            lab.add_own_tags(conn, "ann", [gid], "closed", "full", "t1")
            assert project_sources(conn) == []  # bea has not said it
            lab.add_own_tags(conn, "bea", [gid], "closed", "full", "t2", "suggestion")
            assert project_sources(conn) == [("closed", "full", "ann", "suggestion")]
            lab.remove_own_tags(conn, "bea", [gid], "closed", "full")
            assert project_sources(conn) == []
            lab.add_own_tags(conn, "bea", [gid], "closed", "full", "t3")
            assert project_sources(conn) == [("closed", "full", "ann", "hand")]


def project_sources(conn: Any) -> list[tuple[str, str, str, str]]:
    return [
        (str(r[0]), str(r[1]), str(r[2]), str(r[3]))
        for r in conn.execute(text("SELECT concept, value, author, source FROM tags"))
    ]


def test_provenance_survives_export_and_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, out = tmp_path / "a.studio", tmp_path / "b.studio", tmp_path / "tags.csv"
    assert main(["init", str(a)]) == 0
    assert main(["tag", str(a), "closed=full", str(DOT)]) == 0
    # hand-made tags only: UA's four columns, nothing more
    assert main(["export-annotations", str(a), str(out)]) == 0
    assert out.read_text().splitlines()[0] == "concept,value,codepoint,font"
    with Studio(Project.open(a), author="me") as studio:
        studio.tag([CIRCLE], "closed", "empty", source="suggestion")
    assert main(["export-annotations", str(a), str(out)]) == 0
    assert out.read_text().splitlines() == [
        "concept,value,codepoint,font,source",
        "closed,empty,25CB,symbola,suggestion",
        "closed,full,25CF,symbola,hand",
    ]
    assert main(["init", str(b)]) == 0
    assert main(["import-annotations", str(b), str(out)]) == 0
    capsys.readouterr()
    with Project.open(b) as project:
        assert _sources(project) == {
            (CIRCLE, "closed", "empty"): "suggestion",
            (DOT, "closed", "full"): "hand",
        }
        own = {(t.key, t.concept, t.value) for k in (CIRCLE, DOT) for t in project.own_tags_of(k)}
        assert len(own) == 2
        with project._engine.connect() as conn:
            assert sorted(conn.execute(text("SELECT source FROM annotator_tags")).scalars()) == [
                "hand",
                "suggestion",
            ]
    # and the second export is the first, byte for byte
    again = tmp_path / "again.csv"
    assert main(["export-annotations", str(b), str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_an_import_of_a_suggested_tag_on_a_tagged_glyph_makes_it_assisted(
    tmp_path: Path, ua_schema: Schema
) -> None:
    """The file's fast import path (no overlap) gives what the rule gives: a tag the glyph
    has, imported from a suggestion by someone else, is assisted; the count of new tags is
    not changed by it."""
    with Project.create(tmp_path / "p.studio", ua_schema) as project:
        project.add_tags([DOT], "closed", "full", "me")
        rows = [TagRow.of("closed", "full", DOT, "suggestion"), TagRow.of("closed", "empty", DOT)]
        counts = project.import_tags(rows, "importer")
        assert counts.new_tags == 1
        assert _sources(project) == {
            (DOT, "closed", "full"): "suggestion",
            (DOT, "closed", "empty"): "hand",
        }


def test_the_csv_reader_takes_the_source_column_and_names_a_bad_value(
    ua_schema: Schema,
) -> None:
    text_ = "concept,value,codepoint,font,source\nclosed,full,25CF,symbola,suggestion\n"
    assert parse_annotation_csv(text_, ua_schema, "t.csv") == [
        TagRow("closed", "full", "25CF", "symbola", "suggestion")
    ]
    assert format_annotation_csv(parse_annotation_csv(text_, ua_schema)) == text_
    bad = (
        "concept,value,codepoint,font,source\n"
        "closed,full,25CF,symbola,robot\n"
        "closed,empty,25CF,symbola\n"
        "closed,full,25CF,symbola,hand\n"
        "closed,half,25CB,symbola,\n"
    )
    with pytest.raises(AnnotationImportError) as info:
        parse_annotation_csv(bad, ua_schema, "tags.csv")
    message = str(info.value)
    assert "tags.csv" in message
    assert "line 2: source 'robot' is not one of hand, suggestion" in message
    assert "line 3: expected 5 fields, got 4" in message
    assert "line 5: " in message
    # the same tag twice is a repeat, whatever the sources say
    twice = "concept,value,codepoint,font,source\nclosed,full,25CF,symbola,hand\n"
    twice += "closed,full,25CF,symbola,suggestion\n"
    with pytest.raises(AnnotationImportError, match="line 3: repeats line 2"):
        parse_annotation_csv(twice, ua_schema, "tags.csv")
    # UA's header still reads, every tag by hand
    plain = parse_annotation_csv(
        "concept,value,codepoint,font\nclosed,full,25CF,symbola\n", ua_schema
    )
    assert [r.source for r in plain] == ["hand"]


def test_provenance_survives_a_copy_to_a_lab_database_and_back(
    pg_server: PgServer, tmp_path: Path, ua_schema: Schema
) -> None:
    path = tmp_path / "p.studio"
    with Studio(Project.create(path, ua_schema), author="me") as studio:
        studio.tag([DOT], "closed", "full")
        studio.tag([CIRCLE, DOT], "closed", "empty", source="suggestion")
        want = _state(studio.project)
        sources = _sources(studio.project)
    assert sorted(sources.values()) == ["hand", "suggestion", "suggestion"]
    url = pg_server.fresh_database("provcopy")
    copy_project(path, url)
    with Project.open(url) as project:
        assert _sources(project) == sources
        assert _state(project) == want
    back = tmp_path / "back.studio"
    copy_project(url, back)
    with Project.open(back) as project:
        assert _state(project) == want


def test_ratings_of_source_keeps_whole_cells() -> None:
    """A cell (glyph, person) is assisted when any of the person's tags of the glyph came
    from a suggestion; a glyph marked done with no tag is unassisted work."""
    rows = [
        (1, "ann", "closed", "full", "hand"),
        (1, "ann", "shape-sides", "4", "suggestion"),
        (1, "bea", "closed", "full", "hand"),
        (2, "ann", "closed", "full", "hand"),
    ]
    done = {(3, "bea")}
    tags, cells = ratings_of_source(rows, done, "suggestion")
    assert tags == [(1, "ann", "closed", "full"), (1, "ann", "shape-sides", "4")]
    assert cells == {(1, "ann")}
    tags, cells = ratings_of_source(rows, done, "hand")
    assert tags == [(1, "bea", "closed", "full"), (2, "ann", "closed", "full")]
    assert cells == {(1, "bea"), (2, "ann"), (3, "bea")}
    with pytest.raises(StudioError, match="'robot' is not one of hand, suggestion"):
        ratings_of_source(rows, done, "robot")


def test_agreement_is_reported_for_assisted_and_unassisted_work_apart(
    tmp_path: Path, ua_schema: Schema, capsys: pytest.CaptureFixture[str]
) -> None:
    """ann and bea agree on the glyphs they tagged by hand and disagree on those they tagged
    from suggestions: all together agreement is mixed, apart it is 1 and 0."""
    path = tmp_path / "p.studio"
    hand = [GlyphKey(0x25A0 + i, "symbola") for i in range(3)]
    assisted = [GlyphKey(0x25B0 + i, "symbola") for i in range(3)]
    with Project.create(path, ua_schema) as project:
        project.add_person("ann", "annotator")
        project.add_person("bea", "annotator")
        project.add_tags(hand, "closed", "full", "ann")
        project.add_tags(hand, "closed", "full", "bea")
        project.add_tags(assisted, "closed", "full", "ann", "suggestion")
        project.add_tags(assisted, "closed", "empty", "bea", "suggestion")
        every = project.agreement(n_boot=0)
        alone = {s: project.agreement(n_boot=0, source=s) for s in ("hand", "suggestion")}
    assert every.pairable_glyphs == 6
    assert every.concept("closed").percent.value == pytest.approx(0.5)
    assert alone["hand"].pairable_glyphs == 3 and alone["suggestion"].pairable_glyphs == 3
    assert alone["hand"].concept("closed").percent.value == pytest.approx(1.0)
    assert alone["suggestion"].concept("closed").percent.value == pytest.approx(0.0)

    assert main(["lab", "agreement", str(path), "--boot", "0", "--by-source"]) == 0
    out = capsys.readouterr().out
    assert out.index("all tags:") < out.index("unassisted") < out.index("assisted (")
    assert "6 glyphs annotated by two or more" in out
    assert out.count("3 glyphs annotated by two or more") == 2
    assert main(["lab", "agreement", str(path), "--boot", "0", "--by-source", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"all", "hand", "suggestion"}
    assert report["hand"]["pairable_glyphs"] == 3
    # without the flag: the report of all tags, as before
    assert main(["lab", "agreement", str(path), "--boot", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pairable_glyphs"] == 6


def test_a_format_8_lab_database_is_migrated_and_its_consensus_carries_the_source(
    pg_server: PgServer, ua_schema: Schema
) -> None:
    """A lab database as format 8 left it (no source columns, a refresh function that knows
    none, rules 5): the owner's open migrates it; its tags are 'hand', an annotator's 'robot'
    is refused by the server and a suggestion reaches the consensus."""
    url = pg_server.fresh_database("prov8")
    with Project.create(url, ua_schema) as project:
        project.add_person("ann", "annotator", password="pw-of-ann")
        project.add_tags([DOT], "closed", "full", "owner")
    owner = create_engine(url)
    with owner.begin() as conn:
        old = conn.execute(
            text("SELECT pg_get_functiondef('studio_refresh_consensus(bigint[])'::regprocedure)")
        ).scalar_one()
        for cut in (", pg_catalog.max(a.source) AS source", ", source)", ", c.source"):
            assert cut in old
            old = old.replace(cut, ")" if cut == ", source)" else "")
        old = old.split("ON CONFLICT", 1)[0] + "ON CONFLICT DO NOTHING;\nEND $function$"
        conn.execute(text(old))
        conn.execute(text("ALTER TABLE annotator_tags DROP COLUMN source"))
        conn.execute(text("ALTER TABLE tags DROP COLUMN source"))
        conn.execute(text("UPDATE meta SET value = '8' WHERE key = 'format_version'"))
        conn.execute(text("UPDATE meta SET value = '5' WHERE key = 'server_rules'"))
    with Project.open(url) as project:
        assert project.format_version == 9
        assert _sources(project) == {(DOT, "closed", "full"): "hand"}
    ann = create_engine(url.replace("//postgres@", "//ann:pw-of-ann@"))
    try:
        with pytest.raises(DBAPIError, match="annotator_tags_source_check"), ann.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO annotator_tags (glyph_id, concept, value, annotator, source)"
                    " VALUES (1, 'closed', 'full', 'ann', 'robot')"
                )
            )
    finally:
        ann.dispose()
    with Project.open(url) as project:
        project.add_tags([CIRCLE], "closed", "empty", "owner", "suggestion")
        assert _sources(project)[(CIRCLE, "closed", "empty")] == "suggestion"
    with owner.connect() as conn:
        rules = conn.execute(text("SELECT value FROM meta WHERE key = 'server_rules'"))
        assert rules.scalar_one() == "6"
    owner.dispose()
