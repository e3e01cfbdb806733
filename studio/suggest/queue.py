"""The tagger's suggestion queue as plain state (issue 30): one concept at a time, one glyph
dealt at a time, answered with one key, refilled from the ranking as answers come.

The GUI (:mod:`studio.gui.suggest_panel`) shows it; a test drives it without a window.
:class:`SuggestionQueue` holds what was dealt and answered and says when to rank again; the
ranking itself (:func:`studio.suggest.suggestions_from`) runs wherever the front end likes (a
worker thread), from :meth:`SuggestionQueue.request`'s snapshot, and comes back through
:meth:`SuggestionQueue.fill`.

A suggestion is never a tag: :func:`accept` is the one place one becomes a tag, through the
studio's undoable tag command. Glyphs answered "none of these" are the ranking's ``rejected``
(negatives for every value of the concept) and, like skipped ones, are not dealt again while the
queue's :class:`QueueMemory` lives (the window's session).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from studio.core.keys import GlyphKey
from studio.suggest.rank import Suggestion

if TYPE_CHECKING:
    from studio.app import Studio

__all__ = [
    "Answer",
    "AnswerKind",
    "QueueMemory",
    "QueueRequest",
    "SuggestionQueue",
    "accept",
]

AnswerKind = Literal["accepted", "none", "skipped"]


def dealt_from(studio: Studio) -> frozenset[GlyphKey] | None:
    """The glyphs a queue deals from for the person signed in (issue 30): on a lab database,
    their assignment not yet marked done, so two annotators are not shown the same glyph
    unless the assignment gave it to both (an overlap glyph); None — any glyph — where the
    project is a file or the person has no assignment."""
    project = studio.project
    if not project.is_database:
        return None
    mine = project.assigned()
    if not mine:
        return None
    return frozenset(k for k, done in mine if done is None)


def accept(studio: Studio, key: GlyphKey, concept: str, value: str) -> int:
    """The annotator accepts a suggestion: ``key`` is tagged ``concept = value`` through
    :meth:`studio.app.Studio.tag` with ``source="suggestion"`` (its provenance, kept in the
    store and the export; one undoable command, the views hear of it). Returns how many glyphs
    gained the tag (0 when the annotator had it already: it keeps its source)."""
    return studio.tag([key], concept, value, source="suggestion")


@dataclass(frozen=True)
class Answer:
    """What the annotator said of one dealt suggestion (``value``: the one accepted)."""

    suggestion: Suggestion
    kind: AnswerKind
    value: str | None = None

    @property
    def guessed_right(self) -> bool:
        return self.kind == "accepted" and self.value == self.suggestion.value


@dataclass
class QueueMemory:
    """The glyphs answered "none of these" or skipped, per concept, for as long as the front end
    keeps it (the window keeps one per open project): they are not dealt again."""

    rejected: dict[str, set[GlyphKey]] = field(default_factory=dict)
    skipped: dict[str, set[GlyphKey]] = field(default_factory=dict)

    def of(self, concept: str) -> tuple[set[GlyphKey], set[GlyphKey]]:
        return self.rejected.setdefault(concept, set()), self.skipped.setdefault(concept, set())


@dataclass(frozen=True)
class QueueRequest:
    """A snapshot of what the next ranking must leave out, numbered so that a stale answer
    (the queue moved on to another concept) is known."""

    generation: int
    concept: str
    value: str | None
    n: int
    exclude: frozenset[GlyphKey]
    rejected: frozenset[GlyphKey]
    #: deal from these glyphs alone (the annotator's assignment on a lab database), or any
    only: frozenset[GlyphKey] | None = None


class SuggestionQueue:
    """One concept's queue (``value``: only that value, else the values the Needs report
    lacks). :meth:`current` is the glyph shown; :meth:`answer` records the annotator's key and
    deals the next. The model's guess is the dealt :class:`Suggestion`'s ``value``: a front end
    shows it only from the :class:`Answer`, after the answer.

    Ranking again is asked for (:meth:`wants_refill`) after an accepted tag (the model is refit
    on it), every ``refill_every`` answers, and when fewer than ``low_water`` glyphs wait."""

    def __init__(
        self,
        concept: str,
        value: str | None = None,
        *,
        memory: QueueMemory | None = None,
        only: Iterable[GlyphKey] | None = None,
        batch: int = 12,
        refill_every: int = 4,
        low_water: int = 3,
    ) -> None:
        self.concept = concept
        self.value = value
        self.memory = memory if memory is not None else QueueMemory()
        self.only = None if only is None else frozenset(only)
        self.batch = batch
        self.refill_every = refill_every
        self.low_water = low_water
        self.pending: list[Suggestion] = []
        self.answers: list[Answer] = []
        self._current: Suggestion | None = None
        self._generation = 0
        self._since_fill = 0
        self._accepted_since_fill = False
        self._filled_once = False
        self.exhausted = False  # the last ranking found nothing more to deal

    # ---- what is shown --------------------------------------------------------------------
    def current(self) -> Suggestion | None:
        return self._current

    @property
    def accepted(self) -> int:
        return sum(1 for a in self.answers if a.kind == "accepted")

    def _answered_keys(self) -> set[GlyphKey]:
        return {a.suggestion.key for a in self.answers}

    # ---- ranking ----------------------------------------------------------------------------
    def request(self) -> QueueRequest:
        """What the next ranking leaves out: every glyph answered, rejected, skipped or dealt
        and waiting (the one shown stays shown)."""
        self._generation += 1
        rejected, skipped = self.memory.of(self.concept)
        exclude = self._answered_keys() | skipped
        if self._current is not None:
            exclude.add(self._current.key)
        return QueueRequest(
            self._generation,
            self.concept,
            self.value,
            self.batch,
            frozenset(exclude),
            frozenset(rejected),
            self.only,
        )

    def wants_refill(self) -> bool:
        if not self._filled_once:
            return True
        if self.exhausted and not self._accepted_since_fill:
            return False
        return (
            self._accepted_since_fill
            or self._since_fill >= self.refill_every
            or len(self.pending) < self.low_water
        )

    def fill(self, generation: int, suggestions: Iterable[Suggestion]) -> bool:
        """The ranking for :meth:`request` ``generation`` came back: it replaces the glyphs
        waiting (the one shown stays). False (nothing changed) for a stale generation."""
        if generation != self._generation:
            return False
        rejected, skipped = self.memory.of(self.concept)
        gone = self._answered_keys() | rejected | skipped
        if self._current is not None:
            gone.add(self._current.key)
        self.pending = [s for s in suggestions if s.key not in gone]
        self.exhausted = not self.pending
        self._filled_once = True
        self._since_fill = 0
        self._accepted_since_fill = False
        if self._current is None:
            self._deal()
        return True

    def _deal(self) -> None:
        self._current = self.pending.pop(0) if self.pending else None

    # ---- answers ----------------------------------------------------------------------------
    def answer(self, kind: AnswerKind, value: str | None = None) -> Answer:
        """Record the answer to the glyph shown and deal the next (ValueError when none is
        shown, or ``accepted`` without a value). Writes no tag: the front end calls
        :func:`accept` for an accepted one."""
        if self._current is None:
            raise ValueError("no suggestion is shown")
        if kind == "accepted" and value is None:
            raise ValueError("an accepted suggestion needs its value")
        got = Answer(self._current, kind, value if kind == "accepted" else None)
        rejected, skipped = self.memory.of(self.concept)
        if kind == "none":
            rejected.add(got.suggestion.key)
        elif kind == "skipped":
            skipped.add(got.suggestion.key)
        else:
            self._accepted_since_fill = True
        self.answers.append(got)
        self._since_fill += 1
        self._deal()
        return got

    def take_back(self, key: GlyphKey) -> bool:
        """An accepted tag of ``key`` was undone: deal it again now (the glyph shown waits
        first in line). False when ``key`` was not accepted here."""
        for i in range(len(self.answers) - 1, -1, -1):
            a = self.answers[i]
            if a.suggestion.key == key and a.kind == "accepted":
                del self.answers[i]
                if self._current is not None:
                    self.pending.insert(0, self._current)
                self._current = a.suggestion
                return True
        return False
