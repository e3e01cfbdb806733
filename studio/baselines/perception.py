"""Perception questions answered by a probe on a model's encoder (numpy), for MARVEL's group
accuracy.

A baseline answers the puzzle, not the questions; to score perception and reasoning together
(MARVEL §4–6) each model's own frame encoder is probed:

- **coarse** (counting) questions are answered by counting the non-blank panels (a panel is
  blank when no pixel's ink exceeds 0.1): context panels, answer panels, or all, as the
  question asks. Any model that sees the frames can count them, so these are nearly always
  right;
- **fine** questions ("which does answer 2 show for <concept>: a or b?") are answered by the
  nearest train-part exemplar: every fine question of a train-part puzzle gives an exemplar
  (the encoding of its panel, labelled with the concept and the true value). For a question,
  each option's distance is the cosine distance from the panel's encoding to the nearest
  exemplar of that concept and value; the nearer option is the answer. An option without any
  exemplar is never chosen over one with exemplars; with none for either, the first option.

A puzzle is perceived when every question about it is answered right.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from studio.baselines.data import PuzzleArrays
from studio.core.puzzle import Question

BLANK_INK = 0.1

Encode = Callable[[np.ndarray], np.ndarray]


@dataclass
class PerceptionResult:
    """Per puzzle probed: all questions right, questions right, questions asked."""

    all_right: np.ndarray
    right: np.ndarray
    asked: np.ndarray

    def to_json(self) -> dict[str, list]:
        """Plain lists (bools, ints): ``tolist`` of the bool and int arrays, at C speed."""
        return {
            "all_right": np.asarray(self.all_right, dtype=bool).tolist(),
            "right": np.asarray(self.right, dtype=np.int64).tolist(),
            "asked": np.asarray(self.asked, dtype=np.int64).tolist(),
        }


def has_questions(data: PuzzleArrays, idx: Sequence[int]) -> bool:
    return any(data.questions[i] for i in idx)


def _non_blank(frames_u8: np.ndarray) -> int:
    if frames_u8.size == 0:
        return 0
    return int((frames_u8.reshape(len(frames_u8), -1).max(axis=1) > BLANK_INK * 255).sum())


def _counting_answer(text: str, n_context: int, n_answers: int) -> str:
    """A counting question's answer from its wording: the context's non-blank panels when it
    says "context", else the answers' when it says "answer", else both."""
    text = text.lower()
    if "context" in text:
        return str(n_context)
    if "answer" in text:
        return str(n_answers)
    return str(n_context + n_answers)


def count_answer(data: PuzzleArrays, i: int, q: Question) -> str:
    """A counting question's answer from the frames themselves."""
    return _counting_answer(q.text, _non_blank(data.context_u8[i]), _non_blank(data.answers_u8[i]))


def _non_blank_counts(data: PuzzleArrays, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per puzzle of ``idx``, its non-blank context and answer panels (len(idx),) each: one
    flag per bank row these puzzles name, summed over each puzzle's rows."""
    assert data.frames_u8 is not None
    assert data.context_ids is not None and data.answer_ids is not None
    ctx, ans = data.context_ids[idx], data.answer_ids[idx]
    rows = np.unique(np.concatenate([ctx.ravel(), ans.ravel()]))
    flag = np.zeros(len(data.frames_u8), dtype=bool)
    if len(rows):
        ink = data.frames_u8[rows].reshape(len(rows), -1).max(axis=1)
        flag[rows] = ink > BLANK_INK * 255
    return flag[ctx].sum(axis=1), flag[ans].sum(axis=1)


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 1e-12, norm, 1.0)


#: bank rows compared with every exemplar at once (bounds the similarity block)
BLOCK = 1024

Label = tuple[str, str]  # (concept, value)


def _nearest_exemplars(
    frames_u8: np.ndarray,
    encode: Encode,
    asked: np.ndarray,
    exemplars: Mapping[Label, Sequence[int] | np.ndarray],
) -> dict[Label, np.ndarray]:
    """Per label, the cosine from each ``asked`` row of the bank ``frames_u8`` to its
    nearest exemplar of that label (an array over ``asked``). Every row either names is
    encoded once, in one call; the rows are compared with the exemplars :data:`BLOCK` at a
    time."""
    ex_rows = np.unique(np.concatenate([np.asarray(r, np.int64) for r in exemplars.values()]))
    rows = np.union1d(asked, ex_rows)
    enc = _unit(np.asarray(encode(frames_u8[rows]), dtype=np.float64))
    at = np.full(len(frames_u8), -1, np.int64)
    at[rows] = np.arange(len(rows))
    ex = enc[at[ex_rows]]
    ex_at = np.full(len(frames_u8), -1, np.int64)
    ex_at[ex_rows] = np.arange(len(ex_rows))
    columns = {label: ex_at[np.asarray(r, np.int64)] for label, r in exemplars.items()}
    best = {label: np.empty(len(asked)) for label in exemplars}
    for start in range(0, len(asked), BLOCK):
        sims = enc[at[asked[start : start + BLOCK]]] @ ex.T
        for label, cols in columns.items():
            best[label][start : start + BLOCK] = sims[:, cols].max(axis=1)
    return best


