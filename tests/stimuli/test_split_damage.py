"""Damaged stimulus split folders (issue 25): ``vet`` and ``baseline`` read the same definition
of a valid split and refuse a damaged one with one line naming the file (exit 2), never a
traceback, a hang or a decompression bomb. Real splits of every built-in stimulus family,
mutated: the issue's own examples, then a seeded sweep over every field of the records."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from studio.baselines.data import load_source
from studio.cli import EXIT_USER_ERROR, main
from studio.core.errors import StudioError
from studio.stimuli.split import generate_stimulus_split, vet_stimulus_split

FAMILIES = {
    "kiva": {"size": 96},
    "polycube-rotation": {"level": 2},
    "shape-composition": {"pieces": 3},
    "cube-net": {},
}


@pytest.fixture(scope="module")
def splits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("stimuli")
    out = {}
    for fam, options in FAMILIES.items():
        out[fam] = root / fam
        generate_stimulus_split(fam, out[fam], 6, seed=2, options=options)
    return out


def records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "items.jsonl").read_text().splitlines()]


def write_records(folder: Path, recs: list[dict[str, Any]]) -> None:
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))


def both_refuse(folder: Path, *words: str) -> None:
    """``vet`` and the baseline loader each raise a StudioError (never anything else)."""
    for read in (vet_stimulus_split, load_source):
        with pytest.raises(StudioError) as info:
            read(folder)
        for w in words:
            assert w in str(info.value), (read.__name__, str(info.value))


def damaged(splits: dict[str, Path], tmp_path: Path, fam: str) -> Path:
    copy = tmp_path / fam
    shutil.copytree(splits[fam], copy)
    return copy


def test_the_issue_s_examples_are_refused_by_both_readers(
    splits: dict[str, Path], tmp_path: Path
) -> None:
    # split.json's family changed: KiVA records read as polycube rotation's
    kiva = damaged(splits, tmp_path, "kiva")
    meta = json.loads((kiva / "split.json").read_text())
    (kiva / "split.json").write_text(json.dumps({**meta, "family": "polycube-rotation"}))
    both_refuse(kiva, "items.jsonl")
    # a cube-net view slot 7, a polycube rotation [] and a polygon coordinate "x"
    for fam, change in (
        ("cube-net", lambda r: r["candidates"][0]["view"][0].update(slot=7)),
        ("polycube-rotation", lambda r: r.update(rotation=[])),
        ("shape-composition", lambda r: _first_number_list(r).__setitem__(0, "x")),
    ):
        folder = damaged(splits, tmp_path / fam, fam)
        recs = records(folder)
        change(recs[0])
        write_records(folder, recs)
        for read in (vet_stimulus_split, load_source):
            try:
                read(folder)  # a change the family's checks accept is fine too
            except StudioError as e:
                assert "items.jsonl" in str(e) or "split.json" in str(e), str(e)


def _first_number_list(record: dict[str, Any]) -> list[Any]:
    """The first list of numbers in a record (a polygon's coordinates, say)."""
    stack: list[Any] = [record]
    while stack:
        obj = stack.pop(0)
        if isinstance(obj, list) and obj and all(isinstance(x, (int, float)) for x in obj):
            return obj
        if isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, list):
            stack.extend(obj)
    raise AssertionError("no list of numbers")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda recs: recs.append(dict(recs[0])), ("is used twice",)),
        (lambda recs: recs[0].pop("part"), ("is not train, val or test",)),
        (lambda recs: recs[0].update(key=1.5), ("key 1.5 is not a whole number",)),
        (lambda recs: recs[0].update(key=True), ("key True is not a whole number",)),
        (lambda recs: recs[0].update(images=["../../escape"]), ("must be plain names",)),
    ],
)
def test_vet_and_baseline_agree_on_a_split_s_records(
    splits: dict[str, Path],
    tmp_path: Path,
    change: Callable[[list[dict[str, Any]]], None],
    words: tuple[str, ...],
) -> None:
    folder = damaged(splits, tmp_path, "cube-net")
    recs = records(folder)
    change(recs)
    write_records(folder, recs)
    both_refuse(folder, "items.jsonl", *words)


