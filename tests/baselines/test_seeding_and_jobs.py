"""Seeding, cancellation, the resumable job and the project-set source, on the session's real
glyph split (a subset, to stay fast)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from studio.baselines import BaselineCancelled
from studio.baselines.data import PuzzleArrays, load_project_set, load_source
from studio.baselines.job import run_job
from studio.baselines.run import run_baselines
from studio.core.errors import StudioError
from studio.core.puzzle import read_jsonl
from studio.store.project import NewPuzzle, Project
from studio.worker.context import JobCancelled, LocalContext
from studio.worker.device import choose_device


@pytest.fixture(scope="module")
def small(glyph_split: Path) -> PuzzleArrays:
    """160 train, 40 val and 40 test puzzles of the session's split."""
    data = load_source(glyph_split)
    pick = np.concatenate(
        [data.part_indices("train")[:160], data.part_indices("val")[:40],
         data.part_indices("test")[:40]]
    )  # fmt: skip
    return data.subset(pick)


def _choices(report: dict, model: str) -> list:
    return [p["models"][model] for p in report["predictions"]]


def test_same_seed_same_predictions(small: PuzzleArrays) -> None:
    models = ["blind", "partial-row2"]
    a = run_baselines(small, models, seeds=[7], epochs=1, device="cpu")
    b = run_baselines(small, models, seeds=[7], epochs=1, device="cpu")
    for m in models:
        assert _choices(a, m) == _choices(b, m)
        assert a["models"][m]["per_seed"][0]["curve"] == b["models"][m]["per_seed"][0]["curve"]
        assert a["models"][m]["overall"] == b["models"][m]["overall"]
    c = run_baselines(small, ["blind"], seeds=[8], epochs=1, device="cpu")
    assert _choices(c, "blind") != _choices(a, "blind")
    assert a["seeds"] == [7] and a["device"].startswith("cpu")


def test_group_accuracy_probes_the_perception_questions(small: PuzzleArrays) -> None:
    assert any(small.questions[i] for i in small.part_indices("test"))
    report = run_baselines(small, ["blind", "feature-similarity"], seeds=1, epochs=1)
    for model in ("blind", "feature-similarity"):
        g = report["models"][model]["group_accuracy"]
        assert g is not None and g["n"] == 40
        assert 0 <= g["accuracy"] <= g["avr_accuracy"] <= 1
        assert g["perception_accuracy"] > 0.5  # counting alone answers 3 of every ~7


def test_should_stop_cancels_between_batches(small: PuzzleArrays) -> None:
    calls = []

    def stop() -> bool:
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(BaselineCancelled):
        run_baselines(small, ["blind"], seeds=1, epochs=3, device="cpu", should_stop=stop)
    assert len(calls) == 4


def test_job_writes_the_report_and_resumes(glyph_split: Path, tmp_path: Path) -> None:
    params = {
        "source": {"kind": "split-dir", "path": str(glyph_split)},
        "models": ["blind", "pixel-similarity"],
        "seeds": 2,
        "device": "cpu",
        "epochs": 1,
    }
    messages: list[str] = []
    ctx = LocalContext(params, work_dir=tmp_path / "job", progress=lambda f, m: messages.append(m))
    result = run_job(ctx)
    assert (tmp_path / "job" / "report.json").exists()
    assert set(result["models"]) == {"blind", "pixel-similarity"}
    assert "puzzle_flags" not in result  # only for project sets
    # where the job's seconds went, its load and plots included
    phases = result["compute"]["phases"]
    assert {"load", "training_free", "trained", "report", "plots", "total"} <= set(phases)
    assert phases["load"] > 0 and phases["total"] >= phases["load"] + phases["trained"]
    on_disk = json.loads((tmp_path / "job" / "report.json").read_text())
    assert on_disk["compute"]["phases"] == phases
    # a job runs beside the studio's window: one core is left free for it
    assert ctx.device_used == choose_device("cpu", leave_core_free=True).name
    saved = ctx.checkpoint()
    assert set(saved["units"]) == {"blind/0", "blind/1", "pixel-similarity/-"}
    assert any("epoch 1/1" in m for m in messages)

    # a resumed attempt skips the finished units and gives the same report
    logs: list[str] = []
    again = LocalContext(
        params,
        work_dir=tmp_path / "job2",
        checkpoint=saved,
        log=lambda line, lvl: logs.append(line),
    )
    second = run_job(again)
    assert any("3 unit(s) done in an earlier attempt" in line for line in logs)
    assert second["predictions"] == result["predictions"]
    assert second["models"]["blind"]["overall"] == result["models"]["blind"]["overall"]

    # a checkpoint saved before the frame bank (its fingerprint over the stacks) resumes too;
    # one of another source does not
    data = load_source(glyph_split)
    for fingerprint, resumed in ((data.stack_fingerprint(), True), ("0123456789abcdef", False)):
        logs.clear()
        old = LocalContext(
            params,
            work_dir=tmp_path / f"job-{fingerprint}",
            checkpoint={**saved, "fingerprint": fingerprint},
            log=lambda line, lvl: logs.append(line),
        )
        run_job(old)
        assert any("3 unit(s) done in an earlier attempt" in line for line in logs) is resumed
        assert any("the source changed" in line for line in logs) is not resumed

    # cancelling: the worker's JobCancelled comes through
    stopping = LocalContext(params, work_dir=tmp_path / "job3", should_stop=lambda: True)
    with pytest.raises(JobCancelled):
        run_job(stopping)


class _CountingContext(LocalContext):
    """A local context that counts its checkpoint saves."""

    saves = 0

    def save_checkpoint(self, state: dict[str, Any]) -> None:
        self.saves += 1
        super().save_checkpoint(state)


