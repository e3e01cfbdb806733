"""Training-free baselines (numpy): similarity, distractor elimination, embedding arithmetic.

**The fixed encoder.** VASR's zero-shot baselines use a pretrained ViT/Swin/ConvNeXt; no
pretrained network ships with the studio (it runs offline and bundles no weights), so the
"fixed encoder" here is the studio's own hand-designed image description of a frame
(:class:`FixedEncoder`):

- the 12 features of :func:`studio.vet.features.compute_features_batch` (ink share, ink box,
  aspect, size, components, holes, Euler number, mirror and rotation symmetry scores), each
  standardised (z-score) over the split's distinct frames;
- the frame average-pooled to 16×16 (5×5-pixel cells), centred per cell over the split's
  distinct frames and divided by one overall standard deviation.

The two blocks are weighted so each contributes equally to a squared distance (by
``1/sqrt(12)`` and ``1/sqrt(256)``). A pixel counts as ink for the hand features when its ink
exceeds 0.1 (glyph frames are 0/1; rendered stimuli are grey-level). Similarity is cosine.

**The models** (scores per answer; the choice is the highest score; confidence is the softmax
of 10 × score, reported but never used to flag):

- ``pixel-similarity``: cosine similarity of raw 80×80 ink to the frames of the answer's row
  (the given frames of the last row); for odd-one-out groups the *lowest* mean similarity to
  the other answers wins, and for polycube rotation the lowest similarity to the question (the
  key is the view that is not a rotation);
- ``feature-similarity``: the same over the fixed encoder;
- ``elimination`` (VASR): the answers most like the inputs are eliminated; the one left — the
  lowest mean similarity to all context frames over the fixed encoder — is chosen. Not for
  odd-one-out (no inputs) or polycube rotation (there it is feature similarity again);
- ``arithmetic`` (VASR, Mikolov-style): for A : A′ :: B : ? (two rows of two, the analogy
  layout and KiVA trials), the answer whose encoding is most similar (cosine) to
  ``e(B) + (e(A′) − e(A))``.

**Computed per distinct frame.** A split keeps each distinct frame once
(:attr:`PuzzleArrays.frames_u8 <studio.baselines.data.PuzzleArrays.frames_u8>`, each puzzle's
frames as rows of it); a glyph split reuses a few hundred glyph images (the default
10,000-puzzle UA split: 90,000 frames, 263 distinct). So each row is encoded once, and a
puzzle's cosines are read from the rows' gram matrix when the puzzles use few distinct rows,
else computed per chunk of :data:`CHUNK` puzzles from the rows they name (a stimulus split's
frames are mostly distinct: memory stays bounded). The scores are those of encoding every
frame of every puzzle, to rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from studio.baselines.data import PuzzleArrays

POOL = 16
HAND_INK = 0.1
TEMPERATURE = 10.0
#: puzzles per chunk when cosines are computed per puzzle (bounds the gathered encodings)
CHUNK = 512
#: the most distinct rows whose full gram matrix is computed (8 × 2048² bytes: 32 MiB)
GRAM_MAX = 2048
#: a gram entry costs about this many times less than a cosine computed per puzzle (one matrix
#: product against a gather, a cast and a normalisation per puzzle frame; measured on 1,000 and
#: 10,000 puzzles of a UA split, 263 distinct frames): the gram is used while the rows' pairs
#: are at most this many times the pairs the puzzles ask for
GRAM_GAIN = 8


def _paper_image(frames_u8: np.ndarray) -> np.ndarray:
    """uint8 ink × 255 → the renders' convention (0 ink, 255 paper), binarised."""
    return np.where(frames_u8 > HAND_INK * 255, 0, 255).astype(np.uint8)


