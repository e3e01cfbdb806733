"""Training-free baselines on constructed puzzles whose answer is known by construction:
embedding arithmetic solves A : A′ :: B : ? analogies (add a mark), similarity solves constant rows
and odd-one-out groups, elimination picks the answer least like the context."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from studio.baselines import training_free
from studio.baselines.data import PuzzleArrays, load_source
from studio.baselines.run import run_baselines
from studio.baselines.training_free import (
    Arithmetic,
    Elimination,
    FeatureSimilarity,
    FixedEncoder,
    PixelSimilarity,
    TrainingFreeBaseline,
    hand_features,
    pooled,
    unique_frames,
    used_rows,
)

S = 80
Shape = Callable[[int], np.ndarray]


def _grid() -> tuple[np.ndarray, np.ndarray]:
    y, x = np.mgrid[0:S, 0:S]
    return y - (S - 1) / 2, x - (S - 1) / 2


def square(r: int) -> np.ndarray:
    y, x = _grid()
    return ((np.abs(y) <= r) & (np.abs(x) <= r)).astype(np.uint8) * 255


def disk(r: int) -> np.ndarray:
    y, x = _grid()
    return (y**2 + x**2 <= r**2).astype(np.uint8) * 255


def ring(r: int) -> np.ndarray:
    y, x = _grid()
    d = y**2 + x**2
    return ((d <= r**2) & (d >= (0.6 * r) ** 2)).astype(np.uint8) * 255


def cross(r: int) -> np.ndarray:
    y, x = _grid()
    w = max(2, r // 3)
    return (((np.abs(y) <= r) & (np.abs(x) <= w)) | ((np.abs(x) <= r) & (np.abs(y) <= w))).astype(
        np.uint8
    ) * 255


SHAPES: dict[str, Shape] = {"square": square, "disk": disk, "ring": ring, "cross": cross}


def arrays(
    context: list[list[np.ndarray]],
    answers: list[list[np.ndarray]],
    keys: list[int],
    rows: tuple[int, ...],
    layout: str,
) -> PuzzleArrays:
    n = len(answers)
    ctx = np.zeros((n, sum(rows), S, S), np.uint8)
    for i, frames in enumerate(context):
        if frames:
            ctx[i] = np.stack(frames)
    labels = {k: np.array([k] * n, dtype=object) for k in ("rule", "concept", "family")}
    labels["layout"] = np.array([layout] * n, dtype=object)
    return PuzzleArrays(
        ids=[f"test-{i:05d}" for i in range(n)],
        parts=np.array(["test"] * n, dtype=object),
        context_u8=ctx,
        answers_u8=np.stack([np.stack(a) for a in answers]),
        keys=np.array(keys, dtype=np.int64),
        rows=rows,
        labels=labels,
        questions=[() for _ in range(n)],
        layout=layout,
        family="constructed",
        source={"kind": "split-dir", "path": "constructed", "set_id": None},
    )


def mark(corner: int) -> np.ndarray:
    """A small filled square in one of the four corners."""
    out = np.zeros((S, S), np.uint8)
    r, c = divmod(corner, 2)
    out[4 + 62 * r : 14 + 62 * r, 4 + 62 * c : 14 + 62 * c] = 255
    return out


def marked_analogies() -> PuzzleArrays:
    """A : A′ :: B : ? where A′ is A with a mark added in a corner and B another shape; the
    answers are the key (B with the same mark), B itself, B with the mark in another corner,
    and A′ — VASR's hard distractors: the copy of B and the copy of A′."""
    rng = np.random.default_rng(1)
    context, answers, keys = [], [], []
    names = list(SHAPES)
    for a_name in names:
        for b_name in names:
            if a_name == b_name:
                continue
            for corner in range(4):
                a, b = SHAPES[a_name](int(rng.integers(14, 22))), SHAPES[b_name](18)
                other = (corner + 1 + int(rng.integers(3))) % 4
                a2 = np.maximum(a, mark(corner))
                options = [np.maximum(b, mark(corner)), b, np.maximum(b, mark(other)), a2]
                order = rng.permutation(4)
                context.append([a, a2, b])
                answers.append([options[j] for j in order])
                keys.append(int(np.flatnonzero(order == 0)[0]))
    return arrays(context, answers, keys, (2, 1), "analogy")


def constant_rows() -> PuzzleArrays:
    """Two rows of one shape (slightly varied in size); the key is that shape."""
    rng = np.random.default_rng(2)
    context, answers, keys = [], [], []
    names = list(SHAPES)
    for k, name in enumerate(names * 3):
        f = SHAPES[name]
        context.append([f(int(r)) for r in rng.integers(14, 24, size=5)])
        others = [SHAPES[o](18) for o in names if o != name]
        key = k % 4
        row = [*others[:key], f(18), *others[key:]]
        answers.append(row)
        keys.append(key)
    return arrays(context, answers, keys, (3, 2), "two-row")


