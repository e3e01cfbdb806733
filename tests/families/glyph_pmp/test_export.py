"""Split export: every file, byte-for-byte reproducibility, UA-compatible .npz, sheets, reading
back and clear errors for a damaged split. Runs on a real project made from the UA annotations
with real renders."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from studio.app import Studio
from studio.core.annotations import read_annotation_csv
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle, read_jsonl
from studio.core.schema import Schema, load_schema
from studio.families.glyph_pmp.export import (
    npz_bytes,
    read_split,
    read_split_json,
    ua_frame,
    write_split,
)
from studio.generate.params import SplitParams
from studio.generate.sheet import INK, render_sheet, sheet_layout, sheet_png
from studio.splits import (
    Cancelled,
    SplitInputs,
    annotation_index,
    generate,
    generate_from,
    generate_to_dir,
    split_inputs,
    vet_dir,
)
from studio.store.project import Project

PARAMS = SplitParams(n=120, sampling="balanced", seed=1)


@pytest.fixture(scope="module")
def studio(
    tmp_path_factory: pytest.TempPathFactory, ua_csv: Path, ua_schema: Schema
) -> Iterator[Studio]:
    path = tmp_path_factory.mktemp("project") / "ua.studio"
    s = Studio(Project.create(path, ua_schema), author="test")
    s.import_annotations(ua_csv)
    for _ in s.render_all():
        pass
    yield s
    s.close()


@pytest.fixture(scope="module")
def inputs(studio: Studio) -> SplitInputs:
    return split_inputs(studio)


@pytest.fixture(scope="module")
def split_dir(studio: Studio, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("split") / "s"
    generate_to_dir(studio, PARAMS, out)
    return out


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_split_dir_has_every_file(split_dir: Path) -> None:
    names = {p.name for p in split_dir.iterdir()}
    assert names == {
        "puzzles.jsonl",
        "sheets",
        "npz",
        "annotations.csv",
        "schema.json",
        "report.json",
        "split.json",
    }
    puzzles = list(read_jsonl(split_dir / "puzzles.jsonl"))
    assert len(puzzles) == PARAMS.n
    ids = {p.id for p in puzzles}
    assert {p.stem for p in (split_dir / "sheets").iterdir()} == ids
    assert {p.stem for p in (split_dir / "npz").iterdir()} == ids
    assert not [p for p in split_dir.rglob("*.tmp")]
    report = json.loads((split_dir / "report.json").read_text())
    assert report["valid"] == PARAMS.n and report["invalid"] == 0
    assert [v["id"] for v in report["verdicts"]] == [p.id for p in puzzles]
    assert report["stats"]["all"]["puzzles"] == PARAMS.n
    assert "seconds" not in report["summary"]


def test_same_command_twice_gives_the_same_bytes(
    studio: Studio, split_dir: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again"
    generate_to_dir(studio, PARAMS, again)
    first, second = files_of(split_dir), files_of(again)
    assert sorted(first) == sorted(second)
    different = [name for name in first if first[name] != second[name]]
    assert different == []
    # and a different seed gives a different split
    other = tmp_path / "other"
    generate_to_dir(studio, replace(PARAMS, seed=3), other)
    assert files_of(other)["puzzles.jsonl"] != first["puzzles.jsonl"]


def test_split_json_round_trips_into_params(split_dir: Path) -> None:
    data = read_split_json(split_dir)
    assert SplitParams.from_json(data["params"]) == PARAMS
    assert data["seed"] == PARAMS.seed
    assert data["schema"] == {"id": "ua", "version": "1.0", "file": "schema.json"}
    assert data["puzzles"] == PARAMS.n and data["fold"] == 0
    assert data["glyphs"] > 1000 and data["glyphs_without_image"] > 0
    assert data["studio_version"]
    assert "seconds" not in data["summary"] and data["summary"]["puzzles"] == PARAMS.n
    text = (split_dir / "split.json").read_text()
    assert str(split_dir) not in text and "/tmp" not in text
    params, puzzles = read_split(split_dir)
    assert params == PARAMS
    assert puzzles == list(read_jsonl(split_dir / "puzzles.jsonl"))
    # the schema copy loads and is the project's
    assert load_schema(split_dir / "schema.json").id == "ua"


def test_annotations_csv_holds_the_rows_used(
    split_dir: Path, studio: Studio, inputs: SplitInputs
) -> None:
    rows = read_annotation_csv(split_dir / "annotations.csv", studio.schema)
    used = {r.key for r in rows}
    _, puzzles = read_split(split_dir)
    for p in puzzles:
        assert set(p.all_keys()) <= used
    # glyphs without an image are left out; every other tag is there
    assert rows == inputs.rows
    assert not used & set(inputs.without_image)


def test_npz_is_ua_compatible(split_dir: Path, inputs: SplitInputs) -> None:
    _, puzzles = read_split(split_dir)
    assert {len(p.answers) for p in puzzles} == {2, 3, 4}  # sets of two to four, the default
    for p in puzzles:
        with np.load(split_dir / "npz" / f"{p.id}.npz") as z:
            assert sorted(z.files) == ["images", "probtype", "target"]
            images, target, probtype = z["images"], z["target"], z["probtype"]
        assert images.shape == (9, 80, 80) and images.dtype == np.uint8
        assert set(np.unique(images)) <= {0, 1}
        assert target.dtype == np.int64 and target.shape == () and int(target) == p.key
        assert str(probtype) == p.probtype == f"{p.rule}_{p.concept}_noshift"
        # 5 context frames in reading order, then the answers; 1 = ink
        keys = [*p.context[0], *p.context[1], *p.answers]
        for frame, k in zip(images[: len(keys)], keys, strict=True):
            render = inputs.images[k]
            assert np.array_equal(frame, (render < 128).astype(np.uint8))
        # UA's loader shuffles four answer slots: a shorter set is followed by blank frames
        assert not images[len(keys) :].any()
        assert images[5 + p.key].any()


def test_npz_bytes_are_fixed_and_load_normally() -> None:
    arrays = {"images": np.arange(24, dtype=np.uint8).reshape(2, 3, 4), "target": np.int64(3)}
    a, b = npz_bytes(arrays), npz_bytes(arrays)
    assert a == b
    import io

    with zipfile.ZipFile(io.BytesIO(a)) as zf:
        infos = zf.infolist()
    assert [i.filename for i in infos] == ["images.npy", "target.npy"]
    assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in infos)
    assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in infos)
    with np.load(io.BytesIO(a)) as z:
        assert np.array_equal(z["images"], arrays["images"]) and int(z["target"]) == 3


def test_sheet_png_layout(split_dir: Path, inputs: SplitInputs) -> None:
    _, puzzles = read_split(split_dir)
    p = next(q for q in puzzles if len(q.answers) == 4)
    layout = sheet_layout(p)
    with Image.open(split_dir / "sheets" / f"{p.id}.png") as img:
        assert img.size == layout.size == (4 * 80 + 3 * 10 + 2 * 10, 313)
        assert img.mode == "L"
        assert "time" not in {k.lower() for k in img.info}
        sheet = np.asarray(img)
    # context 3 + 2 and the "?" box above; 4 answers in a row below the separator
    assert [len(r) for r in layout.context] == [3, 2]
    assert layout.question is not None and layout.separator is not None
    assert layout.question[3] < layout.separator < layout.answers[0][1]
    assert len({b[1] for b in layout.answers}) == 1
    for row_keys, row_boxes in zip(p.context, layout.context, strict=True):
        for k, (x0, y0, x1, y1) in zip(row_keys, row_boxes, strict=True):
            assert np.array_equal(sheet[y0:y1, x0:x1], inputs.images[k])
    for k, (x0, y0, x1, y1) in zip(p.answers, layout.answers, strict=True):
        assert np.array_equal(sheet[y0:y1, x0:x1], inputs.images[k])
    # numbers under the answers; the key is not marked: moving the key changes no pixel
    for x0, y0, x1, y1 in layout.numbers:
        assert (sheet[y0:y1, x0:x1] < 128).any()
    moved = replace(p, key=(p.key + 1) % 4)
    assert sheet_png(moved, inputs.image_of) == sheet_png(p, inputs.image_of)
    assert sheet_png(p, inputs.image_of) == (split_dir / "sheets" / f"{p.id}.png").read_bytes()
    # a set of two shows two answers, no blank slots
    two = next(q for q in puzzles if len(q.answers) == 2)
    short = sheet_layout(two)
    assert len(short.answers) == len(short.numbers) == 2
    with Image.open(split_dir / "sheets" / f"{two.id}.png") as img:
        assert img.size == short.size
        sheet = np.asarray(img)
    for k, (x0, y0, x1, y1) in zip(two.answers, short.answers, strict=True):
        assert np.array_equal(sheet[y0:y1, x0:x1], inputs.images[k])


@pytest.mark.parametrize(
    ("layout", "rows"),
    [("matrix-3x3", [3, 3, 2]), ("sequence", [3]), ("odd-one-out", [])],
)
def test_sheets_of_other_layouts(inputs: SplitInputs, layout: str, rows: list[int]) -> None:
    params = SplitParams(n=10, sampling="balanced", layout=layout, holdout="none")
    [result] = generate_from(inputs.annotations, inputs.schema, params)
    p = result.puzzles[0]
    geo = sheet_layout(p)
    assert [len(r) for r in geo.context] == rows
    img = render_sheet(p, inputs.image_of)
    assert img.size == geo.size
    sheet = np.asarray(img)
    if layout == "odd-one-out":
        assert geo.question is None and geo.separator is None
        assert len(geo.answers) == params.group_size
    else:
        # the "?" closes the last context row
        assert geo.question is not None and geo.question[1] == geo.context[-1][0][1]
    for k, (x0, y0, x1, y1) in zip(p.answers, geo.answers, strict=True):
        assert np.array_equal(sheet[y0:y1, x0:x1], inputs.images[k])


def test_sheet_of_an_analogy_and_a_missing_image() -> None:
    a, a2, b, d = (GlyphKey(0x25A0 + i, "symbola") for i in range(4))
    p = Puzzle(
        id="x",
        family="glyph-analogy",
        layout="analogy",
        rule="constant",
        concept="closure",
        shift=False,
        context=((a, a2), (b,)),
        answers=(d, a, a2, b),
        key=0,
        split="test",
        seed=1,
    )
    geo = sheet_layout(p)
    assert [len(r) for r in geo.context] == [2, 1]
    assert geo.question is not None and geo.question[1] == geo.context[1][0][1]
    sheet = np.asarray(render_sheet(p, lambda k: None))  # every image missing: crossed boxes
    x0, y0, x1, y1 = geo.answers[0]
    box = sheet[y0:y1, x0:x1]
    n = x1 - x0
    assert box[0, 0] == INK and box[n // 2, n // 2] == INK and box[n - 1, 0] == INK
    assert box[n // 2, 3] != INK  # a crossed box, not a filled one


def test_multiple_folds(studio: Studio, tmp_path: Path) -> None:
    # the folds' mechanics; on UA, fold 1's held-out side cannot make a symmetric val part
    params = replace(PARAMS, n=40, folds=2, holdout="none")
    out = tmp_path / "k"
    summary = generate_to_dir(studio, params, out)
    assert summary["puzzles"] == 80 and [f["fold"] for f in summary["folds"]] == [0, 1]
    top = read_split_json(out)
    assert top["fold_dirs"] == ["fold-0", "fold-1"]
    for k in (0, 1):
        data = read_split_json(out / f"fold-{k}")
        assert data["fold"] == k and data["puzzles"] == 40
        assert (out / f"fold-{k}" / "puzzles.jsonl").exists()
    params_back, puzzles = read_split(out)
    assert params_back == params and len(puzzles) == 80
    assert [p.params["fold"] for p in puzzles] == [0] * 40 + [1] * 40
    assert not (out / "puzzles.jsonl").exists()
    verdicts = vet_dir(out)
    assert len(verdicts) == 80 and all(v.valid for v in verdicts)
    assert verdicts[0].subject_id.startswith("fold-0/")
    # rewritten with one fold: the fold folders go, stale sheets never linger
    generate_to_dir(studio, replace(params, folds=1, n=30), out)
    assert not (out / "fold-0").exists()
    assert len(list((out / "sheets").iterdir())) == 30


def test_write_split_refuses_a_foreign_folder(inputs: SplitInputs, tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    results = generate_from(inputs.annotations, inputs.schema, replace(PARAMS, n=10))
    with pytest.raises(StudioError, match=r"mine\.txt"):
        write_split(tmp_path, results, PARAMS, inputs.rows, inputs.image_of)
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_generate_reports_progress_and_cancels(studio: Studio, inputs: SplitInputs) -> None:
    seen: list[tuple[int, int]] = []
    params = replace(PARAMS, n=100)
    generate(studio, params, progress=lambda d, t: seen.append((d, t)), inputs=inputs)
    assert seen[-1] == (100, 100)
    with pytest.raises(Cancelled):
        generate(studio, params, should_stop=lambda: True, inputs=inputs)
    with pytest.raises(StudioError, match="glyph-pmp"):
        generate(studio, replace(PARAMS, family="kiva"))
    assert len(annotation_index(studio.project).glyphs()) == 1512


def _damage(split_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    for name, data in files_of(split_dir).items():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes(data)
    return copy


def test_damaged_split_errors_name_the_file(split_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(StudioError, match="split folder not found"):
        read_split(tmp_path / "nowhere")
    d = _damage(split_dir, tmp_path)
    (d / "split.json").write_text("{ not json")
    with pytest.raises(StudioError) as e:
        read_split(d)
    assert str(d / "split.json") in str(e.value) and "not valid JSON" in str(e.value)
    (d / "split.json").unlink()
    with pytest.raises(StudioError) as e:
        vet_dir(d)
    assert str(d / "split.json") in str(e.value) and "missing" in str(e.value)

    d = _damage(split_dir, tmp_path / "2")
    lines = (d / "puzzles.jsonl").read_text().splitlines()
    lines[3] = lines[3][:40]
    (d / "puzzles.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(StudioError) as e:
        read_split(d)
    assert str(d / "puzzles.jsonl") in str(e.value) and "line 4" in str(e.value)

    d = _damage(split_dir, tmp_path / "3")
    lines = (d / "puzzles.jsonl").read_text().splitlines()
    (d / "puzzles.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # one puzzle lost
    with pytest.raises(StudioError, match=r"puzzles\.jsonl: damaged: holds 119 puzzles"):
        read_split(d)

    d = _damage(split_dir, tmp_path / "4")
    data = json.loads((d / "split.json").read_text())
    data["params"]["layout"] = "spiral"
    (d / "split.json").write_text(json.dumps(data))
    with pytest.raises(StudioError, match=r"split\.json: damaged: .*layout 'spiral'"):
        read_split(d)

    d = _damage(split_dir, tmp_path / "5")
    first = next(read_jsonl(d / "puzzles.jsonl"))
    (d / "npz" / f"{first.id}.npz").write_bytes(b"PK\x03\x04broken")
    with pytest.raises(StudioError) as e:
        vet_dir(d)
    assert f"{first.id}.npz" in str(e.value) and "damaged" in str(e.value)

    d = _damage(split_dir, tmp_path / "6")
    (d / "annotations.csv").write_text("concept,value,codepoint,font\nclosure,blob,25CB,symbola\n")
    with pytest.raises(StudioError) as e:
        vet_dir(d)
    assert "annotations.csv" in str(e.value) and "blob" in str(e.value)


def test_ua_frame_converts_renders() -> None:
    render = np.full((80, 80), 255, np.uint8)
    render[10:20, 30:40] = 0
    frame = ua_frame(render)
    assert frame.dtype == np.uint8 and frame.sum() == 100 and frame[15, 35] == 1
    assert not ua_frame(None).any()
    assert ua_frame(np.zeros((40, 40), np.uint8)).shape == (80, 80)


def test_vet_refuses_an_npz_that_disagrees_with_its_record(split_dir: Path, tmp_path: Path) -> None:
    """Every npz is checked against its record, even one whose glyphs appear elsewhere."""
    d = _damage(split_dir, tmp_path)
    last = list(read_jsonl(d / "puzzles.jsonl"))[-1]
    path = d / "npz" / f"{last.id}.npz"
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["target"] = np.array((last.key + 1) % len(last.answers))
    np.savez(path, **arrays)
    with pytest.raises(StudioError) as e:
        vet_dir(d)
    assert f"{last.id}.npz" in str(e.value) and "target" in str(e.value)

    arrays["target"] = np.array(last.key)
    arrays["images"] = arrays["images"][:, :40, :40]  # frames of the wrong size
    np.savez(path, **arrays)
    with pytest.raises(StudioError, match=f"{last.id}.npz"):
        vet_dir(d)
