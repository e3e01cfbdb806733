"""``records.parquet``: the exported puzzles as a table, one row per puzzle.

The columns are the puzzle record's fields (``id``, ``family``, ``layout``, ``rule``,
``concept``, ``shift``, ``split``, ``key``, ``probtype``, ``seed``, ``context`` as a list of
rows, ``answers``, ``values``), the curation's (``status``, ``reviewer``, ``comment``,
``replaced_foils``, the number of foils replaced), the files of the puzzle (``sheet``, ``npz``,
relative to the folder) and ``record``: the whole ``puzzles.jsonl`` line, so nothing is lost.
``pandas.read_parquet`` or ``datasets.load_dataset("parquet", …)`` read it in one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from studio.core.puzzle import Puzzle
from studio.families.glyph_pmp.export import NPZ, SHEETS

RECORDS_PARQUET = "records.parquet"


def records_schema() -> Any:
    """The table's pyarrow schema."""
    import pyarrow as pa

    text = pa.string()
    return pa.schema(
        [
            ("id", text),
            ("family", text),
            ("layout", text),
            ("rule", text),
            ("concept", text),
            ("shift", pa.bool_()),
            ("split", text),
            ("key", pa.int64()),
            ("probtype", text),
            ("seed", pa.int64()),
            ("context", pa.list_(pa.list_(text))),
            ("answers", pa.list_(text)),
            ("values", pa.list_(pa.list_(text))),
            ("status", text),
            ("reviewer", text),
            ("comment", text),
            ("replaced_foils", pa.int64()),
            ("sheet", text),
            ("npz", text),
            ("record", text),
        ]
    )


def records_table(
    puzzles: Sequence[Puzzle], curations: Sequence[Mapping[str, Any]], lines: Sequence[str]
) -> Any:
    """The table (``pyarrow.Table``) of the puzzles, their curations and their JSONL lines."""
    import pyarrow as pa

    cols: dict[str, list[Any]] = {name: [] for name in records_schema().names}
    for p, c, line in zip(puzzles, curations, lines, strict=True):
        cols["id"].append(p.id)
        cols["family"].append(p.family)
        cols["layout"].append(p.layout)
        cols["rule"].append(p.rule)
        cols["concept"].append(p.concept)
        cols["shift"].append(p.shift)
        cols["split"].append(p.split)
        cols["key"].append(p.key)
        cols["probtype"].append(p.probtype)
        cols["seed"].append(p.seed)
        cols["context"].append([[str(k) for k in row] for row in p.context])
        cols["answers"].append([str(k) for k in p.answers])
        cols["values"].append([list(v) for v in p.values])
        cols["status"].append(str(c.get("status", "")))
        cols["reviewer"].append(str(c.get("reviewer", "")))
        cols["comment"].append(str(c.get("comment", "")))
        cols["replaced_foils"].append(len(c.get("replaced_foils", ())))
        cols["sheet"].append(f"{SHEETS}/{p.id}.png")
        cols["npz"].append(f"{NPZ}/{p.id}.npz")
        cols["record"].append(line)
    return pa.Table.from_pydict(cols, schema=records_schema())


#: A stimulus set's columns (issue 27): (name, pyarrow type name, Croissant type, what)
STIMULUS_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("id", "string", "sc:Text", "The item's id, unique in the set; names its pictures."),
    ("family", "string", "sc:Text", "The stimulus family."),
    ("layout", "string", "sc:Text", "analogy (A : A' :: B : ?) or question-candidates."),
    ("rule", "string", "sc:Text", "What the item tests, as its family names it."),
    ("concept", "string", "sc:Text", "The value of it the item uses."),
    ("split", "string", "sc:Text", "train, val or test."),
    ("key", "int64", "sc:Integer", "The index of the right option."),
    ("status", "string", "sc:Text", "The curation status."),
    ("reviewer", "string", "sc:Text", "Who set the curation status."),
    ("comment", "string", "sc:Text", "The curator's comment."),
    ("sheet", "string", "sc:Text", "The item's sheet, relative to this folder."),
    ("record", "string", "sc:Text", "The whole puzzles.jsonl line (JSON), curation included."),
)


def stimulus_table(
    items: Sequence[Any], curations: Sequence[Mapping[str, Any]], lines: Sequence[str]
) -> Any:
    """A stimulus set's table (``pyarrow.Table``): its items (``StimulusPuzzle``), their
    curations and their JSONL lines."""
    import pyarrow as pa

    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind, _, _ in STIMULUS_COLUMNS])
    cols: dict[str, list[Any]] = {name: [] for name in schema.names}
    for p, c, line in zip(items, curations, lines, strict=True):
        for name in ("id", "family", "layout", "rule", "concept", "split", "key"):
            cols[name].append(getattr(p, name))
        for name in ("status", "reviewer", "comment"):
            cols[name].append(str(c.get(name, "")))
        cols["sheet"].append(f"{SHEETS}/{p.id}.png")
        cols["record"].append(line)
    return pa.Table.from_pydict(cols, schema=schema)


def write_parquet(
    folder: Path,
    puzzles: Sequence[Any],
    curations: Sequence[Mapping[str, Any]],
    lines: Sequence[str],
    table: Any = None,
) -> Path:
    """Write ``records.parquet`` into the export folder (compressed with zstd); its path.
    ``table``: a table already made (a stimulus set's, :func:`stimulus_table`)."""
    import pyarrow.parquet as pq

    path = folder / RECORDS_PARQUET
    tmp = folder / f".{RECORDS_PARQUET}.tmp"
    if table is None:
        table = records_table(puzzles, curations, lines)
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(path)
    return path


__all__ = [
    "RECORDS_PARQUET",
    "STIMULUS_COLUMNS",
    "records_schema",
    "records_table",
    "stimulus_table",
    "write_parquet",
]
