"""Concept schemas: categories → concepts → values, each concept with a value kind and rules.

A schema is immutable; every edit returns a new schema, which makes undo a matter of keeping the
previous object. The JSON form is validated twice: structurally by the JSON Schema in
``schemas/concept-schema.schema.json`` and semantically here (rule restrictions name existing
values, progression only on ordered kinds, …). Both report the file, a JSON path and the problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from studio.core.errors import SchemaError
from studio.core.fileio import atomic_write_text
from studio.core.inputs import MAX_ID_LENGTH, JsonInputError, load_json
from studio.core.keys import GlyphKey
from studio.resources import schemas_dir

FORMAT = "analogy-studio.concept-schema"
FORMAT_VERSION = 1
NONE_VALUE = "none"
CARDINALS = ("N", "NE", "E", "SE", "S", "SW", "W", "NW", "C")


class ValueKind(StrEnum):
    INTEGER = "integer"
    ORDINAL = "ordinal"
    CARDINAL = "cardinal"
    NOMINAL = "nominal"


class Rule(StrEnum):
    """UA's rules (§3.2), in the order every list and report of the studio gives them: the
    one definition the generator's, the vetting's and the reports' rule lists derive from."""

    CONSTANT = "constant"
    PROGRESSION = "progression"
    ARITHMETIC = "arithmetic"
    DIST3 = "dist3"
    UNION = "union"


#: every rule id, in :class:`Rule`'s order
RULE_IDS: tuple[str, ...] = tuple(r.value for r in Rule)


class ConstantMode(StrEnum):
    SELECT = "select"
    NEGATE = "negate"


@dataclass(frozen=True)
class RuleSpec:
    """How one rule applies to a concept.

    ``values`` restricts the rule to those values; for ``progression`` on an ordinal concept it
    is also the order of the steps. ``mode`` is used by ``constant`` only.
    """

    rule: Rule
    mode: ConstantMode | None = None
    values: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.mode is not None:
            out["mode"] = self.mode.value
        if self.values is not None:
            out["values"] = list(self.values)
        return out


@dataclass(frozen=True)
class Value:
    id: str
    label: str = ""
    #: what an annotator looks for (issue 28: annotators tag by definitions, as UA's did)
    description: str = ""
    #: glyph keys (``U+25CB@symbola``) that carry the value, shown beside its definition
    examples: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        """What a person reads: the label, else the id; the empty id of a presence concept
        (UA's ``horns``, ``negative``) reads as "present"."""
        return self.label or (self.id if self.id != "" else "present")


@dataclass(frozen=True)
class Concept:
    id: str
    category: str
    kind: ValueKind
    values: tuple[Value, ...] = ()
    rules: Mapping[Rule, RuleSpec] = field(default_factory=dict)
    label: str = ""
    description: str = ""
    #: glyph keys that carry the concept (any value), shown beside its definition
    examples: tuple[str, ...] = ()

    @property
    def value_ids(self) -> tuple[str, ...]:
        return tuple(v.id for v in self.values)

    def has_value(self, value_id: str) -> bool:
        return any(v.id == value_id for v in self.values)

    def value(self, value_id: str) -> Value:
        for v in self.values:
            if v.id == value_id:
                return v
        raise KeyError(f"concept {self.id!r} has no value {value_id!r}")

    @property
    def display(self) -> str:
        return self.label or self.id

    @property
    def negate(self) -> bool:
        spec = self.rules.get(Rule.CONSTANT)
        return spec is not None and spec.mode is ConstantMode.NEGATE


@dataclass(frozen=True)
class Category:
    id: str
    label: str = ""

    @property
    def display(self) -> str:
        return self.label or self.id


