"""The trained baselines' networks (torch; imported only by :mod:`studio.baselines.trained`,
which :mod:`studio.baselines.run` imports inside a function).

Frames arrive as ``float32`` ink in [0, 1], 80×80. Every encoder first averages 2×2 pixels
(to 40×40): glyph strokes are 3–6 px wide at 80 px, so nothing a baseline needs is lost, and
training costs a quarter. Sizes are chosen so that a 10,000-puzzle split trains in minutes on
a CPU (issue 5: "trained quickly").

No batch normalisation: with a few hundred training puzzles and a handful of batches per
epoch its running statistics lag the weights, and the validation accuracy that early stopping
reads jumped by 10–20 points from one epoch to the next (measured on a planted-bias split:
0.70–0.975); without it the curves are smooth, and the blind model finds the planted bias at
0.97–0.99 test accuracy instead of 0.78–0.87.

The full-context model's weights (:func:`init_relu_weights`) are drawn with He's fan-in scaling
and each residual block starts as the identity: with torch's default initialisation and no
normalisation, every layer shrank the signal by about half, so after the encoder and the two
MLPs the four candidates' scores differed by about 1e-4 at the start, the loss sat at ln 4 and
the model learned nothing in three epochs of a 10,000-puzzle split (measured: training
accuracy 0.24-0.25); with it the scores start apart (spread about 0.1) and the training loss
falls from the first epoch.

- :class:`SmallCNN`: four 3×3 convolutions (stride 2, ReLU), global average pool, a linear
  map — the spatial-reasoning paper's "4-layer CNN" recogniser, also the blind
  model's encoder;
- :class:`ResEncoder`: a small ResNet (stem, three stages of one residual block each, 8/16/32
  channels), global average pool, a linear map;
- :class:`BlindNet`: UA's context-blind model: each answer scored alone by SmallCNN (8-32
  channels: narrow enough not to memorise the train glyphs, which a split's disjoint hold-out
  keeps out of val and test) + MLP;
- :class:`RowRelationNet`: the full-context model: frame embeddings → row embeddings (an MLP
  over the concatenated frames of a row, positions kept) → a relation MLP over all rows with
  the candidate completing the last one. ``visible`` masks context frames (partial inputs):
  a masked frame's embedding is zero;
- :class:`PairNet` (CNN+MLP), :class:`PiecesConcatNet` (CNN+MLP over concatenated piece
  vectors), :class:`PiecesMaxNet` (CNN+Max), :class:`SiameseNet` (cosine similarity):
  the spatial-reasoning paper's §4 models.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

EMBED = 64


def _conv(cin: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1), nn.ReLU(inplace=True))


class SmallCNN(nn.Module):
    """(M, 80, 80) ink → (M, out_dim)."""

    def __init__(self, out_dim: int = EMBED, width: int = 16) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _conv(1, width, 2),
            _conv(width, 2 * width, 2),
            _conv(2 * width, 4 * width, 2),
            _conv(4 * width, 4 * width, 2),
        )
        self.out = nn.Linear(4 * width, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.avg_pool2d(x.unsqueeze(1), 2)
        x = self.features(x).mean(dim=(2, 3))
        return self.out(x)


class _Residual(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(channels, channels, 3, padding=1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.body(x))


class ResEncoder(nn.Module):
    """A small ResNet: (M, 80, 80) ink → (M, out_dim)."""

    def __init__(self, out_dim: int = EMBED, widths: Sequence[int] = (8, 16, 32)) -> None:
        super().__init__()
        layers: list[nn.Module] = [_conv(1, widths[0], 2), _Residual(widths[0])]
        for cin, cout in itertools.pairwise(widths):
            layers += [_conv(cin, cout, 2), _Residual(cout)]
        self.features = nn.Sequential(*layers)
        self.out = nn.Linear(widths[-1], out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.avg_pool2d(x.unsqueeze(1), 2)
        return self.out(self.features(x).mean(dim=(2, 3)))


def _mlp(sizes: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


def init_relu_weights(net: nn.Module) -> nn.Module:
    """He (fan-in, ReLU gain) normal weights and zero biases for every convolution and linear
    map; the last convolution of every residual block zero, so the block starts as the
    identity. Returns ``net``."""
    for m in net.modules():
        if isinstance(m, nn.Conv2d | nn.Linear):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    for m in net.modules():
        if isinstance(m, _Residual):
            last = m.body[-1]
            assert isinstance(last, nn.Conv2d)
            nn.init.zeros_(last.weight)
    return net


def _encode(encoder: nn.Module, frames: torch.Tensor) -> torch.Tensor:
    """(B, K, 80, 80) → (B, K, d)."""
    b, k = frames.shape[:2]
    return encoder(frames.reshape(b * k, *frames.shape[2:])).reshape(b, k, -1)


def encode_unique(encoder: nn.Module, bank_u8: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The embeddings of frames given by index into a bank of distinct frames: ``bank_u8``
    (F, 80, 80) ``uint8`` ink, ``ids`` any shape of indices into it → ``(*ids.shape, d)``.

    Each distinct frame of the batch goes through ``encoder`` once and its embedding is
    gathered for every place it appears (gradients add up over those places, exactly as if
    each copy had been encoded on its own). Glyph puzzles reuse a few hundred glyph images:
    a batch of 64 two-row puzzles holds 576 frames but about 180 distinct ones."""
    uniq, inverse = torch.unique(ids.reshape(-1), return_inverse=True)
    emb = encoder(bank_u8[uniq].float().div_(255.0))
    return emb[inverse].reshape(*ids.shape, emb.shape[-1])


