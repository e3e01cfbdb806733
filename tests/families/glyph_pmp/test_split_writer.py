"""The glyph split writer (``studio.families.glyph_pmp.export.write_split``): staged, synced once,
moved into place. The bytes are those of the per-file writer it replaced and the same for any
number of writing processes; a write over an earlier split that is cancelled, fails, or is killed
(SIGKILL, in a child process, at random moments and at every step of the move into place) leaves
either the earlier split whole or a folder that ``vet`` refuses — never a mixture.

Runs on a real project made from the UA annotations with real renders."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from studio.app import Studio
from studio.core.errors import StudioError
from studio.core.keys import GlyphKey
from studio.core.puzzle import write_jsonl
from studio.core.schema import Schema
from studio.core.splitdir import is_temp_file
from studio.core.verdict import Verdict
from studio.families.glyph_pmp.export import (
    GLYPH_SPLIT,
    puzzle_npz,
    ua_frame,
    write_split,
)
from studio.families.glyph_pmp.split import SplitResult
from studio.generate.params import SplitParams
from studio.generate.sheet import sheet_png
from studio.splits import (
    Cancelled,
    SplitInputs,
    feature_index,
    generate_from,
    split_inputs,
    vet,
    vet_dir,
)
from studio.store.project import Project
from studio.vet.balance import split_stats

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def inputs(
    tmp_path_factory: pytest.TempPathFactory, ua_csv: Path, ua_schema: Schema
) -> Iterator[SplitInputs]:
    path = tmp_path_factory.mktemp("project") / "ua.studio"
    s = Studio(Project.create(path, ua_schema), author="test")
    s.import_annotations(ua_csv)
    for _ in s.render_all():
        pass
    yield split_inputs(s)
    s.close()


class Made:
    """One generated, vetted fold and how to write it."""

    def __init__(self, inputs: SplitInputs, n: int, seed: int) -> None:
        self.params = SplitParams(n=n, sampling="balanced", seed=seed)
        [self.result] = generate_from(inputs.annotations, inputs.schema, self.params)
        features = feature_index(inputs.images)
        self.verdicts: list[Verdict] = vet(
            self.result.puzzles, inputs.annotations, inputs.schema, features
        )
        self.stats = split_stats(self.result.puzzles, inputs.annotations, inputs.schema)
        keys = {k for p in self.result.puzzles for k in (*p.context_keys, *p.answers)}
        self.images = {k: inputs.images[k] for k in keys if k in inputs.images}
        self.inputs = inputs

    def kwargs(self, out: Path, **extra: Any) -> dict[str, Any]:
        return {
            "out_dir": out,
            "results": [self.result],
            "params": self.params,
            "annotations_rows": self.inputs.rows,
            "image_of": self.images.get,
            "verdicts": [self.verdicts],
            "stats": [self.stats],
            "schema": self.inputs.schema,
            **extra,
        }

    def write(self, out: Path, **extra: Any) -> Path:
        return write_split(**self.kwargs(out, **extra))


@pytest.fixture(scope="module")
def old(inputs: SplitInputs) -> Made:
    return Made(inputs, 250, seed=1)


@pytest.fixture(scope="module")
def new(inputs: SplitInputs) -> Made:
    return Made(inputs, 250, seed=2)


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file of a split folder by relative path, leaving out temp entries at the top
    (a kill may leave a hidden staging folder, which is no part of any split)."""
    out: dict[str, bytes] = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if is_temp_file(rel.parts[0]) or not p.is_file():
            continue
        out[str(rel)] = p.read_bytes()
    return out


