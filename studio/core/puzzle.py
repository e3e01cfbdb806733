"""The puzzle record every family shares (DESIGN.md "Puzzle record").

A puzzle is plain data: what it shows (context frames row by row, answers), which answer is
right, and the symbolic description that made it (rule, concept, the values of each row, the
generating parameters and seed), so that it can be re-rendered and re-checked exactly.
Glyph keys keep the font id of the annotation they came from.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from studio.core.errors import StudioError
from studio.core.inputs import MAX_ID_LENGTH, codepoint_problem, id_problem, load_json, strict_int
from studio.core.keys import GlyphKey

LAYOUTS = ("two-row", "matrix-3x3", "sequence", "odd-one-out", "analogy")
SPLITS = ("train", "val", "test")


@dataclass(frozen=True, slots=True)
class Question:
    """A perception question stored with its puzzle (MARVEL §4).

    ``kind`` is ``coarse`` (counting panels) or ``fine`` (a binary choice about one panel,
    generated from the annotations); ``answer`` is always one of ``options``.
    """

    kind: str
    text: str
    options: tuple[str, ...]
    answer: str
    panel: str | None = None  # e.g. "answer 2", "context 1.3"
    concept: str | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": self.kind,
            "text": self.text,
            "options": list(self.options),
            "answer": self.answer,
        }
        if self.panel is not None:
            d["panel"] = self.panel
        if self.concept is not None:
            d["concept"] = self.concept
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Question:
        """A question from its record; ValueError naming the field when one is mistyped."""
        if not isinstance(d, Mapping):
            raise ValueError(f"a question is a JSON object, not {type(d).__name__}")
        options = d["options"]
        if not isinstance(options, list):
            raise ValueError("a question's options must be a list")
        panel, concept = d.get("panel"), d.get("concept")
        for name, v in (("panel", panel), ("concept", concept)):
            if v is not None and not isinstance(v, str):
                raise ValueError(f"a question's {name} must be text")
        return cls(
            kind=str(d["kind"]),
            text=str(d["text"]),
            options=tuple(str(o) for o in options),
            answer=str(d["answer"]),
            panel=panel,
            concept=concept,
        )


@dataclass(frozen=True, slots=True)
class Puzzle:
    """One puzzle. ``context`` is row by row; the last row lacks its final frame for the
    matrix layouts, and ``answers[key]`` completes it. ``values`` gives, row by row, the
    concept values the generator instantiated (the answer's value last), for display and
    for re-checking; it is informative, the annotations stay the truth."""

    id: str
    family: str
    layout: str
    rule: str
    concept: str
    shift: bool
    context: tuple[tuple[GlyphKey, ...], ...]
    answers: tuple[GlyphKey, ...]
    key: int
    split: str
    seed: int
    values: tuple[tuple[str, ...], ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    questions: tuple[Question, ...] = ()

    @property
    def probtype(self) -> str:
        """UA's problem type string, ``<rule>_<concept>_shift|noshift``."""
        return f"{self.rule}_{self.concept}_{'shift' if self.shift else 'noshift'}"

    @property
    def context_keys(self) -> tuple[GlyphKey, ...]:
        return tuple(k for row in self.context for k in row)

    @property
    def answer_key(self) -> GlyphKey:
        return self.answers[self.key]

    @property
    def foils(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.answers)) if i != self.key)

    def all_keys(self) -> tuple[GlyphKey, ...]:
        return self.context_keys + self.answers

    def with_answer(self, index: int, glyph: GlyphKey) -> Puzzle:
        answers = list(self.answers)
        answers[index] = glyph
        return replace(self, answers=tuple(answers))

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "family": self.family,
            "layout": self.layout,
            "rule": self.rule,
            "concept": self.concept,
            "shift": self.shift,
            "context": [[str(k) for k in row] for row in self.context],
            "answers": [str(k) for k in self.answers],
            "key": self.key,
            "split": self.split,
            "seed": self.seed,
            "probtype": self.probtype,
            "values": [list(v) for v in self.values],
            "params": dict(self.params),
        }
        if self.questions:
            d["questions"] = [q.to_json() for q in self.questions]
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Puzzle:
        """A puzzle from its record, every field checked for its type (ValueError naming the
        field otherwise): ids and names are text, ``key`` and ``seed`` integers, ``shift`` a
        boolean, ``context`` rows of glyph keys, ``key`` the index of one of the answers, and
        every glyph's code point one a font can draw
        (:func:`studio.core.inputs.codepoint_problem`)."""
        if not isinstance(d, Mapping):
            raise ValueError(f"a puzzle record is a JSON object, not {type(d).__name__}")
        try:
            answers = _keys(d["answers"], "answers")
            key = strict_int(d["key"], "key")
            if not 0 <= key < len(answers):
                raise ValueError(f"key {key} is not the index of one of {len(answers)} answers")
            shift = d["shift"]
            if not isinstance(shift, bool):
                raise ValueError(f"shift must be true or false, not {shift!r:.40}")
            context = _list(d["context"], "context")
            values = _list(d.get("values", []), "values")
            params = d.get("params", {})
            if not isinstance(params, Mapping):
                raise ValueError(f"params must be an object, not {type(params).__name__}")
            return cls(
                id=_text(d["id"], "id"),
                family=_text(d["family"], "family"),
                layout=_text(d["layout"], "layout"),
                rule=_text(d["rule"], "rule"),
                concept=_text(d["concept"], "concept"),
                shift=shift,
                context=tuple(_keys(row, f"context[{i}]") for i, row in enumerate(context)),
                answers=answers,
                key=key,
                split=_text(d["split"], "split"),
                seed=strict_int(d["seed"], "seed"),
                values=tuple(
                    tuple(_text(v, f"values[{i}]") for v in _list(row, f"values[{i}]"))
                    for i, row in enumerate(values)
                ),
                params=dict(params),
                questions=tuple(
                    Question.from_json(q) for q in _list(d.get("questions", []), "questions")
                ),
            )
        except KeyError as e:
            raise ValueError(f"puzzle record lacks the field {e.args[0]!r}") from None

    def dumps(self) -> str:
        """One JSON Lines line: sorted keys and no spaces, so equal puzzles give equal bytes."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _list(value: Any, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{name} must be a list, not {type(value).__name__}")
    return value


def _text(value: Any, name: str) -> str:
    """Text a record names something by; numbers are taken as written (old records)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{name} must be text, not {type(value).__name__}")
    text = str(value)
    if len(text) > 4 * MAX_ID_LENGTH:
        raise ValueError(f"{name} of {len(text)} characters is too long")
    return text


