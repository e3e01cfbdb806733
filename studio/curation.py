"""Curation of generated puzzles: the state and the commands behind the curator's board.

Qt-free, like :class:`studio.app.Studio`, so that a test (or a script) can drive every curator
action without a window. A :class:`Curator` works on one *puzzle set* of the project at a time
(a generated split, one fold; :meth:`Curator.open_set`); puzzle ids are those of the records
(``test-00012``) and are unique within a set.

Every edit is a command on the studio's undo stack, labelled like a sentence ("Approve puzzle
test-00012"), stored at once (one transaction per edit, see :mod:`studio.store.project`) and
logged in the project's append-only ``puzzle_events`` table, undos included. After each change
the studio's events fire, on the thread that made it (the GUI's main thread):

- ``studio.events.puzzle_sets_changed`` with the list of set ids that appeared or disappeared;
- ``studio.events.puzzles_changed`` with a :class:`PuzzlesChanged` (the set id and the puzzle
  ids edited).

Statuses: ``flagged`` (the vetting found errors or warnings), ``draft`` (vetted clean, not yet
decided), ``approved``, ``rejected``. An edit that changes a puzzle's frames (a replaced foil,
a regenerated puzzle) re-vets it, and its status follows the verdict: ``flagged`` or ``draft``
(an approved puzzle that changes must be approved again). A stimulus item's foil is replaced
from its family's own candidates (``Family.foil_candidates``: :meth:`Curator.replacement_items`,
:func:`item_replacements` for a worker thread), a glyph puzzle's from the annotations.

Image-feature warnings are graded (:func:`feature_warning_grade`: ``low``, ``medium``,
``high``, by how likely the pattern they saw is to arise by chance). Only those at or above
:attr:`Curator.feature_warning_min` (the board's threshold; ``high`` by default) and of a
feature not dismissed for the set (:meth:`Curator.dismiss_feature`, undoable, stored in the
project) count: a stored ``flagged`` puzzle with no error and no warning that counts reads
as ``draft`` (:meth:`Curator.summaries`, :meth:`Curator.puzzle`). The stored rows keep every
warning; lowering the threshold brings them back.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from studio.app import PuzzlesChanged
from studio.core.commands import FunctionCommand
from studio.core.errors import StudioError
from studio.core.family import Family
from studio.core.keys import GlyphKey
from studio.core.puzzle import Puzzle
from studio.core.tagindex import TagIndex
from studio.core.verdict import Finding, Verdict
from studio.stimuli.items import RECORD_ERRORS, StimulusPuzzle, is_stimulus_record
from studio.stimuli.pictures import ItemSheets
from studio.store.migrations import PUZZLE_STATUSES
from studio.store.project import (
    NewPuzzle,
    PuzzleChange,
    PuzzleConflict,
    PuzzleSetRecord,
    PuzzleSummary,
    StoredPuzzle,
)
from studio.vet.emergent import MATRIX_LAYOUTS, vet_puzzle
from studio.vet.rules import RuleBook

if TYPE_CHECKING:
    from studio.app import Studio
    from studio.generate.request import GenerationRequest
    from studio.store.jobs import PuzzleFlag
    from studio.store.project import Project, PuzzleEvent

STATUSES = PUZZLE_STATUSES

#: The warning filter: key → what the board shows.
WARNING_FILTERS: tuple[tuple[str, str], ...] = (
    ("", "Any findings"),
    ("errors", "Has errors"),
    ("warnings", "Has warnings"),
    ("none", "No findings"),
    ("shortcut", "Shortcut-prone"),
    ("people-fail", "People fail it"),
    ("people-split", "People split"),
)

#: Verbs of the undo labels, by the status a command sets.
_STATUS_VERBS = {
    "approved": "Approve",
    "rejected": "Reject",
    "flagged": "Flag",
    "draft": "Return to draft",
}

#: For an image-feature warning, the raw numbers behind each pseudo concept.
_FEATURE_NUMBERS: dict[str, tuple[tuple[str, str], ...]] = {
    "img-components": (),  # the value is the number
    "img-holes": (),
    "img-aspect": (("aspect_ratio", "w/h {:.2f}"),),
    "img-size": (("bbox_size", "size {:.2f}"),),
    "img-ink": (("ink_fraction", "ink {:.0%}"),),
    "img-mirror": (("mirror_lr", "LR {:.2f}"), ("mirror_tb", "TB {:.2f}")),
    "img-rotation": (("rot180", "180° {:.2f}"), ("rot90", "90° {:.2f}")),
}

MAX_REGENERATION_DRAWS = 400
#: A stimulus item is regenerated from batches of this many items of its family, at most this
#: many batches (KiVA: five domains, a few changes each)
ITEM_BATCH = 12
ITEM_REGENERATION_BATCHES = 8
#: Replacements proposed for an item's foil (each drawn by its family, vetted, then drawn on
#: the board for the curator to see: a KiVA candidate takes 0.1-0.7 s at 96 px on 2 cores)
ITEM_FOIL_CANDIDATES = 6
#: People fail a puzzle when fewer than this share of at least PEOPLE_MIN_ANSWERS answers in
#: its pilots chose the key (issue 29; KiVA: a set is valid when 2 of 3 adults solve it)
PEOPLE_PASS = 2 / 3
PEOPLE_MIN_ANSWERS = 3
#: People split on a puzzle when one foil took at least this share of at least
#: PEOPLE_MIN_ANSWERS answers (`pilot analyse`'s flag: a second defensible answer?)
PEOPLE_SPLIT = 1 / 3

#: Grades of an image-feature warning, weakest first (the board's threshold is one of them).
FEATURE_GRADES = ("low", "medium", "high")
#: The ``source`` of the warnings that image features give (``studio.splits.vet``).
FEATURE_SOURCE = "image-features"
#: How many of the 1,003 glyphs of the Symbola reference sample carry each image-feature
#: value (``studio.vet.features.feature_tags``' docstring; a glyph near a bound carries both
#: neighbours, so a concept's counts may add up to more than 1,003).
_FEATURE_SAMPLE = 1003
_FEATURE_VALUE_COUNTS: dict[str, dict[str, float]] = {
    "img-components": {"1": 692, "2": 161, "3": 68, "4": 35}
    | {str(n): 33 / 4 for n in range(5, 9)},
    "img-holes": {"0": 516, "1": 277, "2": 120, "3": 32, "4": 26}
    | {str(n): 17 / 4 for n in range(5, 9)},
    "img-aspect": {"square": 679, "tall": 286, "wide": 172},
    "img-size": {"medium": 566, "large": 365, "small": 124},
    "img-ink": {"medium": 694, "high": 273, "low": 239},
    "img-mirror": {"left-right": 588, "top-bottom": 537, "none": 251},
    "img-rotation": {"180": 438, "90": 177, "none": 553},
}
#: The share assumed for a value the table does not list.
_UNKNOWN_SHARE = 0.05
#: Frames per row that a one-value row of a finding stands for (a constant row: every frame).
_FRAMES_PER_ROW = 3
#: Chance at or above which a warning is ``low`` (1 in 100) and below which it is ``high``
#: (1 in 10,000); ``medium`` between.
LOW_GRADE_CHANCE = 1e-2
HIGH_GRADE_CHANCE = 1e-4
#: Project meta key of a set's dismissed image features (a JSON list of concept ids).
_DISMISSED_KEY = "curation/dismissed-features/{set_id}"


# ---- records -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CuratedPuzzle:
    """A puzzle of a set with its curation state. ``findings`` are the errors of its last
    vetting, ``warnings`` the image-feature warnings."""

    set_id: int
    puzzle: Puzzle | StimulusPuzzle
    status: str
    comment: str
    findings: tuple[Finding, ...]
    warnings: tuple[Finding, ...]
    updated_at: str
    author: str

    @property
    def id(self) -> str:
        return self.puzzle.id

    @property
    def problems(self) -> tuple[Finding, ...]:
        """Errors first, then warnings by grade, high first (issue 28: the sheet listed a
        low-grade warning above the high-grade one that flagged the puzzle, and Replace foil
        named and chose that foil): what the sheet draws, in that order."""
        rank = {g: i for i, g in enumerate(reversed(FEATURE_GRADES))}
        warnings = sorted(self.warnings, key=lambda f: rank[feature_warning_grade(f)])
        return self.findings + tuple(warnings)

    @classmethod
    def of(cls, s: StoredPuzzle) -> CuratedPuzzle:
        """The stored row read back; a record or finding damaged in the store (edited in a
        lab's database, say) is a StudioError naming the puzzle, never an internal error."""
        try:
            cp = cls._of(s)
        except StudioError:
            raise
        except RECORD_ERRORS as e:
            raise StudioError(f"puzzle {s.puzzle_id[:80]!r} is damaged in the store ({e})") from e
        if cp.id != s.puzzle_id:  # an edit would then go to that other puzzle
            raise StudioError(
                f"puzzle {s.puzzle_id[:80]!r}: its stored record is of another one ({cp.id[:80]!r})"
            )
        return cp

    @classmethod
    def _of(cls, s: StoredPuzzle) -> CuratedPuzzle:
        return cls(
            set_id=s.set_id,
            puzzle=(
                StimulusPuzzle.from_record(s.record)
                if is_stimulus_record(s.record)
                else Puzzle.from_json(s.record)
            ),
            status=s.status,
            comment=s.comment,
            findings=tuple(Finding.from_puzzle_json(f) for f in s.findings),
            warnings=tuple(Finding.from_puzzle_json(f) for f in s.warnings),
            updated_at=s.updated_at,
            author=s.author,
        )


@dataclass(frozen=True)
class PuzzleFilter:
    """Which puzzles the board lists; an empty field lets everything through. ``warning`` is
    ``errors`` (has errors), ``warnings`` (has warnings), ``none`` (neither) or empty."""

    rule: str = ""
    concept: str = ""
    status: str = ""
    warning: str = ""
    split: str = ""

    def matches(self, p: CuratedPuzzle) -> bool:
        if self.rule and p.puzzle.rule != self.rule:
            return False
        if self.concept and p.puzzle.concept != self.concept:
            return False
        if self.status and p.status != self.status:
            return False
        if self.split and p.puzzle.split != self.split:
            return False
        if self.warning == "errors":
            return bool(p.findings)
        if self.warning == "warnings":
            return bool(p.warnings)
        if self.warning == "none":
            return not p.findings and not p.warnings
        return True


@dataclass(frozen=True)
class GeneratedSet:
    """A generation for the board, any family (:meth:`Curator.generate_set`): the set to
    import, the annotations its puzzles were vetted against (None for items drawn from a
    family's options), each fold's coverage ([] without (rule, concept) tuples) and what the
    split folder's writing said (empty when none was written)."""

    prepared: PreparedImport
    annotations: TagIndex | None
    coverage: list[dict[str, Any]]
    lines: list[str]


@dataclass(frozen=True)
class PreparedImport:
    """A generated split, serialised for storing (see :meth:`Curator.prepare_import`):
    per fold, the set's name, parameters, summary and puzzles."""

    name: str
    total: int
    batches: tuple[tuple[str, dict[str, Any], dict[str, Any], list[NewPuzzle]], ...]


#: Where a frame sits on the sheet: ("context", row, column) or ("answer", index, 0).
FramePos = tuple[str, int, int]


@dataclass(frozen=True)
class Evidence:
    """What the sheet draws for one finding: the foil (``answer``), a caption, and for every
    frame taking part the values it carries for the finding's concept (for a warning, with the
    image-feature numbers behind them)."""

    finding: Finding
    severity: str  # error | warning
    answer: int
    caption: str
    frame_values: Mapping[FramePos, str]


@dataclass(frozen=True)
class Replacement:
    """A proposed foil: the glyph, its values of the puzzle's concept, and whether the image
    features warn about it (such candidates are ranked last)."""

    glyph: GlyphKey
    values: tuple[str, ...]
    warned: bool


@dataclass(frozen=True)
class ItemReplacement:
    """A proposed foil for a stimulus item (its family's ``foil_candidates``): the whole new
    record (id and part kept, only answer ``answer`` drawn anew, its ``verdict`` written in),
    that verdict, the answer before and after in a few words (``StimulusPuzzle.answer_words``)
    and ``base``, the digest of the record it was proposed for: :meth:`Curator.replace_foil`
    takes the verdict as it is while the item is unchanged, and vets again otherwise."""

    answer: int
    record: Mapping[str, Any]
    verdict: Verdict
    base: str
    old: str
    new: str


def item_replacements(
    item: StimulusPuzzle, answer_index: int, seed: int, limit: int = ITEM_FOIL_CANDIDATES
) -> list[ItemReplacement]:
    """Up to ``limit`` replacements for foil ``answer_index`` of ``item``, from its family's
    ``foil_candidates`` hook with ``seed`` (each valid by the family's own checks). Reads
    neither the store nor Qt: the board runs it on its render thread with what
    :meth:`Curator.item_foil_request` read. StudioError when the family offers none, when the
    answer has none by design (the family says why) or when no candidate passed its checks."""
    from studio.plugins import family
    from studio.stimuli.pictures import record_digest

    fam = _foil_family(item)
    _check_item_foil(item, answer_index)
    try:
        records = fam.load("foil_candidates")(dict(item.record), answer_index, seed, limit)
    except RECORD_ERRORS as e:
        raise StudioError(
            f"item {item.id}: its record does not read as a {item.family} item ({e})"
        ) from e
    base = record_digest(item.record)
    out = []
    for record in list(records)[:limit]:
        record = {**record, "id": item.id, "part": item.split}
        new = StimulusPuzzle.from_record(record)
        verdict = new.verdict() if "verdict" in record else _vet_item(record)
        out.append(
            ItemReplacement(
                answer_index,
                record,
                verdict,
                base,
                item.answer_words(answer_index),
                new.answer_words(answer_index),
            )
        )
    if not out:
        raise StudioError(
            f"no replacement for answer {answer_index + 1} of item {item.id}: none of the "
            f"{family(item.family).label} family's candidates passed its checks"
        )
    return out


def _foil_family(item: StimulusPuzzle) -> Family:
    """The item's family, which must offer replacement foils (its ``foil_candidates``)."""
    from studio.plugins import family

    fam = family(item.family)
    if fam.foil_candidates is None:
        raise StudioError(f"the {fam.label} family offers no replacement foils")
    return fam


def _check_item_foil(item: StimulusPuzzle, answer_index: int) -> None:
    if not 0 <= answer_index < len(item.answers):
        raise StudioError(f"item {item.id} has no answer {answer_index + 1}")
    if answer_index == item.key:
        raise StudioError(f"answer {answer_index + 1} of item {item.id} is the key, not a foil")


def _vet_item(record: Mapping[str, Any]) -> Verdict:
    """An item's record vetted by its family (``vet_record``); a record its family cannot
    read is a StudioError naming it."""
    from studio.plugins import family

    try:
        verdict = family(str(record["family"])).load("vet_record")(dict(record))
    except RECORD_ERRORS as e:
        raise StudioError(
            f"item {record.get('id', '?')}: its record does not read as a "
            f"{record.get('family', '?')} item ({e})"
        ) from e
    return Verdict(tuple(verdict.findings), str(record.get("id", "")))


# ---- grading image-feature warnings ------------------------------------------------------------
def is_feature_warning(f: Finding) -> bool:
    """Whether ``f`` is a warning that image features gave (the only ones graded)."""
    return f.is_warning and f.source == FEATURE_SOURCE


def feature_warning_chance(f: Finding) -> float:
    """How likely the pattern an image-feature warning saw is to arise by chance: the product,
    over every frame of the rows the foil completes, of the share of reference glyphs that
    carry the frame's value (a one-value row, as a constant reports it, stands for
    :data:`_FRAMES_PER_ROW` frames). Two rows of ``img-ink: medium`` (69 % of glyphs) come to
    0.11; a progression ``tall, square, wide`` twice to 0.001; a quarter-turn symmetry held by
    six frames to 3e-5."""
    shares = _FEATURE_VALUE_COUNTS.get(f.concept, {})
    chance = 1.0
    for row in f.rows:
        frames = [(v, _FRAMES_PER_ROW) for v in row] if len(row) == 1 else [(v, 1) for v in row]
        for value, n in frames:
            count = shares.get(value)
            share = count / _FEATURE_SAMPLE if count is not None else _UNKNOWN_SHARE
            chance *= min(1.0, share) ** n
    return chance


def feature_warning_grade(f: Finding) -> str:
    """``low``, ``medium`` or ``high``: how seriously to take an image-feature warning, from
    :func:`feature_warning_chance` (at least :data:`LOW_GRADE_CHANCE`: low; below
    :data:`HIGH_GRADE_CHANCE`: high). A pattern that most rows of glyphs show anyway (a
    constant ``medium`` ink) is low; a rare one a person would see (a quarter-turn symmetry in
    every frame, a count progression) is high. A warning of another source (a shifted
    reading) is always high."""
    if not is_feature_warning(f):
        return "high"
    chance = feature_warning_chance(f)
    if chance >= LOW_GRADE_CHANCE:
        return "low"
    if chance >= HIGH_GRADE_CHANCE:
        return "medium"
    return "high"


def grade_at_least(grade: str, minimum: str) -> bool:
    return FEATURE_GRADES.index(grade) >= FEATURE_GRADES.index(minimum)


# ---- the curator -------------------------------------------------------------------------------
class Curator:
    """The curator's board without the board: one per :class:`~studio.app.Studio`."""

    def __init__(self, studio: Studio) -> None:
        self.studio = studio
        self.set_id: int | None = None
        self._annotations: TagIndex | None = None
        self._book: RuleBook | None = None
        self._feature_cache: dict[GlyphKey, Mapping[str, frozenset[str]]] = {}
        self._numbers_cache: dict[GlyphKey, Any] = {}
        self._records: dict[GlyphKey, Any] | None = None
        #: Held while glyphs are rendered: a view's worker thread and the GUI thread must not
        #: use the studio's font renderers at once.
        self.render_lock = threading.RLock()
        # weakly held by the signals: a curator that is dropped stops listening
        studio.events.tags_changed.connect(self._forget_annotations)
        studio.events.schema_changed.connect(self._forget_annotations)
        studio.events.glyphs_changed.connect(self._forget_glyphs)
        studio.events.puzzles_changed.connect(self._forget_puzzles)
        studio.events.puzzle_sets_changed.connect(self._forget_sets)
        #: The lowest grade of image-feature warning that counts (:data:`FEATURE_GRADES`).
        self.feature_warning_min = "high"
        # per set: puzzle id -> its warnings (puzzles with none are absent); ids edited since
        self._warnings: dict[int, dict[str, tuple[Finding, ...]]] = {}
        self._dismissed: dict[int, frozenset[str]] = {}  # as stored, per set
        self._stale: dict[int, set[str]] = {}
        self.reset()

    # ---- state -----------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget everything read from the project (after the studio switched projects) and
        open its newest set."""
        self._annotations = None
        self._book = None
        self._feature_cache.clear()
        self._numbers_cache.clear()
        self._records = None
        self._warnings.clear()
        self._stale.clear()
        self._dismissed.clear()
        sets = self.sets()
        self.set_id = sets[-1].id if sets else None

    def _forget_annotations(self) -> None:
        """Tags or the schema changed: read the annotations and rules again when needed."""
        self._annotations = None
        self._book = None

    def _forget_glyphs(self) -> None:
        """Glyphs were added or rendered: their images, hence their features, may differ."""
        self._forget_annotations()
        self._feature_cache.clear()
        self._numbers_cache.clear()
        self._records = None

    def _forget_puzzles(self, change: PuzzlesChanged) -> None:
        """Puzzles were edited: read their warnings again when next needed."""
        if change.set_id in self._warnings:
            self._stale.setdefault(change.set_id, set()).update(change.ids)

    def _forget_sets(self, set_ids: Sequence[int]) -> None:
        for sid in set_ids:
            self._warnings.pop(sid, None)
            self._stale.pop(sid, None)
            self._dismissed.pop(sid, None)

    @property
    def project(self) -> Project:
        return self.studio.project

    # ---- which warnings count ----------------------------------------------------------------
    def set_feature_warning_min(self, grade: str) -> None:
        """Count image-feature warnings of ``grade`` and above (a view's setting, not stored
        in the project: each curator chooses)."""
        if grade not in FEATURE_GRADES:
            raise StudioError(f"unknown grade {grade!r}; one of {', '.join(FEATURE_GRADES)}")
        self.feature_warning_min = grade

    def dismissed_features(self, set_id: int | None = None) -> frozenset[str]:
        """The image features whose warnings a curator dismissed for a set (the open one)."""
        sid = self.set_id if set_id is None else set_id
        if sid is None:
            return frozenset()
        cached = self._dismissed.get(sid)
        if cached is not None:
            return cached
        raw = self.project.meta(_DISMISSED_KEY.format(set_id=sid))
        try:
            got = json.loads(raw) if raw else []
        except ValueError:
            got = []
        out = frozenset(str(c) for c in got) if isinstance(got, list) else frozenset()
        self._dismissed[sid] = out
        return out

    def dismiss_feature(self, concept: str, dismissed: bool = True) -> None:
        """Stop counting (``dismissed``) or count again the warnings of one image feature
        (``img-ink``) in the open set; undoable, stored in the project. The warnings stay
        stored and shown on the sheet, marked as dismissed."""
        set_id = self._need_set()
        before = self.dismissed_features(set_id)
        after = before | {concept} if dismissed else before - {concept}
        if after == before:
            return
        key = _DISMISSED_KEY.format(set_id=set_id)
        ids = self._puzzles_warned_by(set_id, concept)
        rec = self.current_set()
        name = rec.name if rec is not None else str(set_id)

        def store(value: frozenset[str]) -> Callable[[], None]:
            def run() -> None:
                self.project.set_meta(key, json.dumps(sorted(value)))
                self._dismissed[set_id] = value
                self.studio.puzzles_changed(set_id, ids)

            return run

        verb = "Dismiss" if dismissed else "Count again"
        label = f"{verb} {concept} warnings in “{name}”"
        self.studio.undo_stack.push(FunctionCommand(label, store(after), store(before)))

    def counts(self, f: Finding, dismissed: frozenset[str] = frozenset()) -> bool:
        """Whether a finding flags its puzzle: every error and non-feature warning does; an
        image-feature warning only at or above the threshold and when not dismissed."""
        if not is_feature_warning(f):
            return True
        if f.concept in dismissed:
            return False
        return grade_at_least(feature_warning_grade(f), self.feature_warning_min)

    def _warnings_by_puzzle(self, set_id: int) -> dict[str, tuple[Finding, ...]]:
        """Puzzle id → its stored warnings, for the puzzles that have some (cached; puzzles
        edited since are read again)."""
        cached = self._warnings.get(set_id)
        stale = self._stale.pop(set_id, set())
        if cached is None or len(stale) > 200:
            stored = self.project.stored_puzzles(set_id, findings="warnings")
            cached = self._warnings[set_id] = {
                s.puzzle_id: tuple(Finding.from_puzzle_json(w) for w in s.warnings) for s in stored
            }
            return cached
        for pid in stale:
            s = self.project.stored_puzzle(set_id, pid)
            if s is not None and s.warnings:
                cached[pid] = tuple(Finding.from_puzzle_json(w) for w in s.warnings)
            else:
                cached.pop(pid, None)
        return cached

    def _puzzles_warned_by(self, set_id: int, concept: str) -> list[str]:
        return [
            pid
            for pid, ws in self._warnings_by_puzzle(set_id).items()
            if any(is_feature_warning(w) and w.concept == concept for w in ws)
        ]

    def _effective_status(self, status: str, errors: int, counted: int) -> str:
        return "draft" if status == "flagged" and not errors and not counted else status

    def _effective(self, cp: CuratedPuzzle) -> CuratedPuzzle:
        dismissed = self.dismissed_features(cp.set_id) if cp.warnings else frozenset()
        counted = sum(1 for w in cp.warnings if self.counts(w, dismissed))
        status = self._effective_status(cp.status, len(cp.findings), counted)
        return cp if status == cp.status else replace(cp, status=status)

    def quiet_warnings(self, puzzle_id: str) -> list[tuple[Finding, str]]:
        """The open set's warnings of one puzzle that do not count, each with why ("low",
        "medium": its grade under the threshold; "dismissed")."""
        if self.set_id is None:
            return []
        dismissed = self.dismissed_features()
        out = []
        for w in self._warnings_by_puzzle(self.set_id).get(puzzle_id, ()):
            if not self.counts(w, dismissed):
                why = "dismissed" if w.concept in dismissed else feature_warning_grade(w)
                out.append((w, why))
        return out

    def flagged_share(self, set_id: int | None = None) -> tuple[int, int]:
        """(flagged, total) puzzles of a set (the open one) as the board counts them now."""
        sid = self.set_id if set_id is None else set_id
        if sid is None:
            return (0, 0)
        rows = self._effective_summaries(sid, self.project.puzzle_summaries(sid))
        return (sum(1 for r in rows if r.status == "flagged"), len(rows))

    def _effective_summaries(
        self, set_id: int, rows: Sequence[PuzzleSummary]
    ) -> list[PuzzleSummary]:
        if not any(r.warnings for r in rows):
            return list(rows)
        warned = self._warnings_by_puzzle(set_id)
        dismissed = self.dismissed_features(set_id)
        out = []
        for r in rows:
            ws = warned.get(r.id, ())
            if r.warnings and ws:
                counted = sum(1 for w in ws if self.counts(w, dismissed))
                status = self._effective_status(r.status, r.errors, counted)
                if counted != r.warnings or status != r.status:
                    r = replace(r, warnings=counted, status=status)
            out.append(r)
        return out

    @property
    def annotations(self) -> TagIndex:
        """The project's annotations as split generation reads them: those of the glyphs with
        an image (``studio.splits.split_inputs``), so that a rebuilt generator holds out the
        same glyphs as the split did. Cached until tags, glyphs or the schema change."""
        got = self._annotations
        if got is None:
            from studio.splits import split_inputs

            with self.render_lock:
                got = self._annotations  # another thread may have read them meanwhile
                if got is None:
                    got = self._annotations = split_inputs(self.studio).annotations
        return got

    @property
    def annotations_ready(self) -> bool:
        """Whether :attr:`annotations` answers at once (else it reads and renders first)."""
        return self._annotations is not None

    def warm_up(self) -> None:
        """Read the annotations now (a view calls this on a worker thread)."""
        self.annotations  # noqa: B018

    def adopt_annotations(self, annotations: TagIndex) -> None:
        """Use annotations just read by ``split_inputs`` elsewhere (a generation job)."""
        self._annotations = annotations

    @property
    def book(self) -> RuleBook:
        if self._book is None:
            self._book = RuleBook(self.project.schema)
        return self._book

    def sets(self) -> list[PuzzleSetRecord]:
        return self.project.puzzle_sets()

    def current_set(self) -> PuzzleSetRecord | None:
        return self.project.puzzle_set(self.set_id) if self.set_id is not None else None

    def open_set(self, set_id: int) -> None:
        if self.project.puzzle_set(set_id) is None:
            raise StudioError(f"the project has no puzzle set {set_id}")
        self.set_id = set_id

    def _need_set(self) -> int:
        if self.set_id is None:
            raise StudioError("no puzzle set is open; generate a split first")
        return self.set_id

    def puzzles(self, filter: PuzzleFilter | None = None) -> list[CuratedPuzzle]:
        """The open set's puzzles that pass ``filter``, in generation order."""
        if self.set_id is None:
            return []
        f = filter or PuzzleFilter()
        stored = self.project.stored_puzzles(self.set_id, **_where(_sql_part(f)))
        dismissed = self.dismissed_features()
        out = []
        for s in stored:
            cp = CuratedPuzzle.of(s)
            counted = sum(1 for w in cp.warnings if self.counts(w, dismissed))
            status = self._effective_status(cp.status, len(cp.findings), counted)
            if status != cp.status:
                cp = replace(cp, status=status)
            if _passes(cp.status, len(cp.findings), counted, f):
                out.append(cp)
        return out

    def summaries(
        self, filter: PuzzleFilter | None = None, ids: Sequence[str] | None = None
    ) -> list[PuzzleSummary]:
        """What a list shows of the puzzles that pass ``filter`` (no record is parsed: fast
        enough for the GUI thread with 10,000 puzzles). ``ids`` limits it to those.
        ``warnings`` counts the warnings that count and ``status`` is the one the board shows
        (see the module's docstring)."""
        if self.set_id is None:
            return []
        f = filter or PuzzleFilter()
        if f.warning in ("shortcut", "people-fail", "people-split"):
            flagged = set(
                {
                    "shortcut": self.shortcut_flags,
                    "people-fail": self.people_fail,
                    "people-split": self.people_split,
                }[f.warning]()
            )
            ids = [i for i in (ids if ids is not None else sorted(flagged)) if i in flagged]
            f = replace(f, warning="")
        rows = self.project.puzzle_summaries(self.set_id, ids=ids, **_where(_sql_part(f)))
        rows = self._effective_summaries(self.set_id, rows)
        return [r for r in rows if _passes(r.status, r.errors, r.warnings, f)]

    def shortcut_flags(self, set_id: int | None = None) -> dict[str, list[PuzzleFlag]]:
        """Puzzle id → the baselines' "shortcut-prone" flags (``studio.store.jobs.PuzzleFlag``)
        of a set (the open one by default): a context-blind or partial-input model chose the
        key in every seed with high confidence. Written by the worker when a baseline job on
        the set ends; one indexed query, so the board may call it on the GUI thread."""
        sid = self.set_id if set_id is None else set_id
        if sid is None:
            return {}
        return self.project.jobs.flags(sid)

    def human(self, set_id: int | None = None) -> dict[str, tuple[int, int]]:
        """Puzzle id -> (people who chose the key, answers) over the set's pilots (issue 29;
        :meth:`studio.store.project.Project.human_accuracy`): one query, for the board."""
        sid = self.set_id if set_id is None else set_id
        if sid is None:
            return {}
        return self.project.human_accuracy(sid)

    def human_choices(self, set_id: int | None = None) -> dict[str, dict[int, int]]:
        """Puzzle id -> {answer index: people who chose it} over the set's pilots."""
        sid = self.set_id if set_id is None else set_id
        return {} if sid is None else self.project.human_choices(sid)

    def people_fail(
        self, set_id: int | None = None, human: Mapping[str, tuple[int, int]] | None = None
    ) -> list[str]:
        """The puzzles people fail: fewer than :data:`PEOPLE_PASS` of at least
        :data:`PEOPLE_MIN_ANSWERS` answers chose the key (KiVA counted an object set valid
        when 2 of 3 adults solved it). Bulk approval leaves them to the curator."""
        return sorted(
            pid
            for pid, (right, n) in (self.human(set_id) if human is None else human).items()
            if n >= PEOPLE_MIN_ANSWERS and right / n < PEOPLE_PASS
        )

    def people_split(
        self,
        set_id: int | None = None,
        human: Mapping[str, tuple[int, int]] | None = None,
        choices: Mapping[str, Mapping[int, int]] | None = None,
    ) -> list[str]:
        """The puzzles people split on: one foil took at least :data:`PEOPLE_SPLIT` of at
        least :data:`PEOPLE_MIN_ANSWERS` answers in the set's pilots (`pilot analyse` flags the
        same: a second defensible answer?). Two queries, for the board's filter."""
        human = self.human(set_id) if human is None else human
        out = []
        for pid, chosen in (self.human_choices(set_id) if choices is None else choices).items():
            right, n = human.get(pid, (0, 0))
            if n < PEOPLE_MIN_ANSWERS:
                continue
            counts = sorted(chosen.values(), reverse=True)
            if right in counts:  # the key's own count (a foil with as many reads the same)
                counts.remove(right)
            if counts and counts[0] / n >= PEOPLE_SPLIT:
                out.append(pid)
        return sorted(out)

    def puzzle(self, puzzle_id: str) -> CuratedPuzzle:
        """One puzzle of the open set, with the status the board shows."""
        return self._effective(self._stored(puzzle_id))

    def _stored(self, puzzle_id: str) -> CuratedPuzzle:
        """One puzzle of the open set as stored (what an undo must restore)."""
        s = self.project.stored_puzzle(self._need_set(), puzzle_id)
        if s is None:
            raise StudioError(f"puzzle {puzzle_id!r} is not in the open set")
        return CuratedPuzzle.of(s)

    def history(self, puzzle_id: str) -> list[PuzzleEvent]:
        """The log entries of one puzzle, oldest first."""
        return self.project.puzzle_events(self._need_set(), puzzle_id)

    # ---- vetting -----------------------------------------------------------------------------
    def _featurise(self, keys: Sequence[GlyphKey]) -> None:
        """Compute (once per glyph, until glyphs change) the image features and their tags
        of these glyphs from their 80×80 renders, as ``studio.splits.glyph_images`` and
        ``feature_index`` do for a split, but reading the project's glyph list once, not per
        call (the board asks for a puzzle's nine glyphs at every step)."""
        from studio.vet.features import compute_features_batch, feature_tags

        need = [k for k in keys if k not in self._feature_cache]
        if not need:
            return
        with self.render_lock:
            if self._records is None:
                self._records = {g.key: g for g in self.project.glyphs()}
            records = self._records
            images: dict[GlyphKey, np.ndarray] = {}
            for k in need:
                g = records.get(k)
                if g is None or g.status in ("uncovered", "missing"):
                    continue
                img = self.studio.render(g, 80)
                if img is not None:
                    images[k] = img
        done = sorted(images)
        feats = (
            compute_features_batch(np.stack([np.asarray(images[k]) for k in done])) if done else []
        )
        for k, f in zip(done, feats, strict=True):
            self._numbers_cache[k] = f
            self._feature_cache[k] = feature_tags(f)
        for k in need:
            self._feature_cache.setdefault(k, {})

    def prefetch_features(
        self,
        set_id: int | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        chunk: int = 32,
    ) -> int:
        """Compute the image features of every glyph of a set's puzzles (the open one) ahead
        of the board's first look at them; a view runs this on a worker thread. Works a chunk
        of glyphs at a time, holding the render lock only for one chunk, and stops early when
        ``should_stop()``. Returns how many glyphs were featurised."""
        sid = self.set_id if set_id is None else set_id
        if sid is None:
            return 0
        keys: dict[GlyphKey, None] = {}
        for stored in self.project.stored_puzzles(sid):
            if should_stop():
                return 0
            keys.update(dict.fromkeys(Puzzle.from_json(stored.record).all_keys()))
        need = [k for k in keys if k not in self._feature_cache]
        done = 0
        for i in range(0, len(need), chunk):
            if should_stop():
                break
            part = need[i : i + chunk]
            self._featurise(part)
            done += len(part)
        return done

    def _features(self, keys: Iterable[GlyphKey]) -> TagIndex:
        """Image-feature pseudo-annotations of these glyphs, from their 80×80 renders."""
        keys = list(dict.fromkeys(keys))
        self._featurise(keys)
        return TagIndex(
            by_glyph={k: self._feature_cache[k] for k in keys if self._feature_cache[k]},
            folders={},
        )

    def vet(self, puzzle: Puzzle) -> Verdict:
        """The verdict the split's vetting would give: annotations and image features."""
        from studio.splits import vet

        features = self._features(puzzle.all_keys())
        return vet([puzzle], self.annotations, self.project.schema, features=features)[0]

    # ---- import ------------------------------------------------------------------------------
    @staticmethod
    def prepare_import(
        name: str,
        params: Any,
        results: Sequence[Any],
        verdicts: Sequence[Verdict],
    ) -> PreparedImport:
        """Everything :meth:`import_prepared` stores, serialised. Pure and thread-safe: a
        worker thread runs it, so that a 10,000-puzzle split is not serialised on the GUI
        thread. ``verdicts`` are aligned with the puzzles of all results, in order."""
        params_json = params.to_json() if hasattr(params, "to_json") else dict(params)
        total = sum(len(r.puzzles) for r in results)
        if len(verdicts) != total:
            raise StudioError(f"{len(verdicts)} verdicts for {total} puzzles")
        batches: list[tuple[str, dict[str, Any], dict[str, Any], list[NewPuzzle]]] = []
        it = iter(verdicts)
        for r in results:
            rows = []
            for p in r.puzzles:
                v = next(it)
                if v.subject_id != p.id:
                    raise StudioError(f"verdict of {v.subject_id!r} given for puzzle {p.id!r}")
                rows.append(_new_puzzle(p, v))
            fold_name = name if len(results) == 1 else f"{name} · fold {r.fold + 1}"
            summary = dict(r.summary())
            summary["tuples"] = {k: list(v) for k, v in r.tuples.items()}
            summary["produced"] = dict(sorted(r.produced.items()))
            summary["flagged"] = sum(1 for x in rows if x.status == "flagged")
            batches.append((fold_name, params_json | {"fold": r.fold}, summary, rows))
        return PreparedImport(name, total, tuple(batches))

    @staticmethod
    def prepare_stimulus_import(
        name: str,
        meta: Mapping[str, Any],
        records: Sequence[Mapping[str, Any]],
        verdicts: Sequence[Verdict] | None = None,
    ) -> PreparedImport:
        """A stimulus split (``split.json``'s ``meta`` and its item records) as one puzzle set
        for :meth:`import_prepared`: the board curates a KiVA or polycube set as it does a glyph
        one. Pure and thread-safe, like :meth:`prepare_import`."""
        rows = stimulus_new_puzzles(records, verdicts)
        params = {
            "family": meta.get("family", ""),
            "seed": meta.get("seed"),
            "n": meta.get("n", len(rows)),
            "options": dict(meta.get("options") or {}),
            "ratios": list(meta.get("ratios") or []),
        }
        summary = dict(meta.get("summary") or {})
        summary["flagged"] = sum(1 for x in rows if x.status == "flagged")
        return PreparedImport(name, len(rows), ((name, params, summary, rows),))

    def prepare_folder_import(
        self,
        folder: str | Path,
        name: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> PreparedImport:
        """A split folder written by ``generate`` (any family) as one puzzle set, every puzzle
        vetted again here — a glyph split against this project's annotations, a stimulus
        split by its family's checks from the records — so a folder from elsewhere is judged
        as the board would judge it. Named after the folder unless ``name`` is given."""
        from studio.families.glyph_pmp.export import read_split
        from studio.stimuli.split import is_stimulus_split, read_stimulus_split, vet_stimulus_split

        folder = Path(folder)
        name = name or folder.name
        if is_stimulus_split(folder):
            # the folder's sheets are not taken on trust: the board draws each item itself
            meta, records = read_stimulus_split(folder)
            verdicts = vet_stimulus_split(folder)
            if progress is not None:
                progress(len(records), len(records))
            return self.prepare_stimulus_import(name, meta, records, verdicts)
        params, puzzles = read_split(folder)
        rows = []
        for i, puzzle in enumerate(puzzles):
            rows.append(_new_puzzle(puzzle, self.vet(puzzle)))
            if progress is not None:
                progress(i + 1, len(puzzles))
        summary = {"flagged": sum(1 for x in rows if x.status == "flagged")}
        return PreparedImport(name, len(rows), ((name, params.to_json(), summary, rows),))

    @staticmethod
    def generate_set(
        studio: Studio,
        request: GenerationRequest,
        lock: threading.RLock,
        progress: Callable[[str, int, int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> GeneratedSet:
        """The board's generation for any family, without Qt (issue 27: the board had a job
        per kind and the GUI assembled one of them): the request's puzzles made and vetted
        the way ``generate`` makes them, prepared as one puzzle set for
        :meth:`import_prepared` (on the GUI thread), and, with ``request.out_dir``, the split
        folder written as well. A family that reads annotations reads this project's (under
        the render ``lock``); the others draw from their options, their items' sheets kept
        in the render cache so the board shows them at once. ``progress(text, done, total)``
        in words; ``should_stop`` raises :class:`studio.splits.Cancelled` at the next step.
        Safe on a worker thread."""
        from studio import splits
        from studio.plugins import family

        request = request.check()
        fam = family(request.family)

        def say(text: str, done: int, total: int) -> None:
            if progress is not None:
                progress(text, done, total)

        def check() -> None:
            if should_stop is not None and should_stop():
                raise splits.Cancelled()

        name = request.name or (Path(request.out_dir).name if request.out_dir else fam.id)
        if not fam.needs_project:
            return Curator._item_set(studio, request, name, say, should_stop)
        from studio.families.glyph_pmp import split_params

        params = split_params(request.options, request.n, request.seed, request.ratios)
        if request.out_dir is not None:  # before the work, not after it
            splits.check_split_target(request.out_dir)
        texts = {splits.STAGE_GENERATE: "Generating puzzles…", splits.STAGE_VET: "Vetting puzzles…"}
        say("Reading annotations and renders…", 0, 0)
        with lock:
            inputs = splits.split_inputs(studio)
        check()
        vetted = splits.generate_and_vet(
            studio,
            params,
            lambda stage, done, total: say(texts[stage], done, total),
            should_stop,
            inputs,
        )
        check()
        covered = splits.split_coverage(vetted.results)
        total = sum(len(r.puzzles) for r in vetted.results)
        lines: list[str] = []
        if request.out_dir is not None:
            say("Writing the split folder…", 0, total)
            written = splits.write_vetted(
                request.out_dir,
                params,
                vetted,
                covered,
                lambda done, n: say("Writing the split folder…", done, n),
                should_stop,
            )
            lines = splits.glyph_lines(written)["lines"]
        say("Preparing the import…", total, total)
        prepared = Curator.prepare_import(name, params, vetted.results, vetted.all_verdicts)
        check()
        return GeneratedSet(prepared, inputs.annotations, covered, lines)

    @staticmethod
    def _item_set(
        studio: Studio,
        request: GenerationRequest,
        name: str,
        say: Callable[[str, int, int], None],
        should_stop: Callable[[], bool] | None,
    ) -> GeneratedSet:
        """:meth:`generate_set` for a family drawn from its options: the split folder when
        one is asked for (then read back as ``import-split`` reads it), else the items drawn
        in memory with the same records, parts and verdicts."""
        from studio.stimuli.split import ItemDraw, generate_stimulus_split, read_stimulus_split

        sheets = ItemSheets(studio.cache.root / "items")
        text = f"Generating {request.family} items…"
        lines: list[str] = []
        if request.out_dir is not None:
            from studio.splits import item_lines

            summary = generate_stimulus_split(
                request.family,
                request.out_dir,
                request.n,
                request.seed,
                request.options,
                request.ratios,
                progress=lambda done, total: say(text, done, total),
                should_stop=should_stop,
            )
            meta, records = read_stimulus_split(request.out_dir)
            for r in records:
                png = Path(request.out_dir) / "sheets" / f"{r['id']}.png"
                if png.is_file():
                    sheets.adopt(r, png)
            lines = item_lines(summary)["lines"]
            verdicts = None
        else:
            r = request
            draw = ItemDraw(r.family, r.n, r.seed, r.options, r.ratios)
            records, verdicts = [], []
            say(text, 0, request.n)
            for record, item in draw:
                if should_stop is not None and should_stop():
                    from studio.splits import Cancelled

                    raise Cancelled()
                records.append(record)
                verdicts.append(item.verdict)
                sheets.put(record, item.sheet)
                say(text, len(records), request.n)
            meta = {
                "family": request.family,
                "options": draw.options,
                "n": request.n,
                "seed": request.seed,
                "ratios": list(request.ratios),
                "summary": draw.summary(),
            }
        prepared = Curator.prepare_stimulus_import(name, meta, records, verdicts)
        return GeneratedSet(prepared, None, [], lines)

    def item_sheets(self) -> ItemSheets:
        """Where the board keeps stimulus items' sheets (the user's render cache)."""
        return ItemSheets(self.studio.cache.root / "items")

    def adopt_sheets(self, folder: str | Path, records: Sequence[Mapping[str, Any]]) -> int:
        """Keep the sheets a stimulus split's generation drew (``sheets/<id>.png``) for the
        board, so the items show without being drawn again; how many were kept."""
        sheets = self.item_sheets()
        return sum(
            sheets.adopt(r, Path(folder) / "sheets" / f"{r['id']}.png")
            for r in records
            if (Path(folder) / "sheets" / f"{r['id']}.png").is_file()
        )

    def import_results(
        self,
        name: str,
        params: Any,
        results: Sequence[Any],
        verdicts: Sequence[Verdict],
    ) -> list[int]:
        """Store generated folds (``SplitResult``s) as puzzle sets, one per fold, with their
        verdicts (aligned with the puzzles of all results, in order); undoable. A puzzle whose
        verdict has errors or warnings is ``flagged``, others ``draft``. Opens the first new
        set and returns the new set ids."""
        return self.import_prepared(self.prepare_import(name, params, results, verdicts))

    def import_prepared(self, prepared: PreparedImport) -> list[int]:
        """The storing half of :meth:`import_results` (undoable; on the GUI thread)."""
        ids: list[int] = []
        before = self.set_id
        author = self.studio.author

        def do() -> None:
            redo = bool(ids)
            new = []
            for i, (n, params_json, summary, rows) in enumerate(prepared.batches):
                new.append(
                    self.project.add_puzzle_set(
                        n,
                        params_json,
                        summary,
                        rows,
                        author,
                        set_id=ids[i] if redo else None,
                        event="redo-import" if redo else "import",
                    )
                )
            ids[:] = new
            self.set_id = ids[0] if ids else before
            self.studio.puzzle_sets_changed(ids)

        def undo() -> None:
            for sid in ids:
                self.project.remove_puzzle_set(sid, author, event="undo-import")
            self.set_id = before if before not in ids else None
            if self.set_id is not None and self.project.puzzle_set(self.set_id) is None:
                self.set_id = None
            self.studio.puzzle_sets_changed(ids)

        label = f"Import puzzle set “{prepared.name}” ({_count(prepared.total, 'puzzle')})"
        self.studio.undo_stack.push(FunctionCommand(label, do, undo))
        return list(ids)

    # ---- status and comments ---------------------------------------------------------------
    def set_status(
        self,
        ids: Sequence[str],
        status: str,
        comment: str | None = None,
        *,
        seen: Mapping[str, str] | None = None,
    ) -> None:
        """Approve, reject, flag or return puzzles to draft (undoable). ``comment`` replaces
        the puzzles' comments (None keeps them). ``seen``: the statuses the curator decided
        from (the board's rows); on a lab database, a puzzle another curator changed since is
        then refused (:class:`~studio.store.project.PuzzleConflict`) instead of overwritten."""
        if status not in STATUSES:
            raise StudioError(f"unknown status {status!r}; one of {', '.join(STATUSES)}")
        ids = list(dict.fromkeys(ids))
        if not ids:
            return
        set_id = self._need_set()
        old = {pid: self._stored(pid) for pid in ids}
        for pid, shown in (seen or {}).items():
            now = self._effective(old[pid]) if pid in old else None
            if now is not None and now.status != shown:
                raise PuzzleConflict(
                    f"puzzle {pid} was changed by {now.author or 'someone'} at {now.updated_at}"
                    f" meanwhile (it is now {now.status!r}, not {shown!r} as shown): nothing was"
                    " changed; look at it again",
                    self.project.location,
                )
        # what the board showed: a stored "flagged" whose warnings all fall under the threshold
        # (or are dismissed) reads "draft" there, and the history says both (issue 28: the
        # export recorded "old: flagged" for a puzzle approved from "draft")
        shown = {pid: self._effective(old[pid]).status for pid in ids}
        forward = [
            PuzzleChange(
                pid,
                "status",
                _detail(
                    old=old[pid].status,
                    shown=shown[pid] if shown[pid] != old[pid].status else None,
                    new=status,
                    comment=comment,
                ),
                status=status,
                comment=comment,
            )
            for pid in ids
        ]
        backward = [
            PuzzleChange(
                pid,
                "status",
                _detail(old=status, new=old[pid].status, comment=old[pid].comment, undo=True),
                status=old[pid].status,
                comment=old[pid].comment,
            )
            for pid in ids
        ]
        what = f"puzzle {ids[0]}" if len(ids) == 1 else f"{len(ids)} puzzles"
        label = f"{_STATUS_VERBS[status]} {what}"
        if comment:
            label += f" ({_short(comment)})"
        self._push_changes(label, set_id, forward, backward)

    def _undecided(self, ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Of these puzzles of the open set, the undecided ones split in two: clean (no
        error, no vetting flag, no baseline shortcut flag) and flagged. One query of the
        summaries and one of the flags for both answers."""
        if self.set_id is None or not ids:
            return [], []
        shortcut = self.shortcut_flags()
        fail = set(self.people_fail())
        clean: list[str] = []
        flagged: list[str] = []
        for r in self.summaries(ids=list(set(ids))):
            held = r.id in shortcut or r.id in fail
            if r.status == "flagged" or (r.status == "draft" and held):
                flagged.append(r.id)
            elif r.status == "draft" and not r.errors:
                clean.append(r.id)
        return clean, flagged

    def approvable(self, ids: Sequence[str]) -> list[str]:
        """Of these puzzles of the open set, those :meth:`approve_clean` approves: no error,
        not decided yet and not flagged. A puzzle the vetting flagged (a warning, such as a
        foil that completes a rule over another concept) or a baseline found shortcut-prone is
        decided one by one, never in bulk (issue 28: Ctrl+Shift+A approved a puzzle flagged
        "[grade high] Answer 4 completes arithmetic…"); a rejection is never overruled."""
        return self._undecided(ids)[0]

    def flagged_among(self, ids: Sequence[str]) -> list[str]:
        """Of these puzzles, the undecided ones that bulk approval leaves to the curator:
        flagged by the vetting, found shortcut-prone by a baseline, or failed by people in a
        pilot."""
        return self._undecided(ids)[1]

    def approve_clean(self, ids: Sequence[str], comment: str | None = None) -> list[str]:
        """Approve, in one undoable step, those of ``ids`` without errors or flags that are
        not decided yet (:meth:`approvable`); returns the ids approved (none: nothing is
        pushed)."""
        chosen = self.approvable(ids)
        if chosen:
            self.set_status(chosen, "approved", comment)
        return chosen

    def set_comment(self, puzzle_id: str, comment: str) -> None:
        """Change a puzzle's comment (undoable)."""
        set_id = self._need_set()
        old = self._stored(puzzle_id).comment
        if old == comment:
            return
        self._push_changes(
            f"Comment on puzzle {puzzle_id}",
            set_id,
            [PuzzleChange(puzzle_id, "comment", _detail(old=old, new=comment), comment=comment)],
            [
                PuzzleChange(
                    puzzle_id, "comment", _detail(old=comment, new=old, undo=True), comment=old
                )
            ],
        )

    # ---- foils -------------------------------------------------------------------------------
    def replacement_candidates(
        self, puzzle_id: str, answer_index: int, limit: int = 20
    ) -> list[Replacement]:
        """Valid replacements for one foil, best first (see :meth:`propose_replacements`)."""
        cp = self.puzzle(puzzle_id)
        if isinstance(cp.puzzle, StimulusPuzzle):
            raise StudioError(
                f"{cp.puzzle.family} item {cp.id} is given another foil by its family, not a "
                "glyph (replacement_items)"
            )
        p = _glyph_puzzle(cp, "Replace foil")
        self._check_foil(p, answer_index)
        ann = self.annotations
        concept = p.concept
        side = self._side_glyphs(cp)
        taken = set(p.all_keys())
        pool: set[GlyphKey] = set()
        for v in self.project.schema.concept(concept).value_ids:
            pool.update(ann.folder(concept, v))  # glyphs with an image only (see annotations)
        pool -= taken
        if side is not None:
            pool &= side
        # foil-value balance: prefer values the other foils do not show yet
        shown = Counter(
            v for i in p.foils if i != answer_index for v in ann.values(p.answers[i], concept)
        )
        # the other foils may be at fault too: a candidate must not add an error, nor have one
        before = set(vet_puzzle(p, ann, self.book).errors)
        valid: list[tuple[tuple[int, int], GlyphKey]] = []
        for g in pool:
            candidate = p.with_answer(answer_index, g)
            errors = vet_puzzle(candidate, ann, self.book).errors
            if any(e.answer == answer_index or e not in before for e in errors):
                continue
            values = ann.values(g, concept)
            overlap = sum(shown[v] for v in values)
            valid.append(((overlap, _stable_rank(p.id, answer_index, g)), g))
        valid.sort(key=lambda x: x[0])
        out: list[Replacement] = []
        warned: list[Replacement] = []
        for _, g in valid:
            if len(out) >= limit:
                break
            candidate = p.with_answer(answer_index, g)
            bad = p.layout in MATRIX_LAYOUTS and any(
                w.answer == answer_index for w in self.vet(candidate).warnings
            )
            r = Replacement(g, tuple(sorted(ann.values(g, concept))), bad)
            (warned if bad else out).append(r)
        return (out + warned)[:limit]

    def propose_replacements(
        self, puzzle_id: str, answer_index: int, limit: int = 20
    ) -> list[GlyphKey]:
        """Glyphs that may replace the foil ``answer_index``: they carry some value of the
        puzzle's concept, are neither in the context nor among the answers, come from the
        puzzle's side of the split's glyph hold-out, render, and leave the puzzle valid as far
        as that foil goes: it completes no rule of the schema, the key still completes the
        intended one, and no finding appears that was not there before (other foils may still
        be at fault; they are replaced in turn).
        Ranked deterministically: values the other foils do not show first (foil balance),
        candidates the image features warn about last, then a stable hash of puzzle and glyph.
        """
        return [r.glyph for r in self.replacement_candidates(puzzle_id, answer_index, limit)]

    def replace_foil(
        self,
        puzzle_id: str,
        answer_index: int,
        choice: GlyphKey | ItemReplacement | Mapping[str, Any],
    ) -> Verdict:
        """Put another foil in place of answer ``answer_index`` (undoable); the puzzle is
        re-vetted and its status follows the verdict. Returns the new verdict.

        A glyph puzzle takes a glyph (:meth:`replacement_candidates`); a stimulus item takes
        one of :meth:`replacement_items` (its verdict kept while the item is unchanged since it
        was proposed, else vetted again) or a whole record of the item in which only that
        answer differs (vetted by the family)."""
        cp = self._stored(puzzle_id)
        if isinstance(cp.puzzle, StimulusPuzzle):
            if isinstance(choice, GlyphKey):
                raise StudioError(
                    f"{cp.puzzle.family} item {cp.id} takes another item's foil, not a glyph "
                    "(replacement_items)"
                )
            return self._replace_item_foil(cp, answer_index, choice)
        if not isinstance(choice, GlyphKey):
            raise StudioError(f"puzzle {puzzle_id} is a glyph puzzle: its foils are glyphs")
        glyph = choice
        p = _glyph_puzzle(cp, "Replace foil")
        self._check_foil(p, answer_index)
        if glyph in p.all_keys():
            raise StudioError(f"{glyph} is already a frame of puzzle {puzzle_id}")
        new = p.with_answer(answer_index, glyph)
        verdict = self.vet(new)
        old_glyph = p.answers[answer_index]
        detail = {"answer": answer_index, "old": str(old_glyph), "new": str(glyph)}
        label = f"Replace answer {answer_index + 1} of puzzle {puzzle_id} with {glyph}"
        self._push_edit(cp, new, verdict, "replace-foil", detail, label)
        return verdict

    # ---- foils of stimulus items -------------------------------------------------------------
    @staticmethod
    def item_foils_refusal(cp: CuratedPuzzle) -> str | None:
        """Why Replace foil does not apply to a curated item (its family offers no
        replacement foils), or None where it does (a glyph puzzle included)."""
        if not isinstance(cp.puzzle, StimulusPuzzle):
            return None
        try:
            _foil_family(cp.puzzle)
        except StudioError as e:
            return str(e)
        return None

    def item_foil_request(self, puzzle_id: str, answer_index: int) -> tuple[StimulusPuzzle, int]:
        """What :func:`item_replacements` needs, read here (the store's thread): the stored
        item, checked to be an item whose family offers replacement foils and ``answer_index``
        one of its foils, and the seed its candidates are drawn with — derived from the set's
        seed, the item's id and the answer, so the same item proposes the same candidates."""
        cp = self._stored(puzzle_id)
        item = cp.puzzle
        if not isinstance(item, StimulusPuzzle):
            raise StudioError(
                f"puzzle {puzzle_id} is a glyph puzzle: its replacements are glyphs "
                "(replacement_candidates)"
            )
        _foil_family(item)
        _check_item_foil(item, answer_index)
        set_rec = self.project.puzzle_set(cp.set_id)
        seed = set_rec.params.get("seed", 0) if set_rec is not None else 0
        return item, _derived_seed(seed, answer_index, f"foil\x1f{item.id}", 0) % (2**31)

    def replacement_items(
        self, puzzle_id: str, answer_index: int, limit: int = ITEM_FOIL_CANDIDATES
    ) -> list[ItemReplacement]:
        """Replacements for foil ``answer_index`` of a stimulus item, drawn by its family the
        way its generator draws that foil (the family's ``foil_candidates``: the key and every
        other answer unchanged, each candidate valid by the family's checks), in the family's
        order for the item's seed (:meth:`item_foil_request`). StudioError says why there are
        none."""
        item, seed = self.item_foil_request(puzzle_id, answer_index)
        return item_replacements(item, answer_index, seed, limit)

    def _replace_item_foil(
        self,
        cp: CuratedPuzzle,
        answer_index: int,
        choice: ItemReplacement | Mapping[str, Any],
    ) -> Verdict:
        from studio.stimuli.pictures import record_digest

        old = cp.puzzle
        assert isinstance(old, StimulusPuzzle)
        _foil_family(old)
        _check_item_foil(old, answer_index)
        proposed = choice if isinstance(choice, ItemReplacement) else None
        record = dict(proposed.record if proposed is not None else choice)  # type: ignore[union-attr]
        if record.get("id") != old.id or record.get("family") != old.family:
            raise StudioError(
                f"the record offered is item {str(record.get('id'))[:80]} of "
                f"{str(record.get('family'))[:40]}, not {old.family} item {old.id}"
            )
        record["part"] = old.split
        new = StimulusPuzzle.from_record(record)
        try:
            changed = [
                j
                for j in range(max(len(old.answers), len(new.answers)))
                if j >= len(old.answers)
                or j >= len(new.answers)
                or old.answer_record(j) != new.answer_record(j)
            ]
        except (TypeError, ValueError, KeyError, AttributeError) as e:
            raise StudioError(
                f"item {old.id}: its stored record or the one offered is damaged "
                f"({type(e).__name__}: {str(e)[:80]}); nothing was replaced"
            ) from None
        if not changed and new.key == old.key:
            raise StudioError(
                f"the record offered for item {old.id} is the item as it is: answer "
                f"{answer_index + 1} already is that foil, so nothing was replaced"
            )
        if new.key != old.key or changed != [answer_index]:
            shown = ", ".join(str(j + 1) for j in changed) or "none"
            raise StudioError(
                f"the record offered for item {old.id} does not replace answer "
                f"{answer_index + 1} alone (answers changed: {shown}; key "
                f"{new.key + 1}, was {old.key + 1})"
            )
        fresh = (
            proposed is not None
            and proposed.answer == answer_index
            and proposed.base == record_digest(old.record)
        )
        verdict = proposed.verdict if fresh and proposed is not None else _vet_item(record)
        record["verdict"] = verdict.to_item_json()
        new = StimulusPuzzle.from_record(record)
        detail = {
            "answer": answer_index,
            "old": old.answer_record(answer_index),
            "new": new.answer_record(answer_index),
        }
        before, after = old.answer_words(answer_index), new.answer_words(answer_index)
        label = f"Replace answer {answer_index + 1} of item {old.id} " + (
            f"({before} → {after})" if before != after else f"with another {after}"
        )
        self._push_edit(cp, new, verdict, "replace-foil", detail, label)
        return verdict

    def regenerate(self, puzzle_id: str) -> Puzzle:
        """Replace a puzzle by a fresh one of the same rule, concept, shift, layout and split
        (undoable), drawn by the split's generator from the same glyph hold-out with a new
        seed derived from the puzzle's id and how often it was regenerated. Keeps the id. A
        stimulus item is drawn anew by its family (:meth:`_regenerate_item`)."""
        cp = self._stored(puzzle_id)
        if isinstance(cp.puzzle, StimulusPuzzle):
            return self._regenerate_item(cp)  # type: ignore[return-value]
        old = _glyph_puzzle(cp, "Regenerate")
        set_rec = self.current_set()
        assert set_rec is not None
        new = self._draw_again(old, set_rec)
        verdict = self.vet(new)
        detail = {
            "seed": new.seed,
            "old": old.to_json(),
            "new_answers": [str(k) for k in new.answers],
        }
        self._push_edit(cp, new, verdict, "regenerate", detail, f"Regenerate puzzle {puzzle_id}")
        return new

    def _regenerate_item(self, cp: CuratedPuzzle) -> StimulusPuzzle:
        """A stimulus item replaced by a fresh valid one of its family testing the same rule
        and concept (:meth:`item_redraw`, :func:`draw_item_again`, :meth:`apply_redraw`: the
        board runs the middle step, which takes a second or two for a 3D family, on a worker
        thread); the id and part stay (undoable)."""
        request = self.item_redraw(cp.id)
        return self.apply_redraw(request, draw_item_again(request))

    def item_redraw(self, puzzle_id: str) -> ItemRedraw:
        """What drawing an item anew needs, read from the store (on the thread that owns it):
        its family, the set's options and the seed derived from the set's seed, the item's id
        and how often it was regenerated."""
        cp = self._stored(puzzle_id)
        old = cp.puzzle
        if not isinstance(old, StimulusPuzzle):
            raise StudioError(f"puzzle {puzzle_id} is a glyph puzzle, not a family's item")
        set_rec = self.project.puzzle_set(cp.set_id)
        assert set_rec is not None
        options = set_rec.params.get("options") or {}
        done = old.record.get("regenerated", 0)
        if not isinstance(options, Mapping) or not isinstance(done, int) or done < 0:
            raise StudioError(
                f"item {old.id}: its set's options or its regeneration count are damaged in the "
                "store; it cannot be drawn anew"
            )
        count = done + 1
        seed = _derived_seed(set_rec.params.get("seed", 0), 0, old.id, count) % (2**31)
        return ItemRedraw(cp, dict(options), seed, count)

    def apply_redraw(self, request: ItemRedraw, drawn: RedrawnItem) -> StimulusPuzzle:
        """Store an item drawn anew (undoable), unless the item changed since the request was
        read (another edit, an undo, another client): then StudioError, nothing stored."""
        now = self._stored(request.item.id)
        before = request.item.puzzle
        assert isinstance(before, StimulusPuzzle)
        if not isinstance(now.puzzle, StimulusPuzzle) or _drawn(now.puzzle.record) != _drawn(
            before.record
        ):
            raise StudioError(
                f"item {request.item.id} changed while it was drawn anew; nothing was replaced "
                "(regenerate it again)"
            )
        label = f"Regenerate item {request.item.id}"
        detail = {"seed": drawn.seed, "old": dict(before.record)}
        self._push_edit(now, drawn.puzzle, drawn.verdict, "regenerate", detail, label)
        return drawn.puzzle

    def _push_edit(
        self,
        cp: CuratedPuzzle,
        new: Puzzle | StimulusPuzzle,
        verdict: Verdict,
        kind: str,
        detail: dict[str, Any],
        label: str,
    ) -> None:
        """Replace a puzzle's frames by ``new`` (undoable); its status follows the verdict."""
        status = "flagged" if verdict.errors or verdict.warnings else "draft"
        forward = PuzzleChange(
            cp.id,
            kind,
            detail | {"status": status},
            record=new.to_json(),
            status=status,
            findings=[f.to_puzzle_json() for f in verdict.errors],
            warnings=[f.to_puzzle_json() for f in verdict.warnings],
            columns=_listed(new),
        )
        backward = PuzzleChange(
            cp.id,
            kind,
            {"undo": True, "status": cp.status},
            record=cp.puzzle.to_json(),
            status=cp.status,
            findings=[f.to_puzzle_json() for f in cp.findings],
            warnings=[f.to_puzzle_json() for f in cp.warnings],
            columns=_listed(cp.puzzle),
        )
        self._push_changes(label, cp.set_id, [forward], [backward])

    def _push_changes(
        self,
        label: str,
        set_id: int,
        forward: Sequence[PuzzleChange],
        backward: Sequence[PuzzleChange],
    ) -> None:
        """Push one command that stores ``forward`` (do, redo) or ``backward`` (undo) in one
        transaction each time, logged by the current author, then tells the views which
        puzzles changed. The one way every curation edit of puzzles is written."""
        ids = list(dict.fromkeys(ch.puzzle_id for ch in forward))

        def apply(changes: Sequence[PuzzleChange]) -> Callable[[], None]:
            def run() -> None:
                self.project.change_puzzles(set_id, list(changes), self.studio.author)
                self.studio.puzzles_changed(set_id, ids)

            return run

        self.studio.undo_stack.push(FunctionCommand(label, apply(forward), apply(backward)))

    @staticmethod
    def _check_foil(p: Puzzle, answer_index: int) -> None:
        if not 0 <= answer_index < len(p.answers):
            raise StudioError(f"puzzle {p.id} has no answer {answer_index + 1}")
        if answer_index == p.key:
            raise StudioError(f"answer {answer_index + 1} of puzzle {p.id} is the key, not a foil")

    def _generator(self, set_rec: PuzzleSetRecord, fold: int) -> Any:
        """The split's generator, set up as for the split: same parameters, seed and fold, so
        the same glyph hold-out (as long as the annotations did not change)."""
        from studio.families.glyph_pmp.generator import GlyphPMPGenerator
        from studio.generate.params import SplitParams

        params = {k: v for k, v in set_rec.params.items() if k != "fold"}
        return GlyphPMPGenerator(
            SplitParams.from_json(params), self.annotations, self.project.schema, fold
        )

    def _side_glyphs(self, cp: CuratedPuzzle) -> set[GlyphKey] | None:
        """The glyphs the puzzle's part may draw from under the split's hold-out (None when
        the set's generator cannot be rebuilt, e.g. a set imported from elsewhere)."""
        set_rec = self.project.puzzle_set(cp.set_id)
        if set_rec is None or not isinstance(cp.puzzle, Puzzle):
            return None
        try:
            gen = self._generator(set_rec, int(cp.puzzle.params.get("fold", 0)))
        except (StudioError, TypeError, ValueError):
            return None
        return set(gen.side(cp.puzzle.split).glyphs)

    def _draw_again(self, old: Puzzle, set_rec: PuzzleSetRecord) -> Puzzle:
        fold = int(old.params.get("fold", 0))
        try:
            gen = self._generator(set_rec, fold)
        except (TypeError, ValueError) as e:
            raise StudioError(f"cannot rebuild the generator of this set: {e}") from None
        count = int(old.params.get("regenerated", 0)) + 1
        seed = _derived_seed(set_rec.params.get("seed", 0), fold, old.id, count)
        rng = np.random.default_rng(seed)
        reasons: Counter[str] = Counter()
        for _ in range(MAX_REGENERATION_DRAWS):
            got, reason = gen.draw_one(old.rule, old.concept, old.shift, old.split, rng)
            if got is None:
                reasons[reason] += 1
                continue
            if got.context == old.context and got.answers == old.answers:
                reasons["same-puzzle"] += 1
                continue
            return replace(
                got,
                id=old.id,
                seed=seed,
                params={**dict(old.params), **dict(got.params), "regenerated": count},
            )
        why = ", ".join(f"{k} {n}" for k, n in reasons.most_common(3))
        raise StudioError(
            f"no new puzzle of {old.rule} over {old.concept} in {MAX_REGENERATION_DRAWS} "
            f"draws ({why})"
        )

    # ---- evidence and statistics -------------------------------------------------------
    def evidence(self, cp: CuratedPuzzle) -> list[Evidence]:
        """What to draw on the sheet for each finding, errors first (a stimulus item's
        checks name no frame: the board lists them with their measures instead)."""
        if isinstance(cp.puzzle, StimulusPuzzle):
            return []
        out = []
        feats: TagIndex | None = None
        numbers: dict[GlyphKey, Any] = {}
        for f in cp.problems:
            warning = f.is_warning
            if warning and feats is None:
                feats = self._features(cp.puzzle.all_keys())
                numbers = self._feature_numbers(cp.puzzle.all_keys())
            out.append(
                _evidence(cp.puzzle, f, feats if warning else self.annotations, numbers, warning)
            )
        return out

    def _feature_numbers(self, keys: Iterable[GlyphKey]) -> dict[GlyphKey, Any]:
        keys = list(dict.fromkeys(keys))
        self._featurise(keys)
        return {k: self._numbers_cache[k] for k in keys if k in self._numbers_cache}

    def stats(self, set_id: int | None = None) -> dict[str, Any]:
        """``split_stats`` of a set (default: the open one) with the generator's rejection
        counts by reason, the tuples that ran dry, and the curation statuses."""
        from studio.vet.balance import split_stats

        sid = self.set_id if set_id is None else set_id
        if sid is None:
            return {}
        rec = self.project.puzzle_set(sid)
        if rec is None:
            raise StudioError(f"the project has no puzzle set {sid}")
        stored = [CuratedPuzzle.of(s) for s in self.project.stored_puzzles(sid)]
        items = [c.puzzle for c in stored if isinstance(c.puzzle, StimulusPuzzle)]
        puzzles = [c.puzzle for c in stored if isinstance(c.puzzle, Puzzle)]
        if items and puzzles:  # generation never mixes them; an edited store might
            raise StudioError(
                f"puzzle set “{rec.name}” mixes glyph puzzles and stimulus items: no statistics"
            )
        out: dict[str, Any] = (
            stimulus_stats(items)
            if items
            else dict(split_stats(puzzles, self.annotations, self.project.schema))
        )
        out["rejections"] = dict(rec.summary.get("rejections", {}))
        out["dry_tuples"] = dict(rec.summary.get("dry_tuples", {}))
        if puzzles:  # glyph puzzles (a set of items has none): coverage by (rule, concept)
            from studio.vet.coverage import coverage_of_set

            out["coverage"] = coverage_of_set(puzzles, rec.params, out["dry_tuples"])
        dismissed = self.dismissed_features(sid)
        shown = [
            self._effective_status(
                c.status, len(c.findings), sum(1 for w in c.warnings if self.counts(w, dismissed))
            )
            for c in stored
        ]
        out["statuses"] = {s: shown.count(s) for s in STATUSES}
        return out


# ---- helpers -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ItemRedraw:
    """A stimulus item to draw anew (:meth:`Curator.item_redraw`): the item as stored, its
    set's options, the seed of the first batch and the regeneration count."""

    item: CuratedPuzzle
    options: dict[str, Any]
    seed: int
    count: int


@dataclass(frozen=True)
class RedrawnItem:
    """An item drawn anew (:func:`draw_item_again`), with its verdict and the batch seed."""

    puzzle: StimulusPuzzle
    verdict: Verdict
    seed: int


def draw_item_again(request: ItemRedraw) -> RedrawnItem:
    """A fresh valid item of the request's family testing the same rule and concept (its
    family's reading: KiVA's domain and change), drawn by the set's generator with its options
    in small batches from the request's seed (a 3D family makes its renderer once a batch).
    Reads nothing from the store: safe on a worker thread."""
    import contextlib

    from studio.stimuli.split import make_generator

    old = request.item.puzzle
    assert isinstance(old, StimulusPuzzle)
    gen = make_generator(old.family, dict(request.options))
    reasons: Counter[str] = Counter()
    for batch in range(ITEM_REGENERATION_BATCHES):
        with contextlib.closing(gen.items(ITEM_BATCH, request.seed + batch)) as drawn:
            for item in drawn:
                record = {
                    **item.to_json(),
                    "id": old.id,
                    "part": old.split,
                    "regenerated": request.count,
                }
                new = StimulusPuzzle.from_record(record)
                if (new.rule, new.concept) != (old.rule, old.concept):
                    reasons["another rule or concept"] += 1
                elif not item.verdict.valid:
                    reasons["invalid"] += 1
                elif _drawn(record) == _drawn(old.record):
                    reasons["the same item"] += 1
                else:
                    return RedrawnItem(new, item.verdict, request.seed + batch)
    drawn_n = ITEM_REGENERATION_BATCHES * ITEM_BATCH
    why = ", ".join(f"{k} {n}" for k, n in reasons.most_common(3))
    raise StudioError(
        f"no new {old.family} item of {old.rule} / {old.concept} in {drawn_n} draws ({why})"
    )


def _drawn(record: Mapping[str, Any]) -> str:
    """What an item is, whatever its regeneration count: the same draw is the same item."""
    from studio.stimuli.pictures import record_digest

    return record_digest({k: v for k, v in record.items() if k != "regenerated"})


def _listed(p: Puzzle | StimulusPuzzle) -> tuple[str, str, str, str] | None:
    """What the list shows of a stimulus item (its family reads it); None for a glyph
    puzzle, whose record carries it under those names."""
    if isinstance(p, StimulusPuzzle):
        return (p.layout, p.rule, p.concept, p.split)
    return None


def _glyph_puzzle(cp: CuratedPuzzle, what: str) -> Puzzle:
    """The glyph puzzle an edit works on; a stimulus item (which the edits send to their own
    path before this) says so."""
    if isinstance(cp.puzzle, StimulusPuzzle):
        raise StudioError(
            f"{what} works on glyph puzzles; {cp.puzzle.family} item {cp.id} is approved, "
            "rejected or drawn anew whole (Regenerate, G)"
        )
    return cp.puzzle


def stimulus_stats(items: Sequence[StimulusPuzzle]) -> dict[str, Any]:
    """The statistics panel's figures for a set of stimulus items, in ``split_stats``' shape:
    per part the items, per rule and concept (as the family reads them), the key's position,
    and the family's answer-set audit with its partial-view floors where it has them."""
    from studio.stimuli.symbolic import audit_stimulus_records
    from studio.vet.balance import answer_positions

    out: dict[str, Any] = {}
    for part in ("train", "val", "test", "all"):
        ps = [p for p in items if part == "all" or p.split == part]
        d: dict[str, Any] = {
            "puzzles": len(ps),
            "per_rule": dict(Counter(p.rule for p in ps).most_common()),
            "per_concept": dict(Counter(p.concept for p in ps).most_common()),
            "per_layout": dict(Counter(p.layout for p in ps).most_common()),
            "answer_position": answer_positions(ps),  # type: ignore[arg-type]
        }
        families = {p.family for p in ps}
        if len(families) == 1:
            audit = audit_stimulus_records(families.pop(), [p.record for p in ps])
            if audit is not None:
                d["audit"] = audit
                if audit.get("partial_views"):
                    d["partial_views"] = audit["partial_views"]
        out[part] = d
    return out


def stimulus_new_puzzles(
    records: Sequence[Mapping[str, Any]], verdicts: Sequence[Verdict] | None = None
) -> list[NewPuzzle]:
    """A stimulus split's items as puzzles to store (issue 27: every family on the board),
    in order: the record whole, what the list shows read by the family, and the status its
    verdict gives — the one each record carries from generation, or ``verdicts`` (a re-vetting,
    aligned with the records) which then replace the records' own."""
    out = []
    for i, record in enumerate(records):
        rec = dict(record)
        if verdicts is not None:
            v = verdicts[i]
            if v.subject_id and v.subject_id != rec.get("id"):
                raise StudioError(f"verdict of {v.subject_id!r} given for item {rec.get('id')!r}")
            rec["verdict"] = v.to_item_json()
        item = StimulusPuzzle.from_record(rec)
        v = item.verdict()
        out.append(
            NewPuzzle(
                record=rec,
                record_text=json.dumps(rec, sort_keys=True, separators=(",", ":")),
                status="flagged" if v.errors or v.warnings else "draft",
                findings=[f.to_puzzle_json() for f in v.errors],
                warnings=[f.to_puzzle_json() for f in v.warnings],
                columns=(item.layout, item.rule, item.concept, item.split),
            )
        )
    return out


def _new_puzzle(p: Puzzle, v: Verdict) -> NewPuzzle:
    record = p.to_json()
    return NewPuzzle(
        record=record,
        record_text=json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
        status="flagged" if v.errors or v.warnings else "draft",
        findings=[f.to_puzzle_json() for f in v.errors],
        warnings=[f.to_puzzle_json() for f in v.warnings],
    )


#: Filter values that depend on which warnings count: checked after the query.
_EFFECTIVE_STATUSES = ("flagged", "draft")
_EFFECTIVE_FINDINGS = ("warnings", "none")


def _sql_part(f: PuzzleFilter) -> PuzzleFilter:
    """The part of a filter the store can apply (what stays is checked by :func:`_passes`)."""
    return replace(
        f,
        status="" if f.status in _EFFECTIVE_STATUSES else f.status,
        warning="" if f.warning in _EFFECTIVE_FINDINGS else f.warning,
    )


def _passes(status: str, errors: int, counted: int, f: PuzzleFilter) -> bool:
    if f.status and status != f.status:
        return False
    if f.warning == "warnings":
        return counted > 0
    if f.warning == "none":
        return not errors and not counted
    return True


def _where(f: PuzzleFilter) -> dict[str, str | None]:
    return {
        "rule": f.rule or None,
        "concept": f.concept or None,
        "status": f.status or None,
        "findings": f.warning or None,
        "split": f.split or None,
    }


def _detail(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None and v is not False}


def _count(n: int, what: str) -> str:
    return f"1 {what}" if n == 1 else f"{n} {what}s"


def _short(text: str, n: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _stable_rank(puzzle_id: str, answer: int, g: GlyphKey) -> int:
    h = hashlib.blake2b(f"{puzzle_id}\x1f{answer}\x1f{g}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big")


def _derived_seed(seed: object, fold: int, puzzle_id: str, count: int) -> int:
    text = f"regenerate\x1f{seed}\x1f{fold}\x1f{puzzle_id}\x1f{count}"
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1


def _frames(p: Puzzle) -> list[tuple[FramePos, GlyphKey]]:
    out: list[tuple[FramePos, GlyphKey]] = [
        (("context", r, c), g) for r, row in enumerate(p.context) for c, g in enumerate(row)
    ]
    return out


def _values_text(values: Iterable[str]) -> str:
    vs = sorted(values)
    return "/".join(v if v else "present" for v in vs) if vs else "—"


def _evidence(
    p: Puzzle,
    f: Finding,
    index: TagIndex | None,
    numbers: Mapping[GlyphKey, Any],
    warning: bool,
) -> Evidence:
    rows = " | ".join(", ".join(v if v else "present" for v in r) for r in f.rows)
    if f.check in ("emergent", "foil-completes-intended", "second-odd"):
        also = "also " if f.check == "foil-completes-intended" else ""
        caption = f"{also}completes {f.rule} over {f.concept}: {rows}"
        if f.check == "second-odd":
            caption = f"is odd too: {f.detail}"
        if warning:
            caption += " (image features)"
    else:
        caption = f.detail or f.check
    values: dict[FramePos, str] = {}
    if f.concept and index is not None:
        frames = _frames(p) if f.check != "second-odd" else []
        answers = [f.answer] if f.check != "key-fails" else [p.key]
        if p.layout == "odd-one-out":
            answers = list(range(len(p.answers)))
        frames += [(("answer", i, 0), p.answers[i]) for i in answers if 0 <= i < len(p.answers)]
        for pos, g in frames:
            text = _values_text(index.values(g, f.concept))
            if warning and g in numbers:
                feats = numbers[g]
                nums = [
                    fmt.format(getattr(feats, attr))
                    for attr, fmt in _FEATURE_NUMBERS.get(f.concept, ())
                ]
                if nums:
                    text = f"{text} ({', '.join(nums)})"
            values[pos] = text
    return Evidence(
        finding=f,
        severity="warning" if warning else "error",
        answer=f.answer,
        caption=f"Answer {f.answer + 1} {caption}",
        frame_values=values,
    )


__all__ = [
    "FEATURE_GRADES",
    "STATUSES",
    "WARNING_FILTERS",
    "CuratedPuzzle",
    "Curator",
    "Evidence",
    "PreparedImport",
    "PuzzleFilter",
    "PuzzlesChanged",
    "Replacement",
    "feature_warning_chance",
    "feature_warning_grade",
    "is_feature_warning",
]
