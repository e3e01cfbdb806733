"""Fuzzed split folders (a real generated split, one file mutated: npz bytes truncated,
flipped or extended, npz arrays of the wrong shape, dtype or values, ``puzzles.jsonl``
records, ``split.json``, ``schema.json``, ``annotations.csv``) read as ``vet`` reads them and
as ``baseline`` loads them: accepted, or a StudioError naming the file; nothing else."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from conftest import apply_split_case, corpus, loader_named, run_one
from fuzz_kit import write_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.baselines.data import load_source
from studio.core.errors import StudioError
from studio.splits import vet_dir

pytestmark = pytest.mark.slow


def _loader(seed: dict[str, bytes]):  # the seed split is the loader's context
    return loader_named("splitdir", lambda work: seed)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    # the examples mutate a split generated afresh each session: an example saved from another
    # session's split draws differently on this one, which hypothesis reports as a flaky
    # strategy (it failed so on a second local run after the generator changed; CI's fresh
    # clone has no saved examples). Crashers found are kept in the corpus instead.
    database=None,
)
@given(rng=st.randoms(use_true_random=False))
def test_mutated_splits_are_read_or_refused_cleanly(
    rng: random.Random, seed_split: dict[str, bytes], tmp_path: Path
) -> None:
    loader = _loader(seed_split)
    run_one(loader, seed_split, loader.make(seed_split, rng), tmp_path)


@pytest.mark.parametrize("case", corpus("splitdir"), ids=lambda p: p.name)
def test_split_corpus_is_refused_cleanly(
    case: Path, seed_split: dict[str, bytes], tmp_path: Path
) -> None:
    loader = _loader(seed_split)
    outcome = run_one(loader, seed_split, apply_split_case(seed_split, case), tmp_path)
    assert outcome.kind == "clean", outcome


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("zlib-error-npz", "damaged: not a readable .npz (error: Error -3"),
        ("nan-in-images", "'images' holds 1 NaN or infinite value(s)"),
        ("void-dtype-images", "'images' has dtype |V8, expected numbers"),
        ("frames-40x40", "'images' has shape ("),
        ("target-1d", "'target' has shape (2,), expected a single number"),
    ],
)
def test_vet_and_baseline_both_refuse_a_bad_npz_naming_it(
    case: str, problem: str, seed_split: dict[str, bytes], tmp_path: Path
) -> None:
    files = apply_split_case(seed_split, Path(__file__).parent / "corpus" / "splitdir" / case)
    write_files(tmp_path / "s", files)
    first = min(n for n in files if n.startswith("npz/"))
    for read in (vet_dir, load_source):
        with pytest.raises(StudioError) as e:
            read(tmp_path / "s")
        assert e.value.path == str(tmp_path / "s" / first)
        assert problem in str(e.value)


def test_baseline_refuses_a_target_that_disagrees_with_the_record(
    seed_split: dict[str, bytes], tmp_path: Path
) -> None:
    files = apply_split_case(
        seed_split, Path(__file__).parent / "corpus" / "splitdir" / "target-disagrees"
    )
    write_files(tmp_path / "s", files)
    with pytest.raises(StudioError, match=r"target \d disagrees with puzzles\.jsonl"):
        load_source(tmp_path / "s")


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("key-infinite", "line 1: key must be an integer, not float inf"),
        ("seed-5000-digits", "line 1: not valid JSON: Exceeds the limit (4300 digits)"),
        ("deep-record", "line 1 is nested more than 64 levels deep (column 65)"),
    ],
)
def test_bad_records_name_file_and_line(
    case: str, problem: str, seed_split: dict[str, bytes], tmp_path: Path
) -> None:
    files = apply_split_case(seed_split, Path(__file__).parent / "corpus" / "splitdir" / case)
    write_files(tmp_path / "s", files)
    with pytest.raises(StudioError) as e:
        vet_dir(tmp_path / "s")
    assert e.value.path == str(tmp_path / "s" / "puzzles.jsonl")
    assert problem in str(e.value)


def test_the_seed_split_itself_is_read(seed_split: dict[str, bytes], tmp_path: Path) -> None:
    write_files(tmp_path / "s", seed_split)
    assert len(vet_dir(tmp_path / "s")) == 12
    arrays = load_source(tmp_path / "s")
    assert arrays.n == 12 and np.isin(arrays.context_u8, (0, 255)).all()
