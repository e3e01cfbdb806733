"""The UA 1.0 concept schema, built from UA.py's facts (``resources/ua/schema_facts.json``)
and our definitions of its concepts (``resources/ua/definitions.json``).

``schemas/ua-1.0.json`` is the output of :func:`ua_schema_from_facts`; a test rebuilds it and
compares, so the shipped file and the facts can never drift apart. The definitions (issue 28)
are written in our own words from the UA paper's description of its schema, each with example
glyphs from the public annotation set: UA's annotators tagged by definitions, and a tooltip
that named only a concept's kind and rules left ours without any.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from studio.core.schema import (
    CARDINALS,
    NONE_VALUE,
    Category,
    Concept,
    ConstantMode,
    Rule,
    RuleSpec,
    Schema,
    Value,
    ValueKind,
)

UA_CATEGORIES = (
    ("GLOBAL_C", Category("global", "Global")),
    ("LOCAL_C", Category("local", "Local")),
    ("OBJREL_C", Category("objrel", "Objects & relations")),
)


def _kind(rules: Mapping[str, Any], values: list[str]) -> ValueKind:
    prog = rules.get("progression")
    if prog == "cardinal":
        return ValueKind.CARDINAL
    if isinstance(prog, list):
        return ValueKind.ORDINAL
    if prog == "integer" or rules.get("arithmetic") == "integer":
        return ValueKind.INTEGER
    named = [v for v in values if v not in (NONE_VALUE, "")]
    if named and all(v.isdigit() for v in named):
        return ValueKind.INTEGER
    return ValueKind.NOMINAL


def _ordered(kind: ValueKind, values: set[str], order: list[str] | None) -> list[str]:
    def key(v: str) -> tuple[int, Any]:
        if v == "":
            return (0, 0)
        if v == NONE_VALUE and (order is None or v not in order):
            return (3, 0)
        if order is not None and v in order:
            return (1, order.index(v))
        if kind is ValueKind.INTEGER and v.isdigit():
            return (1, int(v))
        if kind is ValueKind.CARDINAL and v in CARDINALS:
            return (1, CARDINALS.index(v))
        return (2, v)

    return sorted(values, key=key)


def ua_schema_from_facts(
    facts: Mapping[str, Any], definitions: Mapping[str, Any] | None = None
) -> Schema:
    """Every concept of UA.py's CLASSES with its category, values and rules, in the studio's form.

    Values are the union of the folders observed, those seen only in split names and those named
    in rule settings. Kinds are inferred from the rules: ``progression: integer`` or arithmetic →
    integer, ``cardinal`` → cardinal, a listed progression → ordinal (the list is the order),
    counts with no ordered rule → integer, everything else nominal. ``definitions``
    (``{"concepts": {id: {"description", "examples", "values": {id: {...}}}}}``) adds each
    concept's and value's definition and example glyphs.
    """
    defs: Mapping[str, Any] = (definitions or {}).get("concepts", {})
    cat_of = dict(UA_CATEGORIES)
    concepts = []
    for cid, fact in facts["concepts"].items():
        raw_rules: Mapping[str, Any] = fact["rules"]
        values = set(fact.get("values_observed", [])) | set(
            fact.get("values_seen_only_in_split_names", [])
        )
        for setting in raw_rules.values():
            if isinstance(setting, list):
                values |= set(setting)
        kind = _kind(raw_rules, sorted(values))
        prog = raw_rules.get("progression")
        order = prog if isinstance(prog, list) else None
        rules: dict[Rule, RuleSpec] = {}
        for rname, setting in raw_rules.items():
            rule = Rule(rname)
            if rule is Rule.CONSTANT:
                rules[rule] = RuleSpec(rule, mode=ConstantMode(setting))
            elif isinstance(setting, list):
                rules[rule] = RuleSpec(rule, values=tuple(setting))
            else:
                rules[rule] = RuleSpec(rule)
        d = defs.get(cid, {})
        vdefs = d.get("values", {})
        concepts.append(
            Concept(
                id=cid,
                category=cat_of[fact["category"]].id,
                kind=kind,
                values=tuple(
                    Value(
                        v,
                        "present" if v == "" else "",
                        vdefs.get(v, {}).get("description", ""),
                        tuple(vdefs.get(v, {}).get("examples", ())),
                    )
                    for v in _ordered(kind, values, order)
                ),
                rules={r: rules[r] for r in Rule if r in rules},
                description=d.get("description", ""),
                examples=tuple(d.get("examples", ())),
            )
        )
    schema = Schema(
        id="ua",
        version="1.0",
        title="Unicode Analogies 1.0",
        description=(
            "The concept schema of the Unicode Analogies benchmark (Spratley et al.): the CLASSES "
            "of generation/UA.py with their categories, values and rule settings."
        ),
        source=dict(facts.get("source", {})),
        categories=tuple(c for _, c in UA_CATEGORIES),
        concepts=tuple(concepts),
    )
    # round-trip through JSON so the result is validated like any loaded file
    from studio.core.schema import schema_from_json

    return schema_from_json(json.loads(schema.dumps()))


def build_ua_schema(facts_path: Path, out_path: Path) -> Schema:
    """Build from the facts and, beside them, ``definitions.json`` when present."""
    defs_path = Path(facts_path).with_name("definitions.json")
    definitions = json.loads(defs_path.read_text("utf-8")) if defs_path.exists() else None
    schema = ua_schema_from_facts(json.loads(Path(facts_path).read_text("utf-8")), definitions)
    schema.save(out_path)
    return schema