@dataclass(frozen=True)
class Schema:
    id: str
    version: str
    categories: tuple[Category, ...]
    concepts: tuple[Concept, ...]
    title: str = ""
    description: str = ""
    source: Mapping[str, Any] = field(default_factory=dict)

    # ---- queries -------------------------------------------------------------------------
    def concept(self, concept_id: str) -> Concept:
        for c in self.concepts:
            if c.id == concept_id:
                return c
        raise KeyError(f"schema {self.id!r} has no concept {concept_id!r}")

    def has_concept(self, concept_id: str) -> bool:
        return any(c.id == concept_id for c in self.concepts)

    def concepts_in(self, category_id: str) -> tuple[Concept, ...]:
        return tuple(c for c in self.concepts if c.category == category_id)

    def has_tag(self, concept_id: str, value_id: str) -> bool:
        return self.has_concept(concept_id) and self.concept(concept_id).has_value(value_id)

    # ---- edits (each returns a new, validated schema) ------------------------------------
    def _with_concepts(self, concepts: Iterable[Concept]) -> Schema:
        new = replace(self, concepts=tuple(concepts))
        validate_semantics(new.to_json(), path=None)
        return new

    def with_concept_added(self, concept: Concept, index: int | None = None) -> Schema:
        if self.has_concept(concept.id):
            raise SchemaError(None, f"$.concepts[{concept.id}]", "a concept with this id exists")
        if concept.category not in {c.id for c in self.categories}:
            raise SchemaError(None, f"$.concepts[{concept.id}]", "unknown category")
        concepts = list(self.concepts)
        concepts.insert(len(concepts) if index is None else index, concept)
        return self._with_concepts(concepts)

    def with_concept_removed(self, concept_id: str) -> Schema:
        self.concept(concept_id)
        return self._with_concepts(c for c in self.concepts if c.id != concept_id)

    def with_concept_replaced(self, concept_id: str, concept: Concept) -> Schema:
        """Replace one concept (rename, new values, new rules) keeping its position."""
        self.concept(concept_id)
        if concept.id != concept_id and self.has_concept(concept.id):
            raise SchemaError(None, f"$.concepts[{concept.id}]", "a concept with this id exists")
        return self._with_concepts(concept if c.id == concept_id else c for c in self.concepts)

    def with_concept_renamed(self, old: str, new: str) -> Schema:
        return self.with_concept_replaced(old, replace(self.concept(old), id=new))

    def with_value_added(self, concept_id: str, value: Value) -> Schema:
        c = self.concept(concept_id)
        if c.has_value(value.id):
            raise SchemaError(None, f"$.concepts[{concept_id}].values", f"{value.id!r} exists")
        return self.with_concept_replaced(concept_id, replace(c, values=(*c.values, value)))

    def with_value_renamed(self, concept_id: str, old: str, new: str) -> Schema:
        c = self.concept(concept_id)
        c.value(old)
        if c.has_value(new):
            raise SchemaError(None, f"$.concepts[{concept_id}].values", f"{new!r} exists")
        values = tuple(replace(v, id=new) if v.id == old else v for v in c.values)
        rules = {
            r: replace(s, values=tuple(new if x == old else x for x in s.values))
            if s.values is not None
            else s
            for r, s in c.rules.items()
        }
        return self.with_concept_replaced(concept_id, replace(c, values=values, rules=rules))

    def with_value_removed(self, concept_id: str, value_id: str) -> Schema:
        c = self.concept(concept_id)
        c.value(value_id)
        values = tuple(v for v in c.values if v.id != value_id)
        rules = {
            r: replace(s, values=tuple(x for x in s.values if x != value_id))
            if s.values is not None
            else s
            for r, s in c.rules.items()
        }
        return self.with_concept_replaced(concept_id, replace(c, values=values, rules=rules))

    def with_definitions_from(self, other: Schema) -> tuple[Schema, int]:
        """Fill the definitions and examples this schema lacks from ``other``'s concepts and
        values of the same ids (e.g. the bundled UA schema's, for a project made before it
        carried them); never overwrites one. Returns the schema and how many were filled."""
        filled = 0
        out = self
        for c in self.concepts:
            if not other.has_concept(c.id):
                continue
            o = other.concept(c.id)
            changes: dict[str, Any] = {}
            if not c.description and o.description:
                changes["description"] = o.description
            if not c.examples and o.examples:
                changes["examples"] = o.examples
            values = []
            for v in c.values:
                ov = o.value(v.id) if o.has_value(v.id) else None
                new_v = v
                if ov is not None and not v.description and ov.description:
                    new_v = replace(new_v, description=ov.description)
                if ov is not None and not v.examples and ov.examples:
                    new_v = replace(new_v, examples=ov.examples)
                filled += (new_v.description != v.description) + (new_v.examples != v.examples)
                values.append(new_v)
            if tuple(values) != c.values:
                changes["values"] = tuple(values)
            filled += ("description" in changes) + ("examples" in changes)
            if changes:
                out = out.with_concept_replaced(c.id, replace(c, **changes))
        return out, filled

    def with_rules(self, concept_id: str, rules: Mapping[Rule, RuleSpec]) -> Schema:
        c = self.concept(concept_id)
        return self.with_concept_replaced(concept_id, replace(c, rules=dict(rules)))

    # ---- JSON ----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "id": self.id,
            "version": self.version,
        }
        if self.title:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        if self.source:
            out["source"] = dict(self.source)
        out["categories"] = []
        for cat in self.categories:
            cat_json: dict[str, Any] = {"id": cat.id}
            if cat.label:
                cat_json["label"] = cat.label
            cat_json["concepts"] = [_concept_json(c) for c in self.concepts_in(cat.id)]
            out["categories"].append(cat_json)
        return out

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n"

    def save(self, path: str | Path) -> None:
        atomic_write_text(Path(path), self.dumps())


