"""The curator's commands without a window: import, statuses, foils, regeneration, statistics,
undo, the log, and what survives closing the project."""

from __future__ import annotations

import gc
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from studio import splits
from studio.app import Studio
from studio.core.errors import StudioError
from studio.curation import Curator, PuzzleFilter, PuzzlesChanged
from studio.demo import build_demo
from studio.generate.params import SplitParams
from studio.store.project import Project
from studio.vet.emergent import vet_puzzle

PARAMS = SplitParams(n=60, sampling="balanced", seed=3)


@pytest.fixture(scope="session")
def demo_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """UA's public annotations plus Symbola's Geometric Shapes, rendered (the demo, small)."""
    path = tmp_path_factory.mktemp("demo") / "demo.studio"
    for _ in build_demo(path, blocks=["Geometric Shapes"]):
        pass
    return path


def open_copy(src: Path, tmp_path: Path) -> Studio:
    path = tmp_path / "work.studio"
    shutil.copy(src, path)
    return Studio(Project.open(path), author="cur")


@pytest.fixture
def studio(demo_project: Path, tmp_path: Path) -> Studio:
    s = open_copy(demo_project, tmp_path)
    yield s
    s.close()


def generate(studio: Studio, params: SplitParams = PARAMS):
    inputs = splits.split_inputs(studio)
    results = splits.generate(studio, params, inputs=inputs)
    keys = {k for r in results for p in r.puzzles for k in p.all_keys()}
    features = splits.feature_index({k: inputs.images[k] for k in keys})
    verdicts = [
        v
        for r in results
        for v in splits.vet(r.puzzles, inputs.annotations, studio.schema, features)
    ]
    return results, verdicts


@pytest.fixture
def curated(studio: Studio) -> Curator:
    """A curated 60-puzzle split; every image-feature warning counts (grade low and up)."""
    curator = Curator(studio)
    curator.set_feature_warning_min("low")
    results, verdicts = generate(studio)
    curator.import_results("small", PARAMS, results, verdicts)
    return curator


def plant_flag(curator: Curator):
    """Replace a foil of a clean constant puzzle by a glyph from the key's own folder: that
    foil completes the intended rule. Returns (puzzle id, foil index, planted glyph)."""
    ann = curator.annotations
    cp = next(
        c
        for c in curator.puzzles(PuzzleFilter(rule="constant", status="draft"))
        if not c.puzzle.shift
    )
    p = cp.puzzle
    value = p.values[-1][-1]
    glyph = next(g for g in ann.folder(p.concept, value) if g not in p.all_keys())
    foil = p.foils[0]
    curator.replace_foil(p.id, foil, glyph)
    return p.id, foil, glyph


def test_import_sets_status_from_verdicts_and_is_undoable(studio: Studio) -> None:
    set_events: list[list[int]] = []
    studio.events.puzzle_sets_changed.connect(set_events.append)
    curator = Curator(studio)
    curator.set_feature_warning_min("low")  # every warning flags, as stored
    assert curator.set_id is None and curator.puzzles() == []
    results, verdicts = generate(studio)
    [set_id] = curator.import_results("small", PARAMS, results, verdicts)
    assert studio.undo_stack.undo_label == "Import puzzle set “small” (60 puzzles)"
    assert set_events == [[set_id]]
    puzzles = curator.puzzles()
    assert [c.id for c in puzzles] == [p.id for p in results[0].puzzles]
    by_id = {v.subject_id: v for v in verdicts}
    for c in puzzles:
        v = by_id[c.id]
        assert c.status == ("flagged" if v.errors or v.warnings else "draft")
        assert len(c.findings) == len(v.errors) and len(c.warnings) == len(v.warnings)
        assert c.puzzle == next(p for p in results[0].puzzles if p.id == c.id)
    rec = curator.current_set()
    assert rec.name == "small" and rec.count == 60
    assert rec.params["seed"] == 3 and rec.params["fold"] == 0
    assert rec.summary["rejections"] == dict(sorted(results[0].rejections.items()))
    assert "dry_tuples" in rec.summary

    studio.undo_stack.undo()
    assert curator.sets() == [] and curator.set_id is None
    studio.undo_stack.redo()
    assert [s.id for s in curator.sets()] == [set_id] and curator.set_id == set_id
    assert set_events == [[set_id]] * 3  # import, its undo, its redo
    kinds = [e.kind for e in studio.project.puzzle_events(set_id)]
    assert kinds == ["import", "undo-import", "redo-import"]


