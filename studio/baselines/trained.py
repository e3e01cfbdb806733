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
import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from studio.baselines import BaselineCancelled, Steps, run_steps
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
        ensemble: str | None = None,
        cuda_graphs: bool = True,
    ) -> None:
        if ensemble not in (None, "loop", "vmap"):
            raise ValueError(f"ensemble: loop or vmap, not {ensemble!r}")
        self._ensemble = ensemble
        self.cuda_graphs = bool(cuda_graphs)
        #: how the batched steps ran: captured CUDA graphs, or why not (the report says)
        self.graph_runs = 0
        self.graph_failure: str | None = None
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

    @property
    def ensemble(self) -> str:
        """How the members of an ensemble run their forward passes
        (:meth:`TorchBaseline.fit_members`): ``vmap`` (one batched call) on a GPU, where a
        step is bound by kernel launches; ``loop`` (one member after another, each batch's
        distinct frames encoded once) on the CPU, where it is bound by arithmetic, and for a
        compiled encoder. Asked for by name in the suite, to run either anywhere."""
        if self._ensemble is not None:
            return self._ensemble
        return "vmap" if self.on_cuda and not self.compiled else "loop"

    def speedups(self) -> dict[str, Any]:
        """What the report says of the code path: autocast dtype, compiled or eager, how an
        ensemble's members run."""
        return {
            "autocast": "bfloat16" if self.mixed_precision else None,
            "compiled": self.compile_backend if self.compiled else None,
            "eval_batch": self.eval_batch,
            "ensemble": self.ensemble,
            "cuda_graphs": self.graph_runs > 0,
            **({"cuda_graph_failure": self.graph_failure} if self.graph_failure else {}),
        }

    @property
    def graphs(self) -> bool:
        """Whether a batched (``vmap``) training step is captured once as a CUDA graph and
        replayed: on a GPU, in float32, unless turned off. A step of these networks is a few
        hundred small kernels; launching them one by one from Python kept the GPU 5–20 %
        busy (issue 26), a replay launches them all at once."""
        return (
            self.on_cuda
            and self.cuda_graphs
            and self.ensemble == "vmap"
            and not self.mixed_precision
            and self.graph_failure is None
        )

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

    def whole_bank(self, slots: int) -> bool:
        """Whether a batch of ``slots`` frames encodes the whole bank instead
        (:meth:`bank_ink`): the bank holds no more frames than that."""
        frames = self.data.frames_u8
        return frames is not None and 0 < len(frames) <= slots

    def bank_ink(self) -> torch.Tensor:
        """(F, H, W) float ink of the whole :meth:`frame_bank`, made once.

        A batched step or evaluation encodes the whole bank when it holds fewer frames than
        the batch's slots (a glyph split: 263 distinct frames, against 576 slots in one
        member's batch of 64 two-row puzzles) and gathers each slot's embedding: no search
        for the batch's distinct frames (which waits on the GPU), and a fixed shape a CUDA
        graph can hold. The gradients add up over the places a frame appears, as when each
        copy is encoded."""
        t = self._tensors.get("bank_ink")
        if t is None:
            t = self._tensors["bank_ink"] = self.frame_bank().float().div_(255.0)
        return t

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

    def prepare(self) -> None:
        """Move every array a bank-frames model reads (the bank, its float ink, the frame
        indices, the keys, the answer mask) now, on the current stream, before models take
        turns on streams of their own (:meth:`studio.baselines.run._Runner.take_turns`):
        made lazily on one model's stream, another model's stream could read it before it
        was written."""
        if self.data.frames_u8 is not None:
            self.frame_bank()
            for name in ("context", "answers"):
                with contextlib.suppress(ValueError):
                    self.frame_ids(name)
            per_puzzle = sum(t.shape[1] for t in self._ids.values())
            if self.whole_bank(max(BATCH, self.eval_batch) * per_puzzle):
                self.bank_ink()
        self.get("keys")
        self.answer_mask()

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
    """Wait for the current stream (not the whole GPU: other models may be training on
    their own streams meanwhile, :func:`studio.baselines.run.run_baselines`)."""
    if device.type == "cuda":
        torch.cuda.current_stream(device).synchronize()


