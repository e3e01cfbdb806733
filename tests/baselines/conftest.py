"""Real data for the baseline tests: a project from the UA annotations, a vetted glyph split
generated from it, and the same split with a planted bias (the key moved to the answer with
the most ink)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from studio.cli import main
from studio.core.fileio import atomic_write_bytes, atomic_write_text
from studio.core.puzzle import read_jsonl, write_jsonl
from studio.families.glyph_pmp.export import npz_bytes, read_npz_frames

#: puzzles of the session's glyph split (560 train, 80 val, 160 test)
SPLIT_N = 800
SPLIT_SEED = 3


@pytest.fixture(scope="session")
def ua_project(tmp_path_factory: pytest.TempPathFactory, ua_csv: Path) -> Path:
    path = tmp_path_factory.mktemp("baselines-project") / "ua.studio"
    assert main(["-q", "init", str(path)]) == 0
    assert main(["-q", "import-annotations", str(path), str(ua_csv), "--render"]) == 0
    return path


@pytest.fixture(scope="session")
def glyph_split(ua_project: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vetted two-row glyph split, as `analogy-studio generate` writes it, with UA's four
    answers throughout (chance 0.25, which these tests read; sets of two to four, the
    default, are the baselines' case in tests/families/glyph_pmp/test_min_answers.py)."""
    out = tmp_path_factory.mktemp("baselines-split") / "vetted"
    args = ["--n", str(SPLIT_N), "--seed", str(SPLIT_SEED), "--sampling", "balanced"]
    args += ["--min-answers", "4"]
    assert main(["-q", "generate", str(ua_project), str(out), *args]) == 0
    return out


def plant_most_ink_key(src: Path, dst: Path) -> Path:
    """Copy a glyph split and move every puzzle's key to its answer with the most ink (the
    largest glyph): puzzles.jsonl and each npz's target agree, everything else is kept."""
    shutil.copytree(src, dst)
    puzzles = list(read_jsonl(dst / "puzzles.jsonl"))
    moved = []
    for p in puzzles:
        path = dst / "npz" / f"{p.id}.npz"
        arrays = read_npz_frames(path)
        answers = arrays["images"][len(p.context_keys) :]
        key = int(answers.reshape(len(answers), -1).sum(axis=1).argmax())
        arrays["target"] = np.array(key, dtype=np.int64)
        atomic_write_bytes(path, npz_bytes(arrays))
        moved.append(replace(p, key=key))
    atomic_write_text(dst / "puzzles.jsonl", write_jsonl(moved))
    report = json.loads((dst / "report.json").read_text())
    report["planted"] = "key = answer with the most ink"
    atomic_write_text(dst / "report.json", json.dumps(report, indent=1, sort_keys=True) + "\n")
    return dst


@pytest.fixture(scope="session")
def biased_split(glyph_split: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return plant_most_ink_key(glyph_split, tmp_path_factory.mktemp("baselines-biased") / "b")