@pytest.fixture(scope="module")
def old_dir(old: Made, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return old.write(tmp_path_factory.mktemp("old") / "split", workers=1)


@pytest.fixture(scope="module")
def new_files(new: Made, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return files_of(new.write(tmp_path_factory.mktemp("new") / "split", workers=1))


# ---- bytes ----------------------------------------------------------------------------------
def test_bytes_are_the_per_file_writers(new: Made, new_files: dict[str, bytes]) -> None:
    """Each file as the writer before staging made it: sheet_png, puzzle_npz,
    write_jsonl, and report.json as one json_bytes of the whole report."""
    image_of = new.images.get

    def frame_of(k: GlyphKey) -> np.ndarray:
        return ua_frame(image_of(k))

    puzzles = new.result.puzzles
    for p in puzzles[::25]:
        assert new_files[f"sheets/{p.id}.png"] == sheet_png(p, image_of)
        assert new_files[f"npz/{p.id}.npz"] == puzzle_npz(p, frame_of)
    assert len([f for f in new_files if f.startswith("sheets/")]) == len(puzzles)
    assert len([f for f in new_files if f.startswith("npz/")]) == len(puzzles)
    assert new_files["puzzles.jsonl"] == write_jsonl(puzzles).encode("utf-8")
    vs = new.verdicts
    report = {
        "fold": new.result.fold,
        "summary": new.result.summary(timing=False),
        "stats": new.stats,
        "verdicts": [v.to_puzzle_json() for v in vs],
        "valid": sum(1 for v in vs if v.valid),
        "invalid": sum(1 for v in vs if not v.valid),
        "with_warnings": sum(1 for v in vs if v.warnings),
    }
    assert any(v.warnings for v in vs), "the report should hold nested findings"
    assert new_files["report.json"] == GLYPH_SPLIT.json_bytes(report)


def test_one_two_and_three_workers_give_the_same_bytes(
    new: Made, new_files: dict[str, bytes], tmp_path: Path
) -> None:
    for workers in (2, 3):
        got = files_of(new.write(tmp_path / f"w{workers}", workers=workers))
        assert sorted(got) == sorted(new_files)
        assert [f for f in got if got[f] != new_files[f]] == []


def test_an_empty_verdict_list_and_no_verdicts(new: Made, tmp_path: Path) -> None:
    empty = SplitResult(new.params, 0, [])
    for verdicts in ([[]], None):
        out = tmp_path / f"v{verdicts is None}"
        kw = new.kwargs(out, results=[empty], verdicts=verdicts, stats=None)
        write_split(**kw)
        report = (out / "report.json").read_bytes()
        want = {"fold": 0, "summary": empty.summary(timing=False)}
        if verdicts is not None:
            want |= {"verdicts": [], "valid": 0, "invalid": 0, "with_warnings": 0}
        assert report == GLYPH_SPLIT.json_bytes(want)


# ---- replacing an earlier split -------------------------------------------------------------
def test_written_over_an_earlier_split_is_the_new_split_alone(
    old_dir: Path, new: Made, new_files: dict[str, bytes], tmp_path: Path
) -> None:
    out = tmp_path / "split"
    shutil.copytree(old_dir, out)
    (out / "baselines").mkdir()
    (out / "baselines" / "report.json").write_text("{}")
    (out / ".split-left-by-a-kill.tmp").mkdir()  # a staging folder a killed write left
    (out / ".split-left-by-a-kill.tmp" / "x.png").write_bytes(b"x")
    new.write(out, workers=2)
    names = ["annotations.csv", "npz", "puzzles.jsonl", "report.json", "schema.json", "sheets"]
    assert sorted(p.name for p in out.iterdir()) == [*names, "split.json"]
    assert files_of(out) == new_files
    assert all(v.valid for v in vet_dir(out))


def test_a_cancel_leaves_the_earlier_split_as_it_was(
    old_dir: Path, new: Made, tmp_path: Path
) -> None:
    out = tmp_path / "split"
    shutil.copytree(old_dir, out)
    before = files_of(out)

    def progress(done: int, total: int) -> None:
        if done >= 100:
            raise Cancelled("stop")

    for workers in (1, 2):
        with pytest.raises(Cancelled):
            new.write(out, workers=workers, progress=progress)
        assert files_of(out) == before
        assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in old_dir.iterdir())


def test_a_persons_fold_folder_is_kept_or_refused(new: Made, tmp_path: Path) -> None:
    out = tmp_path / "split"
    (out / "fold-3").mkdir(parents=True)
    (out / "fold-3" / "notes.txt").write_text("mine")
    new.write(out, workers=1)
    assert (out / "fold-3" / "notes.txt").read_text() == "mine"
    # a two-fold split needs fold-0 and fold-1: a fold-1 with a person's file is refused
    (out / "fold-1").mkdir()
    (out / "fold-1" / "notes.txt").write_text("mine too")
    before = files_of(out)
    second = SplitResult(new.params, 1, new.result.puzzles[:10])
    first = SplitResult(new.params, 0, new.result.puzzles[10:20])
    with pytest.raises(StudioError, match="fold-1"):
        write_split(**new.kwargs(out, results=[first, second], verdicts=None, stats=None))
    assert files_of(out) == before


def test_a_file_that_cannot_be_written_is_named(new: Made, tmp_path: Path) -> None:
    """A puzzle id naming a folder that is not there: the error names the file."""
    from dataclasses import replace

    bad = replace(new.result, puzzles=[replace(new.result.puzzles[0], id="no/such")])
    out = tmp_path / "split"
    with pytest.raises(StudioError, match="cannot be written") as info:
        write_split(**new.kwargs(out, results=[bad], verdicts=None, stats=None, workers=1))
    assert "no/such.png" in str(info.value)
    assert list(out.iterdir()) == []  # the staging folder went with the error


# ---- killed at any moment -------------------------------------------------------------------
CHILD = r"""
import json, os, pickle, signal, sys
import studio.families.glyph_pmp.export as ex
payload = pickle.loads(open(sys.argv[1], "rb").read())
mode = sys.argv[2]
calls = {}

def trap(name, orig, at):
    def hooked(*args, **kwargs):
        calls[name] = calls.get(name, 0) + 1
        if calls[name] == at:
            os.kill(os.getpid(), signal.SIGKILL)
        return orig(*args, **kwargs)
    return hooked

name, _, at = mode.partition(":")
at = int(at or 0)
os.replace = trap("replace", os.replace, at if name == "replace" else 0)
ex.fsync_dir = trap("fsync_dir", ex.fsync_dir, at if name == "fsync_dir" else 0)
ex.sync_tree = trap("sync_tree", ex.sync_tree, at if name == "sync_tree" else 0)
if __name__ == "__main__":
    ex.write_split(**payload)
    print(json.dumps(calls))
"""


def _child(payload: Path, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(payload), mode],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the writing processes die with it
    )


