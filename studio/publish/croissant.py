"""``croissant.json``: ML Commons Croissant 1.0 metadata of an exported curated set.

It describes the files (``records.parquet`` and ``puzzles.jsonl`` with their sha256, the sheets
and the UA arrays as file sets) and one record set, ``puzzles``, whose fields are the scalar
columns of ``records.parquet`` plus ``record`` (the whole JSONL line). ``mlcroissant`` loads it
(``mlcroissant.Dataset(jsonld="croissant.json")``) and iterates the records; the tests check
that it does.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from studio.core.fileio import atomic_write_text
from studio.families.glyph_pmp.export import NPZ, PUZZLES, SHEETS
from studio.publish.info import DatasetInfo
from studio.publish.parquet import RECORDS_PARQUET

CROISSANT_JSON = "croissant.json"
CONFORMS_TO = "http://mlcommons.org/croissant/1.0"
RECORD_SET = "puzzles"

#: Croissant 1.0's JSON-LD context (as the specification and mlcroissant write it)
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

#: (column of records.parquet, Croissant data type, description)
FIELDS: tuple[tuple[str, str, str], ...] = (
    ("id", "sc:Text", "The puzzle's id, unique in the set; names its sheet and npz files."),
    ("family", "sc:Text", "The puzzle family."),
    ("layout", "sc:Text", "two-row, matrix-3x3, sequence, odd-one-out or analogy."),
    ("rule", "sc:Text", "The rule the context follows."),
    ("concept", "sc:Text", "The concept of the schema the rule is about."),
    ("shift", "sc:Boolean", "Whether the rows use different values (context shift)."),
    ("split", "sc:Text", "train, val or test."),
    ("key", "sc:Integer", "The index of the right answer."),
    ("probtype", "sc:Text", "UA's problem type, <rule>_<concept>_shift|noshift."),
    ("seed", "sc:Integer", "The seed the puzzle was drawn with."),
    ("status", "sc:Text", "The curation status."),
    ("reviewer", "sc:Text", "Who set the curation status."),
    ("comment", "sc:Text", "The curator's comment."),
    ("replaced_foils", "sc:Integer", "How many foils the curator replaced."),
    ("sheet", "sc:Text", "The puzzle's sheet, relative to this folder."),
    ("npz", "sc:Text", "The puzzle's UA arrays, relative to this folder."),
    ("record", "sc:Text", "The whole puzzles.jsonl line (JSON), curation history included."),
)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def croissant_metadata(folder: Path, provenance: Mapping[str, Any], n: int) -> dict[str, Any]:
    """The JSON-LD object (the files it names must already be in ``folder``). A stimulus
    set's (``provenance["kind"] == "stimulus"``) names its pictures and its own columns."""
    if provenance.get("kind") == "stimulus":
        return _stimulus_metadata(folder, provenance, n)
    s = provenance["set"]
    schema = provenance["schema"]
    parquet_id = "records-parquet"
    info = DatasetInfo.from_json(provenance.get("dataset") or {})
    today = datetime.date.today()
    made = (
        f"{n} curated {provenance['family']} visual-analogy puzzles (status "
        f"{provenance['status']}) of the puzzle set “{s['name']}” of the Analogy Studio "
        f"project {provenance['project']['name']}, vetted again at export against its "
        f"annotations (sha256:{provenance['annotation_hash']}) and schema {schema['id']} "
        f"{schema['version']}."
    )
    human = provenance.get("human")
    if human:  # issue 29: the human baseline beside the puzzles, as the card gives it
        o = human["overall"]
        made += (
            f" Human baseline: people chose the key in {o['accuracy']:.1%} of {o['n']} answers "
            f"to {o['puzzles']} of these puzzles (95% CI {o['ci95'][0]:.3f}–{o['ci95'][1]:.3f}),"
            " from the set's pilot studies; per rule and concept in README.md."
        )
    exported_by = str(provenance.get("exported_by") or "")
    optional: dict[str, Any] = {}
    if info.license:
        optional["license"] = info.license_url
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": f"{s['name']}",
        "description": f"{info.description}\n\n{made}" if info.description else made,
        "version": str(provenance["studio_version"]),
        "datePublished": today.isoformat(),
        "creator": [{"@type": "sc:Person", "name": who} for who in info.creators(exported_by)]
        or {"@type": "sc:Person", "name": ""},
        "citeAs": info.citation(str(s["name"]), today.year, exported_by),
        **optional,
        "keywords": ["visual analogy", "abstract reasoning", "Unicode glyphs", "benchmark"],
        "distribution": [
            {
                "@type": "cr:FileObject",
                "@id": parquet_id,
                "name": parquet_id,
                "description": "One row per puzzle.",
                "contentUrl": RECORDS_PARQUET,
                "encodingFormat": "application/x-parquet",
                "sha256": _sha256(folder / RECORDS_PARQUET),
            },
            {
                "@type": "cr:FileObject",
                "@id": "puzzles-jsonl",
                "name": "puzzles-jsonl",
                "description": "One puzzle record per line, with its curation history.",
                "contentUrl": PUZZLES,
                "encodingFormat": "application/jsonlines",
                "sha256": _sha256(folder / PUZZLES),
            },
            {
                "@type": "cr:FileSet",
                "@id": "sheets",
                "name": "sheets",
                "description": "Each puzzle as people see it.",
                "encodingFormat": "image/png",
                "includes": f"{SHEETS}/*.png",
            },
            {
                "@type": "cr:FileSet",
                "@id": "ua-arrays",
                "name": "ua-arrays",
                "description": "UA's arrays per puzzle: images (1 = ink), target, probtype.",
                "encodingFormat": "application/x-npz",
                "includes": f"{NPZ}/*.npz",
            },
        ],
        "recordSet": [
            {
                "@type": "cr:RecordSet",
                "@id": RECORD_SET,
                "name": RECORD_SET,
                "description": "The exported puzzles, one record each.",
                "key": {"@id": f"{RECORD_SET}/id"},
                "field": [
                    {
                        "@type": "cr:Field",
                        "@id": f"{RECORD_SET}/{column}",
                        "name": column,
                        "description": description,
                        "dataType": data_type,
                        "source": {
                            "fileObject": {"@id": parquet_id},
                            "extract": {"column": column},
                        },
                    }
                    for column, data_type, description in FIELDS
                ],
            }
        ],
    }


