"""Fuzzed annotation CSVs imported into a real project (a sample of UA): each import is
accepted, or refused with a StudioError naming the file and line while the project file keeps
its bytes (sha256 unchanged)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import corpus, loader_named, run_one
from fuzz_kit import sha256, ua_sample_csv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.app import Studio
from studio.core.errors import StudioError
from studio.store.project import Project

LOADER = loader_named("csv")


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False))
def test_mutated_csvs_are_imported_or_refused_cleanly(
    rng: random.Random, import_ctx_csv: Any, tmp_path: Path
) -> None:
    run_one(LOADER, import_ctx_csv, LOADER.make(import_ctx_csv, rng), tmp_path)


@pytest.mark.parametrize("case", corpus("csv"), ids=lambda p: p.name)
def test_csv_corpus_is_refused_without_touching_the_project(
    case: Path, import_ctx_csv: Any, tmp_path: Path
) -> None:
    outcome = run_one(LOADER, import_ctx_csv, case.read_bytes(), tmp_path)
    assert outcome.kind == "clean" and not outcome.changed, outcome


def _import(ctx: Any, source: Path, work: Path) -> tuple[str, str | None]:
    project = work / "p.studio"
    shutil.copyfile(ctx.pristine, project)
    before = sha256(project)
    with (
        pytest.raises(StudioError) as e,
        Studio(Project.open(project), catalog=ctx.catalog) as studio,
    ):
        studio.import_annotations(source)
    assert sha256(project) == before
    return str(e.value), sha256(project)


def test_a_header_only_csv_is_refused_and_writes_nothing(
    import_ctx_csv: Any, tmp_path: Path
) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("concept,value,codepoint,font\n")
    message, _ = _import(import_ctx_csv, path, tmp_path)
    assert message == f"{path}: holds no tags; nothing was imported"


def test_a_field_over_the_csv_limit_names_its_line(import_ctx_csv: Any, tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    path.write_text(ua_sample_csv(3) + 'aspect,"' + "y" * 140_000 + '",1F341,symbola\n')
    message, _ = _import(import_ctx_csv, path, tmp_path)
    assert "line 5: not CSV: field larger than field limit" in message


@pytest.mark.parametrize(
    ("cp", "problem"),
    [
        ("D800", "U+D800 is a surrogate"),
        ("DFFF", "U+DFFF is a surrogate"),
        ("0", "U+0000 is a control character"),
        ("9F", "U+009F is a control character"),
        ("110000", "outside Unicode"),
    ],
)
def test_code_points_no_font_draws_are_refused(
    cp: str, problem: str, import_ctx_csv: Any, tmp_path: Path
) -> None:
    path = tmp_path / "cp.csv"
    path.write_text(f"concept,value,codepoint,font\naspect,square,{cp},symbola\n")
    message, _ = _import(import_ctx_csv, path, tmp_path)
    assert "line 2: " in message and problem in message