def test_filters(curated: Curator) -> None:
    all_ = curated.puzzles()
    rule = all_[0].puzzle.rule
    concept = all_[0].puzzle.concept
    assert all(c.puzzle.rule == rule for c in curated.puzzles(PuzzleFilter(rule=rule)))
    assert {c.id for c in curated.puzzles(PuzzleFilter(concept=concept))} == {
        c.id for c in all_ if c.puzzle.concept == concept
    }
    flagged = curated.puzzles(PuzzleFilter(status="flagged"))
    with_warnings = curated.puzzles(PuzzleFilter(warning="warnings"))
    clean = curated.puzzles(PuzzleFilter(warning="none"))
    assert flagged and with_warnings and clean
    assert {c.id for c in flagged} == {c.id for c in all_ if c.findings or c.warnings}
    assert all(c.warnings for c in with_warnings)
    assert all(not c.findings and not c.warnings for c in clean)
    assert len(clean) + len(flagged) == len(all_)
    assert curated.puzzles(PuzzleFilter(warning="errors")) == []  # valid by construction


def test_approve_reject_undo_and_log(curated: Curator) -> None:
    studio = curated.studio
    seen: list[PuzzlesChanged] = []
    studio.events.puzzles_changed.connect(seen.append)
    pid = curated.puzzles(PuzzleFilter(status="draft"))[0].id
    curated.set_status([pid], "approved")
    assert studio.undo_stack.undo_label == f"Approve puzzle {pid}"
    assert curated.puzzle(pid).status == "approved"
    assert seen[-1] == PuzzlesChanged(curated.set_id, (pid,))
    studio.undo_stack.undo()
    assert curated.puzzle(pid).status == "draft"
    two = [c.id for c in curated.puzzles()[:2]]
    curated.set_status(two, "rejected", "foils too alike")
    assert studio.undo_stack.undo_label == "Reject 2 puzzles (foils too alike)"
    assert {curated.puzzle(i).comment for i in two} == {"foils too alike"}
    log = [(e.kind, e.detail) for e in curated.history(pid)]
    assert log[0] == ("status", {"old": "draft", "new": "approved"})
    assert log[1] == ("status", {"old": "approved", "new": "draft", "comment": "", "undo": True})
    assert log[-1][1]["comment"] == "foils too alike"
    assert all(e.author == "cur" for e in curated.history(pid))
    with pytest.raises(StudioError, match="unknown status"):
        curated.set_status([pid], "fine")
    curated.set_comment(pid, "check the font")
    assert studio.undo_stack.undo_label == f"Comment on puzzle {pid}"
    studio.undo_stack.undo()
    assert curated.puzzle(pid).comment == "foils too alike"
    assert seen[-1] == PuzzlesChanged(curated.set_id, (pid,))
    assert [(e.kind, e.detail) for e in curated.history(pid)][-2:] == [
        ("comment", {"old": "foils too alike", "new": "check the font"}),
        ("comment", {"old": "check the font", "new": "foils too alike", "undo": True}),
    ]


def test_curator_forgets_annotations_when_tags_change_and_stops_listening_when_dropped(
    curated: Curator,
) -> None:
    studio = curated.studio
    curated.warm_up()
    assert curated.annotations_ready
    key = curated.puzzles()[0].puzzle.answers[0]
    concept = next(c for c in studio.schema.concepts if c.value_ids)
    studio.tag([key], concept.id, concept.value_ids[0])
    assert not curated.annotations_ready
    listeners = len(studio.events.tags_changed)
    extra = Curator(studio)
    assert len(studio.events.tags_changed) == listeners + 1
    del extra
    gc.collect()
    assert len(studio.events.tags_changed) == listeners


