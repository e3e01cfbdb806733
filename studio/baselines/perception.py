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


def count_answer(data: PuzzleArrays, i: int, q: Question) -> str:
    """A counting question's answer from the frames themselves."""
    n_ctx = _non_blank(data.context_u8[i])
    n_ans = _non_blank(data.answers_u8[i])
    text = q.text.lower()
    if "context" in text:
        return str(n_ctx)
    if "answer" in text:
        return str(n_ans)
    return str(n_ctx + n_ans)


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 1e-12, norm, 1.0)


def probe(
    data: PuzzleArrays, encode: Encode, train_idx: Sequence[int], eval_idx: Sequence[int]
) -> PerceptionResult:
    """Answer the perception questions of ``eval_idx`` with ``encode`` (see the module
    docstring); exemplars come from the fine questions of ``train_idx``."""
    bank_frames: list[np.ndarray] = []
    bank_labels: list[tuple[str, str]] = []
    for i in train_idx:
        for q in data.questions[i]:
            if q.kind != "fine" or q.panel is None:
                continue
            frame = data.panel_frame(i, q.panel)
            if frame is not None:
                bank_frames.append(frame)
                bank_labels.append((q.concept or str(data.labels["concept"][i]), q.answer))
    bank: dict[tuple[str, str], np.ndarray] = {}
    if bank_frames:
        enc = _unit(np.asarray(encode(np.stack(bank_frames)), dtype=np.float64))
        by_label: dict[tuple[str, str], list[int]] = {}  # one pass, not a scan per label
        for j, lab in enumerate(bank_labels):
            by_label.setdefault(lab, []).append(j)
        for label, rows in by_label.items():
            bank[label] = enc[rows]
    asks: list[tuple[int, Question, np.ndarray]] = []
    for k, i in enumerate(eval_idx):
        for q in data.questions[i]:
            if q.kind == "fine" and q.panel is not None:
                frame = data.panel_frame(i, q.panel)
                if frame is not None:
                    asks.append((k, q, frame))
    fine_enc = (
        _unit(np.asarray(encode(np.stack([f for _, _, f in asks])), dtype=np.float64))
        if asks
        else np.zeros((0, 1))
    )
    n = len(eval_idx)
    right = np.zeros(n, np.int64)
    asked = np.zeros(n, np.int64)
    for k, i in enumerate(eval_idx):
        for q in data.questions[i]:
            if q.kind == "coarse":
                asked[k] += 1
                right[k] += count_answer(data, i, q) == q.answer
    for (k, q, _), e in zip(asks, fine_enc, strict=True):
        i = eval_idx[k]
        concept = q.concept or str(data.labels["concept"][i])
        best, best_d = q.options[0], np.inf
        for option in q.options:
            ex = bank.get((concept, option))
            if ex is None:
                continue
            d = float(1.0 - (ex @ e).max())
            if d < best_d:
                best, best_d = option, d
        asked[k] += 1
        right[k] += best == q.answer
    # fine questions whose panel could not be found count as asked and wrong
    for k, i in enumerate(eval_idx):
        missing = sum(
            1
            for q in data.questions[i]
            if q.kind == "fine" and (q.panel is None or data.panel_frame(i, q.panel) is None)
        )
        asked[k] += missing
    return PerceptionResult(all_right=(right == asked), right=right, asked=asked)


__all__ = ["PerceptionResult", "count_answer", "has_questions", "probe"]
