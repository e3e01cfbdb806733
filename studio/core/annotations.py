"""Annotation exchange: the CSV ``concept,value,codepoint,font`` and UA's folder layout.

A CSV may have a fifth column, ``source``: how each tag came to be (``hand``, or
``suggestion`` when the annotator accepted it from the tagger's suggestions, issue 30). The
studio writes it only when some tag came from a suggestion, so the export of hand-made tags
is UA's four columns byte for byte; a file without it reads as all ``hand``. UA's folder
layout has no place for it (its tags read as ``hand``).

Readers validate everything against the schema before returning anything: an import is all or
nothing, and every bad record is reported with its line (CSV) or its relative path (folders).
Nothing here assumes one tag per glyph: a glyph carries any number of (concept, value) tags.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.core.errors import AnnotationImportError, ImportProblem, StudioError
from studio.core.fileio import atomic_write_bytes, atomic_write_text
from studio.core.inputs import codepoint_problem, id_problem
from studio.core.keys import GlyphKey
from studio.core.schema import Schema

CSV_HEADER = ("concept", "value", "codepoint", "font")
#: How a tag came to be: given by hand, or accepted from a suggestion (issue 30). The store's
#: CHECK, the CSV's ``source`` column and the agreement split all take these.
TAG_SOURCES = ("hand", "suggestion")
HAND = "hand"
#: The header of a CSV whose tags carry their source.
CSV_HEADER_WITH_SOURCE = (*CSV_HEADER, "source")
_FILE_RE = re.compile(r"^0x([0-9A-Fa-f]{1,6})_([A-Za-z0-9][A-Za-z0-9_.-]*)\.png$")


@dataclass(frozen=True, order=True, slots=True)
class TagRow:
    """One tag in exchange form. Ordering matches the UA CSV: concept, value, hex text, font
    (then source, which a tag has one of). ``source`` is one of :data:`TAG_SOURCES`."""

    concept: str
    value: str
    codepoint_hex: str
    font: str
    source: str = HAND

    @property
    def key(self) -> GlyphKey:
        return GlyphKey(int(self.codepoint_hex, 16), self.font)

    @classmethod
    def of(cls, concept: str, value: str, key: GlyphKey, source: str = HAND) -> TagRow:
        return cls(concept, value, key.hex, key.font, source)

    @property
    def tag(self) -> tuple[str, str, str, str]:
        """The tag without its source: (concept, value, hex text, font)."""
        return (self.concept, self.value, self.codepoint_hex, self.font)


def sort_rows(rows: Iterable[TagRow]) -> list[TagRow]:
    """The exchange order: (concept, value, code point as written, font), as UA's CSV is sorted."""
    return sorted(rows)


def source_problem(source: str) -> str | None:
    """Why ``source`` is not a tag's source, or None."""
    if source in TAG_SOURCES:
        return None
    return f"source {source!r} is not one of {', '.join(TAG_SOURCES)}"


def _check_row(
    schema: Schema, concept: str, value: str, cp: str, font: str, source: str = HAND
) -> tuple[TagRow | None, str | None]:
    if not schema.has_concept(concept):
        return None, f"unknown concept {concept!r} (not in schema {schema.id} {schema.version})"
    c = schema.concept(concept)
    if not c.has_value(value):
        known = ", ".join(repr(v) for v in c.value_ids) or "none yet"
        return None, f"concept {concept!r} has no value {value!r} (its values: {known})"
    try:
        key = GlyphKey.from_csv(cp, font)
    except ValueError as e:
        return None, str(e)
    problem = (
        codepoint_problem(key.codepoint) or id_problem("font", key.font) or source_problem(source)
    )
    if problem:
        return None, problem
    return TagRow(concept, value, key.hex, key.font, source), None


def _records(reader: Any, path: str | Path) -> Iterator[list[str]]:
    """The records of a csv reader; a record it cannot split (a field over the csv module's
    limit of 131,072 characters, a quote left open at the end) is an AnnotationImportError
    naming the line, never a ``_csv.Error``."""
    while True:
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            where = f"line {reader.line_num}"
            raise AnnotationImportError(path, [ImportProblem(where, f"not CSV: {e}")]) from None
        yield record