def test_planted_foil_is_flagged_and_a_proposed_replacement_makes_it_valid(
    curated: Curator,
) -> None:
    studio = curated.studio
    pid, foil, planted = plant_flag(curated)
    cp = curated.puzzle(pid)
    assert cp.status == "flagged"
    label = f"Replace answer {foil + 1} of puzzle {pid} with {planted}"
    assert studio.undo_stack.undo_label == label
    [finding] = [f for f in cp.findings if f.answer == foil]
    assert finding.check == "foil-completes-intended"
    assert (finding.rule, finding.concept) == (cp.puzzle.rule, cp.puzzle.concept)
    [ev] = [e for e in curated.evidence(cp) if e.answer == foil and e.severity == "error"]
    value = cp.puzzle.values[-1][-1]
    assert ev.caption == (
        f"Answer {foil + 1} also completes constant over {cp.puzzle.concept}: {value} | {value}"
    )
    assert ev.frame_values[("answer", foil, 0)].split("/").count(value) == 1
    assert all(("context", r, c) in ev.frame_values for r in range(2) for c in range(2))

    proposed = curated.propose_replacements(pid, foil)
    assert proposed and proposed == curated.propose_replacements(pid, foil)  # deterministic
    ann = curated.annotations
    for g in proposed:
        assert g not in cp.puzzle.all_keys()
        assert ann.values(g, cp.puzzle.concept)
        assert not vet_puzzle(cp.puzzle.with_answer(foil, g), ann, curated.book).errors
    verdict = curated.replace_foil(pid, foil, proposed[0])
    assert verdict.valid
    after = curated.puzzle(pid)
    assert after.puzzle.answers[foil] == proposed[0] and not after.findings
    assert after.status == ("flagged" if after.warnings else "draft")
    kinds = [e.detail for e in curated.history(pid) if e.kind == "replace-foil"]
    assert kinds[-1]["new"] == str(proposed[0]) and kinds[-1]["old"] == str(planted)
    # undo twice: back to the generated puzzle, as it was
    studio.undo_stack.undo()
    assert curated.puzzle(pid).puzzle.answers[foil] == planted
    studio.undo_stack.undo()
    assert curated.puzzle(pid).status == "draft" and not curated.puzzle(pid).findings
    with pytest.raises(StudioError, match="is the key"):
        curated.replace_foil(pid, cp.puzzle.key, proposed[0])


def test_regenerate_keeps_tuple_and_split(curated: Curator) -> None:
    studio = curated.studio
    cp = curated.puzzles(PuzzleFilter(status="draft"))[0]
    old = cp.puzzle
    new = curated.regenerate(old.id)
    assert studio.undo_stack.undo_label == f"Regenerate puzzle {old.id}"
    assert (new.id, new.rule, new.concept, new.shift, new.layout, new.split) == (
        old.id,
        old.rule,
        old.concept,
        old.shift,
        old.layout,
        old.split,
    )
    assert (new.context, new.answers) != (old.context, old.answers)
    assert new.params["regenerated"] == 1 and new.seed != old.seed
    stored = curated.puzzle(old.id)
    assert stored.puzzle == new and not stored.findings
    assert vet_puzzle(new, curated.annotations, curated.book).valid
    again = curated.regenerate(old.id)  # a second time: another seed, another puzzle
    assert again.params["regenerated"] == 2 and again.seed != new.seed
    studio.undo_stack.undo()
    studio.undo_stack.undo()
    assert curated.puzzle(old.id).puzzle == old and curated.puzzle(old.id).status == cp.status


def test_stats(curated: Curator) -> None:
    stats = curated.stats()
    assert stats["all"]["puzzles"] == 60
    assert sum(stats["all"]["answer_position"]["histogram"]) == 60
    assert stats["rejections"] == curated.current_set().summary["rejections"]
    assert sum(stats["statuses"].values()) == 60
    assert stats["all"]["foil_values"]["per_concept"]


def test_statuses_survive_reopening(curated: Curator, tmp_path: Path) -> None:
    pid = curated.puzzles()[5].id
    curated.set_status([pid], "approved", "good one")
    path = curated.project.path
    set_id = curated.set_id
    curated.studio.close()
    studio = Studio(Project.open(path), author="cur")
    try:
        again = Curator(studio)
        assert again.set_id == set_id
        cp = again.puzzle(pid)
        assert (cp.status, cp.comment, cp.author) == ("approved", "good one", "cur")
    finally:
        studio.close()


