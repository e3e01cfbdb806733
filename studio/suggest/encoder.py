"""A glyph encoder learned from the project's own glyphs (issue 30): no downloaded weights.

A small CNN (four convolutions, a 128-d embedding) is trained self-supervised with SimCLR's
NT-Xent loss: two augmented views of each glyph must find each other among the batch. The
augmentations keep a glyph's identity — a small shift, a scale jitter, strokes thickened or
thinned (a fractional dilation / erosion), a little blur — and never flip or turn it (a mirrored
'b' is a 'd'). Glyphs are read at 40×40 (the studio's 80×80 renders, ink as 1.0, area-averaged),
which keeps thin strokes as grey and makes an epoch over 20,000 glyphs a few seconds' work per
core.

**Deterministic for a seed**: the weights come from ``torch.manual_seed(seed)``, every random
draw of the augmentations and the batch order from a ``torch.Generator`` seeded with it, and
training runs under ``torch.use_deterministic_algorithms(True)`` with a fixed thread count, so
two runs on one machine give the same weights bit for bit (``tests/suggest``).

torch is imported inside the functions only: importing this module costs nothing, and the
import-linter contract keeps torch out of the core (``studio.suggest`` sits beside
``studio.baselines`` in the layers).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = [
    "EncoderParams",
    "TrainedEncoder",
    "embed_images",
    "ink_stack",
    "load_training_state",
    "save_training_state",
    "train_encoder",
    "training_fingerprint",
]

#: (done, total) — batches of training, then of embedding
Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]

#: the side the encoder reads a glyph at (the 80×80 renders are area-averaged to it)
INPUT_SIDE = 40


@dataclass(frozen=True)
class EncoderParams:
    """How the encoder is trained; part of the stored encoder's version (a change retrains)."""

    seed: int = 0
    epochs: int = 4
    batch: int = 256
    embed_dim: int = 128
    proj_dim: int = 64
    width: int = 16
    lr: float = 2e-3
    temperature: float = 0.2
    #: torch threads while training and embedding (fixed, so that runs agree bit for bit)
    threads: int = 2

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EncoderParams:
        """The parameters a job or a stored encoder names, checked: a job queued by hand (or
        by another lab member) with ``"epochs": 0`` or ``"seed": "x"`` gets a clear
        :class:`~studio.core.errors.StudioError` naming the field, never a trained-nothing
        encoder or torch's own error."""
        from studio.core.errors import StudioError

        known = set(cls.__dataclass_fields__)
        values = {k: v for k, v in data.items() if k in known}
        for name, value in values.items():
            if cls.__dataclass_fields__[name].type in ("int", int):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise StudioError(f"encoder parameter {name!r} must be a whole number")
            elif isinstance(value, bool) or not isinstance(value, int | float):
                raise StudioError(f"encoder parameter {name!r} must be a number")
            if name != "seed" and not value > 0:
                raise StudioError(f"encoder parameter {name!r} must be above 0 (got {value})")
            if name == "seed" and value < 0:
                raise StudioError(f"encoder parameter 'seed' must be 0 or more (got {value})")
        return cls(**values)


@dataclass
class TrainedEncoder:
    """The weights (numpy, ``state_dict`` order) and what training measured."""

    params: EncoderParams
    weights: dict[str, np.ndarray]
    seconds: float
    losses: list[float]
    glyphs: int
    #: epochs taken from an interrupted training's state (``resume``), 0 for a fresh start
    resumed_from: int = 0


#: (the state after an epoch) — an interrupted training resumes from the last one given
OnEpoch = Callable[[dict[str, Any]], None]


def training_fingerprint(images: np.ndarray, params: EncoderParams) -> str:
    """What a training state belongs to: the glyphs' renders, in order, and the settings. A
    state of another fingerprint is not resumed (the fonts or the glyphs changed)."""
    import hashlib
    import json

    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps(params.to_json(), sort_keys=True).encode())
    h.update(str(images.shape).encode())
    h.update(np.ascontiguousarray(images).tobytes())
    return h.hexdigest()


def save_training_state(state: dict[str, Any], path: Any) -> None:
    """Write a training state (``train_encoder``'s ``on_epoch``) atomically, with torch's
    own format (tensors, numbers and lists only: read back with ``weights_only``)."""
    import io
    from pathlib import Path

    import torch

    from studio.core.fileio import atomic_write_bytes

    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write_bytes(Path(path), buf.getvalue())


def load_training_state(path: Any) -> dict[str, Any] | None:
    """A state :func:`save_training_state` wrote; None when it is missing or unreadable
    (the training then starts afresh, as it would have)."""
    import torch

    try:
        state = torch.load(path, weights_only=True)
    except Exception:  # missing, cut short, not torch's, not plain data: start afresh
        return None
    return state if isinstance(state, dict) and "epoch" in state else None