def pooled(frames_u8: np.ndarray, size: int = POOL) -> np.ndarray:
    """(M, 80, 80) → (M, size²) mean ink per cell, in [0, 1]."""
    m, h, w = frames_u8.shape
    ink = frames_u8.astype(np.float32) / 255.0
    return ink.reshape(m, size, h // size, size, w // size).mean(axis=(2, 4)).reshape(m, -1)


def hand_features(frames_u8: np.ndarray) -> np.ndarray:
    """(M, 80, 80) → (M, 12): the studio's image features of each frame."""
    from studio.vet.features import compute_features_batch

    feats = compute_features_batch(_paper_image(frames_u8))
    return np.array(
        [
            [
                f.ink_fraction, f.bbox_w, f.bbox_h, f.aspect_ratio, f.bbox_size, f.components,
                f.holes, f.euler, f.mirror_lr, f.mirror_tb, f.rot180, f.rot90,
            ]
            for f in feats
        ],
        dtype=np.float64,
    ).reshape(len(feats), 12)  # fmt: skip


def unique_frames(frames_u8: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct frames of an (M, h, w) stack and, per frame, its row among them (glyph
    splits repeat each glyph many times: features are computed once per distinct frame)."""
    flat = np.ascontiguousarray(frames_u8).reshape(len(frames_u8), -1)
    index: dict[bytes, int] = {}
    inverse = np.empty(len(flat), dtype=np.int64)
    firsts = []
    for i, row in enumerate(flat):
        b = row.tobytes()
        j = index.get(b)
        if j is None:
            j = index[b] = len(firsts)
            firsts.append(i)
        inverse[i] = j
    return frames_u8[np.array(firsts, dtype=np.int64)], inverse


def used_rows(data: PuzzleArrays) -> np.ndarray:
    """The rows of ``data.frames_u8`` that its puzzles name, each once, in the order they
    first appear among all context frames and then all answer frames (a subset keeps its
    parent's whole bank, and only its own frames describe it; the order is the one
    :func:`unique_frames` gives those frames, so statistics over them sum alike)."""
    assert data.context_ids is not None and data.answer_ids is not None
    named = np.concatenate([data.context_ids.ravel(), data.answer_ids.ravel()])
    rows, first = np.unique(named, return_index=True)
    return rows[np.argsort(first, kind="stable")]


class FixedEncoder:
    """The training-free baselines' encoder, standardised over one source's distinct frames
    (the bank rows its puzzles name, each once); the encodings of that bank's rows are kept
    (:meth:`rows_encoded`), so the baselines never encode a frame twice."""

    def __init__(self, data: PuzzleArrays) -> None:
        assert data.frames_u8 is not None
        rows = used_rows(data)
        uniq = data.frames_u8[rows]
        hand = hand_features(uniq)
        self.hand_mean = hand.mean(axis=0)
        self.hand_std = np.where(hand.std(axis=0) > 1e-9, hand.std(axis=0), 1.0)
        pix = pooled(uniq)
        self.pool_mean = pix.mean(axis=0)
        std = float((pix - self.pool_mean).std())
        self.pool_std = std if std > 1e-9 else 1.0
        self._bank = data.frames_u8
        self._bank_enc = np.zeros((len(data.frames_u8), 12 + POOL * POOL))
        self._bank_enc[rows] = self._standardised(hand, pix)
        self._known = np.zeros(len(data.frames_u8), dtype=bool)
        self._known[rows] = True

    def _standardised(self, hand: np.ndarray, pix: np.ndarray) -> np.ndarray:
        hand = (hand - self.hand_mean) / self.hand_std / np.sqrt(12)
        pix = (pix - self.pool_mean) / self.pool_std / POOL
        return np.concatenate([hand, pix], axis=1)

    def __call__(self, frames_u8: np.ndarray) -> np.ndarray:
        """(M, 80, 80) → (M, 268) encodings of any frames (each distinct one computed once)."""
        frames_u8 = np.asarray(frames_u8)
        if len(frames_u8) == 0:
            return np.zeros((0, 12 + POOL * POOL))
        uniq, inverse = unique_frames(frames_u8)
        return self._standardised(hand_features(uniq), pooled(uniq))[inverse]

    def rows_encoded(self, data: PuzzleArrays, ids: np.ndarray) -> np.ndarray:
        """The encodings of rows ``ids`` (any shape) of ``data.frames_u8`` →
        ``(*ids.shape, 268)``, as :meth:`__call__` gives their frames. On the bank this encoder
        was built from they are read (a row first named here, by a puzzle the source did not
        hold, is encoded once and kept); on another bank, computed."""
        assert data.frames_u8 is not None
        ids = np.asarray(ids, dtype=np.int64)
        if data.frames_u8 is not self._bank:
            return self(data.frames_u8[ids.ravel()]).reshape(*ids.shape, -1)
        if not self._known[ids].all():
            new = np.unique(ids[~self._known[ids]])
            frames = self._bank[new]
            self._bank_enc[new] = self._standardised(hand_features(frames), pooled(frames))
            self._known[new] = True
        return self._bank_enc[ids]


def _unit(x: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norm > 1e-12, norm, 1.0)


def softmax(scores: np.ndarray, temperature: float = TEMPERATURE) -> np.ndarray:
    z = scores * temperature
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


class TrainingFreeBaseline:
    """Scores answers from frame encodings; no training, one run (seeds do not apply)."""

    id = ""
    trained = False
    space = "features"  # "pixels" or "features"

    def applies(self, data: PuzzleArrays) -> str | None:
        return None

    def prepare(self, data: PuzzleArrays, cache: dict[str, Any]) -> None:
        """Build (or reuse from ``cache``) the encoder over this source."""
        if self.space == "features" and "fixed-encoder" not in cache:
            cache["fixed-encoder"] = FixedEncoder(data)
        self._encoder = cache.get("fixed-encoder")

    def encode(self, frames_u8: np.ndarray) -> np.ndarray:
        """(M, 80, 80) → (M, d): raw ink for pixels, the fixed encoder for features."""
        if self.space == "pixels":
            frames = np.asarray(frames_u8, dtype=np.float32)
            return frames.reshape(len(frames), int(np.prod(frames.shape[1:]))) / 255.0
        assert self._encoder is not None, "prepare() first"
        return self._encoder(frames_u8)

    def embed(self, frames_u8: np.ndarray) -> np.ndarray:
        """Features for the perception probe: pooled pixels, or the fixed encoder."""
        if self.space == "pixels":
            return pooled(np.asarray(frames_u8))
        return self.encode(frames_u8)

    def rows_encoded(self, data: PuzzleArrays, ids: np.ndarray) -> np.ndarray:
        """The encodings of bank rows ``ids`` (any shape) → ``(*ids.shape, d)``: what
        :meth:`encode` gives their frames, read from the bank (features are kept per row)."""
        assert data.frames_u8 is not None
        ids = np.asarray(ids, dtype=np.int64)
        if self.space == "pixels":
            frames = data.frames_u8[ids].astype(np.float32)
            return frames.reshape(*ids.shape, -1) / 255.0
        assert self._encoder is not None, "prepare() first"
        return self._encoder.rows_encoded(data, ids)

    def cosines(self, data: PuzzleArrays, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """(n, L, R): the cosine between the encodings of bank rows ``left`` (n, L) and
        ``right`` (n, R), puzzle by puzzle. While the rows are few (at most
        :data:`GRAM_MAX`, and the gram is the cheaper: :data:`GRAM_GAIN`), each row's unit
        vector once, then their gram matrix, gathered; otherwise :data:`CHUNK` puzzles at a
        time, so a split of mostly distinct frames never holds more than a chunk's
        encodings."""
        left = np.asarray(left, dtype=np.int64)
        right = np.asarray(right, dtype=np.int64)
        n, n_left, n_right = left.shape[0], left.shape[1], right.shape[1]
        both = np.concatenate([left.ravel(), right.ravel()])
        rows, inverse = np.unique(both, return_inverse=True)
        if len(rows) <= GRAM_MAX and len(rows) ** 2 <= GRAM_GAIN * n * n_left * n_right:
            unit = _unit(self.rows_encoded(data, rows))
            gram = unit @ unit.T
            at_left = inverse[: left.size].reshape(left.shape)
            at_right = inverse[left.size :].reshape(right.shape)
            return gram[at_left[:, :, None], at_right[:, None, :]]
        out = [
            np.einsum(
                "nad,ncd->nac",
                _unit(self.rows_encoded(data, left[start : start + CHUNK])),
                _unit(self.rows_encoded(data, right[start : start + CHUNK])),
            )
            for start in range(0, n, CHUNK)
        ]
        if not out:
            return np.zeros((0, n_left, n_right))
        return np.concatenate(out)

    def _ids(self, data: PuzzleArrays, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each puzzle's context rows (n, C) and answer rows (n, A) in the bank."""
        assert data.context_ids is not None and data.answer_ids is not None
        return data.context_ids[idx], data.answer_ids[idx]

    def scores(self, data: PuzzleArrays, idx: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def predict(self, data: PuzzleArrays, idx: np.ndarray) -> np.ndarray:
        """(len(idx), A) probabilities (softmax of 10 × score)."""
        return softmax(self.scores(data, np.asarray(idx, dtype=np.int64)))


class _Similarity(TrainingFreeBaseline):
    def applies(self, data: PuzzleArrays) -> str | None:
        if data.n_context == 0 and data.n_answers < 3:
            return "needs context frames, or at least three answers to compare"
        return None

    def scores(self, data: PuzzleArrays, idx: np.ndarray) -> np.ndarray:
        ctx, ans = self._ids(data, idx)
        if data.n_context == 0:  # odd-one-out: the answer least like the others
            sims = self.cosines(data, ans, ans)
            a = sims.shape[1]
            others = (sims.sum(axis=2) - np.diagonal(sims, axis1=1, axis2=2)) / (a - 1)
            return -others
        if data.odd:  # polycube rotation: the view least like the question
            return -self.cosines(data, ans, ctx).mean(axis=2)
        last = data.row_indices()[-1] or list(range(data.n_context))
        return self.cosines(data, ans, ctx[:, last]).mean(axis=2)


class PixelSimilarity(_Similarity):
    """Pick the answer whose ink is most like its row's frames (see the module docstring)."""

    id = "pixel-similarity"
    space = "pixels"


class FeatureSimilarity(_Similarity):
    """Pick the answer whose fixed encoding is most like its row's frames."""

    id = "feature-similarity"
    space = "features"


class Elimination(TrainingFreeBaseline):
    """VASR's distractor elimination over the fixed encoder."""

    id = "elimination"

    def applies(self, data: PuzzleArrays) -> str | None:
        if data.n_context == 0:
            return "needs context frames (an odd-one-out group has no inputs to eliminate by)"
        if data.odd:
            return (
                "the key is the view unlike the question: eliminating the most similar is "
                "feature similarity again"
            )
        return None

    def scores(self, data: PuzzleArrays, idx: np.ndarray) -> np.ndarray:
        ctx, ans = self._ids(data, idx)
        return -self.cosines(data, ans, ctx).mean(axis=2)


class Arithmetic(TrainingFreeBaseline):
    """VASR's zero-shot arithmetic e(B) + e(A′) − e(A) over the fixed encoder."""

    id = "arithmetic"

    def applies(self, data: PuzzleArrays) -> str | None:
        if data.rows != (2, 1):
            return "needs A : A′ :: B : ? puzzles (two rows of two: the analogy layout, KiVA)"
        return None

    def scores(self, data: PuzzleArrays, idx: np.ndarray) -> np.ndarray:
        """Per chunk of :data:`CHUNK` puzzles: the target is a sum of encodings, not a bank
        row, so it is made per puzzle from the rows' kept encodings."""
        ctx, ans = self._ids(data, idx)
        out = []
        for start in range(0, len(idx), CHUNK):
            e_ctx = self.rows_encoded(data, ctx[start : start + CHUNK])
            e_ans = self.rows_encoded(data, ans[start : start + CHUNK])
            target = e_ctx[:, 2] + (e_ctx[:, 1] - e_ctx[:, 0])
            out.append(np.einsum("nad,nd->na", _unit(e_ans), _unit(target)))
        return np.concatenate(out) if out else np.zeros((0, data.n_answers))


__all__ = [
    "Arithmetic",
    "Elimination",
    "FeatureSimilarity",
    "FixedEncoder",
    "PixelSimilarity",
    "TrainingFreeBaseline",
    "hand_features",
    "pooled",
    "softmax",
    "unique_frames",
    "used_rows",
]
