"""schemas/ua-1.0.json must say exactly what UA.py's facts say."""

from __future__ import annotations

import json
from pathlib import Path

from studio.core.keys import GlyphKey
from studio.core.schema import NONE_VALUE, ConstantMode, Rule, Schema
from studio.core.ua import ua_schema_from_facts
from studio.resources import schemas_dir, ua_data_dir

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "ua"


def _facts() -> dict:
    return json.loads((ua_data_dir() / "schema_facts.json").read_text())


def _definitions() -> dict:
    return json.loads((ua_data_dir() / "definitions.json").read_text())


def test_shipped_file_is_the_build_output() -> None:
    built = ua_schema_from_facts(_facts(), _definitions())
    assert (schemas_dir() / "ua-1.0.json").read_text() == built.dumps()


def test_every_concept_and_value_is_defined_with_annotated_examples(ua_schema: Schema) -> None:
    """Issue 28: annotators tag by definitions. Every concept and value of UA 1.0 carries one,
    and every example glyph is annotated with that concept (and value) in the public set."""
    import csv

    keys_of_concept: dict[str, set[str]] = {}
    keys_of_value: dict[tuple[str, str], set[str]] = {}
    with (ua_data_dir() / "annotations.csv").open(newline="") as f:
        for r in csv.DictReader(f):
            concept, value = r["concept"], r["value"]
            key = str(GlyphKey.from_csv(r["codepoint"], r["font"]))
            keys_of_concept.setdefault(concept, set()).add(key)
            keys_of_value.setdefault((concept, value), set()).add(key)
    for c in ua_schema.concepts:
        assert c.description, c.id
        assert set(c.examples) <= keys_of_concept.get(c.id, set()), c.id
        assert c.examples or c.id not in keys_of_concept, c.id
        for v in c.values:
            assert v.description, (c.id, v.id)
            assert set(v.examples) <= keys_of_value.get((c.id, v.id), set()), (c.id, v.id)


def test_shipped_data_matches_shared_copy() -> None:
    if not SHARED.exists():
        return  # an installed build has no ../shared; the copy is what ships
    for name in ("annotations.csv", "schema_facts.json"):
        assert (ua_data_dir() / name).read_bytes() == (SHARED / name).read_bytes(), name


def test_every_concept_category_value_and_rule(ua_schema: Schema) -> None:
    facts = _facts()["concepts"]
    assert [c.id for c in ua_schema.concepts] != []
    assert {c.id for c in ua_schema.concepts} == set(facts)
    categories = {"GLOBAL_C": "global", "LOCAL_C": "local", "OBJREL_C": "objrel"}
    for cid, fact in facts.items():
        c = ua_schema.concept(cid)
        assert c.category == categories[fact["category"]], cid
        observed = set(fact["values_observed"]) | set(
            fact.get("values_seen_only_in_split_names", [])
        )
        assert observed <= set(c.value_ids), cid
        assert {r.value for r in c.rules} == set(fact["rules"]), cid
        for rname, setting in fact["rules"].items():
            spec = c.rules[Rule(rname)]
            if rname == "constant":
                assert spec.mode is ConstantMode(setting)
            elif isinstance(setting, list):
                assert spec.values == tuple(setting), (cid, rname)
            else:
                assert spec.values is None


def test_kinds(ua_schema: Schema) -> None:
    assert ua_schema.concept("aspect").kind == "ordinal"
    assert ua_schema.concept("global-mass").kind == "cardinal"
    assert ua_schema.concept("stroke-dot-quantity").kind == "integer"
    assert ua_schema.concept("shape-type").kind == "nominal"
    assert ua_schema.concept("horns").value_ids == ("", NONE_VALUE)
    assert ua_schema.concept("horns").value("").display == "present"
