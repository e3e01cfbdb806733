"""Perception questions stored with each puzzle (MARVEL §4): does a solver see the puzzle at all?

- **Coarse** (three per puzzle): how many context panels, how many answer panels, how many
  panels in all. Blank panels (the one the answer fills) are never counted; an odd-one-out group
  has no context, so its context count is 0 and its members are the answer panels. Options are
  four consecutive counts around the true one (never below 0), as strings; where the true count
  sits among them is decided by a hash of the puzzle id, so the questions are deterministic.
- **Fine-grained** (binary choice), generated from the annotations over the puzzle's concept:
  one per answer panel, and one per context panel when the context shows at most
  ``SHORT_CONTEXT`` panels (analogy, short sequences). A panel gets a question only when its glyph
  carries a value of the concept and the concept has a value the glyph does not carry. The true
  option is a value the glyph carries (one the puzzle instantiates when it carries one, else the
  first in schema order); the other is a value it does not carry, the nearest for integer and
  ordinal concepts ("three dots or four dots"), else preferably one the puzzle uses, ``none``
  only when nothing else is left. Integer concepts with a readable noun (derived from the concept
  id: ``stroke-dot-quantity`` → dots) are phrased with number words; anything else as
  "Which does answer 2 show for <concept>: <value> or <value>?" with the values' display labels.
  The order of the two options comes from a hash of the puzzle id and the panel, or from
  ``rng`` when one is given (so is the choice among equally near wrong values).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle, Question
from studio.core.schema import Concept, Schema, ValueKind
from studio.core.tagindex import TagIndex
from studio.vet.rules import NONE

SHORT_CONTEXT = 4
COARSE_OPTIONS = 4

NUMBER_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty",
)  # fmt: skip

#: Nouns (singular, plural) for the UA counting concepts whose ids do not read as one.
NOUNS: dict[str, tuple[str, str]] = {
    "stroke-line-curve-quantity": ("curved line", "curved lines"),
    "stroke-line-loop-quantity": ("loop", "loops"),
    "stroke-line-u-quantity": ("U-shaped line", "U-shaped lines"),
    "stroke-line-wiggle-quantity": ("wiggly line", "wiggly lines"),
    "stroke-line-zig-quantity": ("zigzag line", "zigzag lines"),
    "connected-quantity": ("connected part", "connected parts"),
    "disconnected": ("disconnected part", "disconnected parts"),
    "shape-sides": ("side", "sides"),
    "components-space": ("empty space", "empty spaces"),
    "components-internalsolid": ("internal solid part", "internal solid parts"),
    "components-uniquesolid": ("unique solid part", "unique solid parts"),
    "base-contacts": ("contact with the base", "contacts with the base"),
}


def _pluralise(word: str) -> str:
    if word.endswith(("s", "sh", "ch", "x", "z")):
        return word + "es"
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _singularise(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("shes", "ches", "xes", "zes", "sses")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def concept_noun(concept_id: str) -> tuple[str, str] | None:
    """A readable (singular, plural) noun for an integer concept, or None.

    ``NOUNS`` first; then ``[stroke-]<noun>[-<modifier>...]-quantity`` → "<modifiers> <noun>s"
    (``stroke-dot-quantity`` → dots, ``stroke-line-straight-quantity`` → straight lines);
    then ``<plural noun>-<modifier>`` → "<modifier> <plural noun>" (``components-solid`` →
    solid components)."""
    if concept_id in NOUNS:
        return NOUNS[concept_id]
    tokens = [t for t in concept_id.lower().split("-") if t]
    if len(tokens) >= 2 and tokens[-1] == "quantity":
        tokens = tokens[:-1]
        if tokens and tokens[0] == "stroke":
            tokens = tokens[1:]
        if not tokens or not all(t.isalpha() for t in tokens):
            return None
        head, mods = tokens[0], tokens[1:]
        return " ".join([*mods, head]), " ".join([*mods, _pluralise(head)])
    if len(tokens) == 2 and all(t.isalpha() for t in tokens) and tokens[0].endswith("s"):
        head, mod = tokens
        if head.endswith("ss"):
            return None
        return f"{mod} {_singularise(head)}", f"{mod} {head}"
    return None


def _hash(*parts: object) -> int:
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big")


def _concept_name(c: Concept) -> str:
    return c.label or c.id.replace("-", " ")


def _number(value: str) -> int | None:
    return int(value) if value.lstrip("-").isdigit() else None


# ---- coarse --------------------------------------------------------------------------------
def _counts_options(n: int, salt: int) -> tuple[str, ...]:
    start = max(0, n - salt % COARSE_OPTIONS)
    return tuple(str(i) for i in range(start, start + COARSE_OPTIONS))


def coarse_questions(puzzle: Puzzle) -> tuple[Question, ...]:
    """How many context panels, answer panels and panels in all (blank panels not counted)."""
    n_context = len(puzzle.context_keys)
    n_answers = len(puzzle.answers)
    asks = (
        ("context", "How many panels does the context part show, not counting a blank panel?",
         n_context),
        ("answers", "How many answer panels does the puzzle show?", n_answers),
        ("all", "How many panels does the puzzle show in all, not counting a blank panel?",
         n_context + n_answers),
    )  # fmt: skip
    return tuple(
        Question(
            kind="coarse",
            text=text,
            options=_counts_options(n, _hash(puzzle.id, "coarse", what)),
            answer=str(n),
        )
        for what, text, n in asks
    )


# ---- fine-grained ----------------------------------------------------------------------------
def _panels(puzzle: Puzzle) -> list[tuple[str, str, GlyphKey]]:
    """(panel id, how the text names it, glyph), context panels first when they are asked."""
    out: list[tuple[str, str, GlyphKey]] = []
    if 0 < len(puzzle.context_keys) <= SHORT_CONTEXT:
        single = len(puzzle.context) == 1
        for r, row in enumerate(puzzle.context, 1):
            for j, g in enumerate(row, 1):
                where = f"{j}" if single else f"{r}.{j}"
                out.append((f"context {where}", f"context panel {where}", g))
    for i, g in enumerate(puzzle.answers, 1):
        out.append((f"answer {i}", f"answer {i}", g))
    return out


def _puzzle_values(puzzle: Puzzle) -> list[str]:
    seen: list[str] = []
    for row in puzzle.values:
        for v in row:
            if v not in seen:
                seen.append(v)
    return seen


def _distance(concept: Concept, a: str, b: str) -> float:
    if concept.kind is ValueKind.INTEGER:
        na, nb = _number(a), _number(b)
        if na is not None and nb is not None:
            return abs(na - nb)
        return float("inf")
    if concept.kind is ValueKind.ORDINAL:
        order = [v for v in concept.value_ids if v != NONE]
        if a in order and b in order:
            return abs(order.index(a) - order.index(b))
    return float("inf")


def _phrase(concept: Concept, value: str, noun: tuple[str, str] | None) -> str:
    if noun is not None:
        n = _number(value)
        if n is not None and n >= 0:
            word = NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else str(n)
            return f"{word} {noun[0] if n == 1 else noun[1]}"
        if value == NONE:
            return f"no {noun[1]}"
    return concept.value(value).display


def value_phrase(concept: Concept, value: str) -> str:
    """How an option names ``value``: "three dots" for an integer concept with a noun, else
    the value's display label."""
    noun = concept_noun(concept.id) if concept.kind is ValueKind.INTEGER else None
    return _phrase(concept, value, noun)