class BlindNet(nn.Module):
    """Scores each answer alone: (B, A, 80, 80) → (B, A)."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.encoder = SmallCNN(EMBED, width)
        self.head = _mlp((EMBED, EMBED, 1))

    def forward(self, answers: torch.Tensor) -> torch.Tensor:
        return self.score(_encode(self.encoder, answers))

    def score(self, e_ans: torch.Tensor) -> torch.Tensor:
        """The answers' scores (B, A) from their embeddings (B, A, d)."""
        return self.head(F.relu(e_ans)).squeeze(-1)


class RowRelationNet(nn.Module):
    """Scores each candidate as the completion of the last row, given the rows before it.

    ``rows`` is the number of given context frames per row (the last row lacks the answer);
    ``visible`` the context indices the model may see (None: all)."""

    def __init__(
        self, rows: Sequence[int], visible: Sequence[int] | None = None, row_dim: int = 128
    ) -> None:
        super().__init__()
        self.rows = tuple(int(r) for r in rows)
        self.row_length = self.rows[-1] + 1
        if any(r != self.row_length for r in self.rows[:-1]):
            raise ValueError(f"rows {self.rows}: every full row needs {self.row_length} frames")
        n_ctx = sum(self.rows)
        self.visible = tuple(range(n_ctx)) if visible is None else tuple(sorted(visible))
        self.encoder = ResEncoder(EMBED)
        self.row = _mlp((self.row_length * EMBED, row_dim, row_dim))
        self.relation = _mlp((len(self.rows) * row_dim, row_dim, 1))
        init_relu_weights(self)

    def forward(self, context: torch.Tensor | None, answers: torch.Tensor) -> torch.Tensor:
        e_ans = _encode(self.encoder, answers)  # (B, A, d)
        e_vis = None
        if self.visible and context is not None:
            e_vis = _encode(self.encoder, context[:, list(self.visible)])
        return self.relate(e_vis, e_ans)

    def relate(self, e_vis: torch.Tensor | None, e_ans: torch.Tensor) -> torch.Tensor:
        """The candidates' scores (B, A) from the embeddings of the visible context frames
        (B, len(visible), d; None: none visible) and of the answers (B, A, d)."""
        b, a = e_ans.shape[:2]
        n_ctx = sum(self.rows)
        # a masked frame's embedding is zero; built without writing into a tensor, so that
        # torch.func.vmap can run an ensemble of these nets (TorchBaseline.fit_members)
        zero = torch.zeros_like(e_ans[:, 0])
        seen = {v: j for j, v in enumerate(self.visible)} if e_vis is not None else {}
        e_ctx = torch.stack([e_vis[:, seen[i]] if i in seen else zero for i in range(n_ctx)], 1)
        starts = [sum(self.rows[:i]) for i in range(len(self.rows))]
        done = []
        for start, k in zip(starts[:-1], self.rows[:-1], strict=True):
            r = F.relu(self.row(e_ctx[:, start : start + k].reshape(b, -1)))
            done.append(r.unsqueeze(1).expand(b, a, -1))
        last = e_ctx[:, starts[-1] :]  # (B, k, d)
        last = torch.cat([last.unsqueeze(1).expand(b, a, -1, -1), e_ans.unsqueeze(2)], dim=2)
        r_last = F.relu(self.row(last.reshape(b, a, -1)))
        return self.relation(torch.cat([*done, r_last], dim=-1)).squeeze(-1)