@dataclass
class Member:
    """One network of an ensemble (:meth:`TorchBaseline.fit_members`): its seed (initial
    weights), batch order, training puzzles and epochs (at most, with early stopping on the
    validation part; exactly, with ``fixed_epochs``)."""

    seed: int
    rng: np.random.Generator
    train_idx: np.ndarray
    epochs: int
    fixed_epochs: bool = False


class _Call(nn.Module):
    """A baseline's forward pass as a module, so ``torch.func.functional_call`` can run it
    with one member's weights: ``(dd, idx)`` through the baseline's :meth:`outputs`, or
    ``(frames, where)`` with ``frames=True``: the encoder over the frames, then the head
    over the embeddings ``where`` (B, K) picks (:attr:`TorchBaseline.bank_frames`)."""

    def __init__(self, baseline: TorchBaseline, net: nn.Module) -> None:
        super().__init__()
        self.net = net
        object.__setattr__(self, "_baseline", baseline)  # not a submodule

    def forward(self, *args: Any, frames: bool = False) -> torch.Tensor:
        baseline: TorchBaseline = self._baseline  # type: ignore[assignment]
        if frames:
            x, where = args
            emb = getattr(self.net, baseline.encoder_attr)(x)
            return baseline.head(self.net, emb[where])
        return baseline.outputs(*args)


def _vmap_members(
    stacked: dict[str, torch.Tensor],
    call: _Call,
    frames: torch.Tensor,
    where: torch.Tensor,
    *,
    shared: bool,
    own_where: bool = False,
) -> torch.Tensor:
    """(S, B, A): every member's encoder over ``frames`` (one stack per member, or one for
    all when ``shared``) and its head over the embeddings ``where`` picks ((B, K) for every
    member, or (S, B, K), one per member, with ``own_where``), in one ``vmap`` call."""
    from torch.func import functional_call, vmap

    params = {f"net.{name}": v for name, v in stacked.items()}

    def one(p: dict[str, torch.Tensor], x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return functional_call(call, p, (x, w), {"frames": True})

    dims = (0, None if shared else 0, 0 if own_where else None)
    out: torch.Tensor = vmap(one, in_dims=dims)(params, frames, where)
    return out


def _sub_tick(tick: Tick, start: float, span: float) -> Tick:
    return lambda f, msg: tick(start + span * f, msg)


def _adam_options(dd: DeviceData, graph: bool = False) -> dict[str, bool]:
    """One kernel per step for every parameter on a GPU (fused Adam; its step count kept on
    the GPU when the step is a CUDA graph); the multi-tensor loop on the CPU (rather than a
    Python loop over the parameters)."""
    if dd.on_cuda:
        return {"fused": True, "capturable": True} if graph else {"fused": True}
    return {"foreach": True}


class Adam:
    """Adam as ``torch.optim.Adam`` computes it — its functional form
    (``torch.optim.adam.adam``) with its defaults (betas 0.9 and 0.999, eps 1e-8, no weight
    decay) and the options :func:`_adam_options` gives — without ``torch.optim.Optimizer``
    around it: an Optimizer's first parameter group imports ``torch._dynamo``, which took
    6 s of a GPU job's start on the H200 server measured (issue 26), longer than the
    training of a model. The state is made at once (the Optimizer makes the same zeros at
    the first step); ``state`` maps each parameter to its ``step``, ``exp_avg`` and
    ``exp_avg_sq`` as the Optimizer's does."""

    def __init__(
        self,
        params: Sequence[torch.Tensor],
        lr: float,
        *,
        fused: bool = False,
        foreach: bool = False,
        capturable: bool = False,
    ) -> None:
        self.params = list(params)
        self.lr = float(lr)
        self.fused, self.foreach, self.capturable = fused, foreach, capturable
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}
        for p in self.params:
            on_device = fused or capturable  # the step count where the parameter is
            step = torch.zeros((), dtype=torch.float32, device=p.device if on_device else None)
            self.state[p] = {
                "step": step,
                "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format),
            }

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        from torch.optim.adam import adam

        live = [p for p in self.params if p.grad is not None]
        if not live:
            return
        states = [self.state[p] for p in live]
        adam(
            live,
            [p.grad for p in live],  # type: ignore[misc]
            [st["exp_avg"] for st in states],
            [st["exp_avg_sq"] for st in states],
            [],
            [st["step"] for st in states],
            foreach=self.foreach or None,
            capturable=self.capturable,
            differentiable=False,
            fused=self.fused or None,
            grad_scale=None,
            found_inf=None,
            has_complex=False,
            amsgrad=False,
            beta1=0.9,
            beta2=0.999,
            lr=self.lr,
            weight_decay=0.0,
            eps=1e-8,
            maximize=False,
        )