def _stimulus_metadata(folder: Path, provenance: Mapping[str, Any], n: int) -> dict[str, Any]:
    """A curated stimulus set's Croissant: the glyph set's with the family's made-of, its
    pictures instead of UA's arrays, and :data:`.parquet.STIMULUS_COLUMNS` as fields."""
    from studio.publish.parquet import STIMULUS_COLUMNS

    data = croissant_metadata(folder, {**provenance, "kind": "glyph"}, n)
    s = provenance["set"]
    made = (
        f"{n} curated {provenance['family']} items (status {provenance['status']}) of the "
        f"puzzle set “{s['name']}” of the Analogy Studio project "
        f"{provenance['project']['name']}, re-drawn from their records and vetted again by "
        "their family's checks at export."
    )
    info = DatasetInfo.from_json(provenance.get("dataset") or {})
    data["description"] = f"{info.description}\n\n{made}" if info.description else made
    data["keywords"] = ["visual analogy", "abstract reasoning", provenance["family"], "benchmark"]
    files = [f for f in data["distribution"] if f["@id"] != "ua-arrays"]
    files.append(
        {
            "@type": "cr:FileSet",
            "@id": "pictures",
            "name": "pictures",
            "description": "Each item's pictures by the names its record gives.",
            "encodingFormat": "image/png",
            "includes": "images/*/*.png",
        }
    )
    data["distribution"] = files
    fields = data["recordSet"][0]["field"]
    template = fields[0]["source"]
    data["recordSet"][0]["description"] = "The exported items, one record each."
    data["recordSet"][0]["field"] = [
        {
            "@type": "cr:Field",
            "@id": f"{RECORD_SET}/{name}",
            "name": name,
            "description": what,
            "dataType": data_type,
            "source": {"fileObject": template["fileObject"], "extract": {"column": name}},
        }
        for name, _, data_type, what in STIMULUS_COLUMNS
    ]
    return data


def write_croissant(folder: Path, provenance: Mapping[str, Any], n: int) -> Path:
    """Write ``croissant.json`` into the export folder; returns its path."""
    path = folder / CROISSANT_JSON
    data = croissant_metadata(folder, provenance, n)
    atomic_write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


__all__ = ["CONFORMS_TO", "CROISSANT_JSON", "RECORD_SET", "croissant_metadata", "write_croissant"]
