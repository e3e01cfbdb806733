"""The trained baselines and their training loop (torch; only :mod:`studio.baselines.run`
imports this module, inside a function).

**Training** (every trained model): Adam (learning rate 3e-3; 1e-3 for the full-context
architecture, whose deeper network learned faster and steadier with it), batches of 64 puzzles,
at most ``epochs`` epochs (default 10). After each epoch the validation loss (the mean negative
log-likelihood of the key) and accuracy are measured; the weights of the epoch with the lowest
validation loss so far are kept (an epoch counts as better when it lowers the loss by more than
:data:`MIN_DELTA`), and training stops when :data:`PATIENCE` epochs in a row did not: a model
that learns nothing (a context-blind model on a vetted split) stops after a few epochs, one that
learns keeps going while it improves. The loss is chosen over the accuracy because on a few
hundred validation puzzles the accuracy jumps by several points from epoch to epoch by chance
and kept resetting the patience. Without a validation part the running training loss decides.
``fixed_epochs=True`` trains exactly ``epochs`` epochs with no validation and keeps the last
weights (the cross-fitted halves reuse the epoch count the main fit chose). Each epoch's mean
loss, training accuracy (on the batches as they were trained), validation accuracy and
validation loss form the training curve. The loss is cross-entropy over the softmax of the
answers' scores (Siamese: binary cross-entropy per candidate, see
:class:`studio.baselines.nets.SiameseNet`).

**CUDA**: the forward passes run under ``torch.autocast`` in bfloat16 where the GPU supports
it (:func:`autocast`); the CPU path runs in float32, unchanged.

**Seeding**: ``torch.manual_seed(seed)`` before the weights are made; the batch order comes
from the ``numpy.random.Generator`` passed in; cuDNN runs deterministic, without autotuning.
On the CPU the same seed gives the same predictions.

**Cancellation**: ``should_stop()`` is asked before every batch; True raises
:class:`studio.baselines.BaselineCancelled`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from studio.baselines import BaselineCancelled
from studio.baselines.data import PuzzleArrays
from studio.baselines.nets import (
    BlindNet,
    PairNet,
    PiecesConcatNet,
    PiecesMaxNet,
    RowRelationNet,
    SiameseNet,
    encode_unique,
)

BATCH = 64
LEARNING_RATE = 3e-3
#: Epochs without a lower validation loss before training stops.
PATIENCE = 2
#: How much lower the validation loss must be to count as an improvement.
MIN_DELTA = 1e-4
EVAL_BATCH = 256

Tick = Callable[[float, str], None]


#: Puzzles per inference batch on a CUDA GPU (the CPU keeps :data:`EVAL_BATCH`).
CUDA_EVAL_BATCH = 4096


class DeviceData:
    """A source's arrays as ``uint8`` tensors on the training device, moved once and shared by
    every fit (converted to float ink per batch).

    Both speed-ups are asked for, not assumed: measured on one H100 (bench/gpu_bench.py,
    docs/benchmarks.md "Issue 26"), each made the default job slower than float32 eager on the
    same GPU. ``cuda_speedups`` (bfloat16 autocast and larger inference batches): 41.8 s
    against 29.3 s on 1,000 puzzles (the casts cost more than 8–32-channel convolutions save);
    ``compile`` (``torch.compile`` for the frame encoders, :attr:`compiled`): 105 s against
    36 s. Both apply on a CUDA device only; the CPU path stays float32 and eager.

    ``force_speedups`` takes the CUDA path's structure on any device (bfloat16 autocast on the
    device's own type, a compiled encoder with ``compile_backend``): the suite has no GPU, and
    a compiled module is not the module it wraps (it has no truth value, for one), so the path
    must run somewhere the tests can reach. ``compile_backend="aot_eager"`` traces as inductor
    would without generating C++ (seconds, not a minute, on the CPU)."""

    def __init__(
        self,
        data: PuzzleArrays,
        device: str,
        *,
        cuda_speedups: bool = False,
        compile: bool = False,
        force_speedups: bool = False,
        compile_backend: str = "inductor",
    ) -> None:
        self.data = data
        self.device = torch.device(device)
        self.cuda_speedups = bool(cuda_speedups)
        self.compile = bool(compile)
        self.force_speedups = bool(force_speedups)
        self.compile_backend = compile_backend
        if self.on_cuda and torch.cuda.is_available():  # the peak is this source's alone
            torch.cuda.reset_peak_memory_stats(self.device)
        self._tensors: dict[str, torch.Tensor] = {}
        self._bank: torch.Tensor | None = None
        self._ids: dict[str, torch.Tensor] = {}

    @property
    def on_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def mixed_precision(self) -> bool:
        """bfloat16 autocast: CUDA with the speed-ups on and a GPU that supports bfloat16
        (or ``force_speedups``)."""
        if self.force_speedups:
            return True
        return self.on_cuda and self.cuda_speedups and torch.cuda.is_bf16_supported()

    @property
    def compiled(self) -> bool:
        """``torch.compile`` for the frame encoders: CUDA with ``compile`` on (or
        ``force_speedups``)."""
        return self.force_speedups or (self.on_cuda and self.compile)

    def speedups(self) -> dict[str, Any]:
        """What the report says of the code path: autocast dtype, compiled or eager."""
        return {
            "autocast": "bfloat16" if self.mixed_precision else None,
            "compiled": self.compile_backend if self.compiled else None,
            "eval_batch": self.eval_batch,
        }

    @property
    def eval_batch(self) -> int:
        return CUDA_EVAL_BATCH if self.on_cuda and self.cuda_speedups else EVAL_BATCH

    def frame_bank(self) -> torch.Tensor:
        """(F, H, W) ``uint8``: every distinct context or answer frame once
        (:attr:`PuzzleArrays.frames_u8`), moved to the device in one transfer."""
        if self._bank is None:
            assert self.data.frames_u8 is not None
            self._bank = torch.from_numpy(np.ascontiguousarray(self.data.frames_u8)).to(self.device)
        return self._bank

    def frame_ids(self, name: str) -> torch.Tensor:
        """(n, K) indices into :meth:`frame_bank` of each puzzle's ``context`` or ``answers``
        frames."""
        t = self._ids.get(name)
        if t is None:
            ids = {"context": self.data.context_ids, "answers": self.data.answer_ids}.get(name)
            if ids is None:
                raise ValueError(f"the source has no {name}")
            t = self._ids[name] = torch.from_numpy(np.ascontiguousarray(ids)).to(self.device)
        return t

    def get(self, name: str) -> torch.Tensor:
        t = self._tensors.get(name)
        if t is None:
            arrays: dict[str, Any] = {
                "context": self.data.context_u8,
                "answers": self.data.answers_u8,
                "keys": self.data.keys,
                "pieces": self.data.pieces_u8,
                "piece_counts": self.data.piece_counts,
            }
            arr = arrays[name]
            if arr is None:
                raise ValueError(f"the source has no {name}")
            t = self._tensors[name] = torch.from_numpy(np.ascontiguousarray(arr)).to(self.device)
        return t

    def ink(self, name: str, idx: torch.Tensor) -> torch.Tensor:
        return self.get(name)[idx].float().div_(255.0)

    def answer_mask(self) -> torch.Tensor | None:
        """(N, A) bool on the device: each puzzle's own answer slots; None when every puzzle
        fills every slot (:attr:`PuzzleArrays.answer_counts`)."""
        if self.data.answer_counts is None:
            return None
        t = self._tensors.get("answer_mask")
        if t is None:
            mask = np.ascontiguousarray(self.data.answer_mask)
            t = self._tensors["answer_mask"] = torch.from_numpy(mask).to(self.device)
        return t


#: The score a blank answer slot gets: no softmax picks it, and no half-precision overflows.
BLANK_SCORE = -1.0e4


def masked_scores(dd: DeviceData, scores: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``scores`` (B, A) with the blank slots of short answer sets out of reach."""
    mask = dd.answer_mask()
    if mask is None:
        return scores
    return scores.masked_fill(~mask[idx], BLANK_SCORE)


