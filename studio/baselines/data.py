"""The puzzles of a split or a puzzle set as arrays the baselines read (numpy only).

:class:`PuzzleArrays` holds, for every puzzle: its id and part (train/val/test), the context
frames and the answer frames as ink at 80×80, the key's index, the row structure, the group
labels (rule, concept, layout, family) and the perception questions when the records carry
them. Frames are ``uint8`` ink × 255, each distinct frame kept once (``frames_u8``, with each
puzzle's rows in it: the default 10,000-puzzle UA split's 90,000 frames are 263 distinct
ones); the per-puzzle stacks ``context_u8`` / ``answers_u8`` (0.6 GB for 10,000 two-row
puzzles, 2.3 GB as float32) are gathered from it when first read;
:meth:`PuzzleArrays.context_ink` / :meth:`PuzzleArrays.answer_ink` and the ``context`` /
``answers`` properties give ``float32`` ink in [0, 1].

**Row structure** (``rows``: the number of *given* context frames per row; the answer completes
the last row):

- ``two-row``: ``(3, 2)`` — row 1 shows 3 frames, row 2 two frames and then the answer;
- ``matrix-3x3``: ``(3, 3, 2)``;
- ``sequence``: ``(k,)`` — one row of k frames, the answer comes next;
- ``analogy`` (A : A′ :: B : ?): ``(2, 1)`` — KiVA trials read the same way
  (train-before, train-after / test-before, ?);
- ``odd-one-out``: ``()`` — no context, the answers are the group;
- ``question-candidates`` (polycube rotation, shape composition, cube nets): ``(1,)`` — the
  question, then one candidate.

Three sources (:func:`load_source` picks by what it is given):

- a **glyph split folder** (:mod:`studio.families.glyph_pmp.export`): ``puzzles.jsonl`` and
  ``npz/<id>.npz`` (``images``: context then answers, 0 paper / 1 ink). A split with several
  folds has a ``fold-<k>/`` folder per fold: pass one of those;
- a **stimulus split folder** (:mod:`studio.stimuli.split`): ``items.jsonl`` and
  ``images/<id>/<name>.png``, made grayscale, resized to 80×80 (box filter) and read as
  ``ink = 1 - gray / 255``. Polycube rotation, shape composition and cube nets: context
  ``[question]``, answers ``candidate-0..3``, the record's ``key``. KiVA: context
  ``train-before, train-after, test-before``, answers ``option-0..2`` and the key of the
  ``extrapolate`` question. Shape-composition candidates are also cut into their pieces
  (connected ink regions, each centred on its own frame at the candidate's scale) for CNN+Max;
- a **project puzzle set** (project path + set id): the stored records, their glyphs rendered
  by the studio (:func:`studio.splits.glyph_images`) and made UA frames
  (:func:`studio.families.glyph_pmp.export.ua_frame`), exactly as an export would write them.

Errors are :class:`~studio.core.errors.StudioError` naming the file and the problem.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from studio.core.errors import StudioError
from studio.core.puzzle import Puzzle, Question

FRAME = 80
PARTS = ("train", "val", "test")
GROUP_KEYS = ("rule", "concept", "layout", "family")
#: Pieces kept per shape-composition candidate (the generator cuts 2-5).
MAX_PIECES = 5
#: A stimulus pixel counts as ink for piece cutting when its ink is above this.
PIECE_INK = 0.1
#: Layouts whose key is the answer *unlike* the others (or unlike the question).
ODD_TASKS = ("odd-one-out",)

Progress = Callable[[int, int], None]

if TYPE_CHECKING:
    from studio.core.family import Family


def odd_designs(family_id: str) -> tuple[str, ...]:
    """The designs in which a family's key is the answer unlike the question (none for a
    family this studio does not know, or a glyph split's "mixed")."""
    from studio.plugins import family, registry

    if family_id not in registry("families"):
        return ()
    return family(family_id).odd_designs


class _Gathered:
    """A stack of frames (``context_u8``, ``answers_u8``) that, when not given, is gathered
    from the frame bank the first time something reads it: the baselines read the bank, and
    the stacks of a 10,000-puzzle two-row split are 0.6 GB that took 0.9 s to gather."""

    def __init__(self, ids: str) -> None:
        self.ids = ids

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        value = obj.__dict__.get(self.slot)
        if value is None:
            bank, ids = obj.__dict__.get("frames_u8"), obj.__dict__.get(self.ids)
            if bank is None or ids is None:
                return None
            value = obj.__dict__[self.slot] = bank[ids]
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.slot] = None if isinstance(value, _Gathered) else value


