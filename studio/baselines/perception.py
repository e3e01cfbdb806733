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

from collections.abc import Callable, Sequence
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
        return {
            "all_right": [bool(x) for x in self.all_right],
            "right": [int(x) for x in self.right],
            "asked": [int(x) for x in self.asked],
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
    data: PuzzleArrays, encode: Encode, asked: np.ndarray, exemplars: dict[Label, list[int]]
) -> dict[Label, np.ndarray]:
    """Per label, the cosine from each ``asked`` bank row to its nearest exemplar of that
    label (an array over ``asked``). Every row either names is encoded once, in one call;
    the rows are compared with the exemplars :data:`BLOCK` at a time."""
    assert data.frames_u8 is not None
    ex_rows = np.unique(np.concatenate([np.asarray(r, np.int64) for r in exemplars.values()]))
    rows = np.union1d(asked, ex_rows)
    enc = _unit(np.asarray(encode(data.frames_u8[rows]), dtype=np.float64))
    at = np.full(len(data.frames_u8), -1, np.int64)
    at[rows] = np.arange(len(rows))
    ex = enc[at[ex_rows]]
    ex_at = np.full(len(data.frames_u8), -1, np.int64)
    ex_at[ex_rows] = np.arange(len(ex_rows))
    columns = {label: ex_at[np.asarray(r, np.int64)] for label, r in exemplars.items()}
    best = {label: np.empty(len(asked)) for label in exemplars}
    for start in range(0, len(asked), BLOCK):
        sims = enc[at[asked[start : start + BLOCK]]] @ ex.T
        for label, cols in columns.items():
            best[label][start : start + BLOCK] = sims[:, cols].max(axis=1)
    return best


def probe(
    data: PuzzleArrays, encode: Encode, train_idx: Sequence[int], eval_idx: Sequence[int]
) -> PerceptionResult:
    """Answer the perception questions of ``eval_idx`` with ``encode`` (see the module
    docstring); exemplars come from the fine questions of ``train_idx``.

    Questions name rows of ``data.frames_u8`` (:meth:`PuzzleArrays.panel_id`), and a glyph
    split holds few distinct frames (the default 10,000-puzzle UA split: 70,000 questions
    over 263 frames), so ``encode`` sees each named row once, in one call; a row's cosine to
    the nearest exemplar of each (concept, value) is computed once, and a question reads its
    options' from there. The answers are those of encoding every panel asked about."""
    exemplars: dict[Label, dict[int, None]] = {}  # label -> its bank rows, each once
    for i in train_idx:
        for q in data.questions[i]:
            if q.kind != "fine" or q.panel is None:
                continue
            fid = data.panel_id(i, q.panel)
            if fid is not None:
                label = (q.concept or str(data.labels["concept"][i]), q.answer)
                exemplars.setdefault(label, {})[fid] = None
    n = len(eval_idx)
    right = [0] * n
    asked = [0] * n
    coarse: list[tuple[int, Question]] = []
    fine: list[tuple[int, Question, str, int]] = []  # (k, question, concept, bank row)
    for k, i in enumerate(eval_idx):
        for q in data.questions[i]:
            if q.kind == "coarse":
                coarse.append((k, q))
            elif q.kind == "fine":
                # a fine question whose panel cannot be found counts as asked and wrong
                asked[k] += 1
                fid = None if q.panel is None else data.panel_id(i, q.panel)
                if fid is not None:
                    fine.append((k, q, q.concept or str(data.labels["concept"][i]), fid))
    if coarse:
        counts = _non_blank_counts(data, np.asarray(eval_idx, dtype=np.int64))
        n_ctx, n_ans = counts[0].tolist(), counts[1].tolist()
        for k, q in coarse:
            asked[k] += 1
            right[k] += _counting_answer(q.text, n_ctx[k], n_ans[k]) == q.answer
    best: dict[Label, list[float]] = {}  # per label, over the asked rows: nearest cosine
    at: dict[int, int] = {}  # bank row -> its place among the asked rows
    if fine and exemplars:
        rows = np.unique(np.array([fid for *_, fid in fine], dtype=np.int64))
        near = _nearest_exemplars(
            data, encode, rows, {label: list(r) for label, r in exemplars.items()}
        )
        best = {label: cos.tolist() for label, cos in near.items()}
        at = {int(r): j for j, r in enumerate(rows)}
    for k, q, concept, fid in fine:
        choice, choice_d = q.options[0], np.inf
        for option in q.options:
            cos = best.get((concept, option))
            if cos is None:
                continue
            d = 1.0 - cos[at[fid]]
            if d < choice_d:
                choice, choice_d = option, d
        right[k] += choice == q.answer
    right_a = np.array(right, dtype=np.int64)
    asked_a = np.array(asked, dtype=np.int64)
    return PerceptionResult(all_right=(right_a == asked_a), right=right_a, asked=asked_a)


__all__ = ["PerceptionResult", "count_answer", "has_questions", "probe"]
