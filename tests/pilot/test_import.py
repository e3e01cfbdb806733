"""A pilot's results into the project (issue 29): a curated set exported, piloted, its
results imported for the set; the project then holds each puzzle's human accuracy, under
pseudonyms, and refuses a second import of the same people or a set the pilot did not show."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from studio.cli import main
from studio.pilot.export import PilotOptions, export_pilot
from studio.pilot.results import analyse_results
from studio.store.project import Project
from tests.pilot.test_results import cohort, read_run
from tests.publish.curated import CuratedProject, build_curated_project


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> CuratedProject:
    return build_curated_project(tmp_path_factory.mktemp("pilot-curated") / "c.studio")


def test_a_curated_set_s_pilot_comes_back_onto_its_puzzles(
    curated: CuratedProject, tmp_path: Path, capsys
) -> None:
    project = tmp_path / "work.studio"
    shutil.copy(curated.path, project)
    published = tmp_path / "published"
    assert main(["-q", "export-set", str(project), "1", str(published), "--status", "any"]) == 0
    pilot = tmp_path / "pilot"
    opts = PilotOptions(participants=30, per_participant=10, responses_per_item=4, seed=3,
                        parts=("train", "val", "test"))  # fmt: skip
    export_pilot(published, pilot, opts)
    doc = json.loads((pilot / "pilot.json").read_text())
    piloted = sorted({t["item"] for ts in doc["plan"]["lists"] for t in ts} - set(doc["catch_ids"]))
    files, truth = cohort(pilot, tmp_path, piloted[0], piloted[1])
    capsys.readouterr()
    args = ["-q", "pilot", "import", str(project), str(pilot), *map(str, files), "--set", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    rows = sum(len(read_run(f)) for f in files)  # every answer, attention checks included
    assert out.startswith(f"stored {rows} answers")
    assert "of 30 participants of pilot" in out and "for puzzle set 1" in out
    with Project.open(project) as p:
        human = p.human_accuracy(1)
    assert {k: round(a / n, 4) for k, (a, n) in human.items()} == {
        k: round(v, 4) for k, v in truth.items()
    }
    # the same people again: refused, nothing added
    assert main(args) == 2
    assert "already in the project: each run is imported once" in capsys.readouterr().err
    with Project.open(project) as p:
        assert p.human_accuracy(1) == human
    # a set that does not hold the pilot's puzzles
    assert main([*args[:-2], "--set", "7"]) == 2
    assert "--set 7: the project has no puzzle set 7" in capsys.readouterr().err
    assert analyse_results(pilot, files)["participants"] == 30
    # the dataset card sets people beside the models
    card_dir = tmp_path / "published-again"
    assert main(["-q", "export-set", str(project), "1", str(card_dir), "--status", "any"]) == 0
    card = (card_dir / "README.md").read_text()
    right = sum(a for a, _ in human.values())
    n = sum(n for _, n in human.values())
    assert "## Human baseline" in card
    assert f"People chose the key in {right / n:.1%} of {n} answers to {len(human)} of" in card
    assert "30 participants kept and 0 excluded" in card and doc["pilot_id"] in card
    # the pilot's plan, as the card's readers need it to weigh the figures
    assert (
        f"- Pilot `{doc['pilot_id']}`: 30 lists of 10 puzzles (at least 4 answers asked per "
        "puzzle), no practice puzzles, 2 attention checks per list, a median response time "
        "under 1000 ms excluded; 30 kept, 0 excluded." in card
    )
    assert "| family | answers | puzzles | accuracy | 95% CI |" in card
    croissant = json.loads((card_dir / "croissant.json").read_text())
    assert (
        f"Human baseline: people chose the key in {right / n:.1%} of {n} answers"
        in (croissant["description"])
    )


def test_the_board_shows_people_and_keeps_what_they_fail_out_of_bulk_approval(
    qtbot, curated: CuratedProject, tmp_path: Path
) -> None:
    """Issue 29 on the board: a People column (the share of answers that chose the key, and
    how many) where the set has pilot answers, red where people fail; Ctrl+Shift+A leaves
    those puzzles to the curator."""
    from PySide6.QtCore import Qt

    from studio.app import Studio
    from studio.curation import Curator
    from studio.gui.board_list import PEOPLE_COL, PEOPLE_FAIL
    from studio.gui.curator_board import CuratorBoard
    from studio.gui.widgets import cell_width
    from studio.store.pilots import StoredAnswer

    project = tmp_path / "board.studio"
    shutil.copy(curated.path, project)
    studio = Studio(Project.open(project), author="alice")
    try:
        probe = Curator(studio)
        probe.open_set(1)
        drafts = [p.id for p in probe.puzzles() if p.status == "draft"]
        hard, easy, torn = drafts[0], drafts[1], drafts[2]
        answers = [StoredAnswer(f"P{k}", "test", hard, 1, k == 0, 2000.0) for k in range(3)]
        answers += [StoredAnswer(f"P{k}", "test", easy, 0, True, 2000.0) for k in range(3)]
        key = probe.puzzle(torn).puzzle.key  # 4 of 6 chose the key, 2 a foil: split, not failed
        foil = (key + 1) % len(probe.puzzle(torn).puzzle.answers)
        answers += [
            StoredAnswer(f"P{k}", "test", torn, key if k < 4 else foil, k < 4, 2000.0)
            for k in range(6)
        ]
        people = {f"P{k}": ("", f"P{k}.csv") for k in range(6)}
        studio.project.add_pilot_results({"pilot_id": "b0a4d"}, 1, people, answers, "alice")
        board = CuratorBoard(studio)
        qtbot.addWidget(board)
        board.resize(1280, 800)
        board.show()
        qtbot.waitExposed(board)
        curator = board.curator
        if curator.set_id != 1:
            curator.open_set(1)
            board.reload()
        model = board.model
        row_hard, row_easy = model.row_of(hard), model.row_of(easy)
        assert not board.table.isColumnHidden(PEOPLE_COL)
        # seen at 1280 px, whole: not off the list's right edge, not elided (review)
        table = board.table
        right = table.columnViewportPosition(PEOPLE_COL) + table.columnWidth(PEOPLE_COL)
        assert right <= table.viewport().width(), (right, table.viewport().width())
        assert table.columnWidth(PEOPLE_COL) >= cell_width(table, ["100% (3)", "People"])
        assert model.index(row_hard, PEOPLE_COL).data() == "33% (3)"
        assert model.index(row_easy, PEOPLE_COL).data() == "100% (3)"
        assert model.index(row_hard, PEOPLE_COL).data(Qt.ItemDataRole.ForegroundRole) == PEOPLE_FAIL
        assert "people fail it" in model.index(row_hard, 0).data(Qt.ItemDataRole.ToolTipRole)
        # the sheet's choice bars: how many chose each answer
        board.table.setCurrentIndex(model.index(row_hard, 0))
        qtbot.waitUntil(lambda: bool(board.sheet.choice_texts()), timeout=3000)
        texts = board.sheet.choice_texts()
        assert texts[1] == "3 of 3" and all(t == "0 of 3" for i, t in enumerate(texts) if i != 1)
        board.sheet.grab().save(str(tmp_path / "sheet-choices.png"))
        # the human flags filter the list
        # (the hard one's people all chose answer 2: split as well as failed)
        assert curator.people_fail() == [hard] and curator.people_split() == sorted([hard, torn])
        for key_, shown in (("people-fail", [hard]), ("people-split", sorted([hard, torn]))):
            board.warning_combo.setCurrentIndex(board.warning_combo.findData(key_))
            assert sorted(model.puzzle(r).id for r in range(model.rowCount())) == shown
        tip = model.index(model.row_of(torn), 0).data(Qt.ItemDataRole.ToolTipRole)
        assert "People: 4 of 6 answers chose the key\n" in tip + "\n"
        assert "People split between the key and a foil" in tip and "people fail" not in tip
        board.warning_combo.setCurrentIndex(board.warning_combo.findData(""))
        model.sort(PEOPLE_COL)  # by accuracy, not as text ("100% (3)" < "33% (3)")
        assert model.row_of(hard) < model.row_of(easy)
        board.table.clearSelection()
        approved = board.approve_clean()
        assert easy in approved and hard not in approved
        assert curator.puzzle(hard).status == "draft"
        assert board.wait_for_stats()  # its background work done before the project closes
    finally:
        studio.close()


def test_puzzles_menu_imports_a_pilot_for_the_open_set(
    qtbot, curated: CuratedProject, tmp_path: Path
) -> None:
    """Puzzles ▸ Import pilot results… (Ctrl+Shift+P) does what `pilot import --set` does, for
    the board's open set, and the People column appears."""
    from PySide6.QtCore import Qt

    from studio.app import Studio
    from studio.gui.board_list import PEOPLE_COL
    from studio.gui.main_window import MainWindow
    from studio.gui.settings import StudioSettings

    project = tmp_path / "menu.studio"
    shutil.copy(curated.path, project)
    published = tmp_path / "published"
    assert main(["-q", "export-set", str(project), "1", str(published), "--status", "any"]) == 0
    pilot = tmp_path / "pilot"
    opts = PilotOptions(participants=6, per_participant=10, responses_per_item=1, seed=4,
                        parts=("train", "val", "test"))  # fmt: skip
    export_pilot(published, pilot, opts)
    files, truth = cohort(pilot, tmp_path, "none", "none")
    studio = Studio(Project.open(project), author="alice")
    try:
        window = MainWindow(studio, StudioSettings(str(tmp_path / "settings.ini")))
        qtbot.addWidget(window)
        window.resize(1280, 800)
        window.show()
        qtbot.waitExposed(window)
        window.show_board()
        if window.board.curator.set_id != 1:
            window.board.curator.open_set(1)
            window.board.reload()
        assert window.board.table.isColumnHidden(PEOPLE_COL)
        window.ask_pilot = lambda: (str(pilot), [str(f) for f in files])  # type: ignore[method-assign]
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow, timeout=2000)
        qtbot.keyClick(window.board.table, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier
                       | Qt.KeyboardModifier.ShiftModifier)  # fmt: skip
        qtbot.waitUntil(lambda: not window.board.table.isColumnHidden(PEOPLE_COL), timeout=5000)
        said = window.statusBar().currentMessage()
        assert said.startswith("Stored ") and "of 6 participants (0 excluded)" in said
        assert studio.project.human_accuracy(1).keys() == truth.keys()
    finally:
        studio.close()