def odd_groups() -> PuzzleArrays:
    context, answers, keys = [], [], []
    names = list(SHAPES)
    for k, (same, odd) in enumerate((a, b) for a in names for b in names if a != b):
        key = k % 4
        group = [np.roll(SHAPES[same](18), j, axis=1) for j in range(3)]
        group.insert(key, SHAPES[odd](18))
        context.append([])
        answers.append(group)
        keys.append(key)
    return arrays(context, answers, keys, (), "odd-one-out")


def accuracy(report: dict, model: str) -> float:
    return report["models"][model]["overall"]["accuracy"]


def test_arithmetic_solves_marked_analogies() -> None:
    data = marked_analogies()
    report = run_baselines(data, ["similarity"], seeds=1)
    assert report["skipped"] == []
    assert report["device"].startswith("cpu (numpy")  # training-free: torch never loaded
    assert accuracy(report, "arithmetic") >= 0.9
    # copying B (the most similar answer) is a distractor here: similarity picks it
    assert accuracy(report, "pixel-similarity") < 0.5
    arith = report["models"]["arithmetic"]
    assert arith["trained"] is False and arith["per_seed"][0]["seed"] is None
    assert arith["throughput"]["infer_puzzles_per_s"] > 0
    assert len(report["predictions"]) == data.n


def test_similarity_solves_constant_rows_and_elimination_does_not() -> None:
    report = run_baselines(constant_rows(), ["similarity"], seeds=1)
    assert accuracy(report, "pixel-similarity") >= 0.9
    assert accuracy(report, "feature-similarity") >= 0.9
    assert accuracy(report, "elimination") <= 0.1  # it eliminates the key first
    assert {s["model"]: s["reason"] for s in report["skipped"]}.keys() == {"arithmetic"}


def test_similarity_finds_the_odd_one_out() -> None:
    report = run_baselines(odd_groups(), ["similarity", "context", "partial"], seeds=1)
    assert accuracy(report, "pixel-similarity") >= 0.9
    assert accuracy(report, "feature-similarity") >= 0.9
    skipped = {s["model"] for s in report["skipped"]}
    assert skipped == {
        "elimination", "arithmetic", "context", "partial-answers", "partial-row1", "partial-row2"
    }  # fmt: skip


def test_fixed_encoder_is_standardised_and_dedupes_frames() -> None:
    data = constant_rows()
    enc = FixedEncoder(data)
    frames = data.answers_u8.reshape(-1, S, S)
    uniq, inverse = unique_frames(frames)
    assert len(uniq) == 4 and (uniq[inverse] == frames).all()
    e = enc(frames)
    assert e.shape == (len(frames), 12 + 256)
    assert np.isfinite(e).all()
    assert np.allclose(e[0], enc(frames[:1])[0])


def test_unknown_model_names_are_refused() -> None:
    from studio.core.errors import StudioError

    with pytest.raises(StudioError, match="no baseline or group called 'magic'"):
        run_baselines(constant_rows(), ["magic"])


# ---- the bank: every distinct frame encoded once, the same scores ------------------------------
@pytest.fixture(scope="module")
def glyph_data(glyph_split: Path) -> PuzzleArrays:
    return load_source(glyph_split)


def relaid(
    data: PuzzleArrays, columns: list[int], rows: tuple[int, ...], layout: str
) -> PuzzleArrays:
    """The puzzles with only these context frames, in another layout, built from the raw
    stacks (no bank given: PuzzleArrays makes its own)."""
    return PuzzleArrays(
        ids=list(data.ids),
        parts=data.parts,
        context_u8=np.ascontiguousarray(data.context_u8[:, columns]),
        answers_u8=data.answers_u8,
        keys=data.keys,
        rows=rows,
        labels=data.labels,
        questions=[() for _ in range(data.n)],
        layout=layout,
        family=data.family,
        source=data.source,
    )