def _outcome(out: Path, old_files: dict[str, bytes], new_files: dict[str, bytes]) -> str:
    """``old`` (vet passes, the earlier split's bytes), ``new`` (the new split whole) or
    ``refused`` (vet refuses: no split.json); anything else fails."""
    try:
        verdicts = vet_dir(out)
    except StudioError as e:
        assert not (out / "split.json").exists(), f"vet refused a finished split: {e}"
        return "refused"
    files = files_of(out)
    assert all(v.valid for v in verdicts)
    if files == old_files:
        return "old"
    mixed = sorted(f for f in set(files) | set(new_files) if files.get(f) != new_files.get(f))
    assert mixed == [], f"a mixture of two splits: {mixed[:5]}"
    return "new"


@pytest.fixture(scope="module")
def small(inputs: SplitInputs) -> tuple[Made, Made]:
    return Made(inputs, 30, seed=1), Made(inputs, 30, seed=2)


def test_killed_at_every_step_of_the_move(small: tuple[Made, Made], tmp_path: Path) -> None:
    """SIGKILL at each rename, each folder fsync and the sync: the earlier split, a refused
    folder or (after split.json) the new split — and in that order as the kill comes later."""
    earlier, later = small
    base = earlier.write(tmp_path / "earlier", workers=1)
    old_files = files_of(base)
    new_files = files_of(later.write(tmp_path / "later", workers=1))
    payload = tmp_path / "payload.pickle"
    out = tmp_path / "out"
    payload.write_bytes(pickle.dumps(later.kwargs(out, workers=1)))

    shutil.copytree(base, out)
    child = _child(payload, "count")
    stdout, _ = child.communicate(timeout=120)
    assert child.returncode == 0
    counts = json.loads(stdout)
    assert _outcome(out, old_files, new_files) == "new"
    points = [f"sync_tree:{i + 1}" for i in range(counts["sync_tree"])]
    points += [f"replace:{i + 1}" for i in range(counts["replace"])]
    points += [f"fsync_dir:{i + 1}" for i in range(counts["fsync_dir"])]
    seen = []
    for point in points:
        shutil.rmtree(out)
        shutil.copytree(base, out)
        child = _child(payload, point)
        child.communicate(timeout=120)
        assert child.returncode == -signal.SIGKILL, point
        seen.append(_outcome(out, old_files, new_files))
    assert seen[0] == "old" and "refused" in seen and seen[-1] == "new"
    order = {"old": 0, "refused": 1, "new": 2}
    steps = [order[s] for s in seen]
    assert steps == sorted(steps), list(zip(points, seen, strict=True))


def test_killed_at_random_moments(
    old_dir: Path, new: Made, new_files: dict[str, bytes], tmp_path: Path
) -> None:
    """SIGKILL of the writer and its writing processes at random moments of a 250-puzzle
    write on two processes over an earlier split."""
    old_files = files_of(old_dir)
    out = tmp_path / "out"
    payload = tmp_path / "payload.pickle"
    payload.write_bytes(pickle.dumps(new.kwargs(out, workers=2)))
    shutil.copytree(old_dir, out)
    t0 = time.perf_counter()
    child = _child(payload, "none")
    child.communicate(timeout=300)
    whole = time.perf_counter() - t0
    assert child.returncode == 0 and _outcome(out, old_files, new_files) == "new"
    rng = random.Random(15)
    for _ in range(3):
        shutil.rmtree(out)
        shutil.copytree(old_dir, out)
        child = _child(payload, "none")
        time.sleep(rng.uniform(0.1, 1.0) * whole)
        with contextlib.suppress(ProcessLookupError):  # it may have finished already
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate(timeout=60)
        _outcome(out, old_files, new_files)
