"""A split folder, whichever family wrote it: where one may be written, ``split.json`` written
last and read back with its format checks, and JSONL records read with errors naming file and
line.

Two writers use it: the glyph split (:mod:`studio.families.glyph_pmp.export`, format
``analogy-studio.split``) and the stimulus split of the non-glyph families
(:mod:`studio.stimuli.split`, format ``analogy-studio.stimulus-split``). Each describes its
format with a :class:`SplitFormat`; this module knows neither.

The protocol both follow: :func:`check_target` before any work (nothing a person put in the
folder is ever overwritten), :meth:`SplitFormat.begin` before the first file changes (a folder
written again is unfinished until it is done), every file durable before ``split.json`` (plain
writes made durable with one sync of the folder, :func:`studio.core.fileio.sync_tree`, not an
fsync per file), and :meth:`SplitFormat.finish` writing ``split.json`` last: a folder without
it is an unfinished split, and :meth:`SplitFormat.read_split_json` says so.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from studio.core.errors import StudioError
from studio.core.fileio import atomic_write_bytes
from studio.core.inputs import JsonInputError, check_frames, load_json, scalar_int

SPLIT_JSON = "split.json"

T = TypeVar("T")


# ---- where a split may be written ---------------------------------------------------------------
def is_temp_file(name: str) -> bool:
    """A temp file left by an interrupted atomic write (:mod:`studio.core.fileio`)."""
    return name.startswith(".") and name.endswith(".tmp")


def _replace_nothing(name: str) -> bool:
    return False


def check_target(out: Path, may_replace: Callable[[str], bool] = _replace_nothing) -> None:
    """Refuse to write a split at ``out`` when that could destroy something: ``out`` may not be
    a file, and a folder there may hold only entries whose names ``may_replace`` accepts —
    by default none, so only a new or empty folder will do. A writer that cleans up after an
    earlier split of its own (the glyph split) passes what it writes. Nothing is written or
    removed here; the error names what is in the way."""
    if not out.exists():
        return
    if not out.is_dir():
        raise StudioError("is a file, not a folder for a split", out)
    foreign = sorted(p.name for p in out.iterdir() if not may_replace(p.name))
    if foreign:
        shown = ", ".join(foreign[:5]) + (", …" if len(foreign) > 5 else "")
        raise StudioError(
            f"is not an empty folder: it holds {shown}, which a split may not replace; "
            "choose an empty or new folder",
            out,
        )


# ---- split.json ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SplitFormat:
    """One kind of split folder: the ``format`` id and ``format_version`` its ``split.json``
    carries, and how its JSON files are spelled. ``ascii_json``: non-ASCII characters are
    escaped (stimulus splits have always been written so; kept so their bytes do not
    change). Every JSON file has sorted keys, one-space indents and a final newline, so the
    same content gives the same bytes."""

    id: str
    version: int
    ascii_json: bool = False

    def header(self) -> dict[str, Any]:
        """The entries that name the format in ``split.json``."""
        return {"format": self.id, "format_version": self.version}

    def json_bytes(self, data: Any) -> bytes:
        text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=self.ascii_json)
        return (text + "\n").encode("utf-8")

    def write_json(self, path: Path, data: Any) -> None:
        """Write one JSON file of the split (``report.json`` …), atomically."""
        atomic_write_bytes(path, self.json_bytes(data))

    def begin(self, folder: Path) -> None:
        """Mark ``folder`` unfinished before writing into it: an earlier ``split.json`` goes,
        so a write that stops half-way never leaves a folder that reads as a split."""
        (folder / SPLIT_JSON).unlink(missing_ok=True)

    def finish(self, folder: Path, meta: Mapping[str, Any]) -> None:
        """Write ``split.json`` (``meta`` and the format's header), the last file of a split."""
        self.write_json(folder / SPLIT_JSON, {**meta, **self.header()})

    def is_split(self, folder: str | Path) -> bool:
        """Does ``folder`` hold a finished split of this format? Never raises."""
        try:
            self.read_split_json(folder)
        except StudioError:
            return False
        return True

    def read_split_json(self, folder: str | Path) -> dict[str, Any]:
        """The ``split.json`` of a split folder, checked: it exists, is JSON, names this
        format, and no newer version of it. StudioError naming the file otherwise."""
        folder = Path(folder)
        if not folder.exists():
            raise StudioError("split folder not found", folder)
        if not folder.is_dir():
            raise StudioError("is not a folder (a split is a folder with split.json)", folder)
        path = folder / SPLIT_JSON
        if not path.exists():
            raise StudioError(
                "missing: this folder is not a split, or its export did not finish", path
            )
        require_regular_file(path)
        try:
            data = load_json(path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise StudioError(f"cannot be read: {e}", path) from None
        except JsonInputError as e:
            raise StudioError(f"damaged: {e}", path) from None
        if not isinstance(data, dict) or data.get("format") != self.id:
            raise StudioError(f"damaged: not an {self.id} file", path)
        version = data.get("format_version", 0)
        if not isinstance(version, int) or isinstance(version, bool):
            raise StudioError(f"damaged: format_version {version!r} is not a number", path)
        if version > self.version:
            raise StudioError(
                f"written by a newer studio (format version {version}); "
                "update Analogy Studio to read it",
                path,
            )
        return data


def require_regular_file(path: Path) -> None:
    """Refuse a path that is not a regular file before opening it: reading a FIFO blocks
    until someone writes to it (issue 25: an ``items.jsonl`` FIFO hung ``vet``), a device
    never ends."""
    import stat

    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return  # the caller says "missing"
    except OSError as e:
        raise StudioError(f"cannot be read: {e.strerror or e}", path) from None
    if not stat.S_ISREG(mode):
        raise StudioError("is not a regular file (a FIFO, a device or a folder)", path)


# ---- JSONL records ------------------------------------------------------------------------------
def json_object(value: Any) -> dict[str, Any]:
    """A record that must be a JSON object (``parse`` for :func:`read_records`)."""
    if not isinstance(value, dict):
        raise ValueError(f"not a JSON object but {type(value).__name__}")
    return value


def read_records(path: str | Path, parse: Callable[[Any], T]) -> list[T]:
    """Every non-blank line of a ``.jsonl`` file, decoded and passed through ``parse``
    (:func:`json_object` for plain records). A missing, unreadable or damaged file raises
    StudioError naming the file, and the line for a line that is not JSON or that ``parse``
    refuses (ValueError, TypeError, KeyError)."""
    path = Path(path)
    return [parse_record(n, line, path, parse) for n, line in record_lines(path)]


def record_lines(path: str | Path) -> list[tuple[int, str]]:
    """The non-blank lines of a ``.jsonl`` file with their line numbers (from 1), not yet
    decoded: :func:`read_records` is this and :func:`parse_record` per line, and a loader
    that decodes a large file's lines in worker processes (``studio.baselines.data``) reads
    the file here once, so its errors are the same. A missing or unreadable file raises
    StudioError naming it."""
    path = Path(path)
    if path.exists():
        require_regular_file(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StudioError("missing", path) from None
    except (OSError, UnicodeDecodeError) as e:
        raise StudioError(f"cannot be read: {e}", path) from None
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def parse_record(n: int, line: str, path: str | Path, parse: Callable[[Any], T]) -> T:
    """Line ``n`` of the ``.jsonl`` file ``path`` decoded and passed through ``parse``, as
    :func:`read_records` reads each line: StudioError naming the file and the line when it is
    not JSON or ``parse`` refuses it (ValueError, TypeError, KeyError)."""
    try:
        value = load_json(line)
    except JsonInputError as e:
        if e.column is None:
            raise StudioError(f"damaged: line {n}: {e}", path) from None
        detail = f": {e.detail}" if e.detail else ""
        raise StudioError(
            f"damaged: line {n} is {e.what} (column {e.column}){detail}", path
        ) from None
    try:
        return parse(value)
    except (ValueError, TypeError, KeyError) as e:
        raise StudioError(f"damaged: line {n}: {e}", path) from None


# ---- npz archives -------------------------------------------------------------------------------
def read_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive, read in full. Whatever is wrong with the file
    (missing, truncated, not a zip, a damaged deflate stream, a bad ``.npy`` header, an
    archive that asks for pickles) is a StudioError naming it, never a ``zlib.error`` or
    ``BadZipFile``. Only numeric, boolean and text arrays are returned (no objects)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise StudioError("missing", path) from None
    except OSError as e:
        raise StudioError(f"cannot be read: {e.strerror or e}", path) from None
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            out = {k: z[k] for k in z.files}
    except (
        OSError,
        ValueError,
        EOFError,
        KeyError,
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        zlib.error,
        NotImplementedError,  # a zip compression method zipfile lacks
        RuntimeError,  # an encrypted member
        MemoryError,  # a header that claims an absurd shape
    ) as e:
        raise StudioError(f"damaged: not a readable .npz ({type(e).__name__}: {e})", path) from None
    if not isinstance(out, dict):
        raise StudioError("damaged: not an .npz archive", path)
    return out


def read_frames_npz(
    path: str | Path, n_frames: int | None, frame: int, key: int | None = None
) -> dict[str, np.ndarray]:
    """A puzzle's ``.npz`` checked (against its record, when ``n_frames`` and ``key`` are
    given): ``images`` is ``(n_frames, frame, frame)`` (any number of frames when
    ``n_frames`` is None) of numbers, all finite; ``target``, when present, a single integer,
    equal to ``key`` when that is given. StudioError naming the file and the problem
    otherwise."""
    arrays = read_npz(path)
    images = arrays.get("images")
    if images is None:
        raise StudioError("damaged: it has no 'images' array", path)
    try:
        check_frames(images, "images", (-1 if n_frames is None else n_frames, frame, frame))
        target = arrays.get("target")
        if target is not None:
            value = scalar_int(target, "target")
            if key is not None and value != key:
                raise ValueError(
                    f"target {value} disagrees with puzzles.jsonl: the record's key is {key}"
                )
    except ValueError as e:
        raise StudioError(f"damaged: {e}", path) from None
    return arrays


__all__ = [
    "SPLIT_JSON",
    "SplitFormat",
    "check_target",
    "is_temp_file",
    "json_object",
    "parse_record",
    "read_frames_npz",
    "read_npz",
    "read_records",
    "record_lines",
]
