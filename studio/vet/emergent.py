"""Is a puzzle valid? (DESIGN.md, "Valid puzzle").

``find_emergent_rules`` looks at every answer other than the key and asks, for *every* concept
and rule of the schema, whether that foil would complete the problem — a second defensible
answer. It reads the annotations of all glyphs involved; a concept can only be completed when
every glyph of the rows carries some value of it, so the search runs over the few concepts the
glyphs share, which keeps it to microseconds per puzzle.

``vet_puzzle`` adds the checks on the puzzle itself: the key completes the intended (rule,
concept), the answers are distinct and none is drawn from the context.

The result is a :class:`~studio.core.verdict.Verdict` of
:class:`~studio.core.verdict.Finding` s, one per failed check: ``foil-completes-intended`` (a
foil also completes the intended rule), ``emergent`` (a foil completes another rule of the
schema), ``shifted-reading`` (in a puzzle without context shift, a foil completes a rule once
row 2 is read with its own values: a second defensible answer to whoever does not know the
split is shift-free; an error in a strict split, else a warning with ``source``
``shifted-reading``), ``key-fails`` (the key does not complete the intended rule),
``duplicate-answer``, ``answer-in-context``, ``second-odd`` (odd-one-out: another member is odd
by some concept). A finding whose ``source`` is ``image-features`` is a warning: the
annotations may have missed it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.core.schema import Schema
from studio.core.tagindex import TagIndex
from studio.core.verdict import ANNOTATIONS, ERROR, WARNING, Finding, Verdict
from studio.vet.analogy import analogy_findings, analogy_key_ok
from studio.vet.rules import NONE, RuleBook, RuleContext, complete, describe, row_instantiations

MATRIX_LAYOUTS = ("two-row", "matrix-3x3", "sequence")


def _rows_with(puzzle: Puzzle, answer: GlyphKey) -> list[tuple[GlyphKey, ...]]:
    rows = [tuple(r) for r in puzzle.context]
    rows[-1] = rows[-1] + (answer,)
    return rows


Completion = tuple[RuleContext, tuple[tuple[str, ...], ...]]


def completions(
    rows: Sequence[Sequence[GlyphKey]],
    annotations: TagIndex,
    book: RuleBook,
    shift: bool,
    only: RuleContext | None = None,
) -> list[Completion]:
    """Every (rule, concept) these complete rows satisfy, with the values per row. ``only``
    limits the search to one rule context."""
    return completions_by_reading(rows, annotations, book, (shift,), only)[0]


def completions_by_reading(
    rows: Sequence[Sequence[GlyphKey]],
    annotations: TagIndex,
    book: RuleBook,
    readings: Sequence[bool],
    only: RuleContext | None = None,
) -> list[list[Completion]]:
    """``completions`` for each reading (``shift`` False / True) at once, sharing the rows'
    instantiations: strict vetting asks both of every candidate foil."""
    if only is not None:
        candidates: Sequence[str] = [only.concept]
    else:
        candidates = _shared_concepts([g for row in rows for g in row], annotations)
    out: list[list[Completion]] = [[] for _ in readings]
    for concept in candidates:
        sets = [[annotations.values(g, concept) for g in row] for row in rows]
        for rc in (only,) if only is not None else book.rules_of(concept):
            insts = [row_instantiations(rc, s) for s in sets]
            if all(insts):  # else a row satisfies this rule in no way, under any reading
                _complete_by_reading(rc, insts, readings, out)
    return out


def _shared_concepts(glyphs: Sequence[GlyphKey], annotations: TagIndex) -> list[str]:
    """The concepts every one of these glyphs carries (sorted): the only ones their rows can
    complete. Empty when a glyph has no annotation at all."""
    by = [annotations.by_glyph.get(g) for g in glyphs]
    if not by or any(b is None for b in by):
        return []
    shared = set(by[0])  # type: ignore[arg-type]
    for b in by[1:]:
        shared &= b.keys()  # type: ignore[union-attr]
        if not shared:
            return []
    return sorted(shared)


def _complete_by_reading(
    rc: RuleContext,
    insts: Sequence[frozenset[Any]],
    readings: Sequence[bool],
    out: Sequence[list[Completion]],
) -> None:
    """Add, per reading, the completion these rows' instantiations make (if any)."""
    for found, shift in zip(out, readings, strict=True):
        got = complete(rc, insts, shift)
        if got is not None:
            found.append((rc, tuple(describe(x, rc.rule.value) for x in got)))


def answer_completions(
    context: Sequence[Sequence[GlyphKey]],
    answers: Sequence[GlyphKey],
    annotations: TagIndex,
    book: RuleBook,
    shift: bool,
) -> list[list[Completion]]:
    """``completions`` for each answer placed in the context's open cell, sharing the work on
    the context: the concepts all context glyphs carry and the complete rows' instantiations
    are computed once, then only the last row is redone per answer. Same results as calling
    ``completions`` per answer, several times faster for four answers."""
    return answer_completions_by_reading(context, answers, annotations, book, (shift,))[0]


