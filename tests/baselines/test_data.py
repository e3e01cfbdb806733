"""Loading a glyph split as arrays: shapes, parts, rows, panels, and errors that name the
file."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from studio.baselines.data import load_source
from studio.cli import main
from studio.core.errors import StudioError
from studio.core.puzzle import read_jsonl
from studio.families.glyph_pmp.export import npz_bytes, read_npz_frames


def test_glyph_split_as_arrays(glyph_split: Path) -> None:
    data = load_source(glyph_split)
    puzzles = list(read_jsonl(glyph_split / "puzzles.jsonl"))
    assert data.n == 800 and data.ids == [p.id for p in puzzles]
    assert data.context_u8.shape == (800, 5, 80, 80) and data.answers_u8.shape == (800, 4, 80, 80)
    assert data.rows == (3, 2) and data.row_indices() == [[0, 1, 2], [3, 4]]
    assert data.row_length == 3 and data.layout == "two-row" and data.family == "glyph-pmp"
    assert {p: int((data.parts == p).sum()) for p in ("train", "val", "test")} == {
        "train": 560, "val": 80, "test": 160
    }  # fmt: skip
    assert data.keys.tolist() == [p.key for p in puzzles]
    assert data.labels["rule"].tolist() == [p.rule for p in puzzles]
    assert data.labels["concept"].tolist() == [p.concept for p in puzzles]
    assert data.questions[0] == puzzles[0].questions
    images = read_npz_frames(glyph_split / "npz" / f"{puzzles[0].id}.npz")["images"]
    assert (data.context_u8[0] == images[:5] * 255).all()
    assert (data.answer_ink(slice(0, 1))[0] == images[5:].astype(np.float32)).all()
    assert data.answers.dtype == np.float32 and data.answers.max() == 1.0
    assert (data.panel_frame(0, "answer 2") == data.answers_u8[0, 1]).all()
    assert (data.panel_frame(0, "context 2.1") == data.context_u8[0, 3]).all()
    assert data.panel_frame(0, "nowhere") is None
    assert data.source == {"kind": "split-dir", "path": str(glyph_split.resolve()), "set_id": None}


def test_a_split_with_folds_asks_for_one(ua_project: Path, tmp_path: Path) -> None:
    out = tmp_path / "folded"
    args = [
        "--n",
        "40",
        "--folds",
        "2",
        "--seed",
        "1",
        "--sampling",
        "balanced",
        "--holdout",
        "none",
    ]
    assert main(["-q", "generate", str(ua_project), str(out), *args]) == 0
    with pytest.raises(StudioError, match=r"holds 2 folds .*pass one fold folder"):
        load_source(out)
    assert load_source(out / "fold-1").n == 40


def test_damaged_files_are_named(glyph_split: Path, tmp_path: Path) -> None:
    copy = tmp_path / "split"
    shutil.copytree(glyph_split, copy, ignore=shutil.ignore_patterns("sheets"))
    first = next(read_jsonl(copy / "puzzles.jsonl"))
    npz = copy / "npz" / f"{first.id}.npz"
    arrays = read_npz_frames(npz)
    arrays["target"] = np.array((first.key + 1) % 4, dtype=np.int64)
    npz.write_bytes(npz_bytes(arrays))
    with pytest.raises(StudioError, match=r"disagrees with puzzles\.jsonl") as err:
        load_source(copy)
    assert str(npz) in str(err.value)
    npz.write_bytes(b"not a zip")
    with pytest.raises(StudioError, match="damaged") as err:
        load_source(copy)
    assert str(npz) in str(err.value)
    npz.unlink()
    with pytest.raises(StudioError, match="missing"):
        load_source(copy)
    with pytest.raises(StudioError, match="not found"):
        load_source(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StudioError, match=r"split\.json"):
        load_source(tmp_path / "empty")
    with pytest.raises(StudioError, match="unknown source kind"):
        load_source({"kind": "zip"})