def test_generate_and_vet_reports_its_stages_and_vets_like_the_whole_feature_index(
    studio: Studio,
) -> None:
    """The one pipeline of the CLI and the GUI: verdicts aligned with the puzzles, image
    features of the puzzles' glyphs only (the same verdicts as from every glyph's features),
    the split's ``strict`` setting, and a stop between stages."""
    inputs = splits.split_inputs(studio)
    stages: list[tuple[str, int, int]] = []
    vetted = splits.generate_and_vet(studio, PARAMS, lambda *s: stages.append(s), inputs=inputs)
    puzzles = [p for r in vetted.results for p in r.puzzles]
    assert [v.subject_id for v in vetted.all_verdicts] == [p.id for p in puzzles]
    assert stages[-2:] == [(splits.STAGE_GENERATE, 60, 60), (splits.STAGE_VET, 0, 60)]
    every = splits.feature_index(inputs.images)
    assert vetted.all_verdicts == splits.vet(
        puzzles, inputs.annotations, inputs.schema, every, PARAMS.strict
    )
    assert any(v.warnings for v in vetted.all_verdicts)

    def stop_when_all_are_made() -> bool:
        return (splits.STAGE_GENERATE, 60, 60) in stages

    stages.clear()
    with pytest.raises(splits.Cancelled):
        splits.generate_and_vet(
            studio, PARAMS, lambda *s: stages.append(s), stop_when_all_are_made, inputs
        )
    assert all(name == splits.STAGE_GENERATE for name, _, _ in stages)  # nothing was vetted


# ---- graded image-feature warnings, dismissals, bulk approval ----------------------------------
def test_feature_warnings_are_graded_by_chance() -> None:
    from studio.core.verdict import Finding, severity_of_source
    from studio.curation import feature_warning_chance, feature_warning_grade

    def warning(concept: str, rule: str, rows) -> Finding:
        return Finding(
            "emergent",
            severity=severity_of_source("image-features"),
            answer=1,
            rule=rule,
            concept=concept,
            rows=tuple(tuple(r) for r in rows),
            source="image-features",
        )

    ink = warning("img-ink", "constant", [["medium"], ["medium"]])
    assert feature_warning_chance(ink) == pytest.approx((694 / 1003) ** 6)
    assert feature_warning_grade(ink) == "low"
    tall = warning("img-aspect", "progression", [["tall", "square", "wide"]] * 2)
    assert feature_warning_grade(tall) == "medium"
    quarter = warning("img-rotation", "constant", [["90"], ["90"]])
    assert feature_warning_grade(quarter) == "high"
    # a warning of another source (a shifted reading) is never graded down
    shifted = Finding(
        "shifted-reading",
        severity=severity_of_source("shifted-reading"),
        answer=1,
        rule="constant",
        concept="ink",
        rows=(("low",), ("low",)),
        source="shifted-reading",
    )
    assert feature_warning_grade(shifted) == "high"