def test_a_kiva_question_key_of_one_and_a_half_is_refused(
    splits: dict[str, Path], tmp_path: Path
) -> None:
    folder = damaged(splits, tmp_path, "kiva")
    recs = records(folder)
    next(q for q in recs[0]["questions"] if "key" in q)["key"] = 1.5
    write_records(folder, recs)
    both_refuse(folder, "key 1.5 is not a whole number")


@pytest.mark.timeout(60)
def test_a_fifo_for_items_is_refused_not_waited_on(splits: dict[str, Path], tmp_path: Path) -> None:
    folder = damaged(splits, tmp_path, "cube-net")
    (folder / "items.jsonl").unlink()
    os.mkfifo(folder / "items.jsonl")
    both_refuse(folder, "is not a regular file")


def test_a_huge_picture_is_refused_before_it_is_decoded(
    splits: dict[str, Path], tmp_path: Path
) -> None:
    folder = damaged(splits, tmp_path, "polycube-rotation")
    rec = records(folder)[0]
    picture = folder / "images" / rec["id"] / f"{rec['images'][0]}.png"
    Image.new("1", (6000, 5000)).save(picture)  # 30 million pixels, 1 bit each: a small file
    both_refuse(folder, "too large to be an item's picture")
    code = main(["vet", str(folder)])
    assert code == EXIT_USER_ERROR


def mutants(recs: list[dict[str, Any]], rng: random.Random, n: int) -> Iterator[list[dict]]:
    """``n`` copies of the records, each with one field of one record replaced by a value of
    another kind (a negative or huge number, a fraction, a bool, a string, a list, None)."""
    values: list[Any] = [-1, 7, 1.5, True, "x", [], {}, None, 10**9, ""]
    for _ in range(n):
        copy = json.loads(json.dumps(recs))
        target = copy[rng.randrange(len(copy))]
        paths: list[tuple[Any, Any]] = []
        stack: list[Any] = [target]
        while stack:
            obj = stack.pop()
            keys = obj.keys() if isinstance(obj, dict) else range(len(obj))
            for k in keys:
                paths.append((obj, k))
                if isinstance(obj[k], (dict, list)):
                    stack.append(obj[k])
        obj, k = paths[rng.randrange(len(paths))]
        obj[k] = rng.choice(values)
        yield copy


@pytest.mark.parametrize("fam", sorted(FAMILIES))
def test_mutated_records_never_crash_either_reader(
    splits: dict[str, Path], tmp_path: Path, fam: str
) -> None:
    """15 mutants per family (a fixed seed; the first 15 of the 25 this test once made, to
    keep the suite's time: the fuzz tests in tests/fuzz go wider). Before, 30 of 120 such
    mutants crashed ``vet`` with a traceback (AttributeError, TypeError, ValueError) and 2
    the baseline loader."""
    folder = damaged(splits, tmp_path, fam)
    original = records(folder)
    rng = random.Random(f"{fam}-25")
    for copy in mutants(original, rng, 15):
        write_records(folder, copy)
        for read in (vet_stimulus_split, load_source):
            with contextlib.suppress(StudioError):
                read(folder)


def test_a_picture_name_too_long_for_the_file_system_is_refused(
    splits: dict[str, Path], tmp_path: Path
) -> None:
    """Found by the stimulus fuzz at 1,000 inputs (issue 25): an image name of 300 characters
    made ``Path.exists`` raise ENAMETOOLONG, an internal error."""
    folder = damaged(splits, tmp_path, "cube-net")
    recs = records(folder)
    recs[0]["images"] = ["x" * 300]
    write_records(folder, recs)
    both_refuse(folder, "cannot be read", "File name too long")