def parse_annotation_csv(text: str, schema: Schema, path: str | Path = "<csv>") -> list[TagRow]:
    """Rows of an annotation CSV in file order. Raises AnnotationImportError listing every problem
    (line numbers count the header as line 1). The header is ``concept,value,codepoint,font``
    (every tag ``hand``) or that and ``source`` (each tag's, one of :data:`TAG_SOURCES`)."""
    reader = csv.reader(io.StringIO(text))
    problems: list[ImportProblem] = []
    header = next(_records(reader, path), None)
    if header is None:
        raise AnnotationImportError(path, [ImportProblem("line 1", "the file is empty")])
    columns = tuple(h.strip().lower() for h in header)
    if columns not in (CSV_HEADER, CSV_HEADER_WITH_SOURCE):
        raise AnnotationImportError(
            path,
            [
                ImportProblem(
                    "line 1",
                    f"header must be {','.join(CSV_HEADER)} (and optionally source),"
                    f" not {header!r}",
                )
            ],
        )
    width = len(columns)
    rows: list[TagRow] = []
    first_seen: dict[tuple[str, str, str, str], int] = {}
    for record in _records(reader, path):
        line = reader.line_num
        if not record or all(not f.strip() for f in record):
            continue
        if len(record) != width:
            problems.append(
                ImportProblem(f"line {line}", f"expected {width} fields, got {len(record)}")
            )
            continue
        concept, value, cp, font, *rest = (f.strip() for f in record)
        row, problem = _check_row(schema, concept, value, cp, font, *rest)
        if problem:
            problems.append(ImportProblem(f"line {line}", problem))
            continue
        assert row is not None
        if row.tag in first_seen:  # the same tag twice is a repeat whatever its sources
            problems.append(ImportProblem(f"line {line}", f"repeats line {first_seen[row.tag]}"))
            continue
        first_seen[row.tag] = line
        rows.append(row)
    if problems:
        raise AnnotationImportError(path, problems)
    return rows


def read_annotation_csv(path: str | Path, schema: Schema) -> list[TagRow]:
    p = Path(path)
    try:
        text = p.read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise StudioError(f"cannot be read: {e}", p) from None
    return parse_annotation_csv(text, schema, p)


def _annotations_root(path: Path) -> Path:
    """Accept the ``Annotations`` folder itself or a folder that contains it."""
    inner = path / "Annotations"
    return inner if inner.is_dir() else path


def split_folder_name(folder: str, schema: Schema) -> tuple[str, str] | None:
    """``stroke-dot-quantity-3`` → (``stroke-dot-quantity``, ``3``): the longest concept id that
    equals the folder name or is followed by ``-`` in it (a bare concept name gives value '')."""
    best: str | None = None
    for c in schema.concepts:
        if (folder == c.id or folder.startswith(c.id + "-")) and (
            best is None or len(c.id) > len(best)
        ):
            best = c.id
    if best is None:
        return None
    return best, folder[len(best) + 1 :]


def read_annotation_folder(path: str | Path, schema: Schema) -> list[TagRow]:
    """Tags from UA's layout ``Annotations/<concept>-<value>/0x<codepoint>_<font>.png``.
    Only the names are read (the images are the studio's to render); a folder that cannot be
    listed is a StudioError naming it."""
    root = _annotations_root(Path(path))
    if not root.is_dir():
        raise StudioError("is not a folder", root)
    problems: list[ImportProblem] = []
    rows: list[TagRow] = []
    for folder in _listing(root, dirs=True):
        split = split_folder_name(folder.name, schema)
        where_dir = f"{root.name}/{folder.name}"
        if split is None:
            problems.append(ImportProblem(where_dir, "folder names no concept of the schema"))
            continue
        concept, value = split
        for f in _listing(folder, dirs=False):
            where = f"{where_dir}/{f.name}"
            m = _FILE_RE.fullmatch(f.name)
            if not m or not f.is_file():
                if not f.name.startswith("."):
                    problems.append(
                        ImportProblem(where, "file name is not 0x<codepoint>_<font>.png")
                    )
                continue
            row, problem = _check_row(schema, concept, value, m.group(1), m.group(2).lower())
            if problem:
                problems.append(ImportProblem(where, problem))
            elif row is not None:
                rows.append(row)
    if problems:
        raise AnnotationImportError(root, problems)
    return sort_rows(rows)