@dataclass
class FitResult:
    """One training run: the curve, epochs run, the best epoch, the seconds spent in training
    steps and the puzzles they processed."""

    curve: list[dict[str, Any]] = field(default_factory=list)
    epochs: int = 0
    best_epoch: int = 0
    seconds: float = 0.0
    puzzles: int = 0


def seed_everything(seed: int) -> None:
    torch.manual_seed(int(seed))
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def autocast(device: torch.device | DeviceData) -> contextlib.AbstractContextManager[Any]:
    """bfloat16 autocast on a CUDA GPU that supports it (for :class:`DeviceData`: when its
    ``cuda_speedups`` are on); nothing anywhere else (the CPU path stays float32, so its
    predictions do not change)."""
    if isinstance(device, DeviceData):
        enabled, kind = device.mixed_precision, device.device.type
    else:
        enabled, kind = device.type == "cuda" and torch.cuda.is_bf16_supported(), device.type
    if enabled:
        return torch.autocast(device_type=kind, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class TorchBaseline:
    """A trained baseline: one network per fit. Subclasses say when they apply, build the
    network and compute raw outputs for a batch of puzzle indices."""

    id = ""
    trained = True
    encoder_attr = "encoder"
    learning_rate = LEARNING_RATE
    #: the loss is a softmax over the answers, so a blank slot's score is masked out of it
    #: (a per-answer loss, as the Siamese network's, masks only its choices)
    masks_loss = True

    def __init__(self) -> None:
        self.net: nn.Module | None = None
        #: the frame encoder as the forward passes call it (compiled on CUDA, see fit)
        self.encode_fn: Callable[[torch.Tensor], torch.Tensor] | None = None

    # ---- what subclasses define ---------------------------------------------------------
    def applies(self, data: PuzzleArrays) -> str | None:
        return None

    def build(self, data: PuzzleArrays) -> nn.Module:
        raise NotImplementedError

    def outputs(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        """Raw outputs, (B, A)."""
        raise NotImplementedError

    def loss(self, out: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(out, keys)

    def choice_scores(self, out: torch.Tensor) -> torch.Tensor:
        """Scores whose softmax is the probability of each answer being the key."""
        return out

    def encoder_fn(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """The frame encoder the forward passes call: the compiled one when :meth:`fit` made
        it. Never ``encode_fn or …``: a compiled module has no truth value (issue 26)."""
        if self.encode_fn is not None:
            return self.encode_fn
        assert self.net is not None, "fit() first"
        encoder: Callable[[torch.Tensor], torch.Tensor] = getattr(self.net, self.encoder_attr)
        return encoder

    # ---- training and prediction ---------------------------------------------------------
    def fit(
        self,
        dd: DeviceData,
        train_idx: Sequence[int],
        val_idx: Sequence[int],
        *,
        seed: int,
        rng: np.random.Generator,
        epochs: int,
        tick: Tick | None = None,
        should_stop: Callable[[], bool] | None = None,
        fixed_epochs: bool = False,
    ) -> FitResult:
        """Train a fresh network on ``train_idx``: early stopping on ``val_idx`` with the best
        epoch's weights restored, or exactly ``epochs`` epochs with ``fixed_epochs`` (module
        docstring)."""
        seed_everything(seed)
        net = self.net = self.build(dd.data).to(dd.device)
        encoder = getattr(net, self.encoder_attr, None)
        self.encode_fn = encoder
        if dd.compiled and isinstance(encoder, nn.Module):
            # a batch holds a varying number of distinct frames: compile for dynamic shapes
            self.encode_fn = torch.compile(encoder, dynamic=True, backend=dd.compile_backend)
        opt = torch.optim.Adam(net.parameters(), lr=self.learning_rate)
        keys = dd.get("keys")
        train_idx = np.asarray(train_idx, dtype=np.int64)
        n_batches = max(1, -(-len(train_idx) // BATCH))
        result = FitResult()
        best_loss = float("inf")
        best_state: dict[str, torch.Tensor] | None = None
        for epoch in range(1, epochs + 1):
            net.train()
            order = rng.permutation(train_idx)
            total_loss, correct, seen = 0.0, 0, 0
            _sync(dd.device)
            start = time.perf_counter()
            for b in range(n_batches):
                if should_stop is not None and should_stop():
                    raise BaselineCancelled()
                batch = torch.from_numpy(order[b * BATCH : (b + 1) * BATCH]).to(dd.device)
                if len(batch) == 0:
                    continue
                with autocast(dd):
                    out = self.outputs(dd, batch)
                    if self.masks_loss:  # a softmax over the answers: blank slots left out
                        out = masked_scores(dd, out, batch)
                    loss = self.loss(out.float(), keys[batch])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                with torch.no_grad():
                    total_loss += float(loss) * len(batch)
                    pred = masked_scores(dd, self.choice_scores(out), batch).argmax(dim=1)
                    correct += int((pred == keys[batch]).sum())
                    seen += len(batch)
                if tick is not None:
                    tick(((epoch - 1) + (b + 1) / n_batches) / epochs, f"epoch {epoch}/{epochs}")
            _sync(dd.device)
            result.seconds += time.perf_counter() - start
            result.puzzles += seen
            result.epochs = epoch
            train_acc = correct / seen if seen else 0.0
            validate = len(val_idx) > 0 and not fixed_epochs
            val_acc, val_loss = self.evaluate(dd, val_idx) if validate else (None, None)
            result.curve.append(
                {
                    "epoch": epoch,
                    "loss": round(total_loss / seen, 5) if seen else None,
                    "train_acc": round(train_acc, 4),
                    "val_acc": None if val_acc is None else round(val_acc, 4),
                    "val_loss": None if val_loss is None else round(val_loss, 5),
                }
            )
            if fixed_epochs:
                result.best_epoch = epoch
                continue
            score = val_loss if val_loss is not None else total_loss / max(seen, 1)
            if score < best_loss - MIN_DELTA:
                best_loss = score
                best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
                result.best_epoch = epoch
            elif epoch - result.best_epoch >= PATIENCE:
                break
        if best_state is not None and result.best_epoch != result.epochs:
            net.load_state_dict(best_state)
        return result

    @torch.no_grad()
    def predict(self, dd: DeviceData, idx: Sequence[int]) -> np.ndarray:
        """(len(idx), A) probabilities from the fitted network."""
        assert self.net is not None, "fit() first"
        self.net.eval()
        idx = np.asarray(idx, dtype=np.int64)
        out = []
        step = dd.eval_batch
        for start in range(0, len(idx), step):
            batch = torch.from_numpy(idx[start : start + step]).to(dd.device)
            with autocast(dd):
                scores = self.choice_scores(self.outputs(dd, batch))
            scores = masked_scores(dd, scores.float(), batch)
            out.append(torch.softmax(scores, dim=1).cpu().numpy())
        if not out:
            return np.zeros((0, dd.data.n_answers), np.float32)
        return np.concatenate(out)

    def evaluate(self, dd: DeviceData, idx: Sequence[int]) -> tuple[float, float]:
        """Accuracy and mean negative log-likelihood of the key on these puzzles."""
        probs = self.predict(dd, idx)
        if len(probs) == 0:
            return 0.0, 0.0
        keys = dd.data.keys[np.asarray(idx, dtype=np.int64)]
        p_key = probs[np.arange(len(keys)), keys]
        acc = float((probs.argmax(axis=1) == keys).mean())
        return acc, float(-np.log(np.clip(p_key, 1e-12, 1.0)).mean())

    @torch.no_grad()
    def embed(self, frames_u8: np.ndarray, device: str | torch.device = "cpu") -> np.ndarray:
        """The fitted frame encoder's features of (M, 80, 80) frames (perception probe)."""
        assert self.net is not None, "fit() first"
        self.net.eval()
        encoder = getattr(self.net, self.encoder_attr)
        dev = next(self.net.parameters()).device
        out = []
        for start in range(0, len(frames_u8), 512):
            x = torch.from_numpy(np.ascontiguousarray(frames_u8[start : start + 512])).to(dev)
            out.append(encoder(x.float().div_(255.0)).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 1), np.float32)


# ---- the models --------------------------------------------------------------------------------
class BlindBaseline(TorchBaseline):
    """UA's context-blind model: a small CNN scores each answer alone."""

    id = "blind"

    def build(self, data: PuzzleArrays) -> nn.Module:
        return BlindNet()

    def outputs(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        assert isinstance(self.net, BlindNet)
        encode = self.encoder_fn()
        return self.net.score(encode_unique(encode, dd.frame_bank(), dd.frame_ids("answers")[idx]))


class ContextBaseline(TorchBaseline):
    """The full-context model: ResNet-style encoder + relation module over the rows."""

    id = "context"
    learning_rate = 1e-3

    def visible(self, data: PuzzleArrays) -> list[int] | None:
        return None

    def applies(self, data: PuzzleArrays) -> str | None:
        if data.n_context == 0:
            return "the puzzles have no context (odd-one-out: the answers are the group)"
        return None

    def build(self, data: PuzzleArrays) -> nn.Module:
        return RowRelationNet(data.rows, self.visible(data))

    def outputs(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        """Each distinct frame of the batch is encoded once (:func:`encode_unique`)."""
        net = self.net
        assert isinstance(net, RowRelationNet)
        encode = self.encoder_fn()
        ids = dd.frame_ids("answers")[idx]
        vis = list(net.visible)
        if vis:
            ids = torch.cat([dd.frame_ids("context")[idx][:, vis], ids], dim=1)
        emb = encode_unique(encode, dd.frame_bank(), ids)
        return net.relate(emb[:, : len(vis)] if vis else None, emb[:, len(vis) :])


class PartialAnswers(ContextBaseline):
    """The context architecture with every context frame masked: answers only."""

    id = "partial-answers"

    def visible(self, data: PuzzleArrays) -> list[int] | None:
        return []


class PartialRow1(ContextBaseline):
    """The context architecture seeing only the first row (and each candidate)."""

    id = "partial-row1"

    def applies(self, data: PuzzleArrays) -> str | None:
        if len(data.rows) < 2:
            return "the context is one row: row-only inputs would be the full context"
        return None

    def visible(self, data: PuzzleArrays) -> list[int] | None:
        return data.row_indices()[0]


class PartialRow2(PartialRow1):
    """The context architecture seeing only the answer's own row (row 2 of a two-row or
    analogy puzzle, row 3 of a 3×3 matrix) and each candidate."""

    id = "partial-row2"

    def visible(self, data: PuzzleArrays) -> list[int] | None:
        return data.row_indices()[-1]


def _spatial(family_id: str, what: str = "spatial") -> bool:
    """Whether the spatial-reasoning models apply to a family: its definition's ``spatial``
    (or another of its flags, ``what``) says so; no family id is spelled out here."""
    from studio.plugins import family, registry

    return family_id in registry("families") and bool(getattr(family(family_id), what))


class CnnMlpBaseline(TorchBaseline):
    """CNN+MLP (spatial-reasoning paper §4.1.1 / §4.2.1)."""

    id = "cnn-mlp"

    def applies(self, data: PuzzleArrays) -> str | None:
        if not _spatial(data.family) or data.rows != (1,):
            return "a spatial-family model (polycube rotation, shape composition, cube nets)"
        return None

    def build(self, data: PuzzleArrays) -> nn.Module:
        if data.pieces_u8 is not None:
            return PiecesConcatNet(data.pieces_u8.shape[2])
        return PairNet()

    def outputs(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        question = dd.ink("context", idx)[:, 0]
        if isinstance(self.net, PiecesConcatNet):
            return self.net(question, dd.ink("pieces", idx), dd.get("piece_counts")[idx])
        assert isinstance(self.net, PairNet)
        return self.net(question, dd.ink("answers", idx))


class SiameseBaseline(TorchBaseline):
    """Siamese (spatial-reasoning paper §4.1.3): the least similar view is the answer."""

    id = "siamese"

    def applies(self, data: PuzzleArrays) -> str | None:
        if not _spatial(data.family, "rotation_views"):
            return "the rotation task's model (polycube rotation: which view is not a rotation)"
        return None

    #: published design: the key is the one view that is not a rotation; balanced: the only one
    key_is_odd = True

    def build(self, data: PuzzleArrays) -> nn.Module:
        self.key_is_odd = data.odd
        return SiameseNet()

    def outputs(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        assert isinstance(self.net, SiameseNet)
        return self.net(dd.ink("context", idx)[:, 0], dd.ink("answers", idx))

    masks_loss = False

    def loss(self, out: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        rows = torch.arange(len(keys), device=out.device)
        if self.key_is_odd:
            same = torch.ones_like(out)
            same[rows, keys] = 0.0
        else:
            same = torch.zeros_like(out)
            same[rows, keys] = 1.0
        return F.binary_cross_entropy_with_logits(out, same)

    def choice_scores(self, out: torch.Tensor) -> torch.Tensor:
        # the lowest "same" logit is the odd view; in the balanced design the highest is the key
        return -out if self.key_is_odd else out


class CnnMaxBaseline(TorchBaseline):
    """CNN+Max (spatial-reasoning paper §4.2.2): max-pooled piece vectors."""

    id = "cnn-max"

    def applies(self, data: PuzzleArrays) -> str | None:
        if data.pieces_u8 is None:
            return "needs candidates made of pieces (shape composition)"
        return None

    def build(self, data: PuzzleArrays) -> nn.Module:
        return PiecesMaxNet()

    def outputs(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        assert isinstance(self.net, PiecesMaxNet)
        question = dd.ink("context", idx)[:, 0]
        return self.net(question, dd.ink("pieces", idx), dd.get("piece_counts")[idx])


__all__ = [
    "CUDA_EVAL_BATCH",
    "BlindBaseline",
    "CnnMaxBaseline",
    "CnnMlpBaseline",
    "ContextBaseline",
    "DeviceData",
    "FitResult",
    "PartialAnswers",
    "PartialRow1",
    "PartialRow2",
    "SiameseBaseline",
    "TorchBaseline",
    "autocast",
    "seed_everything",
]


class _PublishedBaseline(TorchBaseline):
    """A published solver (:mod:`studio.baselines.published`): every context panel and each
    candidate through the net's panel encoder (each distinct frame once), then its scorer."""

    learning_rate = 1e-3

    def applies(self, data: PuzzleArrays) -> str | None:
        if data.n_context == 0:
            return "the puzzles have no context (odd-one-out: the answers are the group)"
        return None

    def outputs(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        net = self.net
        assert net is not None
        ids = torch.cat([dd.frame_ids("context")[idx], dd.frame_ids("answers")[idx]], dim=1)
        emb = encode_unique(self.encoder_fn(), dd.frame_bank(), ids)
        c = dd.data.n_context
        scores: torch.Tensor = net.score(emb[:, :c], emb[:, c:])  # type: ignore[operator]
        return scores


class ResNet18Baseline(_PublishedBaseline):
    """ResNet-18 per panel + an MLP over the panels (UA's ResNet baseline)."""

    id = "resnet18"

    def build(self, data: PuzzleArrays) -> nn.Module:
        from studio.baselines.published import ResNet18

        return ResNet18(data.n_context)


class WReNBaseline(_PublishedBaseline):
    """WReN (Barrett et al. 2018): a relation network over the panels."""

    id = "wren"

    def build(self, data: PuzzleArrays) -> nn.Module:
        from studio.baselines.published import WReN

        return WReN(data.n_context)


class SCLBaseline(_PublishedBaseline):
    """SCL (Wu et al. 2020): attribute and relation networks shared across slices and rows."""

    id = "scl"

    def applies(self, data: PuzzleArrays) -> str | None:
        why = super().applies(data)
        if why is not None:
            return why
        length = data.rows[-1] + 1
        if any(r != length for r in data.rows[:-1]):
            return f"rows of unequal length {list(data.rows)} (SCL reads whole rows)"
        return None

    def build(self, data: PuzzleArrays) -> nn.Module:
        from studio.baselines.published import SCL

        return SCL(tuple(int(r) for r in data.rows))