class _BatchedStep:
    """One optimiser step of every member of a batched (``vmap``) ensemble, read from static
    buffers (the batch's puzzles and weights), so that it can be captured once as a CUDA
    graph and replayed (:attr:`DeviceData.graphs`); eager otherwise. The running loss and
    hit counts per member are summed on the device.

    Capture follows torch's recipe (warm-up steps on a side stream, then capture): the
    warm-up steps run with every weight 0, so their gradients are 0 and Adam, its moments
    still 0, moves no parameter; its step counts are then set back to 0, so the first real
    step is Adam's first, as in the eager path."""

    def __init__(
        self,
        baseline: TorchBaseline,
        dd: DeviceData,
        stacked: dict[str, torch.Tensor],
        call: _Call,
        opt: Adam,
        size: int,
        graph: bool,
    ) -> None:
        self.baseline, self.dd, self.stacked, self.call, self.opt = baseline, dd, stacked, call, opt
        self.keys = dd.get("keys")
        self.idx = torch.zeros((size, BATCH), dtype=torch.int64, device=dd.device)
        self.weight = torch.zeros((size, BATCH), device=dd.device)
        self.total = torch.zeros(size, device=dd.device)
        self.right = torch.zeros(size, device=dd.device)
        self.graph: torch.cuda.CUDAGraph | None = None
        if dd.whole_bank(BATCH * baseline.frame_ids(dd, self.idx[0, :1]).shape[-1]):
            dd.bank_ink()  # encoded whole at each step: made before a capture, outside it
        if graph:
            try:
                self.graph = self._capture()
            except Exception as e:  # any failure to capture: the eager step, and say why
                dd.graph_failure = f"{type(e).__name__}: {e}"[:300]
                self.graph = None
                self._reset()

    def _body(self) -> None:
        b = self.baseline
        with autocast(self.dd):
            out = b._vmapped_outputs(self.dd, self.stacked, self.call, self.idx)
            loss, nll = b._weighted_loss(self.dd, out, self.idx, self.weight, self.keys)
        loss.backward()
        self.opt.step()
        with torch.no_grad():
            self.total += (nll * self.weight).sum(dim=1)
            pred = masked_scores_stacked(self.dd, b.choice_scores(out.detach()), self.idx)
            hit = (pred.argmax(dim=2) == self.keys[self.idx]).float() * self.weight
            self.right += hit.sum(dim=1)

    def _reset(self) -> None:
        """Adam's state and the sums as before any step (in place: a graph holds them)."""
        for state in self.opt.state.values():
            for value in state.values():
                if isinstance(value, torch.Tensor):
                    value.zero_()
        self.total.zero_()
        self.right.zero_()

    def _capture(self) -> torch.cuda.CUDAGraph:
        self.weight.zero_()
        side = torch.cuda.Stream(self.dd.device)
        side.wait_stream(torch.cuda.current_stream(self.dd.device))
        with torch.cuda.stream(side):
            for _ in range(3):
                self.opt.zero_grad(set_to_none=True)
                self._body()
        torch.cuda.current_stream(self.dd.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)
        # on a capture stream of its own, waited for alone: other models' streams may be
        # busy meanwhile
        capture = torch.cuda.Stream(self.dd.device)
        with torch.cuda.graph(graph, stream=capture):
            self._body()
        capture.synchronize()
        self._reset()
        return graph

    def new_epoch(self) -> None:
        self.total.zero_()
        self.right.zero_()

    def __call__(self, idx: torch.Tensor, weight: torch.Tensor) -> None:
        self.idx.copy_(idx)
        self.weight.copy_(weight)
        if self.graph is not None:
            self.graph.replay()
            self.dd.graph_runs += 1
        else:
            self.opt.zero_grad(set_to_none=True)
            self._body()


