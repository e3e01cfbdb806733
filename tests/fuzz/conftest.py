"""Fixtures of the fuzz suite: real seed inputs (the bundled schema, a sample of the UA
annotations imported into a small project, a split made by ``generate``) and the check every
fuzzed input must pass: accepted, or refused with a StudioError that leaves the project's
bytes as they were. The mutators live in ``fuzz_kit`` (shared with ``bench/fuzz.py``)."""

from __future__ import annotations

import io
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fuzz_kit import Loader, Outcome, classify, make_loaders, read_tree

CORPUS = Path(__file__).resolve().parent / "corpus"
#: parts of a split that neither vet nor the baselines read: not worth mutating
SPLIT_UNREAD = ("sheets/", "report.json")


def run_one(loader: Loader, ctx: Any, value: Any, work: Path) -> Outcome:
    """Feed one input; fail the test with the input saved when it breaks the contract."""
    outcome = classify(lambda: loader.run(ctx, value, work))
    if outcome.kind not in ("accepted", "clean") or outcome.changed:
        saved = work / f"crasher-{loader.name}"
        if saved.exists():
            shutil.rmtree(saved) if saved.is_dir() else saved.unlink()
        loader.save(value, saved)
        what = "a project file changed after a refused input" if outcome.changed else outcome.kind
        pytest.fail(f"{loader.name}: {what}: {outcome.message} (input saved to {saved})")
    return outcome


def loader_named(name: str, split_files: Any = None) -> Loader:
    return next(x for x in make_loaders(split_files) if x.name == name)


def corpus(name: str) -> list[Path]:
    """The regression inputs kept for one loader (every crasher found and fixed)."""
    return sorted(p for p in (CORPUS / name).iterdir() if not p.name.startswith("."))


@pytest.fixture(scope="session")
def import_ctx_csv(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return loader_named("csv").prepare(tmp_path_factory.mktemp("fuzz-csv"))


@pytest.fixture(scope="session")
def import_ctx_folder(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return loader_named("ua_folder").prepare(tmp_path_factory.mktemp("fuzz-folder"))


@pytest.fixture(scope="session")
def seed_split(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A real split: the UA annotations imported into a project, 12 puzzles generated."""
    from fuzz_kit import ua_csv_path

    from studio.cli import main

    work = tmp_path_factory.mktemp("fuzz-split")
    project, out = str(work / "ua.studio"), work / "split"
    assert main(["-q", "init", project]) == 0
    assert main(["-q", "import-annotations", project, str(ua_csv_path())]) == 0
    assert main(["-q", "generate", project, str(out), "--n", "12", "--seed", "3"]) == 0
    return read_tree(out, skip=lambda n: n.startswith(SPLIT_UNREAD))


def seeded(seed: int) -> random.Random:
    return random.Random(seed)


def apply_split_case(seed: dict[str, bytes], case: Path) -> dict[str, bytes]:
    """The seed split with the files of a corpus case put in (``npz/FIRST.npz`` stands for
    the seed's first npz, whatever the split named it; an empty ``npz/FIRST.other-target``
    for the seed's first npz with its target on another answer: a stored npz's target
    agreed with a later generator's key, and the case no longer disagreed)."""
    first = min(n for n in seed if n.startswith("npz/"))
    files = dict(seed)
    for p in sorted(case.rglob("*")):
        if p.is_file():
            rel = str(p.relative_to(case))
            if rel == "npz/FIRST.other-target":
                files[first] = _other_target(seed[first])
            else:
                files[first if rel == "npz/FIRST.npz" else rel] = p.read_bytes()
    return files


def _other_target(npz: bytes) -> bytes:
    with np.load(io.BytesIO(npz)) as d:
        arrays = {k: d[k] for k in d.files}
    t = arrays["target"]
    arrays["target"] = np.asarray(1 if int(t) == 0 else 0, dtype=t.dtype)
    out = io.BytesIO()
    np.savez_compressed(out, **arrays)
    return out.getvalue()
