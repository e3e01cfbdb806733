"""A stimulus family's split curated like a glyph set (issue 27): imported into a project as a
puzzle set (every item vetted again by its family), listed by its family's rule and concept,
approved, rejected and commented with undo, its statistics and audit computed, regenerated, and
a foil replaced from the family's own candidates with undo and redo. Real cube-net and KiVA
splits."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from studio.app import Studio
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.core.schema import bundled_schema_path, load_schema
from studio.core.verdict import ERROR, WARNING, Finding, Verdict
from studio.curation import Curator, PuzzleFilter
from studio.stimuli.items import StimulusPuzzle
from studio.stimuli.pictures import ItemSheets, record_digest
from studio.stimuli.split import generate_stimulus_split
from studio.store.project import Project

N = 8


@pytest.fixture(scope="module")
def cube_split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cube") / "split"
    generate_stimulus_split("cube-net", out, N, seed=1)
    return out


@pytest.fixture
def studio(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # a render cache of its own: another test drawing the same seeded items into the
    # session's cache must not decide what this one finds there
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    s = Studio(
        Project.create(tmp_path / "p.studio", load_schema(bundled_schema_path())), author="cur"
    )
    yield s
    s.close()


def records(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "items.jsonl").read_text("utf-8").splitlines()]


def test_a_stimulus_split_becomes_a_puzzle_set(studio: Studio, cube_split: Path) -> None:
    curator = Curator(studio)
    prepared = curator.prepare_folder_import(cube_split, "cubes")
    [sid] = curator.import_prepared(prepared)
    assert curator.set_id == sid and curator.current_set().name == "cubes"
    listed = curator.summaries()
    want = records(cube_split)
    assert [p.puzzle_id for p in listed] == [r["id"] for r in want]
    # the list reads what the family's layout says: its rule, concept and part
    assert {p.split for p in listed} <= {"train", "val", "test"}
    assert [p.split for p in listed] == [r["part"] for r in want]
    cp = curator.puzzle(want[0]["id"])
    assert isinstance(cp.puzzle, StimulusPuzzle)
    assert cp.puzzle.family == "cube-net" and cp.puzzle.key == want[0]["key"]
    # every check the family ran is kept with its measure, passed ones too
    checks = cp.puzzle.verdict().findings
    assert checks and any(f.ok for f in checks)
    assert all(p.status == "draft" for p in listed)  # generation's items are all valid
    # a folder's sheets are not taken on trust: the board draws each item itself
    sheets = ItemSheets(studio.cache.root / "items")
    assert all(sheets.cached(r) is None for r in want)


def test_the_board_s_own_generation_keeps_its_sheets(studio: Studio, tmp_path: Path) -> None:
    import threading

    from studio.generate.request import GenerationRequest

    curator = Curator(studio)
    request = GenerationRequest(
        "cube-net", 4, 2, (0.5, 0.25, 0.25), name="fresh nets", out_dir=str(tmp_path / "fresh")
    )
    got = Curator.generate_set(studio, request, threading.RLock())
    assert got.prepared.total == 4 and got.prepared.name == "fresh nets"
    assert got.lines[0].startswith("wrote 4 cube-net items to")
    [sid] = curator.import_prepared(got.prepared)
    sheets = ItemSheets(studio.cache.root / "items")
    for r in records(tmp_path / "fresh"):
        kept = sheets.cached(r)  # what generation drew, so shown without drawing
        assert kept is not None
        assert kept.tobytes() == sheets.sheet(r).tobytes()
    assert curator.project.puzzle_set(sid).params["family"] == "cube-net"


def test_the_board_generates_items_without_a_folder(studio: Studio, tmp_path: Path) -> None:
    """A set on the board needs no split folder (issue 27: the dialog asked for one for
    every family but the glyph one): the items are drawn in memory, each the record, part
    and verdict the folder would hold, their sheets kept for the board."""
    import threading

    from studio.generate.request import GenerationRequest

    request = GenerationRequest("cube-net", 4, 2, (0.5, 0.25, 0.25), name="nets")
    got = Curator.generate_set(studio, request, threading.RLock())
    curator = Curator(studio)
    [sid] = curator.import_prepared(got.prepared)
    listed = curator.summaries()
    # the same items, parts and statuses as the folder generate writes for that request
    folder = tmp_path / "same"
    generate_stimulus_split("cube-net", folder, 4, seed=2, ratios=(0.5, 0.25, 0.25))
    want = records(folder)
    assert [p.puzzle_id for p in listed] == [r["id"] for r in want]
    assert [p.split for p in listed] == [r["part"] for r in want]
    stored = [curator.puzzle(r["id"]).puzzle.record for r in want]
    assert [json.dumps(r, sort_keys=True) for r in stored] == [
        json.dumps(r, sort_keys=True) for r in want
    ]
    sheets = ItemSheets(studio.cache.root / "items")
    assert all(sheets.cached(r) is not None for r in want)
    assert curator.project.puzzle_set(sid).params["seed"] == 2
    with pytest.raises(StudioError, match="cube-net has no option"):
        Curator.generate_set(
            studio, GenerationRequest("cube-net", 4, options={"layout": "x"}), threading.RLock()
        )


def test_a_damaged_item_is_flagged_by_its_family_checks(
    studio: Studio, cube_split: Path, tmp_path: Path
) -> None:
    import shutil

    folder = tmp_path / "damaged"
    shutil.copytree(cube_split, folder)
    lines = (folder / "items.jsonl").read_text("utf-8").splitlines()
    first = json.loads(lines[0])
    first["key"] = (first["key"] + 1) % 4  # the key now points at a distractor
    lines[0] = json.dumps(first, sort_keys=True)
    (folder / "items.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(folder))
    cp = curator.puzzle(first["id"])
    assert cp.status == "flagged"
    assert "key-matches-a-view" in {f.check for f in cp.findings}
    assert all(f.is_error for f in cp.findings)
    assert [p.puzzle_id for p in curator.summaries(PuzzleFilter(warning="errors"))] == [first["id"]]


def test_decisions_on_items_go_through_the_undo_stack(studio: Studio, cube_split: Path) -> None:
    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(cube_split))
    ids = [p.puzzle_id for p in curator.summaries()]
    curator.set_status([ids[0]], "approved", comment="clear net")
    curator.set_status([ids[1]], "rejected")
    assert curator.puzzle(ids[0]).status == "approved"
    assert curator.puzzle(ids[0]).comment == "clear net"
    assert curator.puzzle(ids[1]).status == "rejected"
    studio.undo_stack.undo()
    assert curator.puzzle(ids[1]).status == "draft"
    kinds = [e.kind for e in curator.history(ids[0])]
    assert "status" in kinds
    stats = curator.stats()
    assert stats["statuses"]["approved"] == 1
    assert stats["all"]["puzzles"] == N
    assert sum(stats[p]["puzzles"] for p in ("train", "val", "test")) == N
    assert sum(stats["all"]["answer_position"]["histogram"]) == N
    assert "audit" in stats["all"]  # the family's answer-set audit (answers alone)


def test_glyph_candidates_are_refused_on_items_with_the_reason(
    studio: Studio, cube_split: Path
) -> None:
    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(cube_split))
    pid = curator.summaries()[0].puzzle_id
    with pytest.raises(StudioError, match=r"cube-net item \S+ is given another foil by its family"):
        curator.replacement_candidates(pid, 0)
    with pytest.raises(StudioError, match="takes another item's foil, not a glyph"):
        curator.replace_foil(pid, 0, GlyphKey.parse("U+25CC@symbola"))


def listed(curator: Curator, pid: str) -> tuple[str, str, str, str]:
    [row] = [p for p in curator.summaries() if p.puzzle_id == pid]
    return (row.layout, row.rule, row.concept, row.split)


def test_replace_a_foil_of_an_item_from_its_family_s_candidates_with_undo(
    studio: Studio, cube_split: Path
) -> None:
    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(cube_split))
    cp = curator.puzzle(curator.summaries()[1].puzzle_id)
    old = cp.puzzle
    assert isinstance(old, StimulusPuzzle)
    foil = old.foils[1]
    proposed = curator.replacement_items(old.id, foil, limit=4)
    assert 1 <= len(proposed) <= 4
    # the same item proposes the same candidates (its seed comes from the set and its id)
    assert [r.record for r in proposed] == [
        r.record for r in curator.replacement_items(old.id, foil, 4)
    ]
    choice = proposed[-1]
    assert choice.answer == foil and choice.verdict.valid and choice.old == old.answer_words(foil)
    verdict = curator.replace_foil(old.id, foil, choice)
    assert verdict.valid
    after = curator.puzzle(old.id)
    new = after.puzzle
    assert isinstance(new, StimulusPuzzle)
    assert dict(new.record) == dict(choice.record) and after.status == "draft"
    assert (new.id, new.split, new.key) == (old.id, old.split, old.key)
    assert [j for j in range(4) if new.answer_record(j) != old.answer_record(j)] == [foil]
    assert listed(curator, old.id) == (old.layout, old.rule, old.concept, old.split)
    event = curator.history(old.id)[-1]
    assert event.kind == "replace-foil"
    assert event.detail["answer"] == foil
    assert event.detail["old"] == old.answer_record(foil)
    assert event.detail["new"] == new.answer_record(foil)
    assert studio.undo_stack.undo_label.startswith(f"Replace answer {foil + 1} of item {old.id} ")
    studio.undo_stack.undo()
    assert dict(curator.puzzle(old.id).puzzle.record) == dict(old.record)
    assert curator.puzzle(old.id).status == cp.status
    studio.undo_stack.redo()
    assert dict(curator.puzzle(old.id).puzzle.record) == dict(choice.record)
    assert listed(curator, old.id) == (old.layout, old.rule, old.concept, old.split)


def test_an_item_foil_is_refused_with_the_reason(studio: Studio, cube_split: Path) -> None:
    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(cube_split))
    old = curator.puzzle(curator.summaries()[0].puzzle_id).puzzle
    assert isinstance(old, StimulusPuzzle)
    with pytest.raises(StudioError, match=f"answer {old.key + 1} of item {old.id} is the key"):
        curator.replacement_items(old.id, old.key)
    with pytest.raises(StudioError, match="has no answer 5"):
        curator.replacement_items(old.id, 4)
    a, b = old.foils[:2]
    for_b = curator.replacement_items(old.id, b, 1)[0]
    early = curator.replacement_items(old.id, a, 1)[0]
    # a record that changes another answer than the one named is refused
    with pytest.raises(StudioError, match=f"does not replace answer {a + 1} alone"):
        curator.replace_foil(old.id, a, for_b.record)
    # a proposal made before another edit is vetted again, and refused if it would undo it
    curator.replace_foil(old.id, a, curator.replacement_items(old.id, a, 1)[0])
    with pytest.raises(StudioError, match=f"answers changed: {min(a, b) + 1}, {max(a, b) + 1}"):
        curator.replace_foil(old.id, b, for_b)
    # a whole record offered (not a proposal) is vetted by the family: a bad one is flagged
    now = curator.puzzle(old.id).puzzle
    bad = json.loads(json.dumps(dict(now.record)))
    bad["candidates"][b]["view"] = bad["candidates"][old.key]["view"]
    verdict = curator.replace_foil(old.id, b, bad)
    assert not verdict.valid and curator.puzzle(old.id).status == "flagged"
    assert {"candidates-distinct"} <= {f.check for f in verdict.errors}
    # the item as it is, offered again, says so (a review found "answers changed: none")
    with pytest.raises(StudioError, match=r"is the item as it is: answer \d+ already is that foil"):
        curator.replace_foil(old.id, b, dict(curator.puzzle(old.id).puzzle.record))
    # a record damaged in the store after the proposals were made: refused in words
    damaged = {**dict(curator.puzzle(old.id).puzzle.record), "candidates": [1, 2, 3, 4]}
    with sqlite3.connect(studio.project.path) as db:
        db.execute(
            "UPDATE puzzles SET record = ? WHERE puzzle_id = ?", (json.dumps(damaged), old.id)
        )
    with pytest.raises(StudioError, match="damaged"):
        curator.replace_foil(old.id, a, early)


def test_a_family_without_the_hook_offers_no_replacement_foils(
    studio: Studio, cube_split: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from studio.plugins import family, registry

    plain = replace(family("cube-net"), id="plain-net", label="Plain nets", foil_candidates=None)
    reg = registry("families")
    monkeypatch.setitem(reg._entries, "plain-net", plain)
    monkeypatch.setitem(reg._meta, "plain-net", {})
    rows = [r | {"family": "plain-net"} for r in records(cube_split)]
    curator = Curator(studio)
    curator.import_prepared(curator.prepare_stimulus_import("plain", {"family": "plain-net"}, rows))
    cp = curator.puzzle(rows[0]["id"])
    assert curator.item_foils_refusal(cp) == "the Plain nets family offers no replacement foils"
    with pytest.raises(StudioError, match="the Plain nets family offers no replacement foils"):
        curator.replacement_items(cp.id, cp.puzzle.foils[0])
    with pytest.raises(StudioError, match="the Plain nets family offers no replacement foils"):
        curator.replace_foil(cp.id, cp.puzzle.foils[0], rows[1] | {"id": cp.id})


def test_a_kiva_trial_s_sibling_change_is_replaced_and_restored(
    studio: Studio, tmp_path: Path
) -> None:
    out = tmp_path / "kiva"
    options = {"size": 64, "mode": "kiva-adults", "objects": ("l-block", "key", "toy-car")}
    generate_stimulus_split("kiva", out, 4, seed=6, options=options)
    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(out, "trials"))
    # the first trial with a change whose sibling change has another the design offers
    for row in curator.summaries():
        old = curator.puzzle(row.puzzle_id).puzzle
        assert isinstance(old, StimulusPuzzle)
        if old.record["no_change"]:
            continue
        sibling = next(
            j for j in old.foils if old.answer_record(j)["option_id"] == old.record["sibling"]
        )
        try:
            choice = curator.replacement_items(old.id, sibling, 2)[0]
        except StudioError:
            continue
        break
    else:
        pytest.fail("no KiVA trial with another sibling change")
    # "no change" is in every trial: the family says so
    no_change = next(j for j in old.foils if j != sibling)
    with pytest.raises(StudioError, match="shows no change, which every KiVA trial offers"):
        curator.replacement_items(old.id, no_change)
    curator.replace_foil(old.id, sibling, choice)
    new = curator.puzzle(old.id).puzzle
    assert new.record["sibling"] == new.answer_record(sibling)["option_id"] != old.record["sibling"]
    assert (new.record["spec"], new.key, new.concept) == (old.record["spec"], old.key, old.concept)
    studio.undo_stack.undo()
    assert dict(curator.puzzle(old.id).puzzle.record) == dict(old.record)
    studio.undo_stack.redo()
    assert curator.puzzle(old.id).puzzle.record["sibling"] == new.record["sibling"]


def test_regenerate_draws_a_fresh_item_of_the_same_rule_and_concept(
    studio: Studio, cube_split: Path
) -> None:
    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(cube_split))
    before = curator.puzzle(curator.summaries()[2].puzzle_id)
    old = before.puzzle
    assert isinstance(old, StimulusPuzzle)
    new = curator.regenerate(old.id)
    assert isinstance(new, StimulusPuzzle)
    assert (new.id, new.split, new.rule, new.concept) == (old.id, old.split, old.rule, old.concept)
    assert new.record["regenerated"] == 1
    drawn = {k: v for k, v in new.record.items() if k not in ("regenerated", "verdict")}
    assert drawn != {k: v for k, v in old.record.items() if k != "verdict"}  # another item
    assert new.verdict().valid
    after = curator.puzzle(old.id)
    assert after.puzzle.to_json() == dict(new.record) and after.status == "draft"
    assert [e.kind for e in curator.history(old.id)][-1] == "regenerate"

    def listed() -> tuple[str, str, str, str]:
        [row] = [p for p in curator.summaries() if p.puzzle_id == old.id]
        return (row.layout, row.rule, row.concept, row.split)

    # the list still shows what the family reads, after the edit and after its undo
    assert listed() == (old.layout, old.rule, old.concept, old.split)
    studio.undo_stack.undo()
    assert curator.puzzle(old.id).puzzle.to_json() == dict(old.record)
    assert listed() == (old.layout, old.rule, old.concept, old.split)
    studio.undo_stack.redo()
    assert listed() == (old.layout, old.rule, old.concept, old.split)


def test_kiva_statistics_carry_the_partial_view_floors(studio: Studio, tmp_path: Path) -> None:
    out = tmp_path / "kiva"
    generate_stimulus_split("kiva", out, 6, seed=3)
    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(out, "trials"))
    stats = curator.stats()
    views = stats["all"]["partial_views"]["views"]
    assert set(views) == {"row1", "row2", "answers"}
    assert set(stats["all"]["per_rule"]) <= {"color", "size", "rotation", "reflection", "number"}


def test_an_item_finding_keeps_its_severity_and_measure_in_the_store() -> None:
    """Stored in puzzle form, an item's check (no answer) keeps what a glyph finding's source
    implies: before, a warning came back an error and the measure was lost."""
    for severity in (ERROR, WARNING):
        f = Finding("overlap", False, 0.25, "two pieces overlap", severity)
        back = Finding.from_puzzle_json(f.to_puzzle_json())
        assert (back.check, back.severity, back.measure, back.detail) == (
            "overlap",
            severity,
            0.25,
            "two pieces overlap",
        )
        assert back.message() == f.message()
    v = Verdict((Finding("a", True, 1.0, "ok"), Finding("b", False, None, "no", WARNING)), "x")
    again = Verdict.from_item_json(v.to_item_json(), "x")
    assert again == v


def test_the_sheet_digest_ignores_the_verdict_and_part() -> None:
    r = {"id": "a", "family": "cube-net", "net": [1, 2], "verdict": {"valid": True}, "part": "val"}
    assert record_digest(r) == record_digest({**r, "verdict": {"valid": False}, "part": "test"})
    assert record_digest(r) != record_digest({**r, "net": [2, 1]})


def test_import_split_on_the_command_line(tmp_path: Path, cube_split: Path) -> None:
    project = tmp_path / "cli.studio"
    Project.create(project, load_schema(bundled_schema_path())).close()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "studio", *args], capture_output=True, text=True, timeout=300
        )

    done = run("import-split", str(project), str(cube_split), "--name", "nets")
    assert done.returncode == 0, done.stderr
    assert f"imported {N} puzzles of {cube_split} as set 1 “nets” (0 flagged)" in done.stdout
    # a folder that is no split: a clear message naming it, exit 2, the project untouched
    empty = tmp_path / "nothing"
    empty.mkdir()
    bad = run("import-split", str(project), str(empty))
    assert bad.returncode == 2
    assert str(empty) in bad.stderr and "internal error" not in bad.stderr
    with Project.open(project) as p:
        assert [s.name for s in p.puzzle_sets()] == ["nets"]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"id": "../../evil"}, "its id and images must be plain names"),
        ({"images": ["../sheet"]}, "its id and images must be plain names"),
        ({"family": "no-such-family"}, "which this studio does not have"),
        ({"verdict": {"checks": [{"nocheck": 1}]}}, "its recorded verdict is damaged"),
        ({"key": "first"}, "does not read as a cube-net item"),
        ({"key": 7}, "its key 7 is not one of its 4 options"),
        ({"part": "../x"}, "is not train, val or test"),
        ({"size": 20000}, "size 20000 is not 8 to 4096 pixels"),
        ({"id": "cube-net-1-00001"}, "its record is of another item"),
    ],
)
def test_a_hostile_record_in_the_store_is_named_not_followed(
    studio: Studio, cube_split: Path, change: dict, said: str, tmp_path: Path
) -> None:
    """A record edited in the database (a lab's, say) never becomes a path outside the export
    or the cache, nor an internal error: the board, the statistics and export-set name it."""
    import sqlite3

    from studio.publish import export_set

    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(cube_split))
    pid = curator.summaries()[0].puzzle_id
    curator.set_status([pid], "approved")
    path = studio.project.path
    with sqlite3.connect(path) as db:
        (text,) = db.execute("SELECT record FROM puzzles WHERE puzzle_id = ?", (pid,)).fetchone()
        db.execute(
            "UPDATE puzzles SET record = ? WHERE puzzle_id = ?",
            (json.dumps({**json.loads(text), **change}), pid),
        )
    fresh = Curator(studio)
    fresh.open_set(curator.set_id)
    if change.get("id") == "cube-net-1-00001":  # a plain id, of another item: never edited
        with pytest.raises(StudioError, match="its stored record is of another one"):
            fresh.puzzle(pid)
        with pytest.raises(StudioError, match="its stored record is of another one"):
            fresh.regenerate(pid)
        with pytest.raises(StudioError, match=said):
            export_set(studio, curator.set_id, tmp_path / "out")
        assert fresh.puzzle("cube-net-1-00001").puzzle.record.get("regenerated") is None
        return
    if "verdict" in change:  # shown on the board; export vets every item again instead
        with pytest.raises(StudioError, match=said):
            fresh.puzzle(pid).puzzle.verdict()  # type: ignore[union-attr]
        assert export_set(studio, curator.set_id, tmp_path / "out").exported == 1
        return
    with pytest.raises(StudioError, match=said):
        fresh.stats()
    with pytest.raises(StudioError, match=said):
        export_set(studio, curator.set_id, tmp_path / "out")
    # an id "../../evil" would have put its sheet and pictures beside the export folder
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "evil.png").exists() and not (tmp_path / "evil").exists()


def test_a_stimulus_set_on_a_lab_database_keeps_its_roles(pg_server, cube_split: Path) -> None:  # type: ignore[no-untyped-def]
    """On a lab's PostgreSQL database a stimulus set is curated under the same server-enforced
    roles as a glyph set: a curator imports and decides, an annotator reads and is refused."""
    from studio.store.lab import RightsError

    url = pg_server.fresh_database("labitems")
    with Project.create(url, load_schema(bundled_schema_path()), author="admin") as admin:
        admin.add_person("ann", "annotator")
        admin.add_person("cy", "curator")
    cy = Studio(Project.open(url.replace("//postgres@", "//cy@")), author="cy")
    ann = Studio(Project.open(url.replace("//postgres@", "//ann@")), author="ann")
    try:
        curator = Curator(cy)
        [sid] = curator.import_prepared(curator.prepare_folder_import(cube_split, "nets"))
        ids = [p.puzzle_id for p in curator.summaries()]
        curator.set_status([ids[0]], "approved", comment="clear")
        reader = Curator(ann)
        reader.open_set(sid)
        shown = reader.puzzle(ids[0])
        assert isinstance(shown.puzzle, StimulusPuzzle) and shown.status == "approved"
        assert shown.puzzle.verdict().findings  # the checks, read back from the server
        with pytest.raises(RightsError, match="ann is an annotator"):
            reader.set_status([ids[1]], "rejected")
        with pytest.raises(RightsError, match="only a curator or above may add the puzzle set"):
            reader.import_prepared(reader.prepare_folder_import(cube_split, "mine"))
        assert [s.name for s in ann.project.puzzle_sets()] == ["nets"]
        assert reader.puzzle(ids[1]).status == "draft"
    finally:
        ann.close()
        cy.close()


def test_a_damaged_stored_finding_and_a_missing_plugin_are_named(
    studio: Studio, cube_split: Path, tmp_path: Path
) -> None:
    import sqlite3

    from studio.publish import export_set

    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(cube_split))
    pid = curator.summaries()[0].puzzle_id
    path = studio.project.path
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE puzzles SET findings = ? WHERE puzzle_id = ?",
            (json.dumps([{"kind": "x", "answer": None, "measure": "abc"}]), pid),
        )
    with pytest.raises(StudioError, match=f"puzzle '{pid}' is damaged in the store"):
        Curator(studio).puzzle(pid)
    with sqlite3.connect(path) as db:  # the set's family is a plugin this studio lacks
        (params,) = db.execute("SELECT params FROM puzzle_sets").fetchone()
        db.execute(
            "UPDATE puzzle_sets SET params = ?",
            (json.dumps({**json.loads(params), "family": "gone-plugin"}),),
        )
    with pytest.raises(StudioError, match="'gone-plugin', which this studio does not have"):
        export_set(studio, curator.set_id, tmp_path / "out", status="any")


def test_baselines_run_on_a_project_s_stimulus_set(studio: Studio, cube_split: Path) -> None:
    """A baseline job over a set on the board (issue 27: 'see its baseline flags') reads a
    stimulus set as it reads the split folder: its items drawn again from their records."""
    from studio.baselines.data import load_source
    from studio.baselines.run import run_baselines

    curator = Curator(studio)
    [sid] = curator.import_prepared(curator.prepare_folder_import(cube_split, "nets"))
    source = {"kind": "project-set", "project": str(studio.project.path), "set_id": sid}
    from_set = load_source(source)
    from_folder = load_source(cube_split)
    assert from_set.ids == from_folder.ids and from_set.family == "cube-net"
    assert (from_set.context_u8 == from_folder.context_u8).all()
    assert (from_set.answers_u8 == from_folder.answers_u8).all()
    assert from_set.source["kind"] == "project-set" and from_set.source["set_id"] == sid
    report = run_baselines(source, ["blind"], seeds=1, epochs=1, device="cpu")
    assert "blind" in report["models"] and report["source"]["set_id"] == sid
    # a record damaged in the store is named, never drawn into a crash
    import sqlite3

    pid = from_set.ids[0]
    with sqlite3.connect(studio.project.path) as db:
        (text,) = db.execute("SELECT record FROM puzzles WHERE puzzle_id = ?", (pid,)).fetchone()
        db.execute(
            "UPDATE puzzles SET record = ? WHERE puzzle_id = ?",
            (json.dumps({**json.loads(text), "marks": "x"}), pid),
        )
    with pytest.raises(StudioError, match=f"item {pid}: its cube-net record cannot be drawn"):
        load_source(source)


def test_an_item_drawn_anew_in_the_background_is_not_stored_over_a_newer_one(
    studio: Studio, cube_split: Path
) -> None:
    """The board draws an item anew on a worker thread (Curator.item_redraw → draw_item_again
    → apply_redraw). If the item changed meanwhile (here: regenerated again), the late drawing
    is refused in words and nothing is stored over the newer item."""
    from studio.curation import draw_item_again

    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(cube_split, "cubes"))
    first = curator.summaries()[0].puzzle_id
    request = curator.item_redraw(first)
    late = draw_item_again(request)  # what the worker thread would hand back
    newer = curator.regenerate(first)
    with pytest.raises(StudioError, match="changed while it was drawn anew"):
        curator.apply_redraw(request, late)
    assert curator.puzzle(first).puzzle.record == newer.record
    # drawn and applied in turn it is an ordinary, undoable regeneration
    request = curator.item_redraw(first)
    made = curator.apply_redraw(request, draw_item_again(request))
    assert made.record["regenerated"] == 2
    studio.undo_stack.undo()
    assert curator.puzzle(first).puzzle.record == newer.record
