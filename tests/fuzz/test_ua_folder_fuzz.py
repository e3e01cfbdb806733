"""Fuzzed UA annotation folders (``Annotations/<concept>-<value>/0x<cp>_<font>.png``)
imported into a real project: accepted, or refused with a StudioError naming the relative
path while the project file keeps its bytes."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import corpus, loader_named, run_one
from fuzz_kit import sha256, write_tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.app import Studio
from studio.core.errors import StudioError
from studio.store.project import Project

LOADER = loader_named("ua_folder")


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False))
def test_mutated_folders_are_imported_or_refused_cleanly(
    rng: random.Random, import_ctx_folder: Any, tmp_path: Path
) -> None:
    run_one(LOADER, import_ctx_folder, LOADER.make(import_ctx_folder, rng), tmp_path)


@pytest.mark.parametrize("case", corpus("ua_folder"), ids=lambda p: p.name)
def test_folder_corpus_is_refused_without_touching_the_project(
    case: Path, import_ctx_folder: Any, tmp_path: Path
) -> None:
    names = json.loads(case.read_text("utf-8"))
    outcome = run_one(LOADER, import_ctx_folder, names, tmp_path)
    assert outcome.kind == "clean" and not outcome.changed, outcome


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("aspect-square/0xD800_symbola.png", "U+D800 is a surrogate, not a character"),
        ("aspect-square/0x0_symbola.png", "U+0000 is a control character"),
        ("aspect-square/0x1D373_symbola.png/0x1D373_symbola.png", "is not 0x<codepoint>_"),
    ],
)
def test_bad_names_are_refused_naming_the_path(
    name: str, problem: str, import_ctx_folder: Any, tmp_path: Path
) -> None:
    root = tmp_path / "ua" / "Annotations"
    write_tree(root, ["aspect-square/0x1F341_symbola.png", name])
    project = tmp_path / "p.studio"
    shutil.copyfile(import_ctx_folder.pristine, project)
    before = sha256(project)
    with (
        pytest.raises(StudioError) as e,
        Studio(Project.open(project), catalog=import_ctx_folder.catalog) as studio,
    ):
        studio.import_annotations(root.parent)
    assert f"Annotations/{name.split('/')[0]}/{name.split('/')[1]}: " in str(e.value)
    assert problem in str(e.value)
    assert sha256(project) == before
