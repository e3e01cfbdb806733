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


def write_parquet(
    folder: Path,
    puzzles: Sequence[Puzzle],
    curations: Sequence[Mapping[str, Any]],
    lines: Sequence[str],
) -> Path:
    """Write ``records.parquet`` into the export folder (compressed with zstd); its path."""
    import pyarrow.parquet as pq

    path = folder / RECORDS_PARQUET
    tmp = folder / f".{RECORDS_PARQUET}.tmp"
    pq.write_table(records_table(puzzles, curations, lines), tmp, compression="zstd")
    tmp.replace(path)
    return path


__all__ = ["RECORDS_PARQUET", "records_schema", "records_table", "write_parquet"]
