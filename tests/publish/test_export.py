"""Publishing a curated set: `analogy-studio export-set` and `studio.publish.export_set`.

The export is the split layout `generate` writes (read back by the split reader, vetted again by
`vet`), approved puzzles only by default with their curation history, a dataset card, Croissant
metadata that mlcroissant loads, and a Parquet table that matches puzzles.jsonl. A puzzle broken
by an annotation change refuses the export (naming it) or, with --drop-invalid, is left out and
listed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from studio.app import Studio
from studio.cli import main
from studio.core.puzzle import Puzzle
from studio.families.glyph_pmp.export import read_npz_frames, read_split
from studio.publish import ExportRefused, export_set
from studio.splits import Cancelled, vet_dir
from studio.store.project import Project
from tests.publish.curated import SET_NAME, CuratedProject, break_puzzle


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["--quiet", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def records(folder: Path) -> list[dict]:
    lines = (folder / "puzzles.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def no_leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.endswith(".export"))


def test_cli_exports_approved_puzzles_in_the_split_layout_with_their_history(
    curated_project: CuratedProject, project_copy: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "bench"
    code, stdout, err = run(capsys, "export-set", project_copy, SET_NAME, out)
    assert code == 0, err
    n = len(curated_project.approved)
    assert f"Exported {n} approved puzzles of “{SET_NAME}”" in stdout
    for name in (
        "puzzles.jsonl",
        "annotations.csv",
        "schema.json",
        "report.json",
        "split.json",
        "README.md",
        "croissant.json",
        "records.parquet",
    ):
        assert (out / name).is_file(), name
    recs = records(out)
    assert sorted(r["id"] for r in recs) == sorted(curated_project.approved)
    assert {r["curation"]["status"] for r in recs} == {"approved"}
    for r in recs:
        assert (out / "sheets" / f"{r['id']}.png").is_file()
        arrays = read_npz_frames(out / "npz" / f"{r['id']}.npz")
        assert arrays["images"].shape == (9, 80, 80) and int(arrays["target"]) == r["key"]
        assert set(np.unique(arrays["images"])) <= {0, 1}

    by_id = {r["id"]: r["curation"] for r in recs}
    commented = by_id[curated_project.commented]
    assert commented["comment"] == "clear rows"
    assert [c["text"] for c in commented["comments"]] == ["clear rows"]
    assert commented["reviewer"] == "alice"
    replaced = by_id[curated_project.replaced]
    assert replaced["reviewer"] == "bob"
    [foil] = replaced["replaced_foils"]
    assert foil["answer"] == curated_project.replaced_answer
    assert foil["new"] == curated_project.replaced_glyph
    assert [e["kind"] for e in replaced["history"]] == ["replace-foil", "status"]
    rec = next(r for r in recs if r["id"] == curated_project.replaced)
    assert rec["answers"][curated_project.replaced_answer] == curated_project.replaced_glyph

    # the split reader and `vet` read it as any split: every puzzle valid
    params, puzzles = read_split(out)
    assert params.n == 60 and len(puzzles) == n
    assert [p.to_json() for p in puzzles] == [Puzzle.from_json(r).to_json() for r in recs]
    assert all(v.valid for v in vet_dir(out))
    split = json.loads((out / "split.json").read_text("utf-8"))
    assert split["curated"]["set"]["name"] == SET_NAME
    assert split["curated"]["exported"] == n and split["curated"]["dropped"] == []


def test_the_card_counts_audits_and_names_the_provenance(
    curated_project: CuratedProject, project_copy: Path, tmp_path: Path
) -> None:
    out = tmp_path / "bench"
    with Studio(Project.open(project_copy), author="dora") as studio:
        set_id = studio.project.puzzle_sets()[0].id
        # a finished baseline job on the set, as the worker stores it
        jobs = studio.project.jobs
        job = jobs.submit("baseline", {"source": {"kind": "project-set", "set_id": set_id}})
        assert jobs.claim(job, 4242)
        result = {
            "device": "cpu",
            "eval_part": "test",
            "seeds": [0, 1, 2],
            "chance": 0.25,
            "models": {"blind": {"overall": {"accuracy": 0.26, "ci95": [0.2, 0.33]}}},
            "flags": {"puzzles": [], "groups": []},
            "puzzle_flags": {"set_id": set_id, "models": ["blind"], "flags": []},
        }
        assert jobs.finish(job, "done", result)
        summary = export_set(studio, set_id, out)
    card = (out / "README.md").read_text("utf-8")
    assert f"{summary.exported} puzzles (status **approved**)" in card
    recs = records(out)
    for rule in {r["rule"] for r in recs}:
        n = sum(1 for r in recs if r["rule"] == rule)
        assert f"| {rule} | " in card and f" {n} |" in card
    assert "| concept |" in card and "| layout |" in card
    # what the published parts cover (issue 24)
    assert "## Coverage" in card
    parts = {r["split"] for r in recs}
    for part in parts:
        tuples = sorted({f"{r['rule']} × {r['concept']}" for r in recs if r["split"] == part})
        assert f"- {part} tuples: {', '.join(tuples)}" in card
    assert "## Answer-set audit" in card and "key position:" in card
    # how far one row alone finds the key (issue 24), per part
    assert "## Partial views" in card
    for part in parts:
        # chance is each puzzle's own, one over its answers (sets of two to four), averaged
        sizes = [len(r["answers"]) for r in recs if r["split"] == part]
        assert f"| {part} | {sum(1 / k for k in sizes) / len(sizes):.2f} | " in card
    assert "| blind | 0.260 | [0.200, 0.330] |" in card
    assert "Analogy Studio 0.1.0" in card and "schema `ua` version 1.0" in card
    # the annotation hash is recomputable from the export's own annotations.csv
    lines = (out / "annotations.csv").read_text("utf-8").splitlines()[1:]
    digest = hashlib.sha256("".join(f"{x}\n" for x in sorted(lines)).encode()).hexdigest()
    assert summary.annotation_hash == digest
    assert f"sha256:{digest}" in card
    assert "None: every puzzle of that status passes." in card


def test_an_annotation_change_that_breaks_a_puzzle_refuses_the_export_and_names_it(
    curated_project: CuratedProject, project_copy: Path, tmp_path: Path, capsys
) -> None:
    broken = curated_project.approved[3]
    break_puzzle(project_copy, broken)
    out = tmp_path / "exports" / "bench"
    code, stdout, err = run(capsys, "export-set", project_copy, SET_NAME, out)
    assert code == 2 and stdout == ""
    assert "no longer pass vetting" in err
    assert f"{broken}: answer " in err and "does not complete" in err
    assert not out.parent.exists()  # refused before anything was made

    with Studio(Project.open(project_copy)) as studio, pytest.raises(ExportRefused) as e:
        export_set(studio, SET_NAME, out)
    assert broken in {r.puzzle_id for r in e.value.rejected}
    assert not out.exists()


def test_drop_invalid_leaves_the_broken_puzzle_out_and_lists_it(
    curated_project: CuratedProject, project_copy: Path, tmp_path: Path, capsys
) -> None:
    broken = curated_project.approved[3]
    break_puzzle(project_copy, broken)
    out = tmp_path / "bench"
    code, stdout, err = run(capsys, "export-set", project_copy, SET_NAME, out, "--drop-invalid")
    assert code == 0, err
    assert f"left out {broken}: " in stdout
    ids = {r["id"] for r in records(out)}
    assert broken not in ids and ids < set(curated_project.approved)
    card = (out / "README.md").read_text("utf-8")
    assert f"- `{broken}`: answer " in card
    split = json.loads((out / "split.json").read_text("utf-8"))
    assert broken in [d["id"] for d in split["curated"]["dropped"]]
    assert all(v.valid for v in vet_dir(out))


def test_status_filter_and_refusals_that_write_nothing(
    curated_project: CuratedProject, project_copy: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "all"
    code, _, _ = run(
        capsys, "export-set", project_copy, "1", out, "--status", "any", "--drop-invalid"
    )
    assert code == 0
    statuses = {r["curation"]["status"] for r in records(out)}
    assert {"approved", "draft"} <= statuses

    code, _, err = run(capsys, "export-set", project_copy, SET_NAME, out)
    assert code == 2 and "is not an empty folder" in err
    code, _, err = run(capsys, "export-set", project_copy, "nope", tmp_path / "x")
    assert code == 2 and "no puzzle set 'nope'" in err and "1: small (60 puzzles)" in err
    code, _, err = run(
        capsys, "export-set", project_copy, SET_NAME, tmp_path / "x", "--status", "ok"
    )
    assert code == 2 and "unknown status 'ok'" in err
    code, _, err = run(
        capsys, "export-set", project_copy, SET_NAME, tmp_path / "x", "--status", "rejected"
    )
    assert code == 2 and "has no rejected puzzles" in err
    assert not (tmp_path / "x").exists()


def test_a_cancelled_export_leaves_nothing(project_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    seen: list[str] = []

    def progress(stage: str, done: int, total: int) -> None:
        seen.append(stage)

    with Studio(Project.open(project_copy)) as studio, pytest.raises(Cancelled):
        export_set(studio, SET_NAME, out, progress=progress, should_stop=lambda: "write" in seen)
    assert "write" in seen
    assert not out.exists() and no_leftovers(tmp_path) == []


# rdflib and pandas, under mlcroissant, warn about their own APIs as mlcroissant uses them
@pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index")
def test_croissant_metadata_loads_with_mlcroissant(
    curated_project: CuratedProject, project_copy: Path, tmp_path: Path
) -> None:
    import mlcroissant as mlc

    out = tmp_path / "bench"
    with Studio(Project.open(project_copy)) as studio:
        export_set(studio, SET_NAME, out)
    dataset = mlc.Dataset(jsonld=out / "croissant.json")
    assert dataset.metadata.name == SET_NAME
    got = list(dataset.records("puzzles"))
    recs = {r["id"]: r for r in records(out)}
    assert len(got) == len(recs)
    for row in got:
        pid = row["puzzles/id"].decode()
        assert row["puzzles/rule"].decode() == recs[pid]["rule"]
        assert int(row["puzzles/key"]) == recs[pid]["key"]
        assert row["puzzles/status"].decode() == "approved"
        assert json.loads(row["puzzles/record"].decode()) == recs[pid]
        assert (out / row["puzzles/sheet"].decode()).is_file()


def test_records_parquet_matches_puzzles_jsonl(project_copy: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "bench"
    with Studio(Project.open(project_copy)) as studio:
        export_set(studio, SET_NAME, out)
    table = pq.read_table(out / "records.parquet")
    rows = table.to_pylist()
    recs = records(out)
    assert table.num_rows == len(recs)
    for row, rec in zip(rows, recs, strict=True):
        for name in (
            "id", "family", "layout", "rule", "concept", "shift", "split", "key", "probtype",
            "seed", "context", "answers", "values",
        ):  # fmt: skip
            assert row[name] == rec[name], name
        c = rec["curation"]
        assert (row["status"], row["reviewer"], row["comment"]) == (
            c["status"],
            c["reviewer"],
            c["comment"],
        )
        assert row["replaced_foils"] == len(c["replaced_foils"])
        assert json.loads(row["record"]) == rec
        assert (out / row["npz"]).is_file()


def test_the_export_is_readable_by_colleagues_under_the_umask(
    project_copy: Path, tmp_path: Path, capsys
) -> None:
    """Issue 25: with umask 022 the published folder is 0755 and its files 0644 (staging with
    mkdtemp/mkstemp once made them 0700 and 0600: "Permission denied" on the card)."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        out = tmp_path / "bench"
        code, _, err = run(capsys, "export-set", project_copy, SET_NAME, out)
    finally:
        os.umask(old)
    assert code == 0, err
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    for name in ("README.md", "croissant.json", "puzzles.jsonl", "split.json", "report.json"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o644, name