def ink_stack(images: np.ndarray) -> np.ndarray:
    """``N × 80 × 80`` uint8 renders (0 ink, 255 paper) as ``N × 40 × 40`` float32 ink
    (1.0 = ink), each 2×2 block averaged."""
    stack = np.asarray(images)
    if stack.ndim != 3:
        raise ValueError(f"expected an N×h×w stack, got shape {stack.shape}")
    ink = 1.0 - stack.astype(np.float32) / 255.0
    n, h, w = ink.shape
    fh, fw = max(1, h // INPUT_SIDE), max(1, w // INPUT_SIDE)
    ink = ink[:, : INPUT_SIDE * fh, : INPUT_SIDE * fw]
    return ink.reshape(n, INPUT_SIDE, fh, INPUT_SIDE, fw).mean(axis=(2, 4)).astype(np.float32)


def _net(params: EncoderParams) -> Any:
    import torch
    from torch import nn

    w = params.width

    class GlyphNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(1, w, 3, stride=1, padding=1),  # 40
                nn.BatchNorm2d(w),
                nn.ReLU(),
                nn.Conv2d(w, w * 2, 3, stride=2, padding=1),  # 20
                nn.BatchNorm2d(w * 2),
                nn.ReLU(),
                nn.Conv2d(w * 2, w * 4, 3, stride=2, padding=1),  # 10
                nn.BatchNorm2d(w * 4),
                nn.ReLU(),
                nn.Conv2d(w * 4, params.embed_dim, 3, stride=2, padding=1),  # 5
                nn.BatchNorm2d(params.embed_dim),
                nn.ReLU(),
            )
            self.head = nn.Sequential(
                nn.Linear(params.embed_dim, params.embed_dim),
                nn.ReLU(),
                nn.Linear(params.embed_dim, params.proj_dim),
            )

        def embed(self, x: torch.Tensor) -> torch.Tensor:
            h = self.body(x)
            # mean and max over the 5×5 cells, summed: where the strokes are and how strong
            return h.mean(dim=(2, 3)) + h.amax(dim=(2, 3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.embed(x))

    return GlyphNet()


def _augment(x: Any, gen: Any) -> Any:
    """One identity-keeping view of each glyph of ``x`` (``B × 1 × S × S`` ink in [0, 1])."""
    import torch
    import torch.nn.functional as F

    b = x.shape[0]

    def uniform(lo: float, hi: float, *shape: int) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(b, *shape, generator=gen)

    # stroke weight: blend towards a 3×3 dilation (thicker) or erosion (thinner)
    amount = uniform(-1.0, 1.0, 1, 1, 1)
    thick = F.max_pool2d(x, 3, stride=1, padding=1)
    thin = -F.max_pool2d(-x, 3, stride=1, padding=1)
    x = torch.where(amount > 0, x + amount * (thick - x), x + (-amount) * (thin - x))
    # scale jitter and a small shift (no flip, no turn): an affine grid per glyph
    scale = uniform(0.85, 1.15, 1)
    shift = uniform(-0.12, 0.12, 2)
    theta = torch.zeros(b, 2, 3)
    theta[:, 0, 0] = 1.0 / scale[:, 0]
    theta[:, 1, 1] = 1.0 / scale[:, 0]
    theta[:, :, 2] = shift
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    x = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    # a little blur on some glyphs
    kernel = torch.tensor([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]) / 16.0
    blurred = F.conv2d(x, kernel.view(1, 1, 3, 3), padding=1)
    mix = uniform(0.0, 1.0, 1, 1, 1) * (uniform(0.0, 1.0, 1, 1, 1) < 0.5)
    return (x + mix * (blurred - x)).clamp(0.0, 1.0)


def _nt_xent(z1: Any, z2: Any, temperature: float) -> Any:
    import torch
    import torch.nn.functional as F

    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = z1.shape[0]
    sim = z @ z.t() / temperature
    sim.fill_diagonal_(float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return F.cross_entropy(sim, target)


class _Deterministic:
    """torch's deterministic algorithms and a fixed thread count, restored on exit."""

    def __init__(self, threads: int) -> None:
        self.threads = max(1, int(threads))

    def __enter__(self) -> None:
        import torch

        self._was = torch.are_deterministic_algorithms_enabled()
        self._threads = torch.get_num_threads()
        torch.use_deterministic_algorithms(True)
        torch.set_num_threads(self.threads)

    def __exit__(self, *exc: object) -> None:
        import torch

        torch.use_deterministic_algorithms(self._was)
        torch.set_num_threads(self._threads)


def train_encoder(
    images: np.ndarray,
    params: EncoderParams | None = None,
    *,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    on_epoch: OnEpoch | None = None,
    resume: dict[str, Any] | None = None,
) -> TrainedEncoder:
    """Train the encoder on ``images`` (``N × 80 × 80`` renders, the project's glyphs in a
    fixed order). ``progress(done, total)`` after each batch; ``should_stop()`` is polled
    between batches and a True raises :class:`studio.core.errors.StudioError` (cancelled).

    ``on_epoch(state)`` after each epoch but the last: the weights, Adam's and the
    schedule's state, the augmentations' random state and the losses so far. Given back as
    ``resume``, training goes on from there and ends with the weights an uninterrupted run
    gives, bit for bit; a state of other glyphs or settings
    (:func:`training_fingerprint`) is ignored."""
    import torch

    from studio.core.errors import StudioError

    params = params or EncoderParams()
    fingerprint = training_fingerprint(images, params) if (on_epoch or resume) else ""
    if resume is not None and resume.get("fingerprint") != fingerprint:
        resume = None
    data = torch.from_numpy(ink_stack(images)).unsqueeze(1)
    n = data.shape[0]
    if n < 2:
        raise StudioError("the encoder needs at least two rendered glyphs to learn from")
    batch = min(params.batch, n)
    per_epoch = max(1, n // batch)  # whole batches only: NT-Xent needs the other glyphs
    total = per_epoch * params.epochs
    losses: list[float] = []
    t0 = time.perf_counter()
    first = 0

    def fresh() -> tuple[Any, Any, Any, Any]:
        torch.manual_seed(params.seed)
        gen = torch.Generator().manual_seed(params.seed)
        net = _net(params)
        opt = torch.optim.Adam(net.parameters(), lr=params.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, total))
        return gen, net, opt, sched

    with _Deterministic(params.threads):
        gen, net, opt, sched = fresh()
        if resume is not None:
            try:
                net.load_state_dict(resume["net"])
                opt.load_state_dict(resume["opt"])
                sched.load_state_dict(resume["sched"])
                gen.set_state(resume["gen"])
                first = int(resume["epoch"])
                losses = [float(v) for v in resume["losses"]]
                t0 -= float(resume.get("seconds", 0.0))
                if not 0 < first < params.epochs:
                    raise ValueError(f"epoch {first} of {params.epochs}")
            except (KeyError, RuntimeError, ValueError, TypeError):
                # a state that reads but does not fit (another torch's generator, a key
                # missing): afresh, as if there were none
                gen, net, opt, sched = fresh()
                first, losses, t0 = 0, [], time.perf_counter()
        net.train()
        done = first * per_epoch
        for epoch in range(first, params.epochs):
            if on_epoch is not None and epoch > first:  # the epochs before it are done
                # copies: the live tensors go on training after the call returns
                on_epoch(
                    copy.deepcopy(
                        {
                            "epoch": epoch,
                            "fingerprint": fingerprint,
                            "net": net.state_dict(),
                            "opt": opt.state_dict(),
                            "sched": sched.state_dict(),
                            "gen": gen.get_state(),
                            "losses": list(losses),
                            "seconds": time.perf_counter() - t0,
                        }
                    )
                )
            order = torch.randperm(n, generator=gen)
            for b in range(per_epoch):
                if should_stop is not None and should_stop():
                    raise StudioError("the encoder's training was cancelled")
                x = data[order[b * batch : (b + 1) * batch]]
                loss = _nt_xent(net(_augment(x, gen)), net(_augment(x, gen)), params.temperature)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                sched.step()
                losses.append(float(loss.detach()))
                done += 1
                if progress is not None:
                    progress(done, total)
        weights = {k: v.detach().cpu().numpy().copy() for k, v in net.state_dict().items()}
    return TrainedEncoder(
        params=params,
        weights=weights,
        seconds=time.perf_counter() - t0,
        losses=[round(v, 5) for v in losses],
        glyphs=n,
        resumed_from=first,
    )


def embed_images(
    images: np.ndarray,
    params: EncoderParams,
    weights: dict[str, np.ndarray],
    *,
    progress: Progress | None = None,
) -> np.ndarray:
    """The ``N × embed_dim`` float32 embeddings of ``images`` under the stored weights (eval
    mode: the batch norms use their running statistics, so a glyph's embedding does not
    depend on the others)."""
    import torch

    if len(images) == 0:
        return np.zeros((0, params.embed_dim), np.float32)
    data = torch.from_numpy(ink_stack(images)).unsqueeze(1)
    out: list[np.ndarray] = []
    chunk = 1024
    total = math.ceil(data.shape[0] / chunk)
    with _Deterministic(params.threads), torch.no_grad():
        net = _net(params)
        net.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in weights.items()})
        net.eval()
        for i in range(total):
            out.append(net.embed(data[i * chunk : (i + 1) * chunk]).numpy())
            if progress is not None:
                progress(i + 1, total)
    return np.concatenate(out).astype(np.float32)