def test_threshold_and_dismissal_decide_what_flags(studio: Studio) -> None:
    from studio.curation import feature_warning_grade

    curator = Curator(studio)
    results, verdicts = generate(studio)
    [set_id] = curator.import_results("small", PARAMS, results, verdicts)
    stored = {s.puzzle_id: s for s in studio.project.stored_puzzles(set_id)}
    warned = [c for c in curator.puzzles() if c.warnings]
    assert warned, "the split has image-feature warnings"
    # stored: every puzzle with a warning is flagged; shown: only those with a high one
    assert all(stored[c.id].status == "flagged" for c in warned)
    assert curator.feature_warning_min == "high"
    for c in warned:
        high = any(feature_warning_grade(w) == "high" for w in c.warnings)
        assert c.status == ("flagged" if high or c.findings else "draft")
    low_flagged = curator.flagged_share()
    curator.set_feature_warning_min("low")
    all_flagged = curator.flagged_share()
    assert all_flagged == (len(warned), 60)
    assert low_flagged[0] < all_flagged[0]
    assert {r.id for r in curator.summaries(PuzzleFilter(status="flagged"))} == {
        c.id for c in warned
    }

    # dismiss the most frequent feature for this set: undoable, stored in the project
    feature = max(
        {w.concept for c in warned for w in c.warnings},
        key=lambda f: sum(1 for c in warned if any(w.concept == f for w in c.warnings)),
    )
    seen: list[PuzzlesChanged] = []
    studio.events.puzzles_changed.connect(seen.append)
    curator.dismiss_feature(feature)
    assert curator.dismissed_features() == {feature}
    assert studio.undo_stack.undo_label == f"Dismiss {feature} warnings in “small”"
    assert seen and set(seen[-1].ids) == {
        c.id for c in warned if any(w.concept == feature for w in c.warnings)
    }
    only_feature = [c for c in warned if {w.concept for w in c.warnings} == {feature}]
    assert only_feature
    for c in only_feature:
        assert curator.puzzle(c.id).status == "draft"
        [row] = curator.summaries(ids=[c.id])
        assert row.warnings == 0 and row.status == "draft"
        assert {why for _, why in curator.quiet_warnings(c.id)} == {"dismissed"}
    assert curator.flagged_share()[0] == all_flagged[0] - len(only_feature)
    # the stored rows keep every warning
    assert studio.project.stored_puzzle(set_id, only_feature[0].id).status == "flagged"
    # approved from what the board shows ("draft"): the history says so beside the stored
    # "flagged" (issue 28: an export recorded only "old: flagged")
    target = only_feature[0].id
    curator.set_status([target], "approved")
    [event] = [e for e in studio.project.puzzle_events(set_id, target) if e.kind == "status"]
    assert (event.detail["old"], event.detail["shown"], event.detail["new"]) == (
        "flagged",
        "draft",
        "approved",
    )
    studio.undo_stack.undo()
    studio.undo_stack.undo()
    assert curator.dismissed_features() == frozenset()
    assert curator.flagged_share() == all_flagged
    studio.undo_stack.redo()
    studio.close()
    reopened = Studio(Project.open(studio.project.path), author="cur")
    try:
        assert Curator(reopened).dismissed_features() == {feature}
    finally:
        reopened.close()


def test_approve_clean_is_one_step_and_skips_errors_and_decisions(curated: Curator) -> None:
    studio = curated.studio
    pid, _, _ = plant_flag(curated)  # an error
    ids = [c.id for c in curated.puzzles()]
    rejected = next(i for i in ids if i != pid)
    curated.set_status([rejected], "rejected")
    before = studio.undo_stack.undo_label
    flagged = set(curated.flagged_among(ids))  # left to decide one by one (issue 28)
    done = curated.approve_clean(ids)
    assert pid not in done and rejected not in done
    assert len(done) == len(ids) - len(flagged | {pid, rejected})
    statuses = {c.id: c.status for c in curated.puzzles()}
    assert all(statuses[i] == "approved" for i in done)
    assert statuses[rejected] == "rejected" and statuses[pid] == "flagged"
    assert studio.undo_stack.undo_label == f"Approve {len(done)} puzzles"
    studio.undo_stack.undo()  # one step undoes them all
    assert studio.undo_stack.undo_label == before
    assert not [c for c in curated.puzzles() if c.status == "approved"]
    assert curated.approve_clean([pid]) == []