class OpenRow:
    """The work on a context that every answer tried in its open cell shares: the concepts all
    context glyphs carry and the complete rows' instantiations, computed once. A generator
    trying many candidate foils for one context asks :meth:`completions` of each."""

    def __init__(
        self, context: Sequence[Sequence[GlyphKey]], annotations: TagIndex, book: RuleBook
    ) -> None:
        self.annotations = annotations
        self.prepared: list[tuple[str, RuleContext, list[Any], list[frozenset[str]]]] = []
        for concept in _shared_concepts([g for row in context for g in row], annotations):
            full = [[annotations.values(g, concept) for g in row] for row in context[:-1]]
            open_row = [annotations.values(g, concept) for g in context[-1]]
            for rc in book.rules_of(concept):
                insts = [row_instantiations(rc, r) for r in full]
                if any(not i for i in insts):
                    continue
                self.prepared.append((concept, rc, insts, open_row))

    def completions(self, answer: GlyphKey, readings: Sequence[bool]) -> list[list[Completion]]:
        """Per reading (``shift`` False / True), what ``answer`` in the open cell completes:
        the same as :func:`completions` of the rows with it."""
        mine = self.annotations.by_glyph.get(answer, {})
        found: list[list[Completion]] = [[] for _ in readings]
        for concept, rc, insts, open_row in self.prepared:
            vals = mine.get(concept)
            if not vals:
                continue
            last = row_instantiations(rc, [*open_row, vals])
            if last:
                _complete_by_reading(rc, [*insts, last], readings, found)
        return found


def answer_completions_by_reading(
    context: Sequence[Sequence[GlyphKey]],
    answers: Sequence[GlyphKey],
    annotations: TagIndex,
    book: RuleBook,
    readings: Sequence[bool],
) -> list[list[list[Completion]]]:
    """``answer_completions`` for each reading (``shift`` False / True), one pass: per reading,
    per answer, the completions."""
    open_row = OpenRow(context, annotations, book)
    per_answer = [open_row.completions(a, readings) for a in answers]
    return [[found[r] for found in per_answer] for r in range(len(readings))]


def find_emergent_rules(
    puzzle: Puzzle,
    annotations: TagIndex,
    schema: Schema | RuleBook,
    answers: Sequence[int] | None = None,
) -> list[Finding]:
    """Every (rule, concept) of the schema that a foil completes, judged from the annotations
    of all glyphs involved (DESIGN.md "Valid puzzle"). A foil completing the intended rule is
    reported as ``foil-completes-intended``, any other as ``emergent``. Empty for a valid
    puzzle. ``answers`` limits the search to those answer indices (default: every foil)."""
    book = schema if isinstance(schema, RuleBook) else RuleBook(schema)
    if puzzle.layout == "odd-one-out":
        return _odd_one_out_findings(puzzle, annotations, book, answers)
    if puzzle.layout == "analogy":
        return analogy_findings(puzzle, annotations, book, answers)
    findings = []
    indices = puzzle.foils if answers is None else [i for i in answers if i != puzzle.key]
    per_answer = answer_completions(
        puzzle.context, [puzzle.answers[i] for i in indices], annotations, book, puzzle.shift
    )
    for i, found in zip(indices, per_answer, strict=True):
        for rc, values in found:
            intended = rc.concept == puzzle.concept and rc.rule.value == puzzle.rule
            findings.append(
                Finding(
                    "foil-completes-intended" if intended else "emergent",
                    answer=i,
                    rule=rc.rule.value,
                    concept=rc.concept,
                    rows=values,
                )
            )
    return findings


def key_completes(puzzle: Puzzle, annotations: TagIndex, book: RuleBook) -> bool:
    if puzzle.layout == "odd-one-out":
        return _odd_value(puzzle, annotations, puzzle.key) is not None
    if puzzle.layout == "analogy":
        return analogy_key_ok(puzzle, annotations, book)
    rc = book.get(puzzle.concept, puzzle.rule)
    if rc is None:
        return False
    rows = _rows_with(puzzle, puzzle.answer_key)
    return bool(completions(rows, annotations, book, puzzle.shift, only=rc))


def structural_findings(puzzle: Puzzle) -> list[Finding]:
    out = []
    seen: dict[GlyphKey, int] = {}
    context = set(puzzle.context_keys)
    for i, a in enumerate(puzzle.answers):
        if a in seen:
            out.append(
                Finding(
                    "duplicate-answer", answer=i, detail=f"same glyph {a} as answer {seen[a] + 1}"
                )
            )
        seen.setdefault(a, i)
        if a in context:
            out.append(
                Finding("answer-in-context", answer=i, detail=f"{a} is also a context frame")
            )
    return out


