"""A pilot exported from a real split runs in a real browser (issue 29): a scripted participant
answers a known pattern by key presses, the page saves jsPsych's CSV and JSON, and both come
back as exactly that pattern's accuracies. The folder needs no network and holds the same plan
for PsychoPy."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from studio.cli import main
from studio.core.errors import StudioError
from studio.pilot.export import PilotOptions, export_pilot
from studio.pilot.results import analyse_results, result_lines
from studio.pilot.store import import_results
from studio.store.project import Project
from tests.pilot.browser import require_browser, run_participant

OPTIONS = PilotOptions(
    participants=5, per_participant=8, responses_per_item=1, min_median_rt_ms=0.0, seed=2
)


@pytest.fixture(scope="module")
def pilot(glyph_split: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pilot") / "study"
    export_pilot(glyph_split, out, OPTIONS)
    return out


def test_the_folder_runs_from_disk_and_holds_the_plan_for_psychopy(pilot: Path) -> None:
    doc = json.loads((pilot / "pilot.json").read_text())
    lists = doc["plan"]["lists"]
    assert len(lists) == 5 and all(len(ts) == 8 + 2 for ts in lists)  # plus 2 attention checks
    piloted = {t["item"] for ts in lists for t in ts} - set(doc["catch_ids"])
    assert all(doc["items"][i]["part"] in ("val", "test") for i in piloted)
    assert all(doc["items"][p["item"]]["part"] == "train" for p in doc["practice"])
    for text_file in ("index.html", "experiment.js", "pilot.js"):
        text = (pilot / text_file).read_text()
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text), text_file  # no CDN
    for name in re.findall(r'src="([^"]+)"', (pilot / "index.html").read_text()):
        assert (pilot / name).is_file(), name
    with (pilot / "psychopy" / "conditions.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == sum(len(ts) for ts in lists)
    first = rows[0]
    trial = lists[0][0]
    assert first["puzzle_id"] == trial["item"] and first["pilot_id"] == doc["pilot_id"]
    key = doc["items"][trial["item"]]["key"]
    assert int(first["key_position"]) == trial["order"].index(key) + 1
    assert (pilot / first["answer_1"]).is_file() and (pilot / first["context_0"]).is_file()


def test_a_scripted_participant_in_chromium_gives_back_its_pattern(
    pilot: Path, tmp_path: Path
) -> None:
    require_browser()

    def pattern(kind: str, position: int, _puzzle: str) -> bool:
        return kind != "test" or position % 3 != 1  # every third test puzzle wrong

    ran = run_participant(pilot, 1, "P07", tmp_path / "dl", pattern)
    answered = ran["answered"]
    tests = [(p, right) for kind, p, right in answered if kind == "test"]
    assert len(tests) == 8 and sum(kind == "catch" for kind, _, _ in answered) == 2
    for results in (ran["csv"], ran["json"]):
        found = analyse_results(pilot, [results])
        assert found["excluded"] == {} and found["responses"] == 8
        for puzzle, right in tests:
            assert found["puzzles"][puzzle]["accuracy"] == (1.0 if right else 0.0), puzzle
            assert found["puzzles"][puzzle]["median_rt_ms"] > 0
        assert found["accuracy"] == sum(r for _, r in tests) / 8
    # the saved data carry the pilot id on every trial and the answers' screen order
    with Path(str(ran["csv"])).open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert all(r["pilot_id"] for r in rows)
    shown = [r for r in rows if r["kind"] == "test"]
    assert all(len(r["answer_order"].split()) >= 2 for r in shown)


def test_failing_the_practice_three_times_ends_the_session(pilot: Path, tmp_path: Path) -> None:
    require_browser()
    ran = run_participant(pilot, 2, "P09", tmp_path / "dl", lambda kind, *_: kind != "practice")
    assert [kind for kind, _, _ in ran["answered"]] == ["practice"] * 3
    found = analyse_results(pilot, [ran["csv"]])
    assert found["excluded"] == {"failed-practice": 1} and found["responses"] == 0


def test_failures_count_per_practice_puzzle(pilot: Path, tmp_path: Path) -> None:
    """KiVA's rule is per practice trial: two failures at each of two practice puzzles (four
    in all) do not end the session; a third at one would."""
    require_browser()
    tries: dict[str, int] = {}

    def pattern(kind: str, _position: int, puzzle: str) -> bool:
        if kind != "practice":
            return True
        tries[puzzle] = tries.get(puzzle, 0) + 1
        return tries[puzzle] > 2

    ran = run_participant(pilot, 3, "P10", tmp_path / "dl", pattern)
    practice = [kind for kind, _, _ in ran["answered"]].count("practice")
    assert practice == 6 and len(tries) == 2
    found = analyse_results(pilot, [ran["csv"]])
    assert found["excluded"] == {} and found["responses"] > 0


def test_export_refuses_what_it_cannot_do(glyph_split: Path, tmp_path: Path, capsys) -> None:
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    with pytest.raises(StudioError, match="is not an empty folder"):
        export_pilot(glyph_split, taken, OPTIONS)
    assert (taken / "notes.txt").read_text() == "mine"
    with pytest.raises(StudioError, match="is not a split folder"):
        export_pilot(tmp_path / "nowhere", tmp_path / "o1", OPTIONS)
    numbers = ["--participants", "2", "--per-participant", "3", "--responses-per-item", "2"]
    code = main(["-q", "pilot", "export", str(glyph_split), str(tmp_path / "o2"), *numbers])
    assert code == 2
    err = capsys.readouterr().err
    assert "--participants 2 × --per-participant 3 = 6 responses, fewer than" in err
    assert not (tmp_path / "o2").exists()


def test_a_kiva_split_pilots_its_extrapolation_question(tmp_path: Path) -> None:
    """Any family with a context and pictured answers pilots: KiVA shows the training pair and
    the new object, and asks in its own words."""
    split = tmp_path / "kiva"
    assert main(["-q", "generate", str(split), "--family", "kiva", "--n", "12", "--seed", "1"]) == 0
    out = tmp_path / "pilot"
    opts = PilotOptions(
        participants=2, per_participant=2, responses_per_item=1, practice=1, catch=1
    )
    export_pilot(split, out, opts)
    doc = json.loads((out / "pilot.json").read_text())
    assert doc["family"] == "kiva"
    item = next(i for i in doc["items"] if i not in doc["catch_ids"])
    page = (out / "pilot.js").read_text()
    assert "changed in the same way" in page
    pics = sorted(p.name for p in (out / "img" / item).iterdir())
    assert pics == ["a0.png", "a1.png", "a2.png", "c0-0.png", "c0-1.png", "c1-0.png"]


def test_kiva_asks_what_and_how_in_words_and_the_analysis_scores_them(
    tmp_path: Path, ua_schema
) -> None:
    """KiVA's three questions (§3.1): "what changed" and "how" in words before the pictured
    extrapolation. A scripted participant in Chromium answers every "what" right and every
    "how" wrong; the analysis, the PsychoPy file and the import say so."""
    require_browser()
    split = tmp_path / "kiva"
    assert main(["-q", "generate", str(split), "--family", "kiva", "--n", "14", "--seed", "2",
                 "--size", "64"]) == 0  # fmt: skip
    out = tmp_path / "pilot"
    opts = PilotOptions(
        participants=3, per_participant=3, responses_per_item=1, practice=1, catch=1,
        min_median_rt_ms=0.0,
    )  # fmt: skip
    export_pilot(split, out, opts)
    doc = json.loads((out / "pilot.json").read_text())
    piloted = [i for i in doc["plan"]["lists"][0] if i["item"] not in doc["catch_ids"]]
    assert all(set(doc["items"][t["item"]]["questions"]) == {"what", "how"} for t in piloted)
    with (out / "psychopy" / "conditions.csv").open() as f:
        rows = list(csv.DictReader(f))
    test_row = next(r for r in rows if r["kind"] == "test")
    assert "doesn't apply" in test_row["what_options"] and test_row["how_key_position"]

    def pattern(kind: str, _position: int, _puzzle: str) -> bool:
        return kind != "question:how"

    run = run_participant(out, 0, "p1", tmp_path / "dl", pattern)
    kinds = [k for k, _, _ in run["answered"]]
    assert kinds.count("question:what") == kinds.count("question:how") == len(piloted)
    found = analyse_results(out, [run["csv"]], fail_below=0.0)
    assert found["questions"]["what"]["accuracy"] == 1.0
    assert found["questions"]["what"]["n"] == len(piloted)
    assert found["questions"]["how"]["accuracy"] == 0.0
    assert found["accuracy"] == 1.0  # the pictured question, answered right
    lines = result_lines(found)
    assert any(line.startswith("question 'how' (in words): 0.000") for line in lines)
    assert all(set(found["puzzles"][t["item"]]["questions"]) == {"what", "how"} for t in piloted)
    # stored with the pictured answers (the board's People column reads only those)
    project = tmp_path / "p.studio"
    Project.create(project, ua_schema).close()
    with Project.open(project) as p:
        stored = import_results(p, out, [run["csv"]], None, "curator")
    pictured = sum(1 for k in kinds if not k.startswith("question:"))
    assert stored["stored_answers"] == pictured + 2 * len(piloted)


def test_hostile_ids_are_refused_and_no_cell_is_a_formula(
    glyph_split: Path, tmp_path: Path
) -> None:
    """Review of issue 29: a split's puzzle id named files outside the export and ran script
    in the page; a rule reached the PsychoPy file as a formula cell."""
    from studio.pilot.export import _cell

    split = tmp_path / "split"
    shutil.copytree(glyph_split, split)
    lines = (split / "puzzles.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    old = first["id"]
    first["id"] = '../../x" onerror="alert(1)'
    lines[0] = json.dumps(first)
    (split / "puzzles.jsonl").write_text("\n".join(lines) + "\n")
    (split / "npz" / f"{old}.npz").rename(split / "npz" / f"{first['id'].replace('/', '_')}.npz")
    with pytest.raises(StudioError, match="is not a plain name"):
        export_pilot(split, tmp_path / "out", OPTIONS)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    assert _cell("=HYPERLINK(1)") == "'=HYPERLINK(1)" and _cell("dist3/closure") == "dist3/closure"


def test_practice_never_shows_a_piloted_puzzle(glyph_split: Path, tmp_path: Path) -> None:
    opts = PilotOptions(participants=5, per_participant=8, responses_per_item=1,
                        parts=("val", "test"), practice=3)  # fmt: skip
    export_pilot(glyph_split, tmp_path / "p", opts)
    doc = json.loads((tmp_path / "p" / "pilot.json").read_text())
    shown = {t["item"] for ts in doc["plan"]["lists"] for t in ts}
    practice = {p["item"] for p in doc["practice"]}
    assert len(practice) == 3 and not practice & shown
    assert "pseudonym_key" in doc and len(doc["pseudonym_key"]) == 32


def test_a_record_s_questions_in_words_are_checked(tmp_path: Path) -> None:
    """A hand-edited record: a question id twice (answers would be scored against the other's
    key), a key that is no option, ``true`` as a key: refused, naming the file."""
    from studio.pilot.source import text_questions

    where = tmp_path / "items.jsonl"
    q = {"id": "what", "prompt": "What changed?", "options": ["size", "colour"], "key": 1}
    assert [x["id"] for x in text_questions({"questions": [q]}, where)] == ["what"]
    for bad in ([q, q], [{**q, "key": 2}], [{**q, "key": True}], [{**q, "id": "../x"}]):
        with pytest.raises(StudioError, match="no plain id of its own or no key") as e:
            text_questions({"id": "k1", "questions": bad}, where)
        assert str(where) in str(e.value)
    # a pictured question (the extrapolation) is not one asked in words
    assert text_questions({"questions": [{**q, "images": ["option-0"]}]}, where) == []
