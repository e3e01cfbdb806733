"""The puzzle record every family shares (DESIGN.md "Puzzle record").

A puzzle is plain data: what it shows (context frames row by row, answers), which answer is
right, and the symbolic description that made it (rule, concept, the values of each row, the
generating parameters and seed), so that it can be re-rendered and re-checked exactly.
Glyph keys keep the font id of the annotation they came from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from studio.core.errors import StudioError
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
        return cls(
            kind=str(d["kind"]),
            text=str(d["text"]),
            options=tuple(str(o) for o in d["options"]),
            answer=str(d["answer"]),
            panel=d.get("panel"),
            concept=d.get("concept"),
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
        try:
            return cls(
                id=str(d["id"]),
                family=str(d["family"]),
                layout=str(d["layout"]),
                rule=str(d["rule"]),
                concept=str(d["concept"]),
                shift=bool(d["shift"]),
                context=tuple(tuple(GlyphKey.parse(k) for k in row) for row in d["context"]),
                answers=tuple(GlyphKey.parse(k) for k in d["answers"]),
                key=int(d["key"]),
                split=str(d["split"]),
                seed=int(d["seed"]),
                values=tuple(tuple(str(v) for v in row) for row in d.get("values", ())),
                params=dict(d.get("params", {})),
                questions=tuple(Question.from_json(q) for q in d.get("questions", ())),
            )
        except KeyError as e:
            raise ValueError(f"puzzle record lacks the field {e.args[0]!r}") from None

    def dumps(self) -> str:
        """One JSON Lines line: sorted keys and no spaces, so equal puzzles give equal bytes."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def write_jsonl(puzzles: Iterable[Puzzle]) -> str:
    return "".join(p.dumps() + "\n" for p in puzzles)


def read_jsonl(path: str | Path) -> Iterator[Puzzle]:
    """Puzzles of a ``puzzles.jsonl``; a bad line raises StudioError naming file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise StudioError(f"{path}: cannot read ({e.strerror or e})") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield Puzzle.from_json(json.loads(line))
        except (ValueError, TypeError) as e:
            raise StudioError(f"{path}, line {n}: {e}") from None
