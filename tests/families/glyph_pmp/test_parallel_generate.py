"""Generation over a process pool: the same seed gives the same bytes for any number of workers,
and a stop leaves no worker behind (issue 15)."""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import time
from pathlib import Path
from typing import Any

import pytest

from studio import splits
from studio.app import Studio
from studio.cli import main
from studio.core.annotations import read_annotation_csv
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.families.glyph_pmp.split import (
    CHUNK,
    SHARD_MIN,
    GenerationShortfall,
    shard_plan,
)
from studio.generate.params import SplitParams
from studio.store.project import Project

#: big enough to be sharded (and pooled): 420 train in two chunks, 60 val, 120 test
PARAMS = SplitParams(n=600, seed=5, sampling="balanced")


@pytest.fixture(scope="module")
def ua_project(tmp_path_factory: pytest.TempPathFactory, ua_csv: Path) -> Path:
    path = tmp_path_factory.mktemp("parallel-project") / "ua.studio"
    assert main(["-q", "init", str(path)]) == 0
    assert main(["-q", "import-annotations", str(path), str(ua_csv), "--render"]) == 0
    return path


@pytest.fixture(scope="module")
def ua_index(ua_csv: Path, ua_schema: Schema) -> TagIndex:
    rows = read_annotation_csv(ua_csv, ua_schema)
    return TagIndex.from_tags((r.key, r.concept, r.value) for r in rows)


def folder_digest(folder: Path) -> dict[str, str]:
    """sha256 of every file of a split folder, by relative path."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_the_plan_shards_large_splits_only() -> None:
    assert PARAMS.n >= SHARD_MIN
    plan = shard_plan(PARAMS)
    assert [(s.part, s.start, s.count) for s in plan] == [
        ("train", 0, CHUNK),
        ("train", CHUNK, 420 - CHUNK),
        ("val", 0, 60),
        ("test", 0, 120),
    ]
    small = SplitParams(n=40, folds=2)
    assert [s.whole_fold for s in shard_plan(small)] == [True, True]
    diverse = SplitParams(n=SHARD_MIN * 2, sampling="diverse")
    assert len(shard_plan(diverse)) == 1  # one stream: no repeat across the whole fold


def test_one_two_and_three_workers_write_the_same_bytes(ua_project: Path, tmp_path: Path) -> None:
    digests = []
    for workers in (1, 2, 3):
        studio = Studio(Project.open(ua_project))
        try:
            out = tmp_path / f"w{workers}"
            summary = splits.generate_to_dir(studio, PARAMS, out, workers=workers)
        finally:
            studio.close()
        assert summary["puzzles"] == PARAMS.n
        digests.append(folder_digest(out))
    assert len(digests[0]) > PARAMS.n  # every puzzle's npz, and the split's files
    assert digests[1] == digests[0]
    assert digests[2] == digests[0]


def test_pooled_results_merge_like_one_process(ua_index: TagIndex, ua_schema: Schema) -> None:
    params = SplitParams(n=SHARD_MIN, seed=2, sampling="balanced", folds=2, holdout="none")
    one = splits.generate_from(ua_index, ua_schema, params, workers=1)
    two = splits.generate_from(ua_index, ua_schema, params, workers=2)
    for a, b in zip(one, two, strict=True):
        assert a.puzzles == b.puzzles
        assert a.summary(timing=False) == b.summary(timing=False)
        assert a.tuples == b.tuples
        assert [p.id for p in a.puzzles[:2]] == ["train-00000", "train-00001"]
        assert len({p.id for p in a.puzzles}) == params.n
    assert one[0].puzzles != one[1].puzzles  # each fold its own streams


def test_a_polysemic_split_is_the_same_for_one_and_two_workers(ua_schema: Schema) -> None:
    """Where glyphs carry several tested concepts the contexts are chosen against the shares
    of the puzzles made before (the weighted partial solver, issue 24): each chunk must start
    them afresh, or a pool worker's chunk would differ from this process's (UA draws one
    context per puzzle, so its split cannot tell)."""
    import random

    from studio.core.keys import GlyphKey

    rnd = random.Random(3)
    concepts = {"stroke-dot-quantity": "12345", "shape-sides": "12345", "components-solid": "1234"}
    tags = [
        (GlyphKey(0x4E00 + i, "han"), c, rnd.choice(vs))
        for i in range(200)
        for c, vs in sorted(concepts.items())
        if rnd.random() < 0.8
    ]
    ann = TagIndex.from_tags(tags)
    params = SplitParams(n=SHARD_MIN, seed=2, sampling="balanced", holdout="basic",
                         holdout_fraction=0.01, rules=("constant", "progression", "arithmetic"),
                         concepts=tuple(concepts), ratios=(1, 0, 0))  # fmt: skip
    [one] = splits.generate_from(ann, ua_schema, params, workers=1)
    [two] = splits.generate_from(ann, ua_schema, params, workers=2)
    assert len(one.puzzles) == SHARD_MIN and one.puzzles == two.puzzles


def test_a_shortfall_in_a_worker_is_raised(ua_index: TagIndex, ua_schema: Schema) -> None:
    params = SplitParams(n=SHARD_MIN, sampling="balanced", rules=("union",))
    with pytest.raises(GenerationShortfall, match="union"):
        splits.generate_from(ua_index, ua_schema, params, workers=2)


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            state = next(line for line in f if line.startswith("State:"))
    except (FileNotFoundError, ProcessLookupError):
        return True
    return "Z" in state.split()[1]


def test_a_stop_shuts_the_pool_down(ua_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pools: list[Any] = []

    class Recorded(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            pools.append(self)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Recorded)
    pids: set[int] = set()

    def stop() -> bool:
        if not pools:
            return False
        pids.update(pools[-1]._processes or ())  # the workers started so far
        return bool(pids)

    studio = Studio(Project.open(ua_project))
    try:
        with pytest.raises(splits.Cancelled):
            splits.generate_and_vet(studio, SplitParams(n=4000, sampling="balanced"), None, stop)
    finally:
        studio.close()
    assert pools and pids
    for _ in range(100):  # the fork server reaps its children: give it a moment
        if all(_gone(p) for p in pids):
            break
        time.sleep(0.05)
    assert all(_gone(p) for p in pids), [p for p in pids if not _gone(p)]
    assert os.getpid() not in pids