def shifted_reading_findings(
    puzzle: Puzzle, annotations: TagIndex, book: RuleBook, strict: bool = True
) -> list[Finding]:
    """Foils of a puzzle without context shift that complete some rule when each row may use
    its own values (and complete nothing when they may not): errors when ``strict``, else
    warnings. Empty for shifted puzzles and layouts with a single row."""
    if puzzle.shift or puzzle.layout not in ("two-row", "matrix-3x3"):
        return []
    indices = list(puzzle.foils)
    plain, shifted = answer_completions_by_reading(
        puzzle.context, [puzzle.answers[i] for i in indices], annotations, book, (False, True)
    )
    out = []
    for i, done, found in zip(indices, plain, shifted, strict=True):
        if done:
            continue  # already an error without any shifted reading
        for rc, values in found:
            out.append(
                Finding(
                    "shifted-reading",
                    severity=ERROR if strict else WARNING,
                    answer=i,
                    rule=rc.rule.value,
                    concept=rc.concept,
                    rows=values,
                    source=ANNOTATIONS if strict else "shifted-reading",
                )
            )
    return out


def vet_puzzle(
    puzzle: Puzzle,
    annotations: TagIndex,
    schema: Schema | RuleBook,
    warnings_from: TagIndex | None = None,
    warning_book: RuleBook | None = None,
    strict: bool | None = None,
) -> Verdict:
    """Everything that makes a puzzle valid, as findings (empty errors = valid).

    ``warnings_from`` (pseudo-annotations from image features, with ``warning_book`` their
    schema) adds warnings: a foil that completes a feature rule the key does not complete.
    ``strict`` (a strict split): foils completing a rule under a shifted reading are errors;
    ``False``: warnings; ``None`` (default): not looked at."""
    book = schema if isinstance(schema, RuleBook) else RuleBook(schema)
    findings = structural_findings(puzzle)
    if not key_completes(puzzle, annotations, book):
        findings.append(
            Finding(
                "key-fails",
                answer=puzzle.key,
                rule=puzzle.rule,
                concept=puzzle.concept,
                detail=f"the key does not complete {puzzle.rule} over {puzzle.concept}",
            )
        )
    findings.extend(find_emergent_rules(puzzle, annotations, book))
    if strict is not None:
        findings.extend(shifted_reading_findings(puzzle, annotations, book, strict))
    if warnings_from is not None and warning_book is not None and puzzle.layout in MATRIX_LAYOUTS:
        findings.extend(feature_warnings(puzzle, warnings_from, warning_book))
    return Verdict(tuple(findings), puzzle.id)


def feature_warnings(puzzle: Puzzle, features: TagIndex, book: RuleBook) -> list[Finding]:
    """Foils that complete a rule over an image feature which the key does not complete: a
    solver reading ink, size, holes or symmetry would pick that foil."""
    per_answer = answer_completions(puzzle.context, puzzle.answers, features, book, puzzle.shift)
    key_done = {(rc.rule, rc.concept) for rc, _ in per_answer[puzzle.key]}
    out = []
    for i in puzzle.foils:
        for rc, values in per_answer[i]:
            if (rc.rule, rc.concept) not in key_done:
                out.append(
                    Finding(
                        "emergent",
                        severity=WARNING,
                        answer=i,
                        rule=rc.rule.value,
                        concept=rc.concept,
                        rows=values,
                        source="image-features",
                    )
                )
    return out


# ---- odd one out ---------------------------------------------------------------------------
def _odd_value(
    puzzle: Puzzle, annotations: TagIndex, odd: int, concept: str | None = None
) -> tuple[str, str] | None:
    """(concept, value) shared by every member but ``odd``, which carries another value of the
    concept and not that one; the intended concept when ``concept`` is given."""
    members = puzzle.answers
    others = [g for j, g in enumerate(members) if j != odd]
    odd_g = members[odd]
    concepts = [concept or puzzle.concept]
    for c in concepts:
        shared = frozenset.intersection(*(annotations.values(g, c) for g in others)) - {NONE}
        mine = annotations.values(odd_g, c)
        for v in sorted(shared):
            if v not in mine and mine:
                return (c, v)
    return None


def _odd_one_out_findings(
    puzzle: Puzzle,
    annotations: TagIndex,
    book: RuleBook,
    answers: Sequence[int] | None,
) -> list[Finding]:
    out = []
    indices = puzzle.foils if answers is None else [i for i in answers if i != puzzle.key]
    for j in indices:
        concepts = sorted(annotations.concepts_of(puzzle.answers[j]))
        for c in concepts:
            if not any(rc.rule.value == "constant" for rc in book.rules_of(c)):
                continue
            got = _odd_value(puzzle, annotations, j, c)
            if got is not None:
                out.append(
                    Finding(
                        "second-odd",
                        answer=j,
                        rule="constant",
                        concept=c,
                        rows=((got[1],),),
                        detail=f"the others share {c} = {got[1]} and this one does not",
                    )
                )
    return out
