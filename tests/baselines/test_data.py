"""Loading a glyph split as arrays: shapes, parts, rows, panels, and errors that name the
file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from studio.baselines.data import load_source
from studio.cli import main
from studio.core.errors import StudioError
from studio.core.puzzle import Puzzle, read_jsonl
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


def test_frames_are_kept_once_and_gathered(glyph_split: Path) -> None:
    """The bank holds each distinct frame once, and the ids give back every frame; a subset
    shares the bank; a question's panel is a row of it."""
    data = load_source(glyph_split)
    bank = data.frames_u8
    assert bank is not None and data.context_ids is not None and data.answer_ids is not None
    assert len({f.tobytes() for f in bank}) == len(bank) < data.n
    assert (bank[data.context_ids] == data.context_u8).all()
    assert (bank[data.answer_ids] == data.answers_u8).all()
    sub = data.subset([5, 2])
    assert sub.frames_u8 is bank and (sub.answer_ids == data.answer_ids[[5, 2]]).all()
    assert (bank[data.panel_id(0, "context 2.1")] == data.context_u8[0, 3]).all()
    assert data.panel_id(0, "answer 0") is None and data.panel_id(0, "answer 9") is None


def test_arrays_given_without_a_bank_get_one() -> None:
    from studio.baselines.data import PuzzleArrays

    rng = np.random.default_rng(0)
    glyphs = (rng.random((3, 80, 80)) > 0.5).astype(np.uint8) * 255
    context = glyphs[rng.integers(0, 3, (6, 2))]
    answers = glyphs[rng.integers(0, 3, (6, 3))]
    data = PuzzleArrays(
        ids=[f"p{i}" for i in range(6)],
        parts=np.array(["train"] * 6),
        context_u8=context,
        answers_u8=answers,
        keys=np.zeros(6, np.int64),
        rows=(1, 1),
        labels={},
        questions=[()] * 6,
        layout="analogy",
        family="x",
    )
    assert data.frames_u8 is not None and len(data.frames_u8) <= 3
    assert (data.frames_u8[data.answer_ids] == answers).all()