@dataclass
class PuzzleArrays:
    """Puzzles as arrays (see the module docstring). Index ``i`` is one puzzle throughout.

    The frames are given either as the stacks (``context_u8`` (N, C, 80, 80) and
    ``answers_u8`` (N, A, 80, 80), ``uint8`` ink × 255: the bank is built from them) or as
    the bank and the rows (``frames_u8``, ``context_ids``, ``answer_ids``: the stacks are
    gathered when first read)."""

    ids: list[str]
    parts: np.ndarray  # (N,) str: train / val / test
    context_u8: np.ndarray = field(default=_Gathered("context_ids"), kw_only=True)  # type: ignore[assignment]
    answers_u8: np.ndarray = field(default=_Gathered("answer_ids"), kw_only=True)  # type: ignore[assignment]
    keys: np.ndarray  # (N,) int64
    rows: tuple[int, ...]
    labels: dict[str, np.ndarray]  # GROUP_KEYS -> (N,) str
    questions: list[tuple[Question, ...]]
    layout: str
    family: str
    source: dict[str, Any] = field(default_factory=dict)
    #: shape composition: (N, A, MAX_PIECES, 80, 80) uint8 pieces and (N, A) piece counts
    pieces_u8: np.ndarray | None = None
    piece_counts: np.ndarray | None = None
    #: items left out, with why (e.g. an item whose images are incomplete)
    skipped: list[dict[str, str]] = field(default_factory=list)
    #: per puzzle, per answer (in answer order): attribute -> the values that answer carries
    #: (a glyph's annotation tags; a stimulus item's symbolic record), for the answers-only
    #: probe ``probe-tags``; None when the source has none
    answer_attributes: list[list[dict[str, frozenset[str]]]] | None = None
    #: the same per context frame, in frame order (glyph splits: each glyph's tags), for the
    #: partial-view probes ``probe-row1``/``probe-row2``; None when the source has none
    context_attributes: list[list[dict[str, frozenset[str]]]] | None = None
    #: (N,) each puzzle's own answers, where a set may hold fewer than the ``A`` slots (a glyph
    #: split's ``min_answers``): the slots past them are blank frames no model may choose
    #: (:meth:`mask_probs`); None when every puzzle fills every slot
    answer_counts: np.ndarray | None = None
    #: every distinct context or answer frame once, (F, 80, 80) ``uint8`` (exact byte
    #: equality), and per puzzle each frame's row in it: ``context_ids`` (N, C), ``answer_ids``
    #: (N, A). Glyph splits reuse a few hundred glyph images (the default 10,000-puzzle UA
    #: split holds 90,000 frames and 263 distinct ones), so whatever describes a frame — an
    #: encoder, the fixed features, a perception exemplar — is computed once per row here and
    #: gathered. Built in ``__post_init__`` when not given (the loaders give it).
    frames_u8: np.ndarray | None = None
    context_ids: np.ndarray | None = None
    answer_ids: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.ids)
        if len(set(self.ids)) != n:
            raise StudioError("puzzle ids repeat; the baselines name puzzles by id")
        for name, arr in (("parts", self.parts), ("keys", self.keys)):
            if len(arr) != n:
                raise ValueError(f"{name}: {len(arr)} entries for {n} puzzles")
        given = self.__dict__.get("_context_u8") is not None
        if given != (self.__dict__.get("_answers_u8") is not None):
            raise ValueError("give both frame stacks, or the bank and both id arrays")
        if not given and (
            self.frames_u8 is None or self.context_ids is None or self.answer_ids is None
        ):
            raise ValueError("no frames: give the stacks, or the bank and both id arrays")
        if given and (
            self.frames_u8 is None or self.context_ids is None or self.answer_ids is None
        ):
            self.frames_u8, (self.context_ids, self.answer_ids) = frame_bank(
                self.context_u8, self.answers_u8
            )
        assert self.frames_u8 is not None
        assert self.context_ids is not None and self.answer_ids is not None
        if given and (
            self.context_ids.shape != self.context_u8.shape[:2]
            or self.answer_ids.shape != self.answers_u8.shape[:2]
        ):
            raise ValueError("frame ids and frames disagree in shape")
        if self.context_ids.shape[:1] != (n,) or self.answer_ids.shape[:1] != (n,):
            raise ValueError("frames and ids disagree in length")
        if sum(self.rows) != self.context_ids.shape[1]:
            raise ValueError(f"rows {self.rows} do not add up to {self.context_ids.shape[1]}")
        if self.answer_attributes is not None and len(self.answer_attributes) != n:
            raise ValueError(f"answer_attributes: {len(self.answer_attributes)} for {n} puzzles")
        if self.answer_counts is not None:
            counts = np.asarray(self.answer_counts, dtype=np.int64)
            if counts.shape != (n,) or (n and (counts.min() < 1 or counts.max() > self.n_answers)):
                raise ValueError(f"answer_counts must be {n} counts of 1 to {self.n_answers}")
            if n and (self.keys >= counts).any():
                raise ValueError("a key points past its puzzle's own answers")
            self.answer_counts = counts

    # ---- sizes and structure ---------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def n_answers(self) -> int:
        assert self.answer_ids is not None
        return int(self.answer_ids.shape[1])

    @property
    def n_context(self) -> int:
        assert self.context_ids is not None
        return int(self.context_ids.shape[1])

    @property
    def counts(self) -> np.ndarray:
        """(N,) each puzzle's own answers."""
        if self.answer_counts is None:
            return np.full(self.n, self.n_answers, dtype=np.int64)
        return self.answer_counts

    @property
    def chances(self) -> np.ndarray:
        """(N,) a uniform guess's accuracy on each puzzle: one over its own answers."""
        return 1.0 / self.counts.astype(float)

    @property
    def chance(self) -> float:
        """Accuracy of a uniform guess among each puzzle's answers, over the puzzles."""
        if self.answer_counts is None or not self.n:
            return 1.0 / self.n_answers
        return float(self.chances.mean())

    @property
    def answer_mask(self) -> np.ndarray:
        """(N, A) bool: the slots that are a puzzle's own answers."""
        return np.arange(self.n_answers)[None, :] < self.counts[:, None]

    def mask_probs(self, probs: np.ndarray, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """``probs`` (len(idx), A) with the blank slots of short answer sets at 0 and each row
        summing to 1 again: no model chooses a slot that is not an answer."""
        if self.answer_counts is None:
            return probs
        mask = self.answer_mask[np.asarray(idx, dtype=np.int64)]
        out = np.where(mask, probs, 0.0)
        total = out.sum(axis=1, keepdims=True)
        uniform = mask / mask.sum(axis=1, keepdims=True)
        return np.where(total > 0, out / np.where(total > 0, total, 1.0), uniform).astype(
            probs.dtype
        )

    @property
    def odd(self) -> bool:
        """The key is the answer unlike the others (odd-one-out) or unlike the question
        (polycube rotation's published design: three views are rotations, the key is not; in
        the balanced design the key is the only rotation, so it is the one *like* the
        question)."""
        if self.layout in ODD_TASKS:
            return True
        return self.source.get("design", "published") in odd_designs(self.family)

    @property
    def row_length(self) -> int:
        """Frames in a complete row (the answer's row counted with the answer)."""
        if not self.rows:
            return 0
        return self.rows[-1] + 1

    def row_indices(self) -> list[list[int]]:
        """Context indices row by row (the last row without its answer)."""
        out, start = [], 0
        for k in self.rows:
            out.append(list(range(start, start + k)))
            start += k
        return out

    def part_indices(self, part: str) -> np.ndarray:
        return np.flatnonzero(self.parts == part)

    # ---- frames as float ink ----------------------------------------------------------------
    def context_ink(self, idx: Sequence[int] | np.ndarray | slice = slice(None)) -> np.ndarray:
        """``float32`` ink in [0, 1] of the context frames of these puzzles."""
        return self.context_u8[idx].astype(np.float32) / 255.0

    def answer_ink(self, idx: Sequence[int] | np.ndarray | slice = slice(None)) -> np.ndarray:
        """``float32`` ink in [0, 1] of the answer frames of these puzzles."""
        return self.answers_u8[idx].astype(np.float32) / 255.0

    @property
    def context(self) -> np.ndarray:
        """All context frames as ``float32`` ink, (N, C, 80, 80)."""
        return self.context_ink()

    @property
    def answers(self) -> np.ndarray:
        """All answer frames as ``float32`` ink, (N, A, 80, 80)."""
        return self.answer_ink()

    # ---- derived sets ------------------------------------------------------------------------
    def subset(self, idx: Sequence[int] | np.ndarray) -> PuzzleArrays:
        """These puzzles only (in this order)."""
        idx = np.asarray(idx, dtype=np.int64)
        return replace(
            self,
            ids=[self.ids[i] for i in idx],
            parts=self.parts[idx],
            context_u8=None,  # gathered from the bank when read
            answers_u8=None,
            keys=self.keys[idx],
            labels={k: v[idx] for k, v in self.labels.items()},
            questions=[self.questions[i] for i in idx],
            pieces_u8=None if self.pieces_u8 is None else self.pieces_u8[idx],
            piece_counts=None if self.piece_counts is None else self.piece_counts[idx],
            skipped=list(self.skipped),
            answer_attributes=None
            if self.answer_attributes is None
            else [self.answer_attributes[i] for i in idx],
            context_attributes=None
            if self.context_attributes is None
            else [self.context_attributes[i] for i in idx],
            answer_counts=None if self.answer_counts is None else self.answer_counts[idx],
            frames_u8=self.frames_u8,
            context_ids=None if self.context_ids is None else self.context_ids[idx],
            answer_ids=None if self.answer_ids is None else self.answer_ids[idx],
        )

    def fingerprint(self) -> str:
        """A digest of the ids, parts, keys and frames: a resumed job checks that its source
        did not change between attempts. The frames enter as the bank and each puzzle's rows
        in it, which fix them (hashing the gathered stacks took 2 s on a 10,000-puzzle split;
        a job interrupted before this change runs its units again, with a warning)."""
        h = hashlib.sha256()
        h.update(json.dumps([self.ids, self.parts.tolist(), self.keys.tolist()]).encode())
        for part in (self.frames_u8, self.context_ids, self.answer_ids):
            arr = np.ascontiguousarray(part)
            h.update(repr((arr.shape, arr.dtype.str)).encode())
            h.update(arr.tobytes())
        return h.hexdigest()[:16]

    def stack_fingerprint(self) -> str:
        """The fingerprint as releases before the frame bank computed it (over the gathered
        stacks): a job interrupted under one of them resumes rather than running its units
        again."""
        h = hashlib.sha256()
        h.update(json.dumps([self.ids, self.parts.tolist(), self.keys.tolist()]).encode())
        h.update(np.ascontiguousarray(self.context_u8).tobytes())
        h.update(np.ascontiguousarray(self.answers_u8).tobytes())
        return h.hexdigest()[:16]

    def panel_frame(self, i: int, panel: str) -> np.ndarray | None:
        """The ``uint8`` frame a perception question names (``"answer 2"``, ``"context 1.3"``,
        ``"context 3"`` in a one-row context; 1-based), or None when it names none."""
        fid = self.panel_id(i, panel)
        return None if fid is None else self.frames_u8[fid]  # type: ignore[index]

    def panel_id(self, i: int, panel: str) -> int | None:
        """The row in :attr:`frames_u8` of the frame a perception question names (as
        :meth:`panel_frame`), or None when it names none."""
        assert self.context_ids is not None and self.answer_ids is not None
        slot = self.panel_slot(panel)
        if slot is None:
            return None
        what, column = slot
        ids = self.answer_ids if what == "answer" else self.context_ids
        try:
            return int(ids[i, column])
        except IndexError:
            return None

    def panel_slot(self, panel: str) -> tuple[str, int] | None:
        """Which stack and column a perception question's panel names (``("answer", 1)`` for
        ``"answer 2"``), or None when it names none. The same for every puzzle (the stacks are
        rectangular), so a caller reading many questions parses each distinct name once and
        gathers the rows from :attr:`context_ids` / :attr:`answer_ids` itself
        (:func:`studio.baselines.perception.plan_questions`)."""
        assert self.context_ids is not None and self.answer_ids is not None
        try:
            what, where = panel.split()
            if what == "answer":
                column = _index(where)
                width = self.answer_ids.shape[1]
            elif what == "context":
                width = self.context_ids.shape[1]
                if "." in where:
                    r, j = (int(x) for x in where.split("."))
                    if r < 1 or j < 1:
                        return None
                    column = self.row_indices()[r - 1][j - 1]
                else:
                    column = _index(where)
            else:
                return None
        except (ValueError, IndexError):
            return None
        return (what, column) if column < width else None

    def group_labels(self) -> dict[str, list[str]]:
        return {k: [str(x) for x in v] for k, v in self.labels.items()}


# ---- helpers ---------------------------------------------------------------------------------
def _index(where: str) -> int:
    """A question's 1-based panel number as an index (negative numbers name no panel)."""
    k = int(where) - 1
    if k < 0:
        raise IndexError(where)
    return k


class FrameBank:
    """Distinct frames gathered while frames are read: :meth:`add` gives each frame's row.

    Frames are told apart by their bytes, found by Python's hash of them (SipHash, salted
    per process: 1 µs an 80×80 frame, where a blake2b digest took 6 µs of the 0.5 ms that
    reading a glyph puzzle costs) and checked equal on a match, so a split whose frames are
    all distinct (rendered stimuli) holds no second copy of every frame as a key; the frames
    themselves are kept as given (views, not copies) until :meth:`array` stacks the
    distinct ones once."""

    def __init__(self, shape: tuple[int, int] = (FRAME, FRAME)) -> None:
        self.shape = shape
        self._index: dict[int, list[int]] = {}
        self._frames: list[np.ndarray] = []

    def add(self, frame: np.ndarray) -> int:
        f = np.ascontiguousarray(frame, dtype=np.uint8)
        key = hash(f.tobytes())
        rows = self._index.get(key)
        if rows is not None:
            for j in rows:  # a 64-bit hash may name another frame: check it
                if np.array_equal(self._frames[j], f):
                    return j
        j = len(self._frames)
        self._index.setdefault(key, []).append(j)
        self._frames.append(f)
        return j

    def ids(self, stack: np.ndarray) -> np.ndarray:
        """The rows of an (N, K, h, w) stack's frames, (N, K)."""
        flat = stack.reshape(-1, *stack.shape[2:])
        return np.fromiter((self.add(f) for f in flat), np.int64, len(flat)).reshape(
            stack.shape[:2]
        )

    def array(self) -> np.ndarray:
        if not self._frames:
            return np.zeros((0, *self.shape), np.uint8)
        return np.stack(self._frames)


def frame_bank(*stacks: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct frames of (N, K, h, w) ``uint8`` stacks and each stack's (N, K) rows
    among them."""
    shape = tuple(stacks[0].shape[2:]) if stacks else (FRAME, FRAME)
    bank = FrameBank(shape)  # type: ignore[arg-type]
    ids = [bank.ids(np.asarray(s)) for s in stacks]
    return bank.array(), ids


def rows_of(context_lengths: Sequence[int], layout: str) -> tuple[int, ...]:
    """The row structure of a puzzle's context (lengths of its rows)."""
    if layout == "odd-one-out":
        return ()
    return tuple(int(k) for k in context_lengths)


def _check_uniform(
    items: Sequence[tuple[str, tuple[int, ...], int, str]], path: Path
) -> tuple[tuple[int, ...], int, str]:
    """All puzzles of a source must share rows, answer count and layout."""
    if not items:
        raise StudioError("holds no puzzles", path)
    first = items[0]
    for pid, rows, n_answers, layout in items:
        if (rows, n_answers, layout) != first[1:]:
            raise StudioError(
                f"mixes puzzle shapes: {first[0]} is {first[3]} with rows {list(first[1])} and "
                f"{first[2]} answers, {pid} is {layout} with rows {list(rows)} and {n_answers} "
                "answers; run the baselines on one layout at a time",
                path,
            )
    return first[1], first[2], first[3]


def _check_parts(parts: Sequence[str], path: Path) -> np.ndarray:
    bad = sorted({p for p in parts if p not in PARTS})
    if bad:
        raise StudioError(f"unknown part(s) {', '.join(bad)}; expected train, val, test", path)
    return np.array(parts, dtype=object)


def _labels(rule: list[str], concept: list[str], layout: list[str], family: list[str]) -> dict:
    return {
        "rule": np.array(rule, dtype=object),
        "concept": np.array(concept, dtype=object),
        "layout": np.array(layout, dtype=object),
        "family": np.array(family, dtype=object),
    }


def glyph_answer_attributes(
    puzzles: Sequence[Puzzle], tags_of: Callable[[Any], Mapping[str, frozenset[str]]]
) -> list[list[dict[str, frozenset[str]]]]:
    """Per puzzle, each answer glyph's tags (concept -> values) as ``tags_of(key)`` gives them
    (a :class:`~studio.core.tagindex.TagIndex`'s ``by_glyph.get``, say). The frames of one
    glyph share one dict (:func:`_described_by`): read them, never change them."""
    described = _described_by(tags_of)
    return [[described(k) for k in p.answers] for p in puzzles]


def glyph_context_attributes(
    puzzles: Sequence[Puzzle], tags_of: Callable[[Any], Mapping[str, frozenset[str]]]
) -> list[list[dict[str, frozenset[str]]]]:
    """As :func:`glyph_answer_attributes`, for each puzzle's context glyphs in frame order."""
    described = _described_by(tags_of)
    return [[described(k) for k in p.context_keys] for p in puzzles]


def _described_by(
    tags_of: Callable[[Any], Mapping[str, frozenset[str]]],
) -> Callable[[Any], dict[str, frozenset[str]]]:
    """``key -> {concept: frozenset(values)}`` from ``tags_of``, built once per distinct key
    and shared by its frames, as :meth:`PuzzleArrays.subset` already shares them with the
    whole (the probes only read them). A 10,000-puzzle split names its few hundred glyphs
    90,000 times: a dict per frame took 0.7 s on the 16-core GPU server, mostly the garbage
    collector's passes over the records. The records' keys repeat as objects too, so a key
    object is found by its id first (a glyph key's hash is Python code); each entry holds
    its key, so that id names no other object while this lives."""
    by_key: dict[Any, dict[str, frozenset[str]]] = {}
    by_object: dict[int, tuple[Any, dict[str, frozenset[str]]]] = {}

    def described(key: Any) -> dict[str, frozenset[str]]:
        seen = by_object.get(id(key))
        if seen is None:
            tags = by_key.get(key)
            if tags is None:
                tags = by_key[key] = {c: frozenset(v) for c, v in (tags_of(key) or {}).items()}
            seen = by_object[id(key)] = (key, tags)
        return seen[1]

    return described


def read_split_annotations(path: Path) -> dict[Any, dict[str, frozenset[str]]]:
    """A split's ``annotations.csv`` (exchange CSV) as glyph key -> concept -> values. Rows
    are read as written (the split's schema already vetted them when it was generated)."""
    import csv
    import io
    from collections import defaultdict

    from studio.core.keys import GlyphKey

    try:
        text = path.read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise StudioError(f"cannot be read: {e}", path) from None
    per: dict[Any, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
        if header is None or [h.strip().lower() for h in header] != [
            "concept", "value", "codepoint", "font"
        ]:  # fmt: skip
            raise StudioError(
                "is not an annotation CSV (header concept,value,codepoint,font)", path
            )
        for record in reader:
            if len(record) != 4:
                continue
            concept, value, cp, font = (f.strip() for f in record)
            try:
                key = GlyphKey.from_csv(cp, font)
            except ValueError as e:
                raise StudioError(f"line {reader.line_num}: {e}", path) from None
            per[key][concept].add(value)
    except csv.Error as e:  # a field over the csv module's limit, an open quote at the end
        raise StudioError(f"line {reader.line_num}: not CSV: {e}", path) from None
    return {k: {c: frozenset(v) for c, v in cs.items()} for k, cs in per.items()}


def _puzzle_shapes(puzzles: Sequence[Puzzle]) -> list[tuple[str, tuple[int, ...], int, str]]:
    """Each puzzle's id, rows, answer slots and layout — answer slots as the npz holds them: a
    set of fewer answers is padded with blank frames to four (min_answers), and
    ``answer_counts`` says how many are the puzzle's own."""
    from studio.families.glyph_pmp.export import npz_answer_slots

    return [
        (
            p.id,
            rows_of([len(r) for r in p.context], p.layout),
            npz_answer_slots(p.layout, len(p.answers)),
            p.layout,
        )
        for p in puzzles
    ]


def _from_puzzles(
    puzzles: Sequence[Puzzle],
    frames_u8: np.ndarray,
    ids: np.ndarray,
    path: Path,
    source: dict[str, Any],
    answer_attributes: list[list[dict[str, frozenset[str]]]] | None = None,
    context_attributes: list[list[dict[str, frozenset[str]]]] | None = None,
) -> PuzzleArrays:
    """Arrays from puzzle records, the distinct frames (``uint8`` ink × 255) and each
    puzzle's rows among them (context then answers, (N, C + A))."""
    rows, n_answers, layout = _check_uniform(_puzzle_shapes(puzzles), path)
    n_ctx = sum(rows)
    ids = np.asarray(ids, dtype=np.int64).reshape(len(puzzles), n_ctx + n_answers)
    context_ids, answer_ids = ids[:, :n_ctx], ids[:, n_ctx:]
    families = sorted({p.family for p in puzzles})
    return PuzzleArrays(
        ids=[p.id for p in puzzles],
        parts=_check_parts([p.split for p in puzzles], path),
        keys=np.array([p.key for p in puzzles], dtype=np.int64),
        rows=rows,
        labels=_labels(
            [p.rule for p in puzzles],
            [p.concept for p in puzzles],
            [p.layout for p in puzzles],
            [p.family for p in puzzles],
        ),
        questions=[tuple(p.questions) for p in puzzles],
        layout=layout,
        family=families[0] if len(families) == 1 else "mixed",
        source=source,
        answer_attributes=answer_attributes,
        context_attributes=context_attributes,
        answer_counts=(
            np.array([len(p.answers) for p in puzzles], dtype=np.int64)
            if any(len(p.answers) < n_answers for p in puzzles)
            else None
        ),
        frames_u8=frames_u8,
        context_ids=np.ascontiguousarray(context_ids),
        answer_ids=np.ascontiguousarray(answer_ids),
    )


# ---- glyph split folder -----------------------------------------------------------------------
#: Puzzles per reading task; a split of fewer than two tasks' worth is read in this process.
READ_CHUNK = 1000
#: What a reading worker needs, imported once by the fork server rather than by each worker.
_READER_MODULES = ("studio.baselines.data", "studio.families.glyph_pmp.export")

NpzSpec = tuple[str, int, int]


ChunkError = tuple[str, str | None]  # a StudioError's problem and path


class _GlyphChunk(NamedTuple):
    """A reading task: some numbered lines of a fold's ``puzzles.jsonl`` (``records``) and
    the folder of their archives (``npz``)."""

    records: str
    lines: list[tuple[int, str]]
    npz: str


class _ChunkRead(NamedTuple):
    """What a reading task gives back: its puzzles, their distinct frames and each puzzle's
    rows among them. A damaged record ends the task with ``record_error`` (and no puzzles);
    a damaged archive ends the reading of archives with ``archive_error`` (the rows of the
    puzzles before it, every puzzle of the task). Errors come back as a StudioError's
    problem and path, never raised: an exception from a pool worker may not unpickle."""

    puzzles: list[Puzzle]
    frames: np.ndarray
    rows: np.ndarray
    record_error: ChunkError | None
    archive_error: ChunkError | None


def _read_npz_chunk(
    specs: Sequence[NpzSpec],
) -> tuple[np.ndarray, np.ndarray, ChunkError | None]:
    """Read puzzles' archives (checked against their records: numbers of the right shape,
    all finite, a target that agrees with the key) into their distinct frames and each
    puzzle's rows among them. A damaged archive ends the chunk: its error comes back as its
    problem and path (with the rows read before it), so a pool worker returns it rather
    than raising an exception that may not unpickle."""
    from studio.core.splitdir import read_frames_npz

    bank = FrameBank()
    rows: list[list[int]] = []
    for path, want, key in specs:
        try:
            images = read_frames_npz(path, want, FRAME, key=key)["images"]
        except StudioError as e:
            return bank.array(), np.array(rows, np.int64), (e.problem, e.path)
        ink = (np.asarray(images) > 0).astype(np.uint8) * 255
        rows.append([bank.add(frame) for frame in ink])
    return bank.array(), np.array(rows, np.int64), None


def _read_glyph_chunk(task: _GlyphChunk, archives: bool = True) -> _ChunkRead:
    """Parse a task's records (as :func:`studio.families.glyph_pmp.export.read_fold` does) and,
    when ``archives``, read their archives (:func:`_read_npz_chunk`). Run by a pool worker, so
    that the parent only merges: parsing 10,000 records took 1.7 s of the parent's time on the
    16-core GPU server, with a thread importing torch beside it. Equal questions come back as
    one object (a split asks a few hundred distinct ones 70,000 times; they are frozen), which
    makes the result a quarter of the bytes to send and unpickle."""
    from studio.core.splitdir import parse_record
    from studio.families.glyph_pmp.export import npz_frame_count

    records = Path(task.records)
    puzzles: list[Puzzle] = []
    asked: dict[Question, Question] = {}
    for n, line in task.lines:
        try:
            p = parse_record(n, line, records, Puzzle.from_json)
        except StudioError as e:
            return _ChunkRead([], _NO_FRAMES, _NO_ROWS, (e.problem, e.path), None)
        if p.questions:
            p = replace(p, questions=tuple(asked.setdefault(q, q) for q in p.questions))
        puzzles.append(p)
    if not archives:
        return _ChunkRead(puzzles, _NO_FRAMES, _NO_ROWS, None, None)
    npz = Path(task.npz)
    # (file, frames wanted: a set of fewer than four answers has blank slots after, key)
    specs = [(str(npz / f"{p.id}.npz"), npz_frame_count(p), p.key) for p in puzzles]
    frames, rows, error = _read_npz_chunk(specs)
    return _ChunkRead(puzzles, frames, rows, None, error)


_NO_FRAMES = np.zeros((0, FRAME, FRAME), np.uint8)
_NO_ROWS = np.zeros((0, 0), np.int64)


def start_readers() -> None:
    """Start the fork server the split readers' pool forks from (:func:`_read_glyph_fold`),
    with the readers imported, where a load would use a pool: a warm spare does this before
    its job comes (:func:`studio.baselines.job.warm`), so the job's load only forks."""
    from studio.core.procs import pool_context, usable_cores

    if usable_cores() < 2:
        return
    ctx = pool_context(_READER_MODULES)
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def _read_glyph_fold(
    folder: Path, progress: Progress | None
) -> tuple[list[Puzzle], np.ndarray, np.ndarray]:
    """A fold's puzzles, their distinct frames and each puzzle's rows among them (context
    then answer slots).

    A large split is read in chunks of lines on a process pool, when the machine has the
    cores: each worker parses its records and reads their archives (0.4 ms each, mostly
    Python), and this process only merges; nothing is parsed before the pool starts, and its
    fork server imports the readers once for all the workers. The errors are those of
    reading one by one, in the same order: the first damaged record; then a count that
    disagrees with ``split.json``; then mixed puzzle shapes; then the first damaged archive
    in puzzle order."""
    from studio.core.procs import usable_cores
    from studio.families.glyph_pmp.export import NPZ, check_fold_count, fold_record_lines

    data, records, lines = fold_record_lines(folder)
    n = len(lines)
    cores = usable_cores()
    chunks = -(-n // READ_CHUNK)
    if chunks < 2 or cores < 2:
        size = READ_CHUNK
    else:  # at least one chunk per core, evenly sized
        chunks = max(chunks, cores)
        size = -(-n // chunks)
    tasks = [
        _GlyphChunk(str(records), lines[k : k + size], str(folder / NPZ)) for k in range(0, n, size)
    ]
    puzzles: list[Puzzle] = []
    bank = FrameBank()
    ids: list[np.ndarray] = []
    held: ChunkError | None = None  # the first damaged archive, said after the records

    def merge(result: _ChunkRead) -> None:
        nonlocal held
        if result.record_error is not None:  # every record before it was read without one
            raise StudioError(*result.record_error)
        puzzles.extend(result.puzzles)
        if held is None:
            if len(result.rows):
                remap = np.array([bank.add(f) for f in result.frames], np.int64)
                ids.append(remap[result.rows])
            held = result.archive_error
        if progress is not None:
            progress(len(puzzles), n)

    workers = min(len(tasks), cores)
    if progress is not None:
        progress(0, n)  # the caller may stop here, before any process starts
    if workers < 2:
        for task in tasks:  # no archive read once one is damaged; the records still are
            merge(_read_glyph_chunk(task, archives=held is None))
    else:
        from concurrent.futures import ProcessPoolExecutor

        from studio.core.procs import pool_context, pool_worker_start

        with ProcessPoolExecutor(
            max_workers=workers,
            mp_context=pool_context(_READER_MODULES),
            initializer=pool_worker_start,
        ) as pool:
            futures = [pool.submit(_read_glyph_chunk, task) for task in tasks]
            try:
                for future in futures:
                    merge(future.result())
            finally:  # an error: the chunks not started are not read
                for future in futures:
                    future.cancel()
    check_fold_count(data, len(puzzles), records)
    _check_uniform(_puzzle_shapes(puzzles), folder)
    if held is not None:
        raise StudioError(*held)
    if not ids:
        return puzzles, bank.array(), np.zeros((0, 0), np.int64)
    return puzzles, bank.array(), np.concatenate(ids)


def load_glyph_split(folder: str | Path, progress: Progress | None = None) -> PuzzleArrays:
    """A glyph split folder (one fold). A split with several folds names its fold folders;
    pass one of them (``SPLIT/fold-0``)."""
    from studio.families.glyph_pmp.export import ANNOTATIONS_CSV, fold_dirs

    folder = Path(folder)
    dirs = fold_dirs(folder)
    if dirs != [folder]:
        names = ", ".join(d.name for d in dirs)
        raise StudioError(
            f"holds {len(dirs)} folds ({names}); pass one fold folder, e.g. {dirs[0]}", folder
        )
    puzzles, frames_u8, ids = _read_glyph_fold(folder, progress)
    source = {"kind": "split-dir", "path": str(folder.resolve()), "set_id": None}
    attributes = context = None
    if (folder / ANNOTATIONS_CSV).is_file():
        tags = read_split_annotations(folder / ANNOTATIONS_CSV)
        attributes = glyph_answer_attributes(puzzles, tags.get)
        context = glyph_context_attributes(puzzles, tags.get)
    return _from_puzzles(puzzles, frames_u8, ids, folder, source, attributes, context)


# ---- stimulus split folder ---------------------------------------------------------------------
def stimulus_ink(path: Path, size: int = FRAME) -> np.ndarray:
    """A PNG as ``uint8`` ink × 255 at ``size``: grayscale, box-filter resize, 255 - gray."""
    from PIL import Image, UnidentifiedImageError

    from studio.stimuli.split import PICTURE_ERRORS, open_picture

    try:
        with open_picture(path) as im:
            gray = im.convert("L")
            if gray.size != (size, size):
                gray = gray.resize((size, size), Image.Resampling.BOX)
            return 255 - np.asarray(gray, dtype=np.uint8)
    except FileNotFoundError:
        raise StudioError("missing: the item's image is not there", path) from None
    except (UnidentifiedImageError, *PICTURE_ERRORS) as e:
        raise StudioError(f"cannot be read as an image: {e}", path) from None


def cut_pieces(path: Path, size: int = FRAME, most: int = MAX_PIECES) -> np.ndarray:
    """The pieces of a shape-composition candidate: each connected ink region of the full-size
    image, centred on a blank canvas of the image's size (so a scaled piece stays larger), then
    resized like the frames. The ``most`` largest regions are kept, in reading order."""
    from PIL import Image
    from scipy import ndimage

    from studio.stimuli.split import PICTURE_ERRORS, open_picture

    try:
        with open_picture(path) as im:
            gray = np.asarray(im.convert("L"), dtype=np.uint8)
    except PICTURE_ERRORS as e:
        raise StudioError(f"cannot be read as an image: {e}", path) from None
    ink = 255 - gray
    labels, count = ndimage.label(ink > PIECE_INK * 255, structure=np.ones((3, 3), bool))
    if count == 0:
        return np.zeros((0, size, size), np.uint8)
    sizes = ndimage.sum_labels(np.ones_like(labels), labels, index=np.arange(1, count + 1))
    keep = sorted(np.argsort(-sizes, kind="stable")[:most] + 1)
    boxes = ndimage.find_objects(labels)
    h, w = ink.shape
    out = []
    for lab in keep:
        box = boxes[lab - 1]
        piece = np.where(labels[box] == lab, ink[box], 0).astype(np.uint8)
        canvas = np.zeros((h, w), np.uint8)
        ph, pw = piece.shape
        top, left = (h - ph) // 2, (w - pw) // 2
        canvas[top : top + ph, left : left + pw] = piece[: h - top, : w - left]
        small = Image.fromarray(canvas).resize((size, size), Image.Resampling.BOX)
        out.append(np.asarray(small, dtype=np.uint8))
    return np.stack(out)


def _stimulus_layout(fam: Family, record: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """Where a stimulus family's context, answers, key and labels are in its record (the
    family's ``baseline_layout``)."""
    if fam.baseline_layout is None:
        raise StudioError(f"family {fam.id!r}: the baselines do not know how to read it", path)
    try:
        return dict(fam.load("baseline_layout")(record))
    except StudioError as e:
        raise StudioError(str(e), path) from None


def _design_of(records: Sequence[Mapping[str, Any]]) -> str:
    """The records' answer-set design (``published`` for records older than the option)."""
    designs = {str(r.get("design", "published")) for r in records}
    return designs.pop() if len(designs) == 1 else "mixed"


def stimulus_answer_attributes(
    family: str, records: Sequence[Mapping[str, Any]], n_answers: int
) -> list[list[dict[str, frozenset[str]]]] | None:
    """Each item's answers described by its symbolic record
    (:func:`studio.stimuli.symbolic.answer_attributes`), or None when that module is not
    installed or does not know the family (the tag probe is then skipped, with why)."""
    try:
        from studio.stimuli.symbolic import answer_attributes
    except ImportError:
        return None
    out = []
    for r in records:
        try:
            answers = answer_attributes(family, r)
        except (KeyError, ValueError, NotImplementedError, StudioError):
            return None
        answers = [{str(k): frozenset(v) for k, v in a.items()} for a in answers]
        if len(answers) != n_answers:
            return None
        out.append(answers)
    return out


def load_stimulus_split(folder: str | Path, progress: Progress | None = None) -> PuzzleArrays:
    """A stimulus split folder (KiVA, polycube rotation, shape composition, cube nets)."""
    from studio.stimuli.split import (
        ITEMS,
        RECORD_ERRORS,
        SPLIT_JSON,
        check_pictures,
        read_stimulus_split,
    )

    folder = Path(folder)
    from studio.plugins import family as family_of

    meta, records = read_stimulus_split(folder)
    family = str(meta.get("family", ""))
    fam = family_of(family)
    if not records:
        raise StudioError("holds no items", folder / ITEMS)
    specs = []
    for r in records:
        try:
            specs.append((r, _stimulus_layout(fam, r, folder / SPLIT_JSON)))
        except RECORD_ERRORS as e:
            raise StudioError(
                f"item {r.get('id', '?')}: a damaged {family} record ({type(e).__name__}: {e})",
                folder / ITEMS,
            ) from None
    shapes = [(str(r["id"]), s["rows"], len(s["answers"]), s["layout"]) for r, s in specs]
    rows, n_answers, layout = _check_uniform(shapes, folder / ITEMS)
    n = len(specs)
    context = np.zeros((n, sum(rows), FRAME, FRAME), np.uint8)
    answers = np.zeros((n, n_answers, FRAME, FRAME), np.uint8)
    cut = fam.cut_pieces
    pieces = np.zeros((n, n_answers, MAX_PIECES, FRAME, FRAME), np.uint8) if cut else None
    counts = np.zeros((n, n_answers), np.int64) if cut else None
    for i, (r, s) in enumerate(specs):
        check_pictures(folder, r)  # every picture the record names, as vet checks them
        base = folder / "images" / str(r["id"])
        for j, name in enumerate(s["context"]):
            context[i, j] = stimulus_ink(base / f"{name}.png")
        for j, name in enumerate(s["answers"]):
            answers[i, j] = stimulus_ink(base / f"{name}.png")
            if cut:
                ps = cut_pieces(base / f"{name}.png")
                pieces[i, j, : len(ps)] = ps  # type: ignore[index]
                counts[i, j] = len(ps)  # type: ignore[index]
        if not 0 <= s["key"] < n_answers:
            raise StudioError(f"item {r['id']}: key {s['key']} is not an answer", folder / ITEMS)
        if progress is not None and (i % 100 == 0 or i == n - 1):
            progress(i + 1, n)
    parts = [str(r.get("part", "")) for r, _ in specs]
    try:
        attributes = stimulus_answer_attributes(family, [r for r, _ in specs], n_answers)
    except RECORD_ERRORS as e:
        raise StudioError(
            f"a damaged {family} record ({type(e).__name__}: {e})", folder / ITEMS
        ) from None
    return PuzzleArrays(
        ids=[str(r["id"]) for r, _ in specs],
        parts=_check_parts(parts, folder / ITEMS),
        context_u8=context,
        answers_u8=answers,
        keys=np.array([s["key"] for _, s in specs], dtype=np.int64),
        rows=rows,
        labels=_labels(
            [s["rule"] for _, s in specs],
            [s["concept"] for _, s in specs],
            [s["layout"] for _, s in specs],
            [family] * n,
        ),
        questions=[() for _ in specs],
        layout=layout,
        family=family,
        source={
            "kind": "split-dir",
            "path": str(folder.resolve()),
            "set_id": None,
            "design": _design_of([r for r, _ in specs]),
        },
        pieces_u8=pieces,
        piece_counts=counts,
        answer_attributes=attributes,
    )


# ---- project puzzle set ------------------------------------------------------------------------
def load_project_set(
    project_path: str | Path, set_id: int, progress: Progress | None = None
) -> PuzzleArrays:
    """A puzzle set stored in a project: its current records (curation edits included), each
    glyph rendered by the studio and made a UA frame, as an export would write it (a glyph
    without an image is a blank frame)."""
    from studio.app import Studio
    from studio.core.keys import GlyphKey
    from studio.families.glyph_pmp.export import puzzle_frames, ua_frame
    from studio.splits import annotation_index, glyph_images
    from studio.stimuli.items import is_stimulus_record
    from studio.store.dbfile import is_database_url, safe_location
    from studio.store.project import Project

    url = is_database_url(project_path)
    path = Path(safe_location(project_path)) if url else Path(project_path)
    project = Project.open(str(project_path) if url else path)
    studio = Studio(project)
    try:
        if project.puzzle_set(int(set_id)) is None:
            known = ", ".join(str(s.id) for s in project.puzzle_sets()) or "none"
            raise StudioError(f"has no puzzle set {set_id} (sets: {known})", path)
        stored = project.stored_puzzles(int(set_id))
        if stored and is_stimulus_record(stored[0].record):
            return _load_project_items(project_path, int(set_id), stored, path, progress)
        puzzles = []
        for s in stored:
            try:
                puzzles.append(Puzzle.from_json(s.record))
            except (ValueError, TypeError) as e:
                raise StudioError(f"set {set_id}, puzzle {s.puzzle_id}: {e}", path) from None
        keys: list[GlyphKey] = sorted({k for p in puzzles for k in p.all_keys()})
        index = annotation_index(project)
        attributes = glyph_answer_attributes(puzzles, index.by_glyph.get)
        context = glyph_context_attributes(puzzles, index.by_glyph.get)
        images = glyph_images(studio, keys)
        frame: dict[GlyphKey, np.ndarray] = {k: ua_frame(images.get(k)) for k in keys}
        _check_uniform(_puzzle_shapes(puzzles), path)
        bank = FrameBank()
        rows = []
        for k, p in enumerate(puzzles):
            ink = (np.asarray(puzzle_frames(p, frame.__getitem__)) > 0).astype(np.uint8) * 255
            rows.append([bank.add(f) for f in ink])
            if progress is not None and (k % 500 == 0 or k == len(puzzles) - 1):
                progress(k + 1, len(puzzles))
    finally:
        studio.close()
    where = safe_location(project_path) if url else str(path.resolve())
    source = {"kind": "project-set", "path": where, "set_id": int(set_id)}
    ids = np.array(rows, np.int64) if rows else np.zeros((0, 0), np.int64)
    return _from_puzzles(puzzles, bank.array(), ids, path, source, attributes, context)


def _load_project_items(
    project_path: str | Path,
    set_id: int,
    stored: Sequence[Any],
    path: Path,
    progress: Progress | None,
) -> PuzzleArrays:
    """A project's stimulus set (issue 27): its items drawn again from their stored records
    into a temporary split folder, read as any stimulus split is."""
    import dataclasses
    import tempfile

    from studio.stimuli.items import StimulusPuzzle
    from studio.stimuli.split import write_drawn_split
    from studio.store.dbfile import is_database_url, safe_location

    items = [StimulusPuzzle.from_record(s.record) for s in stored]  # checked: names, family
    for s, item in zip(stored, items, strict=True):
        if item.id != s.puzzle_id:
            raise StudioError(
                f"set {set_id}, puzzle {s.puzzle_id}: its record is {item.id}'s", path
            )
    families = {p.family for p in items}
    if len(families) != 1:
        raise StudioError(f"set {set_id} mixes families ({', '.join(sorted(families))})", path)
    with tempfile.TemporaryDirectory(prefix="analogy-studio-set-") as tmp:
        folder = Path(tmp) / "split"
        write_drawn_split(folder, families.pop(), [dict(p.record) for p in items], progress)
        data = load_stimulus_split(folder)
    where = safe_location(project_path) if is_database_url(project_path) else str(path.resolve())
    source = {**data.source, "kind": "project-set", "path": where, "set_id": set_id}
    return dataclasses.replace(data, source=source)


# ---- dispatch ------------------------------------------------------------------------------------
def load_source(
    source: str | Path | Mapping[str, Any], progress: Progress | None = None
) -> PuzzleArrays:
    """Arrays from a folder path, or from a job's source dict: ``{"kind": "split-dir",
    "path": ...}`` or ``{"kind": "project-set", "project": ..., "set_id": N}``."""
    from studio.stimuli.split import is_stimulus_split

    if isinstance(source, Mapping):
        kind = source.get("kind")
        if kind == "project-set":
            if "project" not in source or "set_id" not in source:
                raise StudioError("a project-set source needs 'project' and 'set_id'")
            return load_project_set(source["project"], int(source["set_id"]), progress)
        if kind == "split-dir":
            if "path" not in source:
                raise StudioError("a split-dir source needs 'path'")
            return load_source(source["path"], progress)
        raise StudioError(f"unknown source kind {kind!r}: use split-dir or project-set")
    folder = Path(source)
    if not folder.exists():
        raise StudioError("not found", folder)
    if not folder.is_dir():
        raise StudioError("is not a split folder", folder)
    if is_stimulus_split(folder):
        return load_stimulus_split(folder, progress)
    return load_glyph_split(folder, progress)


__all__ = [
    "FRAME",
    "GROUP_KEYS",
    "MAX_PIECES",
    "PARTS",
    "PuzzleArrays",
    "cut_pieces",
    "glyph_answer_attributes",
    "glyph_context_attributes",
    "load_glyph_split",
    "load_project_set",
    "load_source",
    "load_stimulus_split",
    "read_split_annotations",
    "rows_of",
    "stimulus_answer_attributes",
    "stimulus_ink",
]