@dataclass(frozen=True)
class QuestionPlan:
    """What answering the perception questions of ``eval_idx`` needs that no encoder changes:
    built once per (data, train_idx, eval_idx) by :func:`plan_questions` and answered with
    every model's encoder by :meth:`answer` (a job probes about twenty encoders on the same
    questions; reading each question's panel name and options again for each cost more than
    the encoders themselves).

    ``m`` fine questions whose panel was found, each with ``O`` option slots (the most any
    question has; the slots past a question's own options are padding)."""

    #: the bank the rows name (``data.frames_u8``)
    frames_u8: np.ndarray
    #: per puzzle probed (len(eval_idx),): questions asked, and counting questions right
    asked: np.ndarray
    counted_right: np.ndarray
    #: the exemplar labels (concept, value), and per label its bank rows (each once)
    labels: tuple[Label, ...]
    exemplar_rows: tuple[np.ndarray, ...]
    #: (m,) each fine question's puzzle (a place in eval_idx) and the bank row it names
    fine_puzzle: np.ndarray
    fine_row: np.ndarray
    #: (m, O) each option's label (an index into ``labels``), -1 where no exemplar shows it
    #: (or past the question's options); and whether the option is the question's answer
    option_label: np.ndarray
    option_is_answer: np.ndarray

    def answer(self, encode: Encode) -> PerceptionResult:
        """The questions answered with ``encode`` (module docstring): each fine question
        takes the option whose label's nearest exemplar is nearest its panel (the first such
        option on a tie; an option no exemplar shows is never taken, and with none shown the
        first option is). ``encode`` sees each row the questions and exemplars name once, in
        one call, and is not called when there are no fine questions or no exemplars."""
        right = self.counted_right.copy()
        m = len(self.fine_row)
        if m:
            distance = np.full(self.option_label.shape, np.inf)
            if self.labels:
                rows = np.unique(self.fine_row)
                near = _nearest_exemplars(
                    self.frames_u8,
                    encode,
                    rows,
                    dict(zip(self.labels, self.exemplar_rows, strict=True)),
                )
                cosine = np.stack([near[label] for label in self.labels])  # (labels, rows)
                place = np.searchsorted(rows, self.fine_row)
                shown = self.option_label >= 0
                q, slot = np.nonzero(shown)
                distance[q, slot] = 1.0 - cosine[self.option_label[q, slot], place[q]]
                # a distance that is not a number is never nearer (as ``d < best`` is false)
                distance[np.isnan(distance)] = np.inf
            # argmin takes the first of equal distances; all infinite (none shown): the first
            choice = distance.argmin(axis=1)
            hit = self.option_is_answer[np.arange(m), choice]
            right += np.bincount(self.fine_puzzle[hit], minlength=len(right))
        return PerceptionResult(all_right=(right == self.asked), right=right, asked=self.asked)


def _bank_rows(
    data: PuzzleArrays, puzzles: Sequence[int], panels: Sequence[str | None]
) -> np.ndarray:
    """Per question (its puzzle and panel name), the row in ``data.frames_u8`` its panel
    names (:meth:`PuzzleArrays.panel_id`), -1 where it names none: each distinct name parsed
    once (:meth:`PuzzleArrays.panel_slot`), the rows gathered in one step."""
    assert data.context_ids is not None and data.answer_ids is not None
    width = data.context_ids.shape[1]
    ids = np.concatenate([data.context_ids, data.answer_ids], axis=1)
    column_of: dict[str | None, int] = {None: -1}
    for panel in set(panels) - {None}:
        assert panel is not None
        slot = data.panel_slot(panel)
        column_of[panel] = -1 if slot is None else slot[1] + (width if slot[0] == "answer" else 0)
    columns = np.fromiter((column_of[p] for p in panels), np.int64, len(panels))
    rows = np.full(len(panels), -1, np.int64)
    found = columns >= 0
    rows[found] = ids[np.asarray(puzzles, np.int64)[found], columns[found]]
    return rows