def test_a_second_curator_s_decision_is_not_overwritten(curated: Curator) -> None:
    """Two curators on one project (two studios on the file here; a lab database the same):
    one decides from what the board showed, the other had decided meanwhile — refused, not
    overwritten; and an undo after the other's decision is refused too."""
    from studio.store.project import PuzzleConflict

    studio = curated.studio
    other = Studio(Project.open(studio.project.target), author="bob")
    try:
        bob = Curator(other)
        bob.open_set(curated.set_id)
        first, second = (c.id for c in curated.puzzles(PuzzleFilter(status="draft"))[:2])
        shown = {first: "draft"}  # what cur's board shows
        bob.set_status([first], "rejected", "two answers fit")
        with pytest.raises(PuzzleConflict, match=f"puzzle {first} was changed by bob"):
            curated.set_status([first], "approved", seen=shown)
        assert curated.puzzle(first).status == "rejected"
        assert studio.undo_stack.undo_label != f"Approve puzzle {first}"  # nothing pushed
        curated.set_status([second], "approved", seen={second: "draft"})
        bob.set_status([second], "flagged")
        with pytest.raises(PuzzleConflict, match="changed by bob"):
            studio.undo_stack.undo()  # cur's undo would silently drop bob's flag
        assert studio.project.stored_puzzle(curated.set_id, second).status == "flagged"
        # a status the board shows differently from the stored one (a flag whose warnings do
        # not count reads "draft") is no conflict
        shown_now = curated.puzzle(second).status
        curated.set_status([second], "rejected", seen={second: shown_now})
        assert curated.puzzle(second).status == "rejected"
    finally:
        other.close()


def test_bulk_approval_leaves_every_flagged_puzzle_to_the_curator(curated: Curator) -> None:
    """Issue 28: Ctrl+Shift+A approved flagged puzzles (a warning, no error) without asking.
    Bulk approval now approves only clean drafts and names the flagged ones it left."""
    curated.set_feature_warning_min("low")  # every warning flags
    ids = [c.id for c in curated.puzzles()]
    warned = [r.id for r in curated.summaries(ids=ids) if r.status == "flagged" and not r.errors]
    assert warned, "the fixture's split has puzzles flagged by a warning alone"
    done = curated.approve_clean(ids)
    assert done and not set(warned) & set(done)
    assert set(curated.flagged_among(ids)) == set(warned)
    statuses = {c.id: c.status for c in curated.puzzles()}
    assert all(statuses[i] == "flagged" for i in warned)


def test_warnings_are_listed_by_grade_high_first() -> None:
    """Issue 28: the sheet listed a low-grade image-feature warning above the high-grade one
    that flagged the puzzle, and Replace foil named and chose the low one's foil."""
    from studio.curation import CuratedPuzzle, feature_warning_grade
    from tests.graded_findings import graded_puzzle, high_warning, low_warning

    puzzle, low, high = graded_puzzle(), low_warning(1), high_warning(2)
    assert (feature_warning_grade(low), feature_warning_grade(high)) == ("low", "high")
    cp = CuratedPuzzle(1, puzzle, "flagged", "", (), (low, high), "", "")
    assert cp.problems == (high, low)


def test_the_board_s_glyph_generation_runs_without_qt(studio: Studio, tmp_path: Path) -> None:
    """Generation for the board is the curator's (issue 27: the GUI's job assembled it):
    generate, vet and prepare from the one request every family takes, with progress in
    words and a stop that stops it; asked for a folder, it writes the split there too."""
    import threading

    from studio.generate.request import GenerationRequest

    said: list[str] = []
    request = GenerationRequest(
        "glyph-pmp", PARAMS.n, PARAMS.seed, options={"sampling": "balanced"}, name="small"
    )
    got = Curator.generate_set(
        studio, request, threading.RLock(), lambda text, d, t: said.append(text)
    )
    prepared = got.prepared
    assert prepared.total == PARAMS.n and prepared.name == "small"
    assert got.annotations is not None and got.annotations.by_glyph and got.coverage
    assert got.lines == []  # no folder asked for
    assert said[0] == "Reading annotations and renders…" and said[-1] == "Preparing the import…"
    assert "Vetting puzzles…" in said
    curator = Curator(studio)
    [sid] = curator.import_prepared(prepared)
    assert curator.project.puzzle_set(sid).count == PARAMS.n
    with pytest.raises(splits.Cancelled):
        Curator.generate_set(studio, request, threading.RLock(), should_stop=lambda: True)
    folder = tmp_path / "written"
    again = Curator.generate_set(studio, replace(request, out_dir=str(folder)), threading.RLock())
    assert (folder / "split.json").is_file()
    assert again.lines[0].startswith(f"wrote {PARAMS.n} puzzles to {folder}")
    assert splits.vet_dir(folder)  # the folder vets like one ``generate`` wrote