def test_a_large_split_is_read_by_a_pool_in_puzzle_order(
    glyph_split: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks read by worker processes give the arrays one process gives, and the first
    damaged archive in puzzle order is the error even when a later chunk is damaged too."""
    import studio.baselines.data as data_module
    from studio.core import procs

    one = load_source(glyph_split)
    monkeypatch.setattr(data_module, "READ_CHUNK", 150)
    monkeypatch.setattr(procs, "usable_cores", lambda: 3)
    pooled = load_source(glyph_split)
    assert (pooled.context_u8 == one.context_u8).all()
    assert (pooled.answers_u8 == one.answers_u8).all()
    assert len(pooled.frames_u8) == len(one.frames_u8)
    assert pooled.fingerprint() == one.fingerprint() and pooled.ids == one.ids
    assert pooled.questions == one.questions
    assert pooled.answer_attributes == one.answer_attributes is not None
    assert pooled.context_attributes == one.context_attributes is not None
    copy = tmp_path / "split"
    shutil.copytree(glyph_split, copy, ignore=shutil.ignore_patterns("sheets"))
    puzzles = list(read_jsonl(copy / "puzzles.jsonl"))
    for k in (700, 400):
        (copy / "npz" / f"{puzzles[k].id}.npz").write_bytes(b"not a zip")
    with pytest.raises(StudioError, match="damaged") as err:
        load_source(copy)
    assert f"{puzzles[400].id}.npz" in str(err.value)


def test_pool_workers_parse_the_records_and_say_the_first_damaged_one(
    glyph_split: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large split's records are parsed by the pool's workers, not by this process (which
    only merges: parsing 10,000 took 1.7 s of it). A damaged record is said as one process
    says it — the first in the file, named by file and line — and before a damaged archive,
    even one earlier in puzzle order that another worker found."""
    import json

    import studio.baselines.data as data_module
    from studio.core import procs

    copy = tmp_path / "split"
    shutil.copytree(glyph_split, copy, ignore=shutil.ignore_patterns("sheets"))
    records = copy / "puzzles.jsonl"
    whole = records.read_text("utf-8")
    lines = whole.splitlines()
    first = json.loads(lines[0])["id"]
    damaged = json.loads(lines[400])
    damaged["key"] = 9
    lines[400] = json.dumps(damaged)
    lines[650] = '{"id": broken'
    records.write_text("\n".join(lines) + "\n", "utf-8")
    (copy / "npz" / f"{first}.npz").write_bytes(b"not a zip")
    with pytest.raises(StudioError, match="line 401: key 9") as one:
        load_source(copy)  # 800 puzzles: one chunk, read in this process

    parsed: list[str] = []
    parse = Puzzle.from_json

    def counted(d: Any) -> Puzzle:
        parsed.append("here")
        return parse(d)

    monkeypatch.setattr(Puzzle, "from_json", counted)
    monkeypatch.setattr(data_module, "READ_CHUNK", 150)
    monkeypatch.setattr(procs, "usable_cores", lambda: 3)
    with pytest.raises(StudioError) as pooled:
        load_source(copy)
    assert str(pooled.value) == str(one.value) and str(records) in str(pooled.value)
    records.write_text(whole, "utf-8")  # the records whole again: the archive is the error
    with pytest.raises(StudioError, match=r"damaged: not a readable \.npz") as err:
        load_source(copy)
    assert f"{first}.npz" in str(err.value)
    assert load_source(glyph_split).n == 800
    assert parsed == []


def test_tags_are_built_once_per_glyph() -> None:
    """A glyph's tags are looked up and built once, however many frames show it; every
    frame reads them as before (concept -> values, an empty dict for an untagged glyph)."""
    from studio.baselines.data import glyph_answer_attributes, glyph_context_attributes
    from studio.core.keys import GlyphKey

    a, b = GlyphKey(0x41, "f"), GlyphKey(0x42, "f")
    tags = {a: {"shape": frozenset({"round"})}}
    looked_up: list[GlyphKey] = []

    def tags_of(key: GlyphKey) -> dict[str, frozenset[str]] | None:
        looked_up.append(key)
        return tags.get(key)

    record = {
        "family": "glyph-pmp",
        "layout": "analogy",
        "rule": "constant",
        "concept": "shape",
        "shift": False,
        "context": [[str(a), str(b)], [str(a)]],
        "answers": [str(a), str(b)],
        "key": 0,
        "split": "train",
    }
    puzzles = [Puzzle.from_json({**record, "id": f"p{i}", "seed": i}) for i in range(3)]
    round_ = {"shape": frozenset({"round"})}
    assert glyph_answer_attributes(puzzles, tags_of) == [[round_, {}]] * 3
    assert sorted(looked_up) == [a, b]
    assert glyph_context_attributes(puzzles, tags_of) == [[round_, {}, round_]] * 3
    assert sorted(looked_up) == [a, a, b, b]


def test_the_fingerprint_follows_the_frames_ids_and_keys(glyph_split: Path) -> None:
    """A resumed job compares fingerprints: the same source gives the same one; a changed
    frame, a puzzle's frames in another order, or another key give another."""
    from dataclasses import replace

    data = load_source(glyph_split)
    assert data.fingerprint() == load_source(glyph_split).fingerprint()
    frames = data.frames_u8.copy()
    frames[0, 40, 40] ^= 255
    assert replace(data, frames_u8=frames).fingerprint() != data.fingerprint()
    swapped = data.answer_ids.copy()
    swapped[0] = swapped[0, ::-1]
    assert not np.array_equal(swapped, data.answer_ids)
    assert replace(data, answer_ids=swapped).fingerprint() != data.fingerprint()
    keys = data.keys.copy()
    keys[0] = (keys[0] + 1) % 4
    assert replace(data, keys=keys).fingerprint() != data.fingerprint()


def test_the_stacks_are_gathered_only_when_read(glyph_split: Path) -> None:
    """A split read for the baselines holds the bank and the rows; the (N, K, 80, 80) stacks
    are gathered on first reading (0.6 GB on 10,000 two-row puzzles), equal to the frames; the
    image probe's attributes come from the bank without them."""
    from studio.baselines.probes import bank_image_attributes, image_attributes

    data = load_source(glyph_split)
    assert data.__dict__["_context_u8"] is None and data.__dict__["_answers_u8"] is None
    assert data.n_context == 5 and data.n_answers == 4  # from the rows, nothing gathered
    attributes = bank_image_attributes(data.frames_u8, data.answer_ids)
    assert data.__dict__["_answers_u8"] is None
    assert attributes == image_attributes(data.answers_u8)  # now gathered, and equal
    assert data.__dict__["_answers_u8"] is not None
    sub = data.subset([4, 1])
    assert sub.__dict__["_context_u8"] is None
    assert (sub.context_u8 == data.context_u8[[4, 1]]).all()


def test_the_frame_bank_tells_frames_apart_when_their_hashes_collide(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Frames are found by a 64-bit hash of their bytes and checked equal on a match: frames
    whose hashes collide still get rows of their own, and an equal frame its first row."""
    import studio.baselines.data as data_module

    monkeypatch.setattr(data_module, "hash", lambda _: 7, raising=False)
    rng = np.random.default_rng(1)
    frames = (rng.random((3, 80, 80)) > 0.5).astype(np.uint8) * 255
    bank = data_module.FrameBank()
    assert [bank.add(f) for f in (*frames, frames[1].copy(), frames[0])] == [0, 1, 2, 1, 0]
    assert (bank.array() == frames).all()
