"""`generate` and `vet`: a real project from the UA annotations, real renders, real splits."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from pathlib import Path

import pytest

from studio.cli import EXIT_USER_ERROR, main
from studio.core.annotations import read_annotation_csv
from studio.core.puzzle import read_jsonl, write_jsonl
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex

GEN = ["--n", "150", "--seed", "5", "--sampling", "balanced"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, ua_csv: Path) -> str:
    path = str(tmp_path_factory.mktemp("cli-project") / "ua.studio")
    assert main(["-q", "init", path]) == 0
    assert main(["-q", "import-annotations", path, str(ua_csv), "--render"]) == 0
    return path


@pytest.fixture(scope="module")
def split(project: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli-split") / "s"
    assert main(["-q", "generate", project, str(out), *GEN]) == 0
    return out


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_generate_twice_gives_identical_split_dirs(
    project: str, split: Path, tmp_path: Path, capsys
) -> None:
    code, out, _ = run(capsys, "generate", project, str(tmp_path / "again"), *GEN)
    assert code == 0
    assert "wrote 150 puzzles" in out and "150 valid, 0 invalid" in out
    first, second = files_of(split), files_of(tmp_path / "again")
    assert len(first) == 2 * 150 + 5
    assert first.keys() == second.keys()
    assert [n for n in first if first[n] != second[n]] == []


def test_vet_json_on_a_good_split(split: Path, project: str, capsys) -> None:
    code, out, _ = run(capsys, "vet", str(split), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["puzzles"] == 150 and doc["valid"] == 150 and doc["invalid"] == 0
    ids = [p.id for p in read_jsonl(split / "puzzles.jsonl")]
    assert [v["id"] for v in doc["verdicts"]] == ids
    for v in doc["verdicts"]:
        assert set(v) == {"id", "valid", "findings", "warnings"}
        assert v["valid"] is True and v["findings"] == []
    # the same verdicts as the report written at generation (warnings from the npz frames)
    report = json.loads((split / "report.json").read_text())
    assert doc["verdicts"] == report["verdicts"]
    code, out, _ = run(capsys, "vet", str(split))
    assert code == 0 and out.startswith("150 puzzles: 150 valid, 0 invalid")
    # against the project's current annotations instead of the split's copy
    code, out, _ = run(capsys, "vet", str(split), "--project", project, "--json")
    assert code == 0 and json.loads(out)["valid"] == 150


def test_vet_finds_a_planted_foil_that_completes_the_rule(
    split: Path, tmp_path: Path, ua_schema: Schema, capsys
) -> None:
    """Edit puzzles.jsonl: a foil replaced by another glyph of the key's folder, which
    completes the intended constant rule: a second right answer."""
    rows = read_annotation_csv(split / "annotations.csv", ua_schema)
    ann = TagIndex.from_tags((r.key, r.concept, r.value) for r in rows)
    puzzles = list(read_jsonl(split / "puzzles.jsonl"))
    index, target, planted = None, None, None
    for i, p in enumerate(puzzles):
        if p.rule != "constant" or p.shift:
            continue
        value = p.values[-1][0]
        used = set(p.all_keys())
        spare = [g for g in ann.folder(p.concept, value) if g not in used]
        if spare:
            index, target, planted = i, p, spare[0]
            break
    assert target is not None and planted is not None
    foil = target.foils[0]
    puzzles[index] = target.with_answer(foil, planted)
    edited = tmp_path / "edited"
    edited.mkdir()
    for name, data in files_of(split).items():
        (edited / name).parent.mkdir(parents=True, exist_ok=True)
        (edited / name).write_bytes(data)
    (edited / "puzzles.jsonl").write_text(write_jsonl(puzzles))

    code, out, _ = run(capsys, "vet", str(edited), "--json", "--no-features")
    assert code == 0  # invalid puzzles are a result, not an error
    doc = json.loads(out)
    assert doc["invalid"] == 1 and doc["valid"] == 149
    [bad] = [v for v in doc["verdicts"] if not v["valid"]]
    assert bad["id"] == target.id
    kinds = {(f["kind"], f["answer"], f["rule"], f["concept"]) for f in bad["findings"]}
    assert ("foil-completes-intended", foil, "constant", target.concept) in kinds
    code, out, _ = run(capsys, "vet", str(edited), "--no-features")
    assert code == 0 and f"{target.id}: INVALID" in out
    assert f"answer {foil + 1} also completes constant over {target.concept}" in out


def test_shortfall_exits_2_naming_the_dry_tuples(project: str, tmp_path: Path, capsys) -> None:
    # no glyph of the UA CSV carries two values of a concept: every union tuple runs dry
    out_dir = tmp_path / "u"
    code, out, err = run(capsys, "generate", project, str(out_dir), "--rules", "union", *GEN)
    assert code == EXIT_USER_ERROR
    assert "only 0 of 105 train puzzles could be made" in err
    assert "union/gestalt/noshift: no glyph carries two values of gestalt" in err
    assert err.count("union/") == err.count("no glyph carries two values")
    assert "Traceback" not in err and out == ""
    assert not (out_dir / "split.json").exists()


def test_bad_arguments_exit_2(project: str, tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "generate", project, str(tmp_path / "k"), "--family", "unicorn")
    assert code == EXIT_USER_ERROR and "no such family" in err and "cube-net" in err
    code, _, err = run(capsys, "generate", str(tmp_path / "k"))
    assert code == EXIT_USER_ERROR and "takes PROJECT OUT_DIR" in err
    code, _, err = run(capsys, "generate", project, str(tmp_path / "k"), "--ratios", "0.7,x")
    assert code == EXIT_USER_ERROR and "--ratios" in err
    code, _, err = run(capsys, "generate", project, str(tmp_path / "k"), "--rules", "spiral")
    assert code == EXIT_USER_ERROR and "--rules 'spiral'" in err and "constant" in err
    code, _, err = run(
        capsys, "generate", str(tmp_path / "k"), "--family", "cube-net", "--level", "2"
    )
    assert code == EXIT_USER_ERROR and "--level is not an option of cube-net" in err
    code, _, err = run(capsys, "generate", str(tmp_path / "k"), "--family", "kiva", "--size", "4")
    assert code == EXIT_USER_ERROR and "--size 4: expected an integer within 8..4096" in err
    code, _, err = run(capsys, "generate", str(tmp_path / "none.studio"), str(tmp_path / "k"))
    assert code == EXIT_USER_ERROR and "none.studio" in err


def test_vet_a_broken_split_dir_exits_2(split: Path, tmp_path: Path, capsys) -> None:
    code, _, err = run(capsys, "vet", str(tmp_path / "nothing"), "--json")
    assert code == EXIT_USER_ERROR and "split folder not found" in err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "split.json").write_bytes((split / "split.json").read_bytes())
    (broken / "puzzles.jsonl").write_text('{"id": "x"}\n')
    code, out, err = run(capsys, "vet", str(broken), "--json")
    assert code == EXIT_USER_ERROR and out == ""
    assert str(broken / "puzzles.jsonl") in err and "line 1" in err and "lacks the field" in err
    (broken / "split.json").write_text("[]")
    code, _, err = run(capsys, "vet", str(broken))
    assert code == EXIT_USER_ERROR and str(broken / "split.json") in err and "damaged" in err


def test_other_layouts_and_options_from_the_cli(project: str, tmp_path: Path, capsys) -> None:
    out_dir = tmp_path / "m"
    code, out, _ = run(
        capsys,
        "generate",
        project,
        str(out_dir),
        "--n",
        "30",
        "--sampling",
        "balanced",
        "--layout",
        "matrix-3x3",
        "--holdout",
        "none",
        "--rules",
        "constant,dist3",
        "--ratios",
        "0.5,0.25,0.25",
        "--folds",
        "2",
    )
    assert code == 0, out
    data = json.loads((out_dir / "split.json").read_text())
    assert data["fold_dirs"] == ["fold-0", "fold-1"]
    assert data["params"]["layout"] == "matrix-3x3" and data["params"]["rules"] == [
        "constant",
        "dist3",
    ]
    assert data["params"]["ratios"] == [0.5, 0.25, 0.25]
    import numpy as np

    first = next(read_jsonl(out_dir / "fold-0" / "puzzles.jsonl"))
    with np.load(out_dir / "fold-0" / "npz" / f"{first.id}.npz") as z:
        assert z["images"].shape == (8 + 4, 80, 80)
    code, out, _ = run(capsys, "vet", str(out_dir), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["puzzles"] == 60 and doc["invalid"] == 0
    assert doc["verdicts"][0]["id"].startswith("fold-0/")


def test_analogy_layout_from_the_cli(project: str, tmp_path: Path, capsys) -> None:
    import numpy as np

    out_dir = tmp_path / "a"
    code, out, _ = run(
        capsys, "generate", project, str(out_dir), "--layout", "analogy", "--n", "20",
        "--sampling", "balanced",
    )  # fmt: skip
    assert code == 0, out
    first = next(read_jsonl(out_dir / "puzzles.jsonl"))
    assert first.layout == "analogy" and len(first.context_keys) == 3
    with np.load(out_dir / "npz" / f"{first.id}.npz") as z:
        assert z["images"].shape == (3 + 4, 80, 80) and int(z["target"]) == first.key
    code, out, _ = run(capsys, "vet", str(out_dir), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["puzzles"] == 20 and doc["invalid"] == 0


def test_generate_again_over_a_split_with_baseline_results(
    split: Path, project: str, tmp_path: Path
) -> None:
    """`baseline` adds baselines/ to a split; generating into that folder again is allowed
    and drops the old results (they describe puzzles that were replaced)."""
    again = tmp_path / "again"
    shutil.copytree(split, again)
    (again / "baselines" / "plots").mkdir(parents=True)
    (again / "baselines" / "report.json").write_text("{}")
    assert main(["-q", "generate", project, str(again), *GEN]) == 0
    assert not (again / "baselines").exists()
    assert files_of(again) == files_of(split)


def test_needs_lists_what_to_tag_and_a_shortfall_points_to_it(
    project: str, tmp_path: Path, capsys
) -> None:
    code, out, _ = run(capsys, "needs", project, "--rules", "constant")
    assert code == 0
    assert "tuple(s) run dry for lack of glyphs" in out
    assert "constant/closure/noshift" in out and "To tag next" in out
    code, out, _ = run(capsys, "needs", project, "--rules", "constant", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["answers"] == 2  # sets of two to four, the default
    asks = {(v["concept"], v["value"]): v["more"] for v in doc["values"]}
    assert asks and all(n > 0 for n in asks.values())
    mendable = [t for t in doc["tuples"] if t["mendable"]]
    assert mendable and all(t["values"] for t in mendable)
    # a split that cannot be made names the dry tuples and says where to look
    code, _, err = run(
        capsys, "generate", project, str(tmp_path / "x"), "--n", "50", "--rules", "union"
    )
    assert code != 0 and "ran dry" in err and f"analogy-studio needs {project}" in err


def test_generate_says_what_each_part_covers_and_warns_when_test_is_narrow(
    project: str, tmp_path: Path, capsys
) -> None:
    """Issue 24: the default hold-out on the shared UA set leaves val and test few tuples (8
    and 9 here, sets of two to four answers); the summary says so per part, and
    --require-coverage refuses a split covering fewer before writing anything."""
    args = ["--n", "300", "--seed", "5"]
    code, out, err = run(capsys, "generate", project, str(tmp_path / "s"), *args)
    assert code == 0
    assert "covered:" in out and "\n  test: " in out and "/60 puzzles," in out
    assert "union" not in err  # not asked for by default: it cannot be built from UA's tags
    # and how far one row alone finds the key, with the tuples furthest over chance
    views_line = r"\n  partial views \(exact solvers; chance \d+%\): the first row alone finds"
    assert re.search(views_line, out)
    # and a view that solves most puzzles from part of the context is a warning, not a line
    assert re.search(r"warning: the first row alone finds the key of \d+% of the puzzles", err)
    code, vetted, _ = run(capsys, "vet", str(tmp_path / "s"))
    assert code == 0 and "partial views (exact solver" in vetted
    code, doc, _ = run(capsys, "vet", str(tmp_path / "s"), "--json")
    views = json.loads(doc)["audit"]["partial_views"]["views"]
    assert views["row1"]["puzzles"] == 300 and 0.0 <= views["row2"]["accuracy"] <= 1.0
    code, out, err = run(capsys, "generate", project, str(tmp_path / "w"), *args, "--rules", "all")
    assert code == 0
    assert "warning: rule union yields no puzzle: union × " in err
    assert "no glyph carries two values of" in err
    code, out, err = run(
        capsys, "generate", project, str(tmp_path / "t"), *args, "--require-coverage", "12"
    )
    assert code == EXIT_USER_ERROR
    assert "covers too little for --require-coverage 12; nothing was written" in err
    assert not (tmp_path / "t").exists()
    code, _, err = run(capsys, "generate", project, str(tmp_path / "u"), "--require-coverage", "0")
    assert code == EXIT_USER_ERROR and "--require-coverage 0: expected at least 1" in err


def test_a_killed_pooled_generate_leaves_no_process_behind(project: str, tmp_path: Path) -> None:
    """Issue 25: kill -9 of a ``generate`` large enough for the process pool left pool
    workers and the forkserver running (10 of 15 kills). Every process of its tree seen
    while it ran must be gone soon after."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    cmd = [sys.executable, "-m", "studio", "-q", "generate", project, str(tmp_path / "big")]
    main_proc = subprocess.Popen(
        [*cmd, "--n", "20000", "--seed", "2", "--workers", "2", "--holdout", "none"],
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and main_proc.poll() is None:
            kids = psutil.Process(main_proc.pid).children(recursive=True)
            seen |= {k.pid for k in kids}
            if len(kids) >= 3:  # the forkserver and at least two pool workers
                time.sleep(0.5)
                seen |= {k.pid for k in psutil.Process(main_proc.pid).children(recursive=True)}
                break
            time.sleep(0.05)
        assert main_proc.poll() is None, "the run ended before its pool was seen"
        assert len(seen) >= 3, seen
        main_proc.send_signal(signal.SIGKILL)
        main_proc.wait(timeout=30)
        left = set(seen)
        deadline = time.monotonic() + 20
        while left and time.monotonic() < deadline:
            left = {p for p in left if psutil.pid_exists(p) and _alive(p)}
            time.sleep(0.1)
        assert not left, [psutil.Process(p).cmdline()[-1][:80] for p in left if _alive(p)]
    finally:
        main_proc.kill()
        for pid in seen:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