def _choose(options: Sequence[str], salt: int, rng: np.random.Generator | None) -> str:
    if rng is not None:
        return options[int(rng.integers(len(options)))]
    return options[salt % len(options)]


def fine_question(
    puzzle: Puzzle,
    concept: Concept,
    panel: str,
    where: str,
    carried: frozenset[str],
    rng: np.random.Generator | None = None,
) -> Question | None:
    """The binary question about one panel whose glyph carries ``carried`` of ``concept``."""
    ids = concept.value_ids
    mine = [v for v in ids if v in carried]
    if not mine:
        return None
    used = _puzzle_values(puzzle)
    truth = next((v for v in used if v in carried), mine[0])
    others = [v for v in ids if v not in carried]
    if not others:
        return None
    named = [v for v in others if v != NONE]
    if named:
        others = named
    salt = _hash(puzzle.id, panel, concept.id)
    dist = {v: _distance(concept, truth, v) for v in others}
    best = min(dist.values())
    if best == float("inf"):
        in_puzzle = [v for v in others if v in used]
        pool = in_puzzle or others
    else:
        pool = [v for v in others if dist[v] == best]
    other = _choose(pool, salt >> 8, rng)
    noun = concept_noun(concept.id) if concept.kind is ValueKind.INTEGER else None
    t, o = _phrase(concept, truth, noun), _phrase(concept, other, noun)
    if t == o:
        return None
    first_true = bool(rng.integers(2)) if rng is not None else salt % 2 == 0
    a, b = (t, o) if first_true else (o, t)
    if noun is not None and all(_number(v) is not None or v == NONE for v in (truth, other)):
        text = f"Does {where} show {a} or {b}?"
    else:
        text = f"Which does {where} show for {_concept_name(concept)}: {a} or {b}?"
    return Question(
        kind="fine",
        text=text,
        options=(a, b),
        answer=t,
        panel=panel,
        concept=concept.id,
    )


def fine_questions(
    puzzle: Puzzle,
    annotations: TagIndex,
    schema: Schema,
    rng: np.random.Generator | None = None,
) -> tuple[Question, ...]:
    if not schema.has_concept(puzzle.concept):
        return ()
    concept = schema.concept(puzzle.concept)
    out = []
    for panel, where, g in _panels(puzzle):
        q = fine_question(puzzle, concept, panel, where, annotations.values(g, concept.id), rng)
        if q is not None:
            out.append(q)
    return tuple(out)


def perception_questions(
    puzzle: Puzzle,
    annotations: TagIndex,
    schema: Schema,
    rng: np.random.Generator | None = None,
) -> tuple[Question, ...]:
    """MARVEL's perception questions for one puzzle: three coarse, then the fine-grained ones.
    Deterministic without ``rng``; fits the generators' ``questions`` hook as it is."""
    return coarse_questions(puzzle) + fine_questions(puzzle, annotations, schema, rng)


__all__ = [
    "NOUNS",
    "SHORT_CONTEXT",
    "coarse_questions",
    "concept_noun",
    "fine_question",
    "fine_questions",
    "perception_questions",
    "value_phrase",
]