def test_a_curated_set_is_piloted_straight_from_the_project(
    curated: CuratedProject, tmp_path: Path, capsys
) -> None:
    """`pilot export PROJECT OUT --set N` (and Puzzles ▸ Pilot study…, the same function)
    pilots the set's drafts without an export-set first; the answers come back onto them."""
    project = tmp_path / "work.studio"
    shutil.copy(curated.path, project)
    pilot = tmp_path / "pilot"
    args = ["-q", "pilot", "export", str(project), str(pilot), "--set", "1",
            "--participants", "30", "--per-participant", "10", "--responses-per-item", "4",
            "--parts", "train,val,test", "--seed", "3"]  # fmt: skip
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "piloting set 1" in out and "(any puzzles; 0 left out" in out
    doc = json.loads((pilot / "pilot.json").read_text())
    assert doc["source"].endswith("(any puzzles)") and "set 1" in doc["source"]
    with Project.open(project) as p:
        ids = {s.puzzle_id for s in p.stored_puzzles(1)}
    piloted = sorted({t["item"] for ts in doc["plan"]["lists"] for t in ts} - set(doc["catch_ids"]))
    assert set(piloted) <= ids and len(piloted) == len(ids) - len(doc["practice"])
    files, truth = cohort(pilot, tmp_path, piloted[0], piloted[1])
    assert main(["-q", "pilot", "import", str(project), str(pilot), *map(str, files),
                 "--set", "1"]) == 0  # fmt: skip
    with Project.open(project) as p:
        human = p.human_accuracy(1)
    assert {k: round(a / n, 4) for k, (a, n) in human.items()} == {
        k: round(v, 4) for k, v in truth.items()
    }
    # a folder that is not empty, a set the project lacks: refused before any work
    capsys.readouterr()
    assert main([*args[:4], str(pilot), *args[5:]]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert main([*args[:4], str(tmp_path / "none"), "--set", "9"]) == 2
    assert "the project has no puzzle set '9'" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_the_card_sets_people_beside_every_model_per_rule(
    curated: CuratedProject, tmp_path: Path, capsys
) -> None:
    """UA's Tables 1-4: per family, rule and concept, each baseline model's accuracy and
    people's, in one table of the dataset card (a real baseline job, the answers-only probes,
    and a simulated cohort's pilot)."""
    from studio.baselines.job import run_job
    from studio.worker.context import LocalContext

    project = tmp_path / "work.studio"
    shutil.copy(curated.path, project)
    params = {
        "source": {"kind": "project-set", "project": str(project), "set_id": 1},
        "models": ["probe-tags", "probe-image"],
        "seeds": 1,
        "device": "cpu",
    }
    with Project.open(project) as p:
        job = p.jobs.submit("baseline", params)
        assert p.jobs.claim(job, pid=1)
        result = run_job(LocalContext(params, work_dir=tmp_path / "job"))
        assert p.jobs.finish(job, "done", result=result, pid=1)
    pilot = tmp_path / "pilot"
    opts = PilotOptions(participants=30, per_participant=10, responses_per_item=4, seed=3,
                        parts=("train", "val", "test"))  # fmt: skip
    published = tmp_path / "published"
    assert main(["-q", "export-set", str(project), "1", str(published), "--status", "any"]) == 0
    export_pilot(published, pilot, opts)
    doc = json.loads((pilot / "pilot.json").read_text())
    piloted = sorted({t["item"] for ts in doc["plan"]["lists"] for t in ts} - set(doc["catch_ids"]))
    files, _ = cohort(pilot, tmp_path, piloted[0], piloted[1])
    assert main(["-q", "pilot", "import", str(project), str(pilot), *map(str, files),
                 "--set", "1"]) == 0  # fmt: skip
    card_dir = tmp_path / "card"
    assert main(["-q", "export-set", str(project), "1", str(card_dir), "--status", "any"]) == 0
    card = (card_dir / "README.md").read_text()
    assert "## People beside the models" in card
    section = card.split("## People beside the models", 1)[1].split("\n## ", 1)[0]
    assert f"baseline job {job}" in section
    assert "| rule | probe-image | probe-tags | people (answers) |" in section
    with Project.open(project) as p:
        human = p.human_accuracy(1)
        rules = {s.puzzle_id: s.rule for s in p.puzzle_summaries(1)}
    per_rule: dict[str, list[int]] = {}
    for pid, (right, n) in human.items():
        got = per_rule.setdefault(rules[pid], [0, 0])
        got[0] += right
        got[1] += n
    tags = result["models"]["probe-tags"]["groups"]["rule"]
    for rule, (right, n) in per_rule.items():
        row = next(line for line in section.splitlines() if line.startswith(f"| {rule} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        # the job scores its evaluation part: a rule with no puzzle there has no model figure
        assert cells[2] == (f"{tags[rule]['accuracy']:.3f}" if rule in tags else "—")
        assert cells[3] == f"{right / n:.3f} ({n})"


def test_a_file_put_in_the_folder_meanwhile_survives(
    curated: CuratedProject, tmp_path: Path
) -> None:
    """Review: the pilot was written into the folder and, on an error, everything there was
    removed — a file someone saved there meanwhile too. Now it is written beside the folder
    and moved in whole, which a file there refuses; nothing of the work stays behind."""
    from studio.app import Studio
    from studio.core.errors import StudioError
    from studio.pilot.sets import pilot_set

    project = tmp_path / "work.studio"
    shutil.copy(curated.path, project)
    out = tmp_path / "deep" / "er" / "pilot"
    opts = PilotOptions(participants=30, per_participant=10, responses_per_item=2,
                        parts=("val", "test"))  # fmt: skip

    def meanwhile(done: int, total: int) -> None:
        if done == 1:  # the user saves notes into the chosen folder while pictures are written
            out.mkdir(parents=True, exist_ok=True)
            (out / "notes.txt").write_text("mine")

    studio = Studio(Project.open(project), author="eve")
    try:
        with pytest.raises(StudioError, match="no longer new or empty"):
            pilot_set(studio, 1, out, opts, progress=meanwhile)
        assert [p.name for p in out.iterdir()] == ["notes.txt"]
        assert (out / "notes.txt").read_text() == "mine"
        assert [p.name for p in out.parent.iterdir()] == ["pilot"]  # no work folder left
        # a cancel: nothing written, and the folders made for it go too
        other = tmp_path / "new" / "pilot"
        from studio.splits import Cancelled

        with pytest.raises(Cancelled):
            pilot_set(studio, 1, other, opts, should_stop=lambda: True)
        assert not (tmp_path / "new").exists()
        # and then a clean run writes it whole
        summary = pilot_set(studio, 1, other, opts)
        assert summary["out_dir"] == str(other) and (other / "index.html").is_file()
        assert [p.name for p in other.parent.iterdir()] == ["pilot"]
        # others in the lab read it: the folder follows the umask (its work folder was 0700)
        from studio.core.fileio import current_umask

        assert other.stat().st_mode & 0o777 == 0o777 & ~current_umask()
        assert (other / "pilot.json").stat().st_mode & 0o777 == 0o666 & ~current_umask()
    finally:
        studio.close()