def layouts(data: PuzzleArrays) -> dict[str, PuzzleArrays]:
    """The split as loaded, a shuffled half of it (its parent's bank, so bank rows are not
    positions and some rows are not its own), and its frames as analogies and as
    odd-one-out groups."""
    half = np.random.default_rng(5).permutation(data.n)[: data.n // 2]
    return {
        "two-row": data,
        "shuffled-half": data.subset(half),
        "analogy": relaid(data, [0, 1, 3], (2, 1), "analogy"),
        "odd-one-out": relaid(data, [], (), "odd-one-out"),
    }


def _unit_ref(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 1e-12, norm, 1.0)


def reference_encodings(data: PuzzleArrays, space: str) -> tuple[np.ndarray, np.ndarray]:
    """Every context and answer frame of every puzzle encoded from the raw stacks, as the
    baselines did before the bank: raw ink, or the fixed encoder standardised over the
    distinct frames of these puzzles."""
    n, c, a = data.n, data.n_context, data.n_answers
    frames = np.concatenate([data.context_u8.reshape(-1, S, S), data.answers_u8.reshape(-1, S, S)])
    if space == "pixels":
        enc = frames.reshape(len(frames), -1).astype(np.float32) / 255.0
    else:
        uniq, inverse = unique_frames(frames)
        hand, pix = hand_features(uniq), pooled(uniq)
        hand_std = np.where(hand.std(axis=0) > 1e-9, hand.std(axis=0), 1.0)
        pix_std = float((pix - pix.mean(axis=0)).std())
        enc = np.concatenate(
            [(hand - hand.mean(axis=0)) / hand_std / np.sqrt(12),
             (pix - pix.mean(axis=0)) / pix_std / 16],
            axis=1,
        )[inverse]  # fmt: skip
    d = enc.shape[1]
    return enc[: n * c].reshape(n, c, d), enc[n * c :].reshape(n, a, d)


def reference_scores(model: TrainingFreeBaseline, data: PuzzleArrays) -> np.ndarray:
    """The models' scores (module docstring) from every frame's own encoding."""
    ctx, ans = reference_encodings(data, model.space)
    u_ans = _unit_ref(ans)
    if model.id == "arithmetic":
        target = ctx[:, 2] + ctx[:, 1] - ctx[:, 0]
        return np.einsum("nad,nd->na", u_ans, _unit_ref(target))
    if data.n_context == 0:
        sims = np.einsum("nad,nbd->nab", u_ans, u_ans)
        return -(sims.sum(axis=2) - np.diagonal(sims, axis1=1, axis2=2)) / (data.n_answers - 1)
    sims = np.einsum("nad,ncd->nac", u_ans, _unit_ref(ctx))
    if model.id == "elimination" or data.odd:
        return -sims.mean(axis=2)
    return sims[:, :, data.row_indices()[-1]].mean(axis=2)


@pytest.mark.parametrize("mode", ["gram", "chunks"])
def test_bank_scores_equal_every_frame_encoded(
    glyph_data: PuzzleArrays, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scores read from the bank (a gram matrix of its rows, or chunks of puzzles gathering
    their rows) are those of encoding every frame of every puzzle; the same choices."""
    if mode == "gram":
        monkeypatch.setattr(training_free, "GRAM_GAIN", 10**9)
    else:
        monkeypatch.setattr(training_free, "GRAM_MAX", 0)
        monkeypatch.setattr(training_free, "CHUNK", 37)  # several chunks and a short last one
    checked = set()
    for layout, data in layouts(glyph_data).items():
        cache: dict = {}
        for cls in (PixelSimilarity, FeatureSimilarity, Elimination, Arithmetic):
            model = cls()
            if model.applies(data):
                continue
            model.prepare(data, cache)
            got = model.scores(data, np.arange(data.n))
            want = reference_scores(model, data)
            assert got.shape == want.shape == (data.n, data.n_answers)
            # float32 sums over a frame's 6,400 pixels in another order: a few ulps of 1
            assert np.allclose(got, want, rtol=0, atol=5e-6), (layout, model.id)
            top2 = np.sort(want, axis=1)[:, -2:]
            clear = top2[:, 1] - top2[:, 0] > 1e-5
            assert (got.argmax(axis=1) == want.argmax(axis=1))[clear].all(), (layout, model.id)
            checked.add((layout, model.id))
    assert len(checked) == 12  # odd-one-out: no elimination or arithmetic; arithmetic: analogy


def test_fixed_encoder_reads_its_bank_and_encodes_other_rows(glyph_data: PuzzleArrays) -> None:
    """Built on part of a split, the encoder is standardised over that part's own frames; a
    row only the rest names is encoded on demand, and another bank's rows are computed, all
    as encoding the frames themselves."""
    half = glyph_data.subset(np.arange(0, glyph_data.n, 2))
    enc = FixedEncoder(half)
    ctx, ans = reference_encodings(half, "features")
    assert np.allclose(enc.rows_encoded(half, half.answer_ids), ans, rtol=0, atol=1e-12)
    assert np.allclose(enc.rows_encoded(half, half.context_ids), ctx, rtol=0, atol=1e-12)
    assert glyph_data.frames_u8 is not None and glyph_data.answer_ids is not None
    others = np.setdiff1d(used_rows(glyph_data), used_rows(half))[:6]
    assert len(others)  # rows the half never names, in the bank it shares with the split
    ids = np.stack([others, used_rows(half)[: len(others)]])  # (2, k): new rows and kept ones
    want = enc(glyph_data.frames_u8[ids.ravel()]).reshape(*ids.shape, -1)
    for _ in range(2):  # encoded on demand, then read
        assert np.allclose(enc.rows_encoded(glyph_data, ids), want, rtol=0, atol=1e-12)
    other = relaid(glyph_data, [0], (1,), "sequence")  # a bank of its own
    assert other.frames_u8 is not None and other.frames_u8 is not glyph_data.frames_u8
    rows = np.arange(len(other.frames_u8))[::7]
    assert np.allclose(enc.rows_encoded(other, rows), enc(other.frames_u8[rows]), rtol=0)
