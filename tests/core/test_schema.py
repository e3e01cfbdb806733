from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.core.errors import SchemaError
from studio.core.schema import (
    Concept,
    ConstantMode,
    Rule,
    RuleSpec,
    Schema,
    Value,
    ValueKind,
    load_schema,
    schema_from_json,
)


def _write(tmp_path: Path, data: object, name: str = "s.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return p


def test_ua_schema_round_trips_through_json(ua_schema: Schema) -> None:
    again = schema_from_json(json.loads(ua_schema.dumps()))
    assert again == ua_schema
    assert len(ua_schema.concepts) == 48


def test_invalid_json_names_file_and_line(tmp_path: Path) -> None:
    p = _write(tmp_path, '{"format": "analogy-studio.concept-schema",\n "id": }')
    with pytest.raises(SchemaError) as e:
        load_schema(p)
    assert str(p) in str(e.value) and "line 2" in str(e.value)
    assert e.value.json_path == "$"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="file not found"):
        load_schema(tmp_path / "nope.json")


def test_structural_error_has_json_path(tmp_path: Path, ua_schema: Schema) -> None:
    data = ua_schema.to_json()
    data["categories"][1]["concepts"][2]["kind"] = "colourful"
    p = _write(tmp_path, data)
    with pytest.raises(SchemaError) as e:
        load_schema(p)
    assert e.value.json_path == "$.categories[1].concepts[2].kind"
    assert "colourful" in e.value.problem
    assert str(p) in str(e.value)


@pytest.mark.parametrize(
    ("mutate", "path_end", "words"),
    [
        (lambda c: c["values"].append({"id": c["values"][0]["id"]}), ".values[3].id", "repeated"),
        (lambda c: c["rules"].update(arithmetic={}), ".rules.arithmetic", "integer concept"),
        (
            lambda c: c["rules"]["progression"].update(values=["tall", "x"]),
            ".rules.progression.values",
            "not a value",
        ),
        (lambda c: c["rules"]["constant"].pop("mode"), ".rules.constant", "mode"),
    ],
)
def test_semantic_errors(
    tmp_path: Path, ua_schema: Schema, mutate, path_end: str, words: str
) -> None:
    data = ua_schema.to_json()
    aspect = data["categories"][0]["concepts"][0]
    assert aspect["id"] == "aspect"
    mutate(aspect)
    p = _write(tmp_path, data)
    with pytest.raises(SchemaError) as e:
        load_schema(p)
    assert e.value.json_path.startswith("$.categories[0].concepts[0]")
    assert e.value.json_path.endswith(path_end) or path_end in e.value.json_path
    assert words in e.value.problem


def test_integer_concept_refuses_word_values(ua_schema: Schema) -> None:
    with pytest.raises(SchemaError, match="no integer"):
        ua_schema.with_value_added("shape-sides", Value("many"))


def test_edits_are_new_schemas(ua_schema: Schema) -> None:
    s2 = ua_schema.with_concept_added(
        Concept(
            "texture",
            "global",
            ValueKind.NOMINAL,
            (Value("smooth"), Value("rough")),
            {Rule.CONSTANT: RuleSpec(Rule.CONSTANT, mode=ConstantMode.SELECT)},
        )
    )
    assert s2.has_concept("texture") and not ua_schema.has_concept("texture")
    s3 = s2.with_value_renamed("aspect", "tall", "high")
    assert s3.concept("aspect").rules[Rule.PROGRESSION].values == ("high", "square", "wide")
    with pytest.raises(SchemaError, match="3"):
        # an ordinal progression needs three ordered values: the removal is refused
        s3.with_value_removed("aspect", "square")
    s5 = s2.with_concept_renamed("texture", "surface")
    assert s5.concept("surface").value_ids == ("smooth", "rough")
    assert not s5.with_concept_removed("surface").has_concept("surface")


def test_duplicate_concept_refused(ua_schema: Schema) -> None:
    with pytest.raises(SchemaError, match="exists"):
        ua_schema.with_concept_renamed("aspect", "closure")


def test_definitions_and_examples_round_trip_and_bad_keys_are_named(
    tmp_path: Path, ua_schema: Schema
) -> None:
    """Issue 28: a concept and each value may carry a definition and example glyph keys."""
    data = ua_schema.to_json()
    aspect = data["categories"][0]["concepts"][0]
    aspect["description"] = "How tall the glyph is against its width."
    aspect["examples"] = ["U+25AE@symbola"]
    aspect["values"][0].update(description="taller than wide", examples=["U+25AF@symbola"])
    loaded = load_schema(_write(tmp_path, data))
    c = loaded.concept("aspect")
    assert c.description == "How tall the glyph is against its width."
    assert c.examples == ("U+25AE@symbola",)
    tall = c.values[0]
    assert (tall.description, tall.examples) == ("taller than wide", ("U+25AF@symbola",))
    assert schema_from_json(json.loads(loaded.dumps())) == loaded
    aspect["values"][0]["examples"] = ["U+25AF@symbola", "25AF"]
    with pytest.raises(SchemaError) as e:
        load_schema(_write(tmp_path, data, "bad.json"))
    assert e.value.json_path == "$.categories[0].concepts[0].values[0].examples[1]"
    assert "'25AF' is not a glyph key like U+25CB@symbola" in e.value.problem
    aspect["values"][0]["examples"] = ["U+25AF@symbola", "U+25AF@symbola"]
    with pytest.raises(SchemaError, match="listed twice"):
        load_schema(_write(tmp_path, data, "twice.json"))
