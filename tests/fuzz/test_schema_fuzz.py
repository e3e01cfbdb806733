"""Fuzzed concept schemas (``init --schema``): each is accepted and becomes a project, or is
refused with a SchemaError naming the file and a JSON path; no other exception, no project
left behind."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import corpus, loader_named, run_one
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.core.errors import SchemaError
from studio.core.schema import bundled_schema_path, load_schema

LOADER = loader_named("schema")
SEED_TEXT = bundled_schema_path().read_text("utf-8")


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False))
def test_mutated_schemas_are_accepted_or_refused_cleanly(
    rng: random.Random, tmp_path: Path
) -> None:
    outcome = run_one(LOADER, SEED_TEXT, LOADER.make(SEED_TEXT, rng), tmp_path)
    assert not (tmp_path / "from-schema.studio").exists()
    assert outcome.kind in ("accepted", "clean")


@pytest.mark.parametrize("case", corpus("schema"), ids=lambda p: p.name)
def test_schema_corpus_is_refused_cleanly(case: Path, tmp_path: Path) -> None:
    outcome = run_one(LOADER, SEED_TEXT, case.read_bytes(), tmp_path)
    assert outcome.kind == "clean", outcome
    assert str(tmp_path / "schema.json") in outcome.message


def test_deep_json_names_the_file_the_line_and_the_depth(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"a":' * 3000 + "1" + "}" * 3000)
    with pytest.raises(SchemaError) as e:
        load_schema(path)
    assert e.value.path == str(path)
    assert "nested more than 64 levels deep (line 1, column" in str(e.value)


def test_lone_surrogate_is_refused_with_its_json_path(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(SEED_TEXT.replace('"title": "', '"title": "\\ud800', 1))
    with pytest.raises(SchemaError, match=r"at \$\.title: the text holds a lone surrogate"):
        load_schema(path)


def test_an_id_with_a_final_newline_is_refused(tmp_path: Path) -> None:
    # JSON Schema's pattern "$" lets "ua\n" through; the semantic check does not
    path = tmp_path / "s.json"
    path.write_text(SEED_TEXT.replace('"id": "ua"', '"id": "ua\\n"', 1))
    with pytest.raises(SchemaError, match=r"at \$\.id: 'ua\\n' does not match"):
        load_schema(path)