def _concept_json(c: Concept) -> dict[str, Any]:
    out: dict[str, Any] = {"id": c.id, "kind": c.kind.value}
    if c.label:
        out["label"] = c.label
    if c.description:
        out["description"] = c.description
    if c.examples:
        out["examples"] = list(c.examples)
    out["values"] = [_value_json(v) for v in c.values]
    out["rules"] = {r.value: c.rules[r].to_json() for r in Rule if r in c.rules}
    return out


def _value_json(v: Value) -> dict[str, Any]:
    out: dict[str, Any] = {"id": v.id}
    if v.label:
        out["label"] = v.label
    if v.description:
        out["description"] = v.description
    if v.examples:
        out["examples"] = list(v.examples)
    return out


# ---- loading ---------------------------------------------------------------------------------


@cache
def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every concept schema file must satisfy."""
    schema: dict[str, Any] = json.loads(
        (schemas_dir() / "concept-schema.schema.json").read_text("utf-8")
    )
    return schema


def _json_path(parts: Iterable[Any]) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def validate_structure(data: Any, path: str | Path | None) -> None:
    """Raise SchemaError for the first structural problem (deepest path first)."""
    validator = jsonschema.Draft202012Validator(json_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: (-len(e.absolute_path), e.path))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        assert best is not None
        raise SchemaError(path, _json_path(best.absolute_path), best.message)


_IDENT = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_VALUE_ID = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*)?")


def _check_id(value: str, pattern: re.Pattern[str], where: str, path: str | Path | None) -> None:
    """The whole id matches (JSON Schema's ``$`` lets a final newline through) and is short."""
    if not pattern.fullmatch(value):
        raise SchemaError(path, where, f"{value!r} does not match {pattern.pattern!r}")
    if len(value) > MAX_ID_LENGTH:
        raise SchemaError(path, where, f"an id of {len(value)} characters (most: {MAX_ID_LENGTH})")


def validate_semantics(data: Mapping[str, Any], path: str | Path | None) -> None:
    """Checks JSON Schema cannot express: unique ids, rules that fit the kind and values."""
    seen_concepts: set[str] = set()
    seen_categories: set[str] = set()
    _check_id(data["id"], _IDENT, "$.id", path)
    for ci, cat in enumerate(data["categories"]):
        where_cat = f"$.categories[{ci}]"
        _check_id(cat["id"], _IDENT, where_cat + ".id", path)
        if cat["id"] in seen_categories:
            raise SchemaError(path, where_cat + ".id", f"category {cat['id']!r} is repeated")
        seen_categories.add(cat["id"])
        for ki, con in enumerate(cat["concepts"]):
            where = f"{where_cat}.concepts[{ki}]"
            _check_concept(con, where, path, seen_concepts)


def _check_examples(examples: Sequence[str], where: str, path: str | Path | None) -> None:
    """Example glyphs are glyph keys (``U+25CB@symbola``), each listed once."""
    for i, text in enumerate(examples):
        try:
            GlyphKey.parse(text)
        except ValueError:
            raise SchemaError(
                path, f"{where}[{i}]", f"{text!r} is not a glyph key like U+25CB@symbola"
            ) from None
        if str(GlyphKey.parse(text)) in (str(GlyphKey.parse(t)) for t in examples[:i]):
            raise SchemaError(path, f"{where}[{i}]", f"example {text!r} is listed twice")


def _examples(items: Sequence[str]) -> tuple[str, ...]:
    """Example keys as :class:`GlyphKey` spells them (checked by :func:`_check_examples`)."""
    return tuple(str(GlyphKey.parse(t)) for t in items)


def _check_concept(con: Mapping[str, Any], where: str, path: Any, seen: set[str]) -> None:
    cid = con["id"]
    _check_id(cid, _IDENT, where + ".id", path)
    if cid in seen:
        raise SchemaError(path, where + ".id", f"concept {cid!r} is repeated")
    seen.add(cid)
    kind = ValueKind(con["kind"])
    _check_examples(con.get("examples", []), where + ".examples", path)
    for vi, v in enumerate(con["values"]):
        _check_examples(v.get("examples", []), f"{where}.values[{vi}].examples", path)
    ids = [v["id"] for v in con["values"]]
    for vi, vid in enumerate(ids):
        vwhere = f"{where}.values[{vi}].id"
        _check_id(vid, _VALUE_ID, vwhere, path)
        if ids.index(vid) != vi:
            raise SchemaError(path, vwhere, f"value {vid!r} of {cid!r} is repeated")
        if vid == NONE_VALUE or vid == "":
            continue
        if kind is ValueKind.INTEGER and not vid.lstrip("-").isdigit():
            raise SchemaError(path, vwhere, f"{cid!r} is an integer concept; {vid!r} is no integer")
        if kind is ValueKind.CARDINAL and vid not in CARDINALS:
            raise SchemaError(
                path, vwhere, f"{cid!r} is cardinal; {vid!r} is not one of {', '.join(CARDINALS)}"
            )
    rules = con.get("rules", {})
    for rname, spec in rules.items():
        rwhere = f"{where}.rules.{rname}"
        rule = Rule(rname)
        for x in spec.get("values", []) or []:
            if x not in ids:
                raise SchemaError(path, rwhere + ".values", f"{x!r} is not a value of {cid!r}")
        if rule is Rule.CONSTANT and "mode" not in spec:
            raise SchemaError(path, rwhere, "constant needs a mode: select or negate")
        if rule is not Rule.CONSTANT and "mode" in spec:
            raise SchemaError(path, rwhere + ".mode", "only the constant rule has a mode")
        if rule is Rule.ARITHMETIC and kind is not ValueKind.INTEGER:
            raise SchemaError(path, rwhere, f"arithmetic needs an integer concept, not {kind}")
        if rule is Rule.PROGRESSION:
            if kind is ValueKind.NOMINAL:
                raise SchemaError(path, rwhere, "progression needs an ordered kind, not nominal")
            if kind is ValueKind.ORDINAL and len(spec.get("values") or ()) < 3:
                raise SchemaError(
                    path, rwhere + ".values", "an ordinal progression needs the order of 3+ values"
                )
        if rule is Rule.DIST3 and spec.get("values") is not None and len(spec["values"]) < 3:
            raise SchemaError(path, rwhere + ".values", "dist3 needs at least 3 values")


def schema_from_json(data: Any, path: str | Path | None = None) -> Schema:
    """Validate and build. Raises SchemaError naming ``path``, the JSON path and the problem."""
    validate_structure(data, path)
    validate_semantics(data, path)
    categories = []
    concepts = []
    for cat in data["categories"]:
        categories.append(Category(cat["id"], cat.get("label", "")))
        for con in cat["concepts"]:
            rules = {}
            for rname, spec in con.get("rules", {}).items():
                vals = spec.get("values")
                rules[Rule(rname)] = RuleSpec(
                    Rule(rname),
                    ConstantMode(spec["mode"]) if "mode" in spec else None,
                    tuple(vals) if vals is not None else None,
                )
            concepts.append(
                Concept(
                    id=con["id"],
                    category=cat["id"],
                    kind=ValueKind(con["kind"]),
                    values=tuple(
                        Value(
                            v["id"],
                            v.get("label", ""),
                            v.get("description", ""),
                            _examples(v.get("examples", ())),
                        )
                        for v in con["values"]
                    ),
                    rules=rules,
                    label=con.get("label", ""),
                    description=con.get("description", ""),
                    examples=_examples(con.get("examples", ())),
                )
            )
    return Schema(
        id=data["id"],
        version=data["version"],
        categories=tuple(categories),
        concepts=tuple(concepts),
        title=data.get("title", ""),
        description=data.get("description", ""),
        source=data.get("source", {}),
    )


def schema_from_text(text: str, path: str | Path | None = None) -> Schema:
    """Parse (depth-limited, no NaN, no lone surrogates: :func:`studio.core.inputs.load_json`),
    validate and build; SchemaError naming ``path``, the JSON path and the problem."""
    try:
        data = load_json(text)
    except JsonInputError as e:
        raise SchemaError(path, "$", str(e)) from None
    return schema_from_json(data, path)


def load_schema(path: str | Path) -> Schema:
    """Read a concept schema file; any problem raises SchemaError naming the file."""
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except FileNotFoundError:
        raise SchemaError(p, "$", "file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SchemaError(p, "$", f"cannot be read: {e}") from None
    return schema_from_text(text, p)


def bundled_schema_path(name: str = "ua-1.0") -> Path:
    return schemas_dir() / f"{name}.json"
