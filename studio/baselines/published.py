"""The published solvers (issue 26): networks the papers report, written from their
descriptions, so a lab can set the studio's table beside UA's Tables 1–2 (torch; imported by
:mod:`studio.baselines.trained`).

Every one sees the puzzle's panels one by one through a per-panel encoder (so each distinct
glyph image of a batch is encoded once, :func:`studio.baselines.nets.encode_unique`, and the
perception probe can read its features) and scores each candidate; the job's softmax over the
candidates and cross-entropy are the same as for the studio's own models.

- :class:`ResNet18` — He et al. 2016's ResNet-18 (a 7×7/2 stem and max-pool, four stages of
  two basic blocks each, batch normalisation), at a quarter of the published width by default
  (16-32-64-128 channels: 80×80 panels, and a CPU must train it on 1,000 puzzles in minutes);
  ``width=64`` is the paper's. As UA's "ResNet" baseline, an MLP reads the context panels'
  and the candidate's features, concatenated in panel order.
- :class:`WReN` — Barrett et al. 2018 (PGM): a 4-layer CNN per panel, its features tagged
  with the panel's one-hot position; a relation network g over every ordered pair of the
  context panels and the candidate, summed; f scores the candidate.
- :class:`SCL` — Wu et al. 2020's Scattering Compositional Learner: the panel features are
  split into ``groups`` attribute slices; one shared attribute network reads each slice
  across the panels of a row (the last row completed by the candidate), one shared relation
  network reads each row's attribute codes, and an MLP over every row's code scores the
  candidate. Sharing across slices and rows is what the paper calls scattering.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from studio.baselines.nets import EMBED, _mlp, init_relu_weights

__all__ = ["SCL", "ResNet18", "ResNet18Trunk", "WReN", "WReNEncoder"]


class _Basic(nn.Module):
    """ResNet's basic block: two 3×3 convolutions with batch normalisation, a projected
    shortcut where the shape changes."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.short: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.short(x))


class ResNet18Trunk(nn.Module):
    """(M, 80, 80) ink → (M, out_dim): ResNet-18's layers, ``width`` channels in the stem."""

    def __init__(self, out_dim: int = EMBED, width: int = 16) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(1, width, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        blocks: list[nn.Module] = []
        cin = width
        for stage, cout in enumerate((width, 2 * width, 4 * width, 8 * width)):
            for block in range(2):
                stride = 2 if stage > 0 and block == 0 else 1
                blocks.append(_Basic(cin, cout, stride))
                cin = cout
        self.stages = nn.Sequential(*blocks)
        self.out = nn.Linear(cin, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(x.unsqueeze(1)))
        return self.out(x.mean(dim=(2, 3)))


class ResNet18(nn.Module):
    """Scores each candidate from the features of the context panels and itself."""

    def __init__(self, n_context: int, width: int = 16) -> None:
        super().__init__()
        self.encoder = ResNet18Trunk(EMBED, width)
        self.head = _mlp(((n_context + 1) * EMBED, 256, 1))

    def score(self, e_ctx: torch.Tensor, e_ans: torch.Tensor) -> torch.Tensor:
        """(B, C, d) context and (B, A, d) candidate features → (B, A) scores."""
        b, a = e_ans.shape[:2]
        ctx = e_ctx.reshape(b, 1, -1).expand(b, a, -1)
        return self.head(F.relu(torch.cat([ctx, e_ans], dim=-1))).squeeze(-1)


class WReNEncoder(nn.Module):
    """WReN's panel CNN: four 3×3 convolutions of 32 channels, stride 2, then a linear map."""

    def __init__(self, out_dim: int = EMBED, width: int = 32) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 1
        for _ in range(4):
            layers += [nn.Conv2d(cin, width, 3, stride=2, padding=1), nn.ReLU(inplace=True)]
            cin = width
        self.features = nn.Sequential(*layers)
        self.out = nn.Linear(width * 5 * 5, out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.features(x.unsqueeze(1)).flatten(1))


class WReN(nn.Module):
    """g over every ordered pair of (context panels + the candidate), summed; f scores."""

    def __init__(self, n_context: int, hidden: int = 256) -> None:
        super().__init__()
        self.n_panels = n_context + 1
        self.encoder = WReNEncoder(EMBED)
        self.g = _mlp((2 * (EMBED + self.n_panels), hidden, hidden, hidden, hidden))
        self.f = _mlp((hidden, hidden, hidden, 1))
        init_relu_weights(self)

    def score(self, e_ctx: torch.Tensor, e_ans: torch.Tensor) -> torch.Tensor:
        b, a, d = e_ans.shape
        c = e_ctx.shape[1]
        panels = torch.cat([e_ctx.unsqueeze(1).expand(b, a, c, d), e_ans.unsqueeze(2)], dim=2)
        tags = torch.eye(self.n_panels, device=e_ans.device, dtype=e_ans.dtype)
        panels = torch.cat([panels, tags.expand(b, a, -1, -1)], dim=-1)  # (B, A, P, d + P)
        p = self.n_panels
        left = panels.unsqueeze(3).expand(b, a, p, p, -1)
        right = panels.unsqueeze(2).expand(b, a, p, p, -1)
        pairs = self.g(torch.cat([left, right], dim=-1)).sum(dim=(2, 3))
        return self.f(F.relu(pairs)).squeeze(-1)


class SCL(nn.Module):
    """Attribute network per feature slice across a row's panels, relation network per row,
    an MLP over the rows' codes; ``rows`` as :class:`~studio.baselines.nets.RowRelationNet`
    takes them (the last row lacks the candidate)."""

    def __init__(self, rows: tuple[int, ...], groups: int = 8, hidden: int = 32) -> None:
        super().__init__()
        self.rows = rows
        self.row_length = rows[-1] + 1
        if any(r != self.row_length for r in rows[:-1]):
            raise ValueError(f"rows {rows}: every full row needs {self.row_length} frames")
        if EMBED % groups:
            raise ValueError(f"{groups} groups do not divide {EMBED} features")
        self.groups = groups
        self.slice = EMBED // groups
        self.encoder = WReNEncoder(EMBED)
        self.attribute = _mlp((self.row_length * self.slice, hidden, hidden))
        self.relation = _mlp((groups * hidden, 4 * hidden, 4 * hidden))
        self.head = _mlp((len(rows) * 4 * hidden, 4 * hidden, 1))
        init_relu_weights(self)

    def _row_code(self, panels: torch.Tensor) -> torch.Tensor:
        """(..., L, d) panels of a row → (..., 4·hidden)."""
        lead = panels.shape[:-2]
        sliced = panels.reshape(*lead, self.row_length, self.groups, self.slice)
        per_group = sliced.transpose(-3, -2).reshape(*lead, self.groups, -1)
        attrs = F.relu(self.attribute(per_group))  # (..., groups, hidden)
        return F.relu(self.relation(attrs.reshape(*lead, -1)))

    def score(self, e_ctx: torch.Tensor, e_ans: torch.Tensor) -> torch.Tensor:
        b, a = e_ans.shape[:2]
        starts = [sum(self.rows[:i]) for i in range(len(self.rows))]
        codes = []
        for start, k in zip(starts[:-1], self.rows[:-1], strict=True):
            code = self._row_code(e_ctx[:, start : start + k])  # (B, h)
            codes.append(code.unsqueeze(1).expand(b, a, -1))
        last = e_ctx[:, starts[-1] :].unsqueeze(1).expand(b, a, -1, -1)
        codes.append(self._row_code(torch.cat([last, e_ans.unsqueeze(2)], dim=2)))
        return self.head(torch.cat(codes, dim=-1)).squeeze(-1)
