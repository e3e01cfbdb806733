"""Checks at the boundary: what a file a person hands the studio may hold before any of it is used.

Every loader that reads text a person wrote (concept schemas, annotation CSVs and folders,
split folders) goes through these, so one rule holds everywhere:

- **JSON** is parsed by :func:`load_json`: at most :data:`MAX_JSON_DEPTH` levels of nesting
  (checked before parsing, so a deeply nested file is a clean error, never a RecursionError
  here or in a validator later), no ``NaN``/``Infinity`` (not JSON), numbers of at most
  4,300 digits, and no lone surrogates (``"\\ud800"``: not text, cannot be stored as UTF-8).
  Problems raise :class:`JsonInputError` with the line and column or the JSON path.
- **Code points** (:func:`codepoint_problem`): ``0 ≤ cp ≤ 0x10FFFF``, no surrogates
  (U+D800–U+DFFF are not characters), and no control characters (Unicode category ``Cc``:
  U+0000–U+001F and U+007F–U+009F). The studio renders glyphs from font outlines; a control
  character has none (fonts map it to nothing or to a blank), so a tag on one could never be
  shown or used in a puzzle. Everything else, unassigned code points and private use included,
  is accepted: whether a font draws it is the renderer's business (a missing glyph is
  recorded as such).
- **Images** read as numbers (:func:`check_frames`): a numeric dtype, the expected shape,
  every value finite.

The errors raised here are ValueErrors; callers wrap them in a StudioError naming the file.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

MAX_JSON_DEPTH = 64
MAX_CODEPOINT = 0x10FFFF
#: the longest id (font, concept, value, puzzle) a file may name
MAX_ID_LENGTH = 128

# a JSON string (escapes included) or one bracket; strings are skipped so that brackets
# inside them do not count
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_OPENERS = frozenset("[{")


class JsonInputError(ValueError):
    """JSON a person supplied that the studio will not read. ``what`` says what is wrong
    ("not valid JSON"), ``line``/``column`` (1-based) where when it is at a place in the
    text, ``detail`` the parser's words; ``str()`` puts them together."""

    def __init__(
        self, what: str, line: int | None = None, column: int | None = None, detail: str = ""
    ) -> None:
        self.what, self.line, self.column, self.detail = what, line, column, detail
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(f"{what}{where}{': ' + detail if detail else ''}")


def _line_col(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


def check_json_depth(text: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise JsonInputError when ``text`` nests arrays/objects deeper than ``max_depth``."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    depth = 0
    for m in _JSON_TOKEN.finditer(text):
        tok = m.group()
        if tok in _OPENERS:
            depth += 1
            if depth > max_depth:
                line, col = _line_col(text, m.start())
                raise JsonInputError(f"nested more than {max_depth} levels deep", line, col)
        elif tok in ("]", "}"):
            depth = max(0, depth - 1)


def _refuse_constant(name: str) -> Any:
    raise JsonInputError(f"{name} is not a JSON number")


def _json_path(parts: Sequence[Any]) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _check_text(value: Any, where: list[Any]) -> None:
    if isinstance(value, str):
        if _has_surrogate(value):
            raise JsonInputError(f"at {_json_path(where)}: the text holds a lone surrogate")
    elif isinstance(value, dict):
        for k, v in value.items():
            if _has_surrogate(k):
                raise JsonInputError(f"at {_json_path(where)}: a key holds a lone surrogate")
            where.append(k)
            _check_text(v, where)
            where.pop()
    elif isinstance(value, list):
        for i, v in enumerate(value):
            where.append(i)
            _check_text(v, where)
            where.pop()


def load_json(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON a person supplied; JsonInputError (a ValueError) says what and where."""
    check_json_depth(text, max_depth)
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise JsonInputError("not valid JSON", e.lineno, e.colno, e.msg) from None
    except RecursionError:  # a backstop: check_json_depth should have refused it
        raise JsonInputError(f"nested more than {max_depth} levels deep") from None
    except ValueError as e:  # a number of more than 4,300 digits, a refused constant
        raise JsonInputError(f"not valid JSON: {e}") from None
    if "\\u" in text or "\\U" in text:  # a lone surrogate can only come from an escape
        _check_text(data, [])
    return data


def codepoint_problem(cp: int) -> str | None:
    """Why ``cp`` cannot name a glyph (out of range, a surrogate, a control), or None."""
    if not 0 <= cp <= MAX_CODEPOINT:
        return f"code point {cp:#x} is outside Unicode (0 to 0x10FFFF)"
    if 0xD800 <= cp <= 0xDFFF:
        return f"code point U+{cp:04X} is a surrogate, not a character"
    if unicodedata.category(chr(cp)) == "Cc":
        return f"code point U+{cp:04X} is a control character, which no font draws"
    return None


def id_problem(kind: str, value: str) -> str | None:
    """Why an id read from a file is unusable (too long), or None."""
    if len(value) > MAX_ID_LENGTH:
        return f"{kind} id of {len(value)} characters is longer than {MAX_ID_LENGTH}"
    return None


def strict_int(value: Any, name: str) -> int:
    """An integer cell of a record: an int (not a bool, not a float, not text); ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, not {type(value).__name__} {value!r:.40}")
    return value


def check_frames(arr: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """``arr`` as frames a loader may use: a numeric (bool, integer or float) array of
    ``shape`` (-1: any length on that axis) with every value finite. ValueError naming
    ``name`` and the problem."""
    if not isinstance(arr, np.ndarray):
        raise ValueError(f"{name!r} is not an array")
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name!r} has dtype {arr.dtype}, expected numbers (uint8 or bool)")
    if len(arr.shape) != len(shape) or any(
        want not in (-1, got) for got, want in zip(arr.shape, shape, strict=True)
    ):
        wanted = ", ".join("N" if w == -1 else str(w) for w in shape)
        raise ValueError(f"{name!r} has shape {tuple(arr.shape)}, expected ({wanted})")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        bad = int(arr.size - np.isfinite(arr).sum())
        raise ValueError(f"{name!r} holds {bad} NaN or infinite value(s)")
    return arr


def scalar_int(arr: Any, name: str) -> int:
    """A 0-d integer array (as ``np.array(3)`` saves) as an int; ValueError for anything else
    (a 1-D array, text, a float)."""
    if not isinstance(arr, np.ndarray):
        raise ValueError(f"{name!r} is not an array")
    if arr.shape != ():
        raise ValueError(f"{name!r} has shape {tuple(arr.shape)}, expected a single number")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name!r} has dtype {arr.dtype}, expected an integer")
    return int(arr)


__all__ = [
    "MAX_CODEPOINT",
    "MAX_ID_LENGTH",
    "MAX_JSON_DEPTH",
    "JsonInputError",
    "check_frames",
    "check_json_depth",
    "codepoint_problem",
    "id_problem",
    "load_json",
    "scalar_int",
    "strict_int",
]
