"""The perception probe reads the split's distinct frames (each named row encoded once) and
answers exactly as a probe that encodes every panel it is asked about, found in the raw
frames: the reference below is that probe, written from the module docstring."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from studio.baselines import perception
from studio.baselines.data import PuzzleArrays, load_source
from studio.baselines.perception import probe
from studio.baselines.training_free import FixedEncoder, pooled
from studio.core.puzzle import Question

Encode = Callable[[np.ndarray], np.ndarray]


@pytest.fixture(scope="module")
def glyph_data(glyph_split: Path) -> PuzzleArrays:
    return load_source(glyph_split)


def raw_panel(data: PuzzleArrays, i: int, panel: str | None) -> np.ndarray | None:
    """The frame a question names, from the puzzle's own context and answer stacks."""
    if panel is None:
        return None
    try:
        what, where = panel.split()
        if what == "answer":
            k = int(where) - 1
            return data.answers_u8[i, k] if 0 <= k < data.n_answers else None
        if what == "context":
            if "." in where:
                r, j = (int(x) for x in where.split("."))
                if r < 1 or j < 1:
                    return None
                return data.context_u8[i, data.row_indices()[r - 1][j - 1]]
            k = int(where) - 1
            return data.context_u8[i, k] if 0 <= k < data.n_context else None
    except (ValueError, IndexError):
        return None
    return None


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 1e-12, norm, 1.0)