def test_checkpoints_are_spaced_and_kept_when_the_job_stops(
    glyph_split: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save writes every unit so far: while models run it comes at most every
    CHECKPOINT_EVERY seconds, and when the run ends (done, cancelled) whatever is unsaved
    is saved, so a resumed attempt skips it."""
    from studio.baselines import job as job_mod

    monkeypatch.setattr(job_mod, "CHECKPOINT_EVERY", 1e9)
    params = {
        "source": {"kind": "split-dir", "path": str(glyph_split)},
        "models": ["pixel-similarity", "elimination", "blind"],
        "seeds": 2,
        "device": "cpu",
        "epochs": 1,
    }
    done = _CountingContext(params, work_dir=tmp_path / "done")
    run_job(done)
    assert done.saves == 1  # four units, one save at the end
    assert len(done.checkpoint()["units"]) == 4
    # cancelled while blind trains: the two training-free units finished are kept
    seen: list[str] = []
    stopping = _CountingContext(
        params,
        work_dir=tmp_path / "stopped",
        progress=lambda f, m: seen.append(m),
        should_stop=lambda: any("epoch" in m for m in seen),
    )
    with pytest.raises(JobCancelled):
        run_job(stopping)
    assert stopping.saves == 1
    assert set(stopping.checkpoint()["units"]) == {"pixel-similarity/-", "elimination/-"}
    monkeypatch.setattr(job_mod, "CHECKPOINT_EVERY", 0.0)
    every = _CountingContext(params, work_dir=tmp_path / "every")
    run_job(every)
    assert every.saves == 4  # no spacing: one save per unit, as before


def test_a_checkpoint_falls_due_while_the_next_model_trains(
    glyph_split: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model's seeds end together: the first is saved, the second waits for the next
    save, which comes before a batch of the next model once CHECKPOINT_EVERY has passed
    (not when that model ends), so a crash loses at most that long."""
    from studio.baselines import job as job_mod

    monkeypatch.setattr(job_mod, "CHECKPOINT_EVERY", 0.05)
    params = {
        "source": {"kind": "split-dir", "path": str(glyph_split)},
        "models": ["blind", "context"],
        "seeds": 2,
        "device": "cpu",
        "epochs": 2,
    }
    seen: list[tuple[str, set[str]]] = []
    ctx = _CountingContext(
        params,
        work_dir=tmp_path / "job",
        progress=lambda f, m: seen.append((m, set(ctx.checkpoint().get("units", {})))),
    )
    run_job(ctx)
    during = [units for m, units in seen if m.startswith("context") and "epoch 2/2" in m]
    assert during and {"blind/0", "blind/1"} <= during[-1]


def test_project_set_source_reproduces_the_export(
    ua_project: Path, glyph_split: Path, tmp_path: Path
) -> None:
    project_path = tmp_path / "copy.studio"
    shutil.copy(ua_project, project_path)
    puzzles = list(read_jsonl(glyph_split / "puzzles.jsonl"))
    chosen = [p for p in puzzles if p.split == "train"][:60] + [
        p for p in puzzles if p.split != "train"
    ][:40]
    with Project.open(project_path) as project:
        set_id = project.add_puzzle_set(
            "drafted", {}, {}, [NewPuzzle(p.to_json()) for p in chosen], "tester"
        )
    data = load_project_set(project_path, set_id)
    split = load_source(glyph_split)
    rows = [split.ids.index(p.id) for p in chosen]
    assert data.ids == [p.id for p in chosen]
    assert (data.context_u8 == split.context_u8[rows]).all()
    assert (data.answers_u8 == split.answers_u8[rows]).all()
    assert data.source["kind"] == "project-set" and data.source["set_id"] == set_id

    ctx = LocalContext(
        {
            "source": {"kind": "project-set", "project": str(project_path), "set_id": set_id},
            "models": ["blind"],
            "seeds": 1,
            "device": "cpu",
            "epochs": 1,
        },
        work_dir=tmp_path / "job",
    )
    result = run_job(ctx)
    assert result["puzzle_flags"]["set_id"] == set_id
    assert result["puzzle_flags"]["flags"] == result["flags"]["puzzles"]
    assert result["source"]["kind"] == "project-set" and result["source"]["puzzles"] == 100

    from studio.core.errors import StudioError

    with pytest.raises(StudioError, match="has no puzzle set 999"):
        load_project_set(project_path, 999)


@pytest.mark.parametrize(
    "source",
    [
        {"kind": "split-dir", "path": "/home/colleague/private-split"},
        {"kind": "project-set", "project": "/home/colleague/theirs.studio", "set_id": 1},
        {"kind": "project-set", "project": "postgresql://x@other/lab", "set_id": 1},
    ],
)
def test_a_lab_job_reads_that_databases_sets_only(source: dict[str, object]) -> None:
    """A lab's baseline jobs come from any member and run on a colleague's worker: a folder
    or another project named in one would be read on that machine, and its puzzles would
    come back in the report every member reads. Refused by name before anything is read."""
    from studio.baselines.job import _source

    lab = "postgresql://member@lab.example/studio"
    with pytest.raises(StudioError, match="that database's puzzle sets only"):
        _source({"source": source}, None, lab)
    own = _source({"source": {"kind": "project-set", "set_id": 1}}, None, lab)
    assert own == {"kind": "project-set", "set_id": 1, "project": lab}
    local = _source({"source": dict(source)}, Path("/tmp/mine.studio"))  # a file's own queue
    assert local["kind"] == source["kind"]
