"""Training-free baselines (numpy): similarity, distractor elimination, embedding arithmetic.

**The fixed encoder.** VASR's zero-shot baselines use a pretrained ViT/Swin/ConvNeXt; no
pretrained network ships with the studio (it runs offline and bundles no weights), so the
"fixed encoder" here is the studio's own hand-designed image description of a frame
(:class:`FixedEncoder`):

- the 12 features of :func:`studio.vet.features.compute_features_batch` (ink share, ink box,
  aspect, size, components, holes, Euler number, mirror and rotation symmetry scores), each
  standardised (z-score) over every frame of the split;
- the frame average-pooled to 16×16 (5×5-pixel cells), centred per cell over the split and
  divided by one overall standard deviation.

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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from studio.baselines.data import PuzzleArrays

POOL = 16
HAND_INK = 0.1
TEMPERATURE = 10.0


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


class FixedEncoder:
    """The training-free baselines' encoder, standardised over one source's frames."""

    def __init__(self, data: PuzzleArrays) -> None:
        frames = np.concatenate(
            [data.context_u8.reshape(-1, *data.context_u8.shape[2:]),
             data.answers_u8.reshape(-1, *data.answers_u8.shape[2:])]
        )  # fmt: skip
        uniq, _ = unique_frames(frames)
        hand = hand_features(uniq)
        self.hand_mean = hand.mean(axis=0)
        self.hand_std = np.where(hand.std(axis=0) > 1e-9, hand.std(axis=0), 1.0)
        pix = pooled(uniq)
        self.pool_mean = pix.mean(axis=0)
        std = float((pix - self.pool_mean).std())
        self.pool_std = std if std > 1e-9 else 1.0

    def __call__(self, frames_u8: np.ndarray) -> np.ndarray:
        """(M, 80, 80) → (M, 268) encodings."""
        frames_u8 = np.asarray(frames_u8)
        if len(frames_u8) == 0:
            return np.zeros((0, 12 + POOL * POOL))
        uniq, inverse = unique_frames(frames_u8)
        hand = (hand_features(uniq) - self.hand_mean) / self.hand_std / np.sqrt(12)
        pix = (pooled(uniq) - self.pool_mean) / self.pool_std / POOL
        return np.concatenate([hand, pix], axis=1)[inverse]


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

    def _encoded(self, data: PuzzleArrays, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ctx = data.context_u8[idx]
        ans = data.answers_u8[idx]
        n, c, a = len(idx), ctx.shape[1], ans.shape[1]
        e_ans = self.encode(ans.reshape(n * a, *ans.shape[2:])).reshape(n, a, -1)
        if c == 0:
            return np.zeros((n, 0, e_ans.shape[2])), e_ans
        e_ctx = self.encode(ctx.reshape(n * c, *ctx.shape[2:])).reshape(n, c, -1)
        return e_ctx, e_ans

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
        e_ctx, e_ans = self._encoded(data, idx)
        u_ans = _unit(e_ans)
        if data.n_context == 0:  # odd-one-out: the answer least like the others
            sims = np.einsum("nad,nbd->nab", u_ans, u_ans)
            a = sims.shape[1]
            others = (sims.sum(axis=2) - np.diagonal(sims, axis1=1, axis2=2)) / (a - 1)
            return -others
        u_ctx = _unit(e_ctx)
        if data.odd:  # polycube rotation: the view least like the question
            return -np.einsum("nad,ncd->nac", u_ans, u_ctx).mean(axis=2)
        last = data.row_indices()[-1] or list(range(data.n_context))
        return np.einsum("nad,ncd->nac", u_ans, u_ctx[:, last]).mean(axis=2)


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
        e_ctx, e_ans = self._encoded(data, idx)
        return -np.einsum("nad,ncd->nac", _unit(e_ans), _unit(e_ctx)).mean(axis=2)


class Arithmetic(TrainingFreeBaseline):
    """VASR's zero-shot arithmetic e(B) + e(A′) − e(A) over the fixed encoder."""

    id = "arithmetic"

    def applies(self, data: PuzzleArrays) -> str | None:
        if data.rows != (2, 1):
            return "needs A : A′ :: B : ? puzzles (two rows of two: the analogy layout, KiVA)"
        return None

    def scores(self, data: PuzzleArrays, idx: np.ndarray) -> np.ndarray:
        e_ctx, e_ans = self._encoded(data, idx)
        target = e_ctx[:, 2] + (e_ctx[:, 1] - e_ctx[:, 0])
        return np.einsum("nad,nd->na", _unit(e_ans), _unit(target))


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
]