def reference_probe(
    data: PuzzleArrays, encode: Encode, train_idx: Sequence[int], eval_idx: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(right, asked) per puzzle of ``eval_idx``: every train fine question's panel is an
    exemplar, every asked panel encoded, the nearest exemplar of each option chosen."""
    ex_frames, ex_labels = [], []
    for i in train_idx:
        for q in data.questions[i]:
            frame = raw_panel(data, i, q.panel) if q.kind == "fine" else None
            if frame is not None:
                ex_frames.append(frame)
                ex_labels.append((q.concept or str(data.labels["concept"][i]), q.answer))
    if ex_frames:
        exemplars = _unit(np.asarray(encode(np.stack(ex_frames)), dtype=np.float64))
    by_label: dict[tuple[str, str], list[int]] = {}
    for j, label in enumerate(ex_labels):
        by_label.setdefault(label, []).append(j)
    right = np.zeros(len(eval_idx), np.int64)
    asked = np.zeros(len(eval_idx), np.int64)
    asks = []
    for k, i in enumerate(eval_idx):
        n_ctx = sum(int(f.max() > 25.5) for f in data.context_u8[i])
        n_ans = sum(int(f.max() > 25.5) for f in data.answers_u8[i])
        for q in data.questions[i]:
            if q.kind == "coarse":
                text = q.text.lower()
                count = n_ctx if "context" in text else n_ans if "answer" in text else n_ctx + n_ans
                asked[k] += 1
                right[k] += str(count) == q.answer
            elif q.kind == "fine":
                asked[k] += 1  # a panel not found is asked and wrong
                frame = raw_panel(data, i, q.panel)
                if frame is not None:
                    asks.append((k, q, q.concept or str(data.labels["concept"][i]), frame))
    frames = np.stack([f for *_, f in asks]) if asks else np.zeros((0, 80, 80), np.uint8)
    encoded = _unit(np.asarray(encode(frames), dtype=np.float64))
    for (k, q, concept, _), e in zip(asks, encoded, strict=True):
        choice, choice_d = q.options[0], np.inf
        for option in q.options:
            rows = by_label.get((concept, option))
            if rows is None:
                continue
            d = 1.0 - float((exemplars[rows] @ e).max())
            if d < choice_d:
                choice, choice_d = option, d
        right[k] += choice == q.answer
    return right, asked


def with_odd_questions(data: PuzzleArrays, idx: np.ndarray) -> PuzzleArrays:
    """The puzzles ``idx`` also ask: a panel that is not there, one that is not named, a
    context panel, a question without its concept (the puzzle's), an option no exemplar
    shows, and counting questions worded for the context and for neither part."""
    questions = list(data.questions)
    for n, i in enumerate(idx):
        fine = next(q for q in questions[i] if q.kind == "fine")
        extra = [
            replace(fine, panel="answer 9"),
            replace(fine, panel=None),
            replace(fine, panel="context 0.1"),
            replace(fine, panel=f"context {1 + n % 2}.{1 + n % 2}"),
            replace(fine, panel=f"context {1 + n % 5}"),
            replace(fine, concept=None),
            replace(fine, options=("never-a-value", *fine.options)),
            Question("coarse", "How many CONTEXT panels are there?", ("5",), "5"),
            Question("coarse", "How many panels, blank or not?", ("9",), "9"),
        ]
        questions[i] = (*questions[i], *extra)
    return replace(data, questions=questions)


def projection(seed: int) -> Encode:
    """A fixed random encoder: 32 rectified projections of the ink."""
    w = np.random.default_rng(seed).standard_normal((80 * 80, 32))
    return lambda f: np.maximum(np.asarray(f, np.float32).reshape(len(f), -1) / 255 @ w, 0)


def test_probe_reads_each_named_row_once_and_answers_as_every_panel_encoded(
    glyph_data: PuzzleArrays, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(perception, "BLOCK", 16)  # rows against exemplars in several blocks
    rng = np.random.default_rng(11)
    half = glyph_data.subset(rng.permutation(glyph_data.n)[: glyph_data.n // 2])
    odd = with_odd_questions(glyph_data, glyph_data.part_indices("test")[::3])
    train = glyph_data.part_indices("train")
    cases = {
        "split": (glyph_data, train, glyph_data.part_indices("test")),
        "all, shuffled": (glyph_data, train, rng.permutation(glyph_data.n)),
        "shuffled half": (half, half.part_indices("train"), half.part_indices("test")),
        "odd questions": (odd, train, odd.part_indices("test")),
        # exemplars among the rows asked about, which mostly no exemplar shows
        "few exemplars": (glyph_data, rng.choice(train, 12), rng.permutation(glyph_data.n)),
    }
    encoders: dict[str, Encode] = {
        "pooled": pooled,
        "fixed": FixedEncoder(glyph_data),
        "projection": projection(0),
    }
    for case, (data, train_idx, eval_idx) in cases.items():
        for name, encode in encoders.items():
            calls: list[np.ndarray] = []

            def counted(
                frames: np.ndarray, encode: Encode = encode, calls: list = calls
            ) -> np.ndarray:
                calls.append(frames)
                return encode(frames)

            got = probe(data, counted, train_idx, eval_idx)
            right, asked = reference_probe(data, encode, train_idx, eval_idx)
            assert got.asked.tolist() == asked.tolist(), (case, name)
            assert got.right.tolist() == right.tolist(), (case, name)
            assert got.all_right.tolist() == (right == asked).tolist(), (case, name)
            assert 0.3 < right.sum() / asked.sum() < 1.0  # questions right and wrong
            assert len(calls) == 1  # every row it needs, in one call, each row once
            flat = calls[0].reshape(len(calls[0]), -1)
            assert len(np.unique(flat, axis=0)) == len(flat)
    odd_eval = odd.part_indices("test")
    plain = probe(glyph_data, pooled, train, odd_eval)
    mixed = probe(odd, pooled, train, odd_eval)
    assert (mixed.asked - plain.asked).tolist() == [
        9 if i in set(odd_eval[::3]) else 0 for i in odd_eval
    ]  # the missing panels are asked


def test_probe_without_exemplars_takes_the_first_options(glyph_data: PuzzleArrays) -> None:
    """No fine question in the train part: every fine question takes its first option and
    nothing is encoded; no puzzles to probe, nothing asked."""
    test = glyph_data.part_indices("test")

    def never(frames: np.ndarray) -> np.ndarray:
        raise AssertionError("no exemplar to compare with: nothing to encode")

    got = probe(glyph_data, never, [], test)
    right, asked = reference_probe(glyph_data, pooled, [], test)
    assert got.asked.tolist() == asked.tolist() and got.right.tolist() == right.tolist()
    firsts = sum(
        q.kind == "fine" and q.options[0] == q.answer for i in test for q in glyph_data.questions[i]
    )
    assert 0 < firsts < got.right.sum()  # first options right, and the counting questions
    empty = probe(glyph_data, never, glyph_data.part_indices("train"), [])
    assert empty.asked.tolist() == [] and empty.all_right.tolist() == []