def _batch_table(
    orders: Sequence[np.ndarray], active: Sequence[int], steps: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """An epoch's batches for every member, moved once: (S, steps·BATCH) puzzle indices
    (padding: puzzle 0) and weights (1 for a member's real puzzles, 0 for padding and for
    members that stopped)."""
    width = steps * BATCH
    table = np.zeros((len(orders), width), np.int64)
    weight = np.zeros((len(orders), width), np.float32)
    for s in active:
        n = min(len(orders[s]), width)
        table[s, :n] = orders[s][:n]
        weight[s, :n] = 1.0
    return torch.from_numpy(table).to(device), torch.from_numpy(weight).to(device)


def masked_scores_stacked(dd: DeviceData, scores: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """:func:`masked_scores` for (S, B, A) scores of (S, B) puzzles."""
    mask = dd.answer_mask()
    if mask is None:
        return scores
    return scores.masked_fill(~mask[idx], BLANK_SCORE)


def accuracy_and_loss(
    probs: dict[int, np.ndarray], keys: np.ndarray
) -> dict[int, tuple[float, float]]:
    """Per member, the accuracy and the mean negative log-likelihood of the key of its
    (n, A) probabilities (as :meth:`TorchBaseline.evaluate` measures one network)."""
    rows = np.arange(len(keys))
    out = {}
    for s, p in probs.items():
        p_key = p[rows, keys]
        acc = float((p.argmax(axis=1) == keys).mean())
        out[s] = (acc, float(-np.log(np.clip(p_key, 1e-12, 1.0)).mean()))
    return out


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

    #: the forward pass is the encoder over bank frames (:meth:`frame_ids`) and a head over
    #: their embeddings (:meth:`head`): such a model's members can run in one batched call
    bank_frames = False

    def batches(self, net: nn.Module) -> bool:
        """Whether this model's members may run in one batched call: a bank-frames model
        with the softmax loss (the batched step weighs each puzzle's cross-entropy) and no
        batch normalisation (padded rows would join a batch's statistics, and the capture's
        warm-up steps would move its running statistics)."""
        if not self.bank_frames or type(self).loss is not TorchBaseline.loss:
            return False
        return not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in net.modules())

    # ---- what subclasses define ---------------------------------------------------------
    def applies(self, data: PuzzleArrays) -> str | None:
        return None

    def build(self, data: PuzzleArrays) -> nn.Module:
        raise NotImplementedError

    def frame_ids(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        """(B, K) rows of :meth:`DeviceData.frame_bank` the puzzles' scores read."""
        raise NotImplementedError

    def head(self, net: nn.Module, emb: torch.Tensor) -> torch.Tensor:
        """(B, A) raw outputs from the (B, K) frames' embeddings (B, K, d)."""
        raise NotImplementedError

    def outputs(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        """Raw outputs, (B, A): for a bank-frames model, each distinct frame of the batch
        encoded once (:func:`encode_unique`), then the head."""
        assert self.net is not None and self.bank_frames
        ids = self.frame_ids(dd, idx)
        return self.head(self.net, encode_unique(self.encoder_fn(), dd.frame_bank(), ids))

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
        docstring). An ensemble of one (:meth:`fit_members`)."""
        member = Member(seed, rng, np.asarray(train_idx, dtype=np.int64), epochs, fixed_epochs)
        ((result, fitted),) = self.fit_members(dd, [member], val_idx, tick, should_stop)
        self.net, self.encode_fn = fitted.net, fitted.encode_fn
        return result

    def fit_members(
        self,
        dd: DeviceData,
        members: Sequence[Member],
        val_idx: Sequence[int],
        tick: Tick | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> list[tuple[FitResult, TorchBaseline]]:
        """:meth:`fit_steps` run to its end."""
        return run_steps(self.fit_steps(dd, members, val_idx, tick, should_stop))

    def fit_steps(
        self,
        dd: DeviceData,
        members: Sequence[Member],
        val_idx: Sequence[int],
        tick: Tick | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> Steps[list[tuple[FitResult, TorchBaseline]]]:
        """Train one fresh network per member *together*, and return each member's result
        and a fitted copy of this baseline (its own ``net``, ready to predict and embed).

        The members' weights are stacked along a leading axis and one Adam steps them all
        (Adam works element by element, so this is each member's own Adam); the loss is the
        sum of the members' losses, so each member's gradient is its own. Each member keeps
        its seed's initial weights, its own batch order and early stopping: a member that
        stops has its weights kept (the best epoch's) while the others go on. So the seeds
        of a model (and the cross-fitted halves) take one optimiser step where they took
        one each — on a GPU, where a step of these small networks is bound by kernel
        launches, not arithmetic, that divides the steps by the number of members.

        Forward passes (:attr:`DeviceData.ensemble`): ``loop`` calls each member's network
        on its own batch in turn (exactly the single network's computation: the CPU);
        ``vmap`` runs every member in one batched call (``torch.func.vmap``) on the frames
        each member's batch holds, for the baselines whose forward is an encoder of bank
        frames and a head (:attr:`batches`).

        Exactly as alone while the members have as many batches per epoch (every seed's main
        fit; the cross-fitted halves but where they differ by one puzzle across a batch
        boundary): a member whose batches run out before the others' takes a step of zero
        gradient, which its Adam momentum still moves (by about 1e-2 in a weight, measured)
        and which its step count shares.

        A generator: it yields after each optimiser step (and returns the fitted members),
        so that several models' training can take turns on one thread, each on a CUDA
        stream of its own (:func:`studio.baselines.run.run_baselines`); the weights are
        made within one turn, so each network gets its own seed's weights."""
        from torch.func import stack_module_state

        if not members:
            return []
        if dd.compiled and len(members) > 1:
            # a compiled encoder traces the network's own parameters, not a member's slice
            # of stacked ones: the members train one after another
            out = []
            for k, m in enumerate(members):
                sub = None
                if tick is not None:
                    sub = _sub_tick(tick, k / len(members), 1 / len(members))
                out += yield from self.fit_steps(dd, [m], val_idx, sub, should_stop)
            return out
        nets = []
        for m in members:
            seed_everything(m.seed)
            nets.append(self.build(dd.data).to(dd.device))
        template = nets[0]
        self.net = template
        encoder = getattr(template, self.encoder_attr, None)
        self.encode_fn = encoder
        if dd.compiled and isinstance(encoder, nn.Module):
            # a batch holds a varying number of distinct frames: compile for dynamic shapes
            self.encode_fn = torch.compile(encoder, dynamic=True, backend=dd.compile_backend)
        vmapped = dd.ensemble == "vmap" and self.batches(template)
        # one network in the loop: its own parameters (leaves, which a compiled encoder traces)
        own = len(members) == 1 and not vmapped
        if own:
            stacked = {k: v.unsqueeze(0) for k, v in template.state_dict(keep_vars=True).items()}
            leaves = list(template.parameters())
        else:
            params, buffers = stack_module_state(nets)  # type: ignore[arg-type]
            stacked = {**params, **buffers}
            leaves = list(params.values())
        graph = vmapped and dd.graphs
        opt = Adam(leaves, lr=self.learning_rate, **_adam_options(dd, graph))
        call = _Call(self, template)
        batched = (
            _BatchedStep(self, dd, stacked, call, opt, len(members), graph) if vmapped else None
        )
        keys = dd.get("keys")
        val_idx = np.asarray(val_idx, dtype=np.int64)
        size = len(members)
        results = [FitResult() for _ in members]
        best_loss = [float("inf")] * size
        kept: list[dict[str, torch.Tensor] | None] = [None] * size
        running = [True] * size
        orders = [m.train_idx for m in members]
        last_epoch = max(m.epochs for m in members)

        def member_params(s: int) -> dict[str, torch.Tensor]:
            return {} if own else {f"net.{k}": v[s] for k, v in stacked.items()}

        def snapshot(s: int) -> dict[str, torch.Tensor]:
            return {k: v[s].detach().clone() for k, v in stacked.items()}

        for epoch in range(1, last_epoch + 1):
            active = [s for s in range(size) if running[s]]
            if not active:
                break
            for s in active:
                orders[s] = members[s].rng.permutation(members[s].train_idx)
            steps = max(max(1, -(-len(orders[s]) // BATCH)) for s in active)
            total = torch.zeros(size, device=dd.device)
            right = torch.zeros(size, device=dd.device)
            if batched is not None:
                batched.new_epoch()
                total, right = batched.total, batched.right
            seen = [0] * size
            table, weight = _batch_table(orders, active, steps, dd.device)
            _sync(dd.device)
            start = time.perf_counter()
            for b in range(steps):
                if should_stop is not None and should_stop():
                    raise BaselineCancelled()
                batch_idx = table[:, b * BATCH : (b + 1) * BATCH]
                batch_w = weight[:, b * BATCH : (b + 1) * BATCH]
                if batched is not None:  # every member in one batched call (a GPU)
                    batched(batch_idx, batch_w)
                    for s in active:
                        seen[s] += min(BATCH, max(0, len(orders[s]) - b * BATCH))
                else:  # one member after another, each on its own batch (the CPU)
                    self._loop_step(
                        dd,
                        call,
                        opt,
                        keys,
                        batch_idx,
                        active,
                        orders,
                        b,
                        member_params,
                        total,
                        right,
                        seen,
                    )
                if tick is not None:
                    done = ((epoch - 1) + (b + 1) / steps) / last_epoch
                    tick(done, f"epoch {epoch}/{last_epoch}")
                paused = time.perf_counter()
                yield  # another model's turn: its time is not this model's
                start += time.perf_counter() - paused
            _sync(dd.device)
            seconds = time.perf_counter() - start
            total_host, right_host = total.tolist(), right.tolist()
            validate = [s for s in active if len(val_idx) > 0 and not members[s].fixed_epochs]
            val = {}
            if validate:
                probs = self._members_probs(dd, stacked, call, validate, val_idx, vmapped, own)
                val = accuracy_and_loss(probs, dd.data.keys[val_idx])
            for s in active:
                result, n_seen = results[s], seen[s]
                # the members trained side by side: each is credited with its share
                result.seconds += seconds / len(active)
                result.puzzles += n_seen
                result.epochs = epoch
                val_acc, val_loss = val.get(s, (None, None))
                result.curve.append(
                    {
                        "epoch": epoch,
                        "loss": round(total_host[s] / n_seen, 5) if n_seen else None,
                        "train_acc": round(right_host[s] / n_seen, 4) if n_seen else 0.0,
                        "val_acc": None if val_acc is None else round(val_acc, 4),
                        "val_loss": None if val_loss is None else round(val_loss, 5),
                    }
                )
                if members[s].fixed_epochs:
                    result.best_epoch = epoch
                    if epoch >= members[s].epochs:
                        kept[s], running[s] = snapshot(s), False
                    continue
                score = val_loss if val_loss is not None else total_host[s] / max(n_seen, 1)
                if score < best_loss[s] - MIN_DELTA:
                    best_loss[s] = score
                    kept[s] = snapshot(s)
                    result.best_epoch = epoch
                elif epoch - result.best_epoch >= PATIENCE:
                    running[s] = False
                if epoch >= members[s].epochs:
                    running[s] = False
                if not running[s] and kept[s] is None:  # never improved: its last weights
                    kept[s] = snapshot(s)
        out: list[tuple[FitResult, TorchBaseline]] = []
        for s, net in enumerate(nets):
            state = kept[s] if kept[s] is not None else snapshot(s)
            net.load_state_dict(state)  # type: ignore[arg-type]
            fitted = copy.copy(self)
            fitted.net = net
            enc = getattr(net, self.encoder_attr, None)
            fitted.encode_fn = enc
            if dd.compiled and isinstance(enc, nn.Module):
                fitted.encode_fn = torch.compile(enc, dynamic=True, backend=dd.compile_backend)
            out.append((results[s], fitted))
        return out

    def _loop_step(
        self,
        dd: DeviceData,
        call: _Call,
        opt: Adam,
        keys: torch.Tensor,
        batch_idx: torch.Tensor,
        active: Sequence[int],
        orders: Sequence[np.ndarray],
        b: int,
        member_params: Callable[[int], dict[str, torch.Tensor]],
        total: torch.Tensor,
        right: torch.Tensor,
        seen: list[int],
    ) -> None:
        """One optimiser step with each member's forward pass on its own real puzzles (no
        padding), the network's own arithmetic; the sums are kept on the device."""
        from torch.func import functional_call

        done: list[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor]] = []
        loss = torch.zeros((), device=dd.device)
        with autocast(dd):
            for s in active:
                n_s = min(BATCH, max(0, len(orders[s]) - b * BATCH))
                if n_s == 0:
                    continue
                idx_s = batch_idx[s, :n_s]
                out_s = functional_call(call, member_params(s), (dd, idx_s))
                if self.masks_loss:
                    out_s = masked_scores(dd, out_s, idx_s)
                loss_s = self.loss(out_s.float(), keys[idx_s])
                loss = loss + loss_s
                done.append((s, idx_s, out_s, loss_s))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            for s, idx_s, out_s, loss_s in done:
                total[s] += loss_s.detach() * len(idx_s)
                scores = masked_scores(dd, self.choice_scores(out_s), idx_s)
                right[s] += (scores.argmax(dim=1) == keys[idx_s]).sum()
                seen[s] += len(idx_s)

    def _vmapped_outputs(
        self,
        dd: DeviceData,
        stacked: dict[str, torch.Tensor],
        call: _Call,
        idx: torch.Tensor,
    ) -> torch.Tensor:
        """(S, B, A) raw outputs: every member's batch in one batched call, each frame of a
        batch encoded (no search for the distinct ones: that would wait on the GPU)."""

        ids = self.frame_ids(dd, idx.reshape(-1)).reshape(idx.shape[0], idx.shape[1], -1)
        s, b, k = ids.shape
        if dd.whole_bank(b * k):  # the whole bank is fewer frames than one member's batch
            return _vmap_members(stacked, call, dd.bank_ink(), ids, shared=True, own_where=True)
        frames = dd.frame_bank()[ids.reshape(s, b * k)].float().div_(255.0)
        where = torch.arange(b * k, device=ids.device).reshape(b, k)
        return _vmap_members(stacked, call, frames, where, shared=False)

    def _vmapped_shared(
        self,
        dd: DeviceData,
        stacked: dict[str, torch.Tensor],
        call: _Call,
        idx: torch.Tensor,
    ) -> torch.Tensor:
        """(S, B, A) raw outputs of every member on the same puzzles, each distinct frame of
        the batch encoded once per member (evaluation: not captured, so the search for the
        distinct frames may wait on the GPU)."""

        ids = self.frame_ids(dd, idx)
        if dd.whole_bank(ids.numel()):  # the whole bank: no search, no wait on the GPU
            return _vmap_members(stacked, call, dd.bank_ink(), ids, shared=True)
        uniq, inverse = torch.unique(ids.reshape(-1), return_inverse=True)
        frames = dd.frame_bank()[uniq].float().div_(255.0)
        return _vmap_members(stacked, call, frames, inverse.reshape(ids.shape), shared=True)

    def _weighted_loss(
        self,
        dd: DeviceData,
        out: torch.Tensor,
        idx: torch.Tensor,
        weight: torch.Tensor,
        keys: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The sum over members of each member's mean loss over its real puzzles (padding
        weighs 0), and the per-puzzle losses (S, B)."""
        s, b, a = out.shape
        scores = masked_scores_stacked(dd, out, idx) if self.masks_loss else out
        nll = F.cross_entropy(
            scores.float().reshape(s * b, a), keys[idx].reshape(-1), reduction="none"
        ).reshape(s, b)
        per_member = (nll * weight).sum(dim=1) / weight.sum(dim=1).clamp(min=1.0)
        return per_member.sum(), nll.detach()

    @torch.no_grad()
    def _members_probs(
        self,
        dd: DeviceData,
        stacked: dict[str, torch.Tensor],
        call: _Call,
        members: Sequence[int],
        idx: np.ndarray,
        vmapped: bool,
        own: bool = False,
    ) -> dict[int, np.ndarray]:
        """(len(idx), A) probabilities per member, with the members' current weights, in eval
        mode (batch normalisation's running statistics, as :meth:`predict`), moved to the
        host in one transfer at the end rather than one per batch (each waits on the GPU)."""
        from torch.func import functional_call

        was_training = call.net.training
        call.net.eval()
        try:
            probs: dict[int, list[torch.Tensor]] = {s: [] for s in members}
            step = dd.eval_batch
            for start in range(0, len(idx), step):
                batch = torch.from_numpy(idx[start : start + step]).to(dd.device)
                with autocast(dd):
                    if vmapped:  # one batch for every member: its distinct frames encoded once
                        out = self.choice_scores(self._vmapped_shared(dd, stacked, call, batch))
                        outs = {s: out[s] for s in members}
                    else:
                        outs = {}
                        for s in members:
                            p = {} if own else {f"net.{k}": v[s] for k, v in stacked.items()}
                            outs[s] = self.choice_scores(functional_call(call, p, (dd, batch)))
                for s in members:
                    scores = masked_scores(dd, outs[s].float(), batch)
                    probs[s].append(torch.softmax(scores, dim=1))
        finally:
            call.net.train(was_training)
        if not members or len(idx) == 0:
            return {s: np.zeros((0, dd.data.n_answers), np.float32) for s in members}
        host = torch.stack([torch.cat(probs[s]) for s in members]).cpu().numpy()
        return {s: host[k] for k, s in enumerate(members)}

    def predict_members(
        self, dd: DeviceData, fitted: Sequence[TorchBaseline], idxs: Sequence[np.ndarray]
    ) -> list[np.ndarray]:
        """Each fitted copy's probabilities on its own puzzles (``idxs``, one array each):
        on a GPU, where a model's members run batched (:meth:`fit_members`), every copy in
        one batched call per batch over the puzzles any of them asks for; each
        :meth:`predict` in turn otherwise (the CPU: each on its own puzzles, no more)."""
        idxs = [np.asarray(i, dtype=np.int64) for i in idxs]
        nets = [f.net for f in fitted]
        if (
            len(fitted) < 2
            or dd.ensemble != "vmap"
            or dd.compiled
            or any(n is None for n in nets)
            or not self.batches(nets[0])  # type: ignore[arg-type]
        ):
            return [f.predict(dd, i) for f, i in zip(fitted, idxs, strict=True)]
        from torch.func import stack_module_state

        params, buffers = stack_module_state(nets)  # type: ignore[arg-type]
        union = np.unique(np.concatenate(idxs))
        head = fitted[0]
        call = _Call(head, nets[0])  # type: ignore[arg-type]
        members = list(range(len(fitted)))
        probs = head._members_probs(dd, {**params, **buffers}, call, members, union, True)
        return [probs[s][np.searchsorted(union, i)] for s, i in zip(members, idxs, strict=True)]

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
        return accuracy_and_loss({0: probs}, keys)[0]

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

    bank_frames = True

    def frame_ids(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        return dd.frame_ids("answers")[idx]

    def head(self, net: nn.Module, emb: torch.Tensor) -> torch.Tensor:
        assert isinstance(net, BlindNet)
        return net.score(emb)


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

    bank_frames = True

    def frame_ids(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        """The visible context frames, then the answers."""
        assert isinstance(self.net, RowRelationNet)
        ids = dd.frame_ids("answers")[idx]
        vis = list(self.net.visible)
        if vis:
            ctx = dd.frame_ids("context")[idx]
            # the visible frames are a run (every one, a row): a slice, not an index list
            # (a list index is copied to the GPU at each call, which a CUDA graph cannot hold)
            if vis == list(range(vis[0], vis[-1] + 1)):
                ctx = ctx[:, vis[0] : vis[-1] + 1]
            else:
                ctx = ctx[:, torch.tensor(vis, device=ctx.device)]
            ids = torch.cat([ctx, ids], dim=1)
        return ids

    def head(self, net: nn.Module, emb: torch.Tensor) -> torch.Tensor:
        assert isinstance(net, RowRelationNet)
        vis = len(net.visible)
        return net.relate(emb[:, :vis] if vis else None, emb[:, vis:])


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

    bank_frames = True

    def frame_ids(self, dd: DeviceData, idx: torch.Tensor) -> torch.Tensor:
        return torch.cat([dd.frame_ids("context")[idx], dd.frame_ids("answers")[idx]], dim=1)

    def head(self, net: nn.Module, emb: torch.Tensor) -> torch.Tensor:
        c = self.n_context
        scores: torch.Tensor = net.score(emb[:, :c], emb[:, c:])  # type: ignore[operator]
        return scores

    n_context = 0

    def build(self, data: PuzzleArrays) -> nn.Module:
        self.n_context = data.n_context
        return self.build_net(data)

    def build_net(self, data: PuzzleArrays) -> nn.Module:
        raise NotImplementedError


class ResNet18Baseline(_PublishedBaseline):
    """ResNet-18 per panel + an MLP over the panels (UA's ResNet baseline)."""

    id = "resnet18"

    def build_net(self, data: PuzzleArrays) -> nn.Module:
        from studio.baselines.published import ResNet18

        return ResNet18(data.n_context)


class WReNBaseline(_PublishedBaseline):
    """WReN (Barrett et al. 2018): a relation network over the panels."""

    id = "wren"

    def build_net(self, data: PuzzleArrays) -> nn.Module:
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

    def build_net(self, data: PuzzleArrays) -> nn.Module:
        from studio.baselines.published import SCL

        return SCL(tuple(int(r) for r in data.rows))