class PairNet(nn.Module):
    """CNN+MLP (rotation): s = MLP(f(Q) ‖ f(C)), one encoder for both."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = SmallCNN(EMBED)
        self.score = _mlp((2 * EMBED, EMBED, 1))

    def forward(self, question: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
        b, a = answers.shape[:2]
        vq = self.encoder(question).unsqueeze(1).expand(b, a, -1)
        vc = _encode(self.encoder, answers)
        return self.score(F.relu(torch.cat([vq, vc], dim=-1))).squeeze(-1)


class SiameseNet(nn.Module):
    """Siamese (rotation): cosine similarity of f(Q) and f(C); trained with binary cross
    entropy on "is a rotation of the question"; the answer is the least similar view."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = SmallCNN(EMBED)
        self.scale = nn.Parameter(torch.tensor(5.0))
        self.bias = nn.Parameter(torch.tensor(0.0))

    def similarity(self, question: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
        b, a = answers.shape[:2]
        vq = self.encoder(question).unsqueeze(1).expand(b, a, -1)
        vc = _encode(self.encoder, answers)
        return F.cosine_similarity(vq, vc, dim=-1)

    def forward(self, question: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
        """Logits of "same shape" per candidate, (B, A)."""
        return self.scale * self.similarity(question, answers) + self.bias


class _PiecesNet(nn.Module):
    """Question recogniser f1, piece recogniser f2 (the paper uses two for composition)."""

    def __init__(self) -> None:
        super().__init__()
        self.question_encoder = SmallCNN(EMBED)
        self.encoder = SmallCNN(EMBED)

    def _pieces(
        self, pieces: torch.Tensor, counts: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, A, M, 80, 80) → the piece vectors (B, A, M, d) and which are real (B, A, M)."""
        b, a, m = pieces.shape[:3]
        v = self.encoder(pieces.reshape(b * a * m, *pieces.shape[3:])).reshape(b, a, m, -1)
        present = torch.arange(m, device=v.device).view(1, 1, m) < counts.unsqueeze(-1)
        return v, present

    def _scores(self, question: torch.Tensor, vc: torch.Tensor) -> torch.Tensor:
        """s = MLP(vq ‖ vc) for each candidate vector vc (B, A, d)."""
        b, a = vc.shape[:2]
        vq = self.question_encoder(question).unsqueeze(1).expand(b, a, -1)
        return self.score(F.relu(torch.cat([vq, vc], dim=-1))).squeeze(-1)


class PiecesConcatNet(_PiecesNet):
    """CNN+MLP (composition): the piece vectors fill ``slots`` (empty ones zero), in a random
    order while training; an MLP makes the candidate vector; s = MLP(vq ‖ vc)."""

    def __init__(self, slots: int) -> None:
        super().__init__()
        self.slots = slots
        self.candidate = _mlp((slots * EMBED, EMBED))
        self.score = _mlp((2 * EMBED, EMBED, 1))

    def forward(
        self, question: torch.Tensor, pieces: torch.Tensor, counts: torch.Tensor
    ) -> torch.Tensor:
        b, a, m = pieces.shape[:3]
        v, present = self._pieces(pieces, counts)
        v = v * present.unsqueeze(-1)
        if self.training:
            order = torch.argsort(torch.rand(b, a, m, device=v.device), dim=-1)
            v = torch.gather(v, 2, order.unsqueeze(-1).expand_as(v))
        return self._scores(question, F.relu(self.candidate(v.reshape(b, a, -1))))


class PiecesMaxNet(_PiecesNet):
    """CNN+Max (composition): the candidate vector is the dimension-wise maximum of its piece
    vectors; s = MLP(vq ‖ vc)."""

    def __init__(self) -> None:
        super().__init__()
        self.score = _mlp((2 * EMBED, EMBED, 1))

    def forward(
        self, question: torch.Tensor, pieces: torch.Tensor, counts: torch.Tensor
    ) -> torch.Tensor:
        v, present = self._pieces(pieces, counts)
        v = v.masked_fill(~present.unsqueeze(-1), float("-inf")).amax(dim=2)
        return self._scores(question, torch.where(torch.isfinite(v), v, torch.zeros_like(v)))


__all__ = [
    "EMBED",
    "BlindNet",
    "PairNet",
    "PiecesConcatNet",
    "PiecesMaxNet",
    "ResEncoder",
    "RowRelationNet",
    "SiameseNet",
    "SmallCNN",
    "encode_unique",
    "init_relu_weights",
]
