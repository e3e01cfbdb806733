"""The perception probe reads the split's distinct frames (each named row encoded once) and
answers exactly as a probe that encodes every panel it is asked about, found in the raw
frames: the reference below is that probe, written from the module docstring."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

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


# ---- the question plan: read once, answered with every encoder ---------------------------------
def previous_probe(
    data: PuzzleArrays, encode: Encode, train_idx: Sequence[int], eval_idx: Sequence[int]
) -> tuple[list[bool], list[int], list[int]]:
    """The probe before the question plan (each call read every question's panel name with
    :meth:`PuzzleArrays.panel_id` and chose each option in a loop), kept as it was but for
    its return and counting each puzzle's own panels: the plan must answer exactly as it
    did, ties and missing labels included."""
    exemplars: dict[tuple[str, str], dict[int, None]] = {}
    for i in train_idx:
        for q in data.questions[i]:
            if q.kind != "fine" or q.panel is None:
                continue
            fid = data.panel_id(i, q.panel)
            if fid is not None:
                label = (q.concept or str(data.labels["concept"][i]), q.answer)
                exemplars.setdefault(label, {})[fid] = None
    n = len(eval_idx)
    right, asked = [0] * n, [0] * n
    fine: list[tuple[int, Question, str, int]] = []
    for k, i in enumerate(eval_idx):
        n_ctx = perception._non_blank(data.context_u8[i])
        n_ans = perception._non_blank(data.answers_u8[i])
        for q in data.questions[i]:
            if q.kind == "coarse":
                asked[k] += 1
                right[k] += perception._counting_answer(q.text, n_ctx, n_ans) == q.answer
            elif q.kind == "fine":
                asked[k] += 1
                fid = None if q.panel is None else data.panel_id(i, q.panel)
                if fid is not None:
                    fine.append((k, q, q.concept or str(data.labels["concept"][i]), fid))
    best: dict[tuple[str, str], list[float]] = {}
    at: dict[int, int] = {}
    if fine and exemplars:
        assert data.frames_u8 is not None
        rows = np.unique(np.array([fid for *_, fid in fine], dtype=np.int64))
        near = perception._nearest_exemplars(
            data.frames_u8, encode, rows, {label: list(r) for label, r in exemplars.items()}
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
    return [r == a for r, a in zip(right, asked, strict=True)], right, asked


def as_lists(result: perception.PerceptionResult) -> tuple[list[bool], list[int], list[int]]:
    return result.all_right.tolist(), result.right.tolist(), result.asked.tolist()


def test_the_plan_answers_as_the_probe_before_it_on_the_split(glyph_data: PuzzleArrays) -> None:
    rng = np.random.default_rng(4)
    odd = with_odd_questions(glyph_data, glyph_data.part_indices("test")[::2])
    train = glyph_data.part_indices("train")
    cases = {
        "split": (glyph_data, train, glyph_data.part_indices("test")),
        "odd questions, all puzzles": (odd, train, rng.permutation(odd.n)),
        "few exemplars": (odd, rng.choice(train, 9), odd.part_indices("test")),
    }
    for case, (data, train_idx, eval_idx) in cases.items():
        for name, encode in {"pooled": pooled, "projection": projection(3)}.items():
            got = as_lists(probe(data, encode, train_idx, eval_idx))
            assert got == previous_probe(data, encode, train_idx, eval_idx), (case, name)


def hand_built() -> PuzzleArrays:
    """Two train puzzles showing exemplar ``a`` (ink in pixel 0) and ``b`` (pixel 1) of the
    concept ``shape``; test puzzle 2 asks about ``c`` (both pixels: as near ``a`` as ``b``),
    a blank context panel, panels that are not there, options no exemplar shows; test puzzle
    3 asks nothing."""
    a, b, c, blank = (np.zeros((80, 80), np.uint8) for _ in range(4))
    a[0, 0] = b[0, 1] = c[0, 0] = c[0, 1] = 200
    context = np.stack([[a, blank], [a, blank], [a, blank], [b, a]])
    answers = np.stack([[a, b], [b, a], [c, a], [a, b]])

    def fine(panel: str | None, options: tuple[str, ...], answer: str, concept: str | None = None):
        return Question("fine", f"{panel}?", options, answer, panel, concept)

    ab = ("a", "b")
    questions = [
        (fine("answer 1", ab, "a", "shape"), fine("answer 2", ab, "b")),  # concept: the puzzle's
        (fine("context 1.1", ab, "a"),),
        (
            fine("answer 1", ab, "b"),  # a tie: the first option, wrong
            fine("answer 1", ("b", "a"), "b"),  # a tie: the first option, right
            fine("answer 2", ("zzz", "b", "a"), "a"),  # zzz: no exemplar, skipped
            fine("answer 9", ab, "a"),  # no such panel: asked and wrong
            fine(None, ab, "a"),  # no panel named: asked and wrong
            fine("context 2.1", ("b", "a"), "a"),  # blank: as near both, the first
            fine("answer 2", ("x", "y"), "y"),  # no option shown: the first, wrong
            fine("answer 2", ("x", "y"), "x"),  # ... and right
            fine("answer 2", ab, "a", "colour"),  # no exemplar of the concept
            Question("coarse", "How many context panels are not blank?", ("1", "2"), "1"),
            Question("coarse", "How many panels are not blank?", ("3", "4"), "4"),
        ),
        (),
    ]
    return PuzzleArrays(
        ids=["p0", "p1", "p2", "p3"],
        parts=np.array(["train", "train", "test", "test"]),
        context_u8=context,
        answers_u8=answers,
        keys=np.zeros(4, np.int64),
        rows=(1, 1),
        labels={k: np.array(["shape"] * 4) for k in ("rule", "concept", "layout", "family")},
        questions=questions,
        layout="two-row",
        family="glyph-pmp",
    )


def first_pixels(frames: np.ndarray) -> np.ndarray:
    return np.asarray(frames, np.float64).reshape(len(frames), -1)[:, :2]


def test_the_plan_answers_hand_built_questions_as_the_probe_before_it() -> None:
    data = hand_built()
    got = as_lists(probe(data, first_pixels, [0, 1], [2, 3]))
    assert got == ([False, True], [5, 0], [11, 0])
    assert got == previous_probe(data, first_pixels, [0, 1], [2, 3])
    # no exemplars: every fine question takes its first option, nothing is encoded
    assert as_lists(probe(data, first_pixels, [], [2, 3])) == previous_probe(
        data, first_pixels, [], [2, 3]
    )

    # a distance that is not a number is never the nearest (NaN for the ``a`` exemplar)
    def nan_for_a(frames: np.ndarray) -> np.ndarray:
        out = first_pixels(frames)
        out[(out[:, 0] > 0) & (out[:, 1] == 0)] = np.nan
        return out

    assert as_lists(probe(data, nan_for_a, [0, 1], [2, 3])) == previous_probe(
        data, nan_for_a, [0, 1], [2, 3]
    )


ENCODERS: dict[str, Encode] = {"pooled": pooled, "projection": projection(5)}


def test_a_plan_is_answered_by_several_encoders_without_reading_the_questions_again(
    glyph_data: PuzzleArrays, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job probes each model's encoder on the same questions: the plan is made once, and
    answering it with another encoder equals a fresh probe with that encoder."""
    train, test = glyph_data.part_indices("train"), glyph_data.part_indices("test")
    fresh = {name: as_lists(probe(glyph_data, e, train, test)) for name, e in ENCODERS.items()}
    assert fresh["pooled"] != fresh["projection"]  # the encoders answer differently
    plan = perception.plan_questions(glyph_data, train, test)

    def unread(*args: object) -> None:
        raise AssertionError("the plan reads no question again")

    monkeypatch.setattr(PuzzleArrays, "panel_slot", unread)
    monkeypatch.setattr(PuzzleArrays, "panel_id", unread)
    for _ in range(2):
        for name, encode in ENCODERS.items():
            assert as_lists(plan.answer(encode)) == fresh[name], name