@functools.lru_cache(maxsize=1 << 16)
def _checked_key(text: str) -> tuple[GlyphKey | None, str | None]:
    """A glyph key parsed and checked once per distinct text (a split's records name a few
    hundred glyphs 90,000 times): the key, or None and why it is malformed; and what is wrong
    with a well-formed key, or None."""
    try:
        key = GlyphKey.parse(text)
    except ValueError as e:
        return None, str(e)
    return key, codepoint_problem(key.codepoint) or id_problem("font", key.font)


#: the longest glyph key text kept in the cache (a valid one is at most 8 + 1 + 128 long):
#: a hostile record's megabyte "keys" are checked uncached and not kept after the error
_CACHED_KEY = 160


def _keys(value: Any, name: str) -> tuple[GlyphKey, ...]:
    out = []
    for i, k in enumerate(_list(value, name)):
        if not isinstance(k, str):
            raise ValueError(f"{name}[{i}] must be a glyph key like U+25CC@symbola")
        key, problem = _checked_key(k) if len(k) <= _CACHED_KEY else _checked_key.__wrapped__(k)
        if key is None:
            raise ValueError(problem)
        if problem:
            raise ValueError(f"{name}[{i}]: {problem}")
        out.append(key)
    return tuple(out)


def write_jsonl(puzzles: Iterable[Puzzle]) -> str:
    return "".join(p.dumps() + "\n" for p in puzzles)


def read_jsonl(path: str | Path) -> Iterator[Puzzle]:
    """Puzzles of a ``puzzles.jsonl``; a bad line raises StudioError naming file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise StudioError(f"cannot read ({e.strerror or e})", path) from None
    except UnicodeDecodeError as e:
        raise StudioError(f"not UTF-8 text (byte {e.start}): {e.reason}", path) from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield Puzzle.from_json(load_json(line))
        except (ValueError, TypeError) as e:
            raise StudioError(f"line {n}: {e}", path) from None