def plan_questions(
    data: PuzzleArrays, train_idx: Sequence[int], eval_idx: Sequence[int]
) -> QuestionPlan:
    """The :class:`QuestionPlan` of ``eval_idx``'s questions, exemplars from ``train_idx``'s
    fine questions; the counting questions are answered here, from the frames."""
    assert data.frames_u8 is not None
    concepts = [str(c) for c in data.labels["concept"]]
    puzzles: list[int] = []
    panels: list[str | None] = []
    found_labels: list[Label] = []
    for i in train_idx:
        for q in data.questions[i]:
            if q.kind == "fine":
                puzzles.append(i)
                panels.append(q.panel)
                found_labels.append((q.concept or concepts[i], q.answer))
    exemplars: dict[Label, dict[int, None]] = {}  # label -> its bank rows, each once
    for label, row in zip(found_labels, _bank_rows(data, puzzles, panels).tolist(), strict=True):
        if row >= 0:
            exemplars.setdefault(label, {})[row] = None
    labels = tuple(exemplars)
    label_at = {label: j for j, label in enumerate(labels)}

    n = len(eval_idx)
    asked = np.zeros(n, np.int64)
    counted_right = np.zeros(n, np.int64)
    coarse: list[tuple[int, Question]] = []
    places: list[int] = []
    fine: list[tuple[str, Question]] = []  # (concept, question)
    puzzles, panels = [], []
    for k, i in enumerate(eval_idx):
        for q in data.questions[i]:
            if q.kind == "coarse":
                coarse.append((k, q))
            elif q.kind == "fine":
                places.append(k)
                puzzles.append(i)
                panels.append(q.panel)
                fine.append((q.concept or concepts[i], q))
    # a fine question whose panel cannot be found counts as asked and wrong
    asked += np.bincount(np.asarray(places, np.int64), minlength=n)
    if coarse:
        counts = _non_blank_counts(data, np.asarray(eval_idx, dtype=np.int64))
        n_ctx, n_ans = counts[0].tolist(), counts[1].tolist()
        for k, q in coarse:
            asked[k] += 1
            counted_right[k] += _counting_answer(q.text, n_ctx[k], n_ans[k]) == q.answer
    rows = _bank_rows(data, puzzles, panels)
    kept = np.flatnonzero(rows >= 0)
    width = max((len(fine[j][1].options) for j in kept.tolist()), default=1)
    option_label = np.full((len(kept), width), -1, np.int64)
    option_is_answer = np.zeros((len(kept), width), bool)
    for m, j in enumerate(kept.tolist()):
        concept, q = fine[j]
        option_label[m, : len(q.options)] = [label_at.get((concept, o), -1) for o in q.options]
        option_is_answer[m, : len(q.options)] = [o == q.answer for o in q.options]
    return QuestionPlan(
        frames_u8=data.frames_u8,
        asked=asked,
        counted_right=counted_right,
        labels=labels,
        exemplar_rows=tuple(np.fromiter(exemplars[label], np.int64) for label in labels),
        fine_puzzle=np.asarray(places, np.int64)[kept],
        fine_row=rows[kept],
        option_label=option_label,
        option_is_answer=option_is_answer,
    )


def probe(
    data: PuzzleArrays,
    encode: Encode,
    train_idx: Sequence[int],
    eval_idx: Sequence[int],
) -> PerceptionResult:
    """Answer the perception questions of ``eval_idx`` with ``encode`` (see the module
    docstring); exemplars come from the fine questions of ``train_idx``.

    Questions name rows of ``data.frames_u8`` (:meth:`PuzzleArrays.panel_id`), and a glyph
    split holds few distinct frames (the default 10,000-puzzle UA split: 70,000 questions
    over 263 frames), so ``encode`` sees each named row once, in one call; a row's cosine to
    the nearest exemplar of each (concept, value) is computed once, and a question reads its
    options' from there. The answers are those of encoding every panel asked about.

    A caller that probes several encoders on the same questions (a job: one per model and
    seed) makes the :func:`plan_questions` once and calls its :meth:`QuestionPlan.answer`."""
    return plan_questions(data, train_idx, eval_idx).answer(encode)


__all__ = [
    "PerceptionResult",
    "QuestionPlan",
    "count_answer",
    "has_questions",
    "plan_questions",
    "probe",
]
