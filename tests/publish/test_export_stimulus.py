"""`export-set` of a curated stimulus set (issue 27: it refused any non-glyph set): the items
re-drawn from their records and vetted again by their family, written as the split folder
`generate` writes (so `vet` and `baseline` read it), with the curation, the card, Croissant
(loading without a warning) and Parquet; a damaged record refuses the export, naming it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from studio.app import Studio
from studio.cli import main
from studio.core.schema import bundled_schema_path, load_schema
from studio.curation import Curator
from studio.publish import export_set
from studio.publish.export import ExportRefused
from studio.stimuli.split import (
    generate_stimulus_split,
    is_stimulus_split,
    read_stimulus_split,
    vet_stimulus_split,
)
from studio.store.project import Project
from tests.publish.test_export_info import croissant_warnings

N = 8


@pytest.fixture(scope="module")
def cube_split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cube") / "split"
    generate_stimulus_split("cube-net", out, N, seed=4)
    return out


@pytest.fixture
def curated(tmp_path: Path, cube_split: Path) -> tuple[Path, list[str]]:
    """A project with the cube-net split as a set: five approved (one commented), one rejected."""
    path = tmp_path / "nets.studio"
    studio = Studio(Project.create(path, load_schema(bundled_schema_path())), author="cur")
    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(cube_split, "nets"))
    ids = [p.puzzle_id for p in curator.summaries()]
    curator.set_status(ids[:5], "approved")
    curator.set_comment(ids[0], "the clearest net")
    curator.set_status([ids[5]], "rejected")
    studio.close()
    return path, ids


def test_a_curated_cube_net_set_exports_as_a_split(
    curated: tuple[Path, list[str]], cube_split: Path, tmp_path: Path, capsys
) -> None:
    path, ids = curated
    out = tmp_path / "published"
    code = main(
        [
            "-q", "export-set", str(path), "nets", str(out), "--license", "CC-BY-4.0",
            "--author", "Ada Lovelace",
        ]
    )  # fmt: skip
    said = capsys.readouterr()
    assert code == 0, said.err
    # the split format generate writes: vet and the baselines read it unchanged
    assert is_stimulus_split(out)
    meta, records = read_stimulus_split(out)
    assert [r["id"] for r in records] == ids[:5]
    assert meta["family"] == "cube-net" and meta["curated"]["status"] == "approved"
    assert all(v.valid for v in vet_stimulus_split(out))
    from studio.baselines.data import load_source

    assert load_source(out).n == 5
    # the pictures are the ones generation drew, re-drawn from the records
    for r in records:
        for name in r["images"]:
            a = np.asarray(Image.open(out / "images" / r["id"] / f"{name}.png").convert("RGB"))
            b = np.asarray(
                Image.open(cube_split / "images" / r["id"] / f"{name}.png").convert("RGB")
            )
            assert a.shape == b.shape and np.abs(a.astype(int) - b).mean() < 1.0
        assert (out / "sheets" / f"{r['id']}.png").is_file()
    # the curation travels with each record
    lines = [json.loads(x) for x in (out / "puzzles.jsonl").read_text("utf-8").splitlines()]
    assert [x["curation"]["status"] for x in lines] == ["approved"] * 5
    assert lines[0]["curation"]["comment"] == "the clearest net"
    assert lines[0]["curation"]["reviewer"] == "cur"
    import pyarrow.parquet as pq

    table = pq.read_table(out / "records.parquet")
    assert table.num_rows == 5 and table.column("family").to_pylist() == ["cube-net"] * 5
    card = (out / "README.md").read_text("utf-8")
    assert card.startswith("# nets: a curated cube-net benchmark")
    assert "5 cube-net items (status **approved**)" in card and "## Answer-set audit" in card
    assert croissant_warnings(out) == []
    import warnings

    import mlcroissant as mlc

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rdflib's own deprecations
        rows = list(mlc.Dataset(jsonld=out / "croissant.json").records("puzzles"))
    assert sorted(r["puzzles/id"].decode() for r in rows) == sorted(ids[:5])
    assert {r["puzzles/family"].decode() for r in rows} == {"cube-net"}


def test_a_damaged_record_refuses_the_export_naming_it(
    curated: tuple[Path, list[str]], tmp_path: Path
) -> None:
    path, ids = curated
    with sqlite3.connect(path) as db:
        (text,) = db.execute("SELECT record FROM puzzles WHERE puzzle_id = ?", (ids[1],)).fetchone()
        record = json.loads(text)
        record["key"] = (record["key"] + 1) % 4
        db.execute(
            "UPDATE puzzles SET record = ? WHERE puzzle_id = ?", (json.dumps(record), ids[1])
        )
    studio = Studio(Project.open(path), author="cur")
    try:
        out = tmp_path / "refused"
        with pytest.raises(ExportRefused, match=ids[1]):
            export_set(studio, "nets", out)
        assert not out.exists()
        summary = export_set(studio, "nets", out, drop_invalid=True)
        assert summary.exported == 4 and [r.puzzle_id for r in summary.dropped] == [ids[1]]
        assert f"`{ids[1]}`" in (out / "README.md").read_text("utf-8")
    finally:
        studio.close()


def test_a_kiva_set_exports_drawing_each_trial_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KiVA's vetting renders every picture; export-set takes those pictures with the verdict
    (``Family.vet_render_record``) instead of rendering each trial a second time to write it.
    Counted at the renderer: one drawing per trial, and the exported pictures are generation's."""
    import studio.families.kiva.generator as kiva

    split = tmp_path / "trials"
    generate_stimulus_split("kiva", split, 3, seed=2, options={"size": 64})
    path = tmp_path / "trials.studio"
    studio = Studio(Project.create(path, load_schema(bundled_schema_path())), author="cur")
    curator = Curator(studio)
    curator.import_prepared(curator.prepare_folder_import(split, "trials"))
    ids = [p.puzzle_id for p in curator.summaries()]
    curator.set_status(ids, "approved")
    drawings: list[str] = []
    real = kiva._draw_trial

    def counted(*args, **kw):
        drawings.append("vet")
        return real(*args, **kw)

    monkeypatch.setattr(kiva, "_draw_trial", counted)
    monkeypatch.setattr(
        kiva, "render_trial_record", lambda *a, **k: pytest.fail("drawn a second time")
    )
    out = tmp_path / "published"
    export_set(studio, "trials", out)
    studio.close()
    assert len(drawings) == 3
    _, records = read_stimulus_split(out)
    for r in records:
        for name in r["images"]:
            got = (out / "images" / r["id"] / f"{name}.png").read_bytes()
            assert got == (split / "images" / r["id"] / f"{name}.png").read_bytes()