def test_a_job_plans_the_questions_once_for_every_model(
    glyph_data: PuzzleArrays, monkeypatch: pytest.MonkeyPatch
) -> None:
    from studio.baselines.run import run_baselines

    made: list[int] = []
    plan_questions = perception.plan_questions

    def counted(*args: Any) -> perception.QuestionPlan:
        made.append(1)
        return plan_questions(*args)

    monkeypatch.setattr(perception, "plan_questions", counted)
    report = run_baselines(glyph_data, ["pixel-similarity", "probe-image"], seeds=1, device="cpu")
    assert len(made) == 1  # two models probed, the questions read once
    train, test = glyph_data.part_indices("train"), glyph_data.part_indices("test")
    pixels = probe(glyph_data, pooled, train, test)  # both models probe the pooled ink
    for model in ("pixel-similarity", "probe-image"):
        got = report["models"][model]["group_accuracy"]["perception_accuracy"]
        assert got == round(int(pixels.right.sum()) / int(pixels.asked.sum()), 4)


def test_a_panel_slot_names_the_frame_panel_id_does(glyph_data: PuzzleArrays) -> None:
    names = {q.panel for qs in glyph_data.questions for q in qs if q.panel is not None}
    names |= {"answer 0", "answer 9", "context 0.1", "context 1.0", "context 3.1", "context 9"}
    names |= {"context 1.x", "answer", "answer 1 2", "frame 1", "context -1", "answer 1.5"}
    for name in sorted(names):
        slot = glyph_data.panel_slot(name)
        for i in (0, 7):
            fid = glyph_data.panel_id(i, name)
            if slot is None:
                assert fid is None, name
            else:
                ids = glyph_data.answer_ids if slot[0] == "answer" else glyph_data.context_ids
                assert ids is not None and fid == int(ids[i, slot[1]]), name