def _listing(folder: Path, dirs: bool) -> list[Path]:
    """The sub-folders (``dirs``) or every entry of ``folder``, sorted; StudioError when it
    cannot be listed."""
    try:
        entries = sorted(folder.iterdir())
        return [p for p in entries if p.is_dir()] if dirs else entries
    except OSError as e:
        raise StudioError(f"cannot be listed: {e.strerror or e}", folder) from None


def read_annotations(path: str | Path, schema: Schema) -> list[TagRow]:
    """A CSV file or a UA annotation folder, by what the path is."""
    p = Path(path)
    if p.is_dir():
        return read_annotation_folder(p, schema)
    if not p.exists():
        raise StudioError("file not found", p)
    return read_annotation_csv(p, schema)


def format_annotation_csv(rows: Iterable[TagRow]) -> str:
    """The CSV of ``rows`` in exchange order: UA's four columns, and ``source`` as a fifth
    only when some tag did not come by hand (so hand-made tags export exactly as UA's file)."""
    ordered = sort_rows(rows)
    with_source = any(r.source != HAND for r in ordered)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_HEADER_WITH_SOURCE if with_source else CSV_HEADER)
    for r in ordered:
        writer.writerow((*r.tag, r.source) if with_source else r.tag)
    return buf.getvalue()


def write_annotation_csv(rows: Iterable[TagRow], path: str | Path) -> None:
    atomic_write_text(Path(path), format_annotation_csv(rows))


def folder_name(concept: str, value: str) -> str:
    return concept if value == "" else f"{concept}-{value}"


def unsafe_folder_name(concept: str, value: str) -> str | None:
    """Why a tag cannot name a folder of UA's layout, or None. The name must be one plain
    path component: a tag written into a lab database by psql (or a crafted project file)
    once made ``export-annotations`` create folders outside the output (issue 25)."""
    name = folder_name(concept, value)
    if not name or name in (".", ".."):
        return f"the folder name {name!r} is not a name"
    bad = sorted({c for c in name if c in "/\\\0" or ord(c) < 32})
    if bad:
        return f"the folder name {name!r} holds {', '.join(repr(c) for c in bad)}"
    return None


def file_name(key: GlyphKey) -> str:
    return f"0x{key.hex}_{key.font}.png"


def write_annotation_folder(
    rows: Iterable[TagRow],
    out_dir: str | Path,
    png_for: Callable[[GlyphKey], bytes],
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Write UA's layout under ``out_dir/Annotations``; ``png_for`` supplies each glyph's image."""
    root = Path(out_dir) / "Annotations"
    rows = sort_rows(rows)
    unsafe = {
        (r.concept, r.value): why
        for r in rows
        if (why := unsafe_folder_name(r.concept, r.value)) is not None
    }
    if unsafe:  # before a file is written
        shown = "; ".join(f"{c}={v}: {why}" for (c, v), why in sorted(unsafe.items())[:5])
        more = f" (and {len(unsafe) - 5} more)" if len(unsafe) > 5 else ""
        raise StudioError(
            f"{len(unsafe)} tag(s) cannot name a folder of UA's layout, so nothing was "
            f"written: {shown}{more}. Fix or remove these tags (a CSV export keeps them)."
        )
    cache: dict[GlyphKey, bytes] = {}
    for i, r in enumerate(rows):
        key = r.key
        if key not in cache:
            cache[key] = png_for(key)
        atomic_write_bytes(root / folder_name(r.concept, r.value) / file_name(key), cache[key])
        if progress:
            progress(i + 1, len(rows))
