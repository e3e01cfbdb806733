"""The example plugin, installed by set-up, is a family like the built-ins: in the CLI, the
Generate dialog, the Preview tab and the baseline worker, with nothing of it under studio/."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from studio.cli import EXIT_USER_ERROR, main
from studio.plugins import ENTRY_POINT_GROUP, family

N = 12


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shape-count") / "split"
    assert main(["-q", "generate", str(out), "--family", "shape-count", "--n", str(N)]) == 0
    return out


def test_the_entry_point_registers_a_stimulus_family() -> None:
    assert "shape-count" in {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    fam = family("shape-count")
    assert fam.kind == "stimulus" and {o.name for o in fam.options} == {"rule", "cells", "size"}
    import shape_count

    import studio

    assert fam is shape_count.FAMILY
    assert Path(shape_count.__file__).parent.parent.parent.name == "plugins"
    assert not Path(studio.__file__).parent.joinpath("families", "shape_count").exists()


def test_cli_generates_the_same_bytes_twice_and_vets_them(
    split: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    again = tmp_path / "again"
    assert main(["-q", "generate", str(again), "--family", "shape-count", "--n", str(N)]) == 0
    assert files_of(split) == files_of(again)
    records = [json.loads(line) for line in (split / "items.jsonl").read_text().splitlines()]
    assert len(records) == N and all(r["verdict"]["valid"] for r in records)
    capsys.readouterr()
    assert main(["vet", str(split), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] == N and out["audit"]["puzzles"] == N


def test_options_come_from_its_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    helptext = capsys.readouterr().out
    assert "--cells" in helptext and "shape-count" in helptext
    code = main(["generate", str(tmp_path / "x"), "--family", "shape-count", "--cells", "9"])
    assert code == EXIT_USER_ERROR and "--cells 9: expected an integer within 4..5" in (
        capsys.readouterr().err
    )
    # three cells is refused before anything is made (two free triominoes; an item needs four)
    code = main(["generate", str(tmp_path / "y"), "--family", "shape-count", "--cells", "3"])
    assert code == EXIT_USER_ERROR and "--cells 3: expected an integer within 4..5" in (
        capsys.readouterr().err
    )
    out = tmp_path / "constant"
    assert main(["-q", "generate", str(out), "--family", "shape-count", "--n", "3",
                 "--rule", "constant", "--cells", "5"]) == 0  # fmt: skip
    meta = json.loads((out / "split.json").read_text())
    assert meta["options"] == {"rule": "constant", "cells": 5}
    first = json.loads((out / "items.jsonl").read_text().splitlines()[0])
    assert all(len(set(r["counts"])) == 1 for r in first["rows"])


def test_vetting_refuses_a_foil_that_completes_the_row(split: Path) -> None:
    from shape_count.generator import vet_record

    record = json.loads((split / "items.jsonl").read_text().splitlines()[0])
    assert vet_record(record).valid
    key = record["candidates"][record["key"]]
    foil = next(k for k in range(4) if k != record["key"])
    record["candidates"][foil] = dict(key)
    failed = {c.check for c in vet_record(record).errors}
    assert failed == {"no-foil-completes", "distinct-candidates"}


@pytest.mark.parametrize("size", [None, 64])
def test_items_are_redrawn_from_their_records(tmp_path: Path, size: int | None) -> None:
    """The board and export-set keep records, not pictures (issue 27): each item's pictures
    and sheet, re-drawn from its items.jsonl line (and from the bare record), are the files
    generation wrote, byte for byte; the record holds the panel size that needs."""
    from shape_count.generator import render_record as own

    from studio.stimuli.split import generate_stimulus_split, png_bytes, render_record

    out = tmp_path / "split"
    generate_stimulus_split("shape-count", out, 3, seed=4, options={"size": size})
    for line in (out / "items.jsonl").read_text().splitlines():
        record = json.loads(line)
        assert record["size"] == (size or 96)
        folder = out / "images" / record["id"]
        written = {p.stem: p.read_bytes() for p in folder.glob("*.png")}
        bare = {k: v for k, v in record.items() if k not in ("id", "family", "images", "verdict")}
        for images, sheet in (render_record(record), own(bare)):
            assert sorted(images) == sorted(written) == sorted(record["images"])
            assert all(png_bytes(im) == written[name] for name, im in images.items())
            assert png_bytes(sheet) == (out / "sheets" / f"{record['id']}.png").read_bytes()


def test_the_answer_set_gives_nothing_away(split: Path) -> None:
    from shape_count import answer_attributes

    for line in (split / "items.jsonl").read_text().splitlines():
        attrs = answer_attributes(json.loads(line))
        for a in attrs:  # every candidate shares its shape and its count with one other
            for name in ("shape", "count"):
                assert sum(b[name] == a[name] for b in attrs) == 2


@pytest.mark.parametrize("rule", ["progression", "constant"])
def test_every_answer_could_have_been_the_key(rule: str) -> None:
    """Issue 24: the answers alone tell nothing. Before, a progression key's count ended a row
    (3-9) while the foil's was any other of 1-9: an answer of 1 or 2 copies was never the key,
    and the answers-only probe read 0.322 (chance 0.25). Now every count an answer shows is one
    a row ends on, and of the answers showing a count (or a shape) a quarter are the key,
    within four binomial standard deviations; the rows still follow the rule."""
    from shape_count.generator import MAX_COUNT, ShapeCountGenerator, row_counts, vet_record

    ends = set(range(3 if rule == "progression" else 1, MAX_COUNT + 1))  # where a row can end
    shown: dict[str, Counter[object]] = {"count": Counter(), "shape_id": Counter()}
    keyed: dict[str, Counter[object]] = {"count": Counter(), "shape_id": Counter()}
    for item in ShapeCountGenerator(rule=rule, size=48).items(400, seed=7):
        record = item.record
        assert item.verdict.valid and vet_record(record).valid
        last = record["rows"][2]["counts"]
        key = record["candidates"][record["key"]]
        assert [*last, key["count"]] == row_counts(rule, last[0])
        for c in record["candidates"]:
            for name in shown:
                shown[name][c[name]] += 1
                keyed[name][c[name]] += c is key
    assert set(shown["count"]) == ends
    for name, counts in shown.items():
        for value, n in counts.items():
            # each value an item shows is on two answers: the key's and a foil's, or two foils
            items, keys = n // 2, keyed[name][value]
            assert abs(keys - items / 2) <= 4 * math.sqrt(items / 4), (name, value, keys, items)


@pytest.mark.gui
def test_generate_dialog_and_preview_show_it(qtbot, tmp_path: Path) -> None:
    from studio.gui.generate_dialog import GenerateSplitDialog
    from studio.gui.preview import PreviewPanel

    dlg = GenerateSplitDialog(["closure"])
    qtbot.addWidget(dlg)
    dlg.family_combo.setCurrentIndex(dlg.family_combo.findData("shape-count"))
    cells = dlg.form.widget("cells")
    assert (cells.minimum(), cells.maximum(), cells.value()) == (4, 5, 4)
    dlg.form.widget("rule").setCurrentIndex(1)
    dlg.folder_edit.setText(str(tmp_path / "from-dialog"))
    assert dict(dlg.request().options) == {"rule": "constant", "cells": 4, "size": 96}

    panel = PreviewPanel()
    qtbot.addWidget(panel)
    panel.show()
    tp = panel.tasks
    panel.pages.setCurrentWidget(tp)
    tp.family.setCurrentText("shape-count")
    qtbot.waitUntil(
        lambda: tp.last_item is not None and tp.last_item.family == "shape-count", timeout=30_000
    )
    assert "valid" in tp.status.text() and not tp.sheet.pixmap().isNull()
    panel.shutdown()


def test_the_baseline_worker_runs_on_its_split(split: Path, tmp_path: Path) -> None:
    from studio.core.schema import bundled_schema_path, load_schema
    from studio.store.jobs import JobQueue
    from studio.store.project import Project

    project = tmp_path / "p.studio"
    Project.create(project, load_schema(bundled_schema_path()), author="t").close()
    queue = JobQueue(project)
    job_id = queue.submit(
        "baseline",
        {"source": {"kind": "split-dir", "path": str(split)}, "models": ["blind", "probe-tags"],
         "seeds": 1, "epochs": 1, "device": "cpu"},
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "studio.worker", "run", str(project), str(job_id), "--claim"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    job = queue.job(job_id)
    assert job is not None
    assert job.status == "done", job.error
    assert job.result["source"]["family"] == "shape-count"
    assert set(job.result["models"]) == {"blind", "probe-tags"}
