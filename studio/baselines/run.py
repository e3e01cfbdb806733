"""Run baselines on a source and build the report (torch imported only inside functions).

:func:`run_baselines` loads the source (:mod:`studio.baselines.data`), expands the model
names (ids or the groups of :data:`studio.baselines.MODEL_GROUPS`), skips the models that do
not apply (with the reason in the report's ``skipped``), runs every *unit* — one (model,
seed) for a trained model, one run for a training-free one — and builds the report
(format ``analogy-studio.baseline-report``, version 1; see issue 5's spec).

**Held-out predictions for every puzzle.** Flags must not come from puzzles a model was
trained on, so each trained unit fits three networks: one on the whole train part (early
stopping on val), which predicts the val and test puzzles and gives the reported accuracy,
curve and throughput; and two on the halves of the train part (a seeded random halving),
each predicting the other half (*cross-fitting*); the halves train for the number of epochs
the main fit's early stopping chose, without validation passes. Every puzzle therefore has a
held-out prediction per seed. Training-free models predict every puzzle directly.

**Accuracy** is measured on ``eval_part`` (test; val when a source has no test puzzles):
the mean over seeds of each seed's accuracy, with a Wilson 95% interval over the puzzles and a
one-sided binomial test against chance; per rule, concept, layout and family the same. Split-
and puzzle-level flags come from the models registered with ``flags_shortcuts`` (blind and
partial inputs); see :mod:`studio.baselines.metrics`. When the puzzles carry perception
questions, each model's encoder is probed (:mod:`studio.baselines.perception`) for MARVEL's
group accuracy.

Resuming: ``completed`` maps unit keys (``"blind/0"``, ``"pixel-similarity/-"``) to unit
results of an earlier attempt (``on_unit(key, result)`` is called after each unit ends), and
such units are not run again.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from studio.baselines import (
    DEFAULT_EPOCHS,
    BaselineCancelled,
    Steps,
    expand_models,
    run_counts,
    run_steps,
)
from studio.baselines.data import GROUP_KEYS, PARTS, PuzzleArrays, load_source
from studio.baselines.metrics import (
    accuracy_summary,
    flag_groups,
    group_table,
    marvel_group_accuracy,
    mean_chance,
    puzzle_flags,
    rounded,
)
from studio.baselines.start import warm_device
from studio.core.errors import StudioError

if TYPE_CHECKING:
    from studio.baselines.perception import QuestionPlan

REPORT_FORMAT = "analogy-studio.baseline-report"
REPORT_FORMAT_VERSION = 1

Progress = Callable[[float, str], None]
ShouldStop = Callable[[], bool]
Log = Callable[[str], None]
UnitDone = Callable[[str, dict[str, Any]], None]

NOTES = (
    "accuracy: mean over seeds of the per-seed accuracy on eval_part; ci95: Wilson interval "
    "over the puzzles; p_value: one-sided binomial test against chance",
    "held-out predictions: val/test puzzles are predicted by the model trained on the train "
    "part; train puzzles are cross-fitted (two halves, each predicted by a model trained on "
    "the other half)",
    "group flags: rule/concept groups of blind and partial-input models more than 5 points "
    "over chance with a Holm-corrected p < 0.05 (over that model's rule and concept groups)",
    "puzzle flags (shortcut-prone): a blind or partial-input model chooses the key in every "
    "seed with mean confidence >= chance + (1 - chance) / 2",
    "answers-only probes (probe-tags, probe-image): a conditional logit over each answer's "
    "tags or image pseudo-tags, never the context; partial-view probes (probe-row1, "
    "probe-row2): the same over the tags plus how each answer relates to ONE context row; "
    "cross-fitted like the trained models; "
    "'why' per prediction and 'reason' per flag name the features that carry it",
    "training-free models use the studio's hand-designed image features and a 16x16 pooled "
    "image (no pretrained network ships offline)",
    "group_accuracy (MARVEL): puzzle and all its perception questions right; counting "
    "questions by counting non-blank panels, fine questions by the nearest train-part "
    "exemplar in the model's encoder features",
)


# ---- model names --------------------------------------------------------------------------------
def unit_key(model: str, seed: int | None) -> str:
    return f"{model}/{'-' if seed is None else seed}"


def _rng(seed: int, *salt: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), *salt])


# ---- one unit -----------------------------------------------------------------------------------
class _Runner:
    """Runs units against one source; holds what they share (device tensors, encoder cache)."""

    def __init__(
        self,
        data: PuzzleArrays,
        eval_part: str,
        epochs: int,
        cross_fit: bool,
        device: str,
        should_stop: ShouldStop | None,
        log: Log | None,
        cuda_speedups: bool = False,
        compile: bool = False,
        force_speedups: bool = False,
        compile_backend: str = "inductor",
        ensemble: str | None = None,
        cuda_graphs: bool = True,
        side_by_side: bool | None = None,
    ) -> None:
        self.data = data
        self.ensemble = ensemble
        self.cuda_graphs = cuda_graphs
        self._side_by_side = side_by_side
        #: the models that took turns (:meth:`take_turns`), for the report's ``compute``
        self.turns: list[str] = []
        self.cuda_speedups = cuda_speedups
        self.compile = compile
        self.force_speedups = force_speedups
        self.compile_backend = compile_backend
        self.eval_part = eval_part
        self.epochs = epochs
        self.cross_fit = cross_fit
        self.device = device
        self.should_stop = should_stop
        self.log = log or (lambda line: None)
        self.cache: dict[str, Any] = {}
        self._dd: Any = None
        self.train = data.part_indices("train")
        self.val = data.part_indices("val")
        self.held = np.flatnonzero(data.parts != "train")
        self.eval = data.part_indices(eval_part)
        from studio.baselines.perception import has_questions

        self.with_questions = has_questions(data, self.eval)
        #: the perception questions read once for every encoder probed (:meth:`_perception`)
        self._question_plan: QuestionPlan | None = None

    def compute_record(self) -> dict[str, Any]:
        """How the trained models ran: the code path (autocast, compiled) and, on a GPU, its
        name and peak memory, so a report read later says what produced its seconds."""
        if self._dd is None:
            return {"device": self.device, "trained": False}
        out: dict[str, Any] = {"device": self.device, "trained": True, **self._dd.speedups()}
        out["side_by_side"] = list(self.turns)
        if self._dd.on_cuda:
            import torch

            index = self._dd.device.index or 0
            out["gpu"] = torch.cuda.get_device_name(index)
            out["peak_gpu_memory_mib"] = round(torch.cuda.max_memory_allocated(index) / 2**20, 1)
        return out

    def _check(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise BaselineCancelled()

    def device_data(self) -> Any:
        if self._dd is None:
            from studio.baselines.trained import DeviceData

            self._dd = DeviceData(
                self.data,
                self.device,
                cuda_speedups=self.cuda_speedups,
                compile=self.compile,
                force_speedups=self.force_speedups,
                compile_backend=self.compile_backend,
                ensemble=self.ensemble,
                cuda_graphs=self.cuda_graphs,
            )
        return self._dd

    def side_by_side(self, models: Sequence[tuple[str, Any]]) -> set[str]:
        """The trained models that train side by side (:meth:`take_turns`): on a GPU whose
        batched steps replay CUDA graphs (or when asked), the models whose members run
        batched. A step of these networks is a chain of a few hundred small kernels that
        each leave most of the GPU idle (the H200 measured was 60 % busy training one model
        at a time); models on streams of their own fill it."""
        if len(models) < 2:
            return set()
        dd = self.device_data()
        wanted = dd.graphs if self._side_by_side is None else self._side_by_side
        if not wanted:
            return set()
        out = {m for m, baseline in models if baseline.batches(baseline.build(self.data))}
        if len(out) < 2:
            return set()
        dd.prepare()  # the tensors every model reads, made before any model's stream runs
        return out

    def take_turns(self, steps: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
        """Run several models' training (:meth:`trained_steps` generators) on this thread,
        one optimiser step of each in turn, each on a CUDA stream of its own; yield each
        model's result as it ends. A replayed step returns before the GPU has run it, so
        while one model's kernels run the next model's step is launched beside them. An
        error (or a cancellation) in one model ends them all: it is raised here."""
        if not steps:  # nothing trains: no torch (a training-free job never imports it)
            return
        dd = self.device_data()
        pending = dict(steps)
        self.turns = list(pending)
        streams: dict[str, Any] = {}
        on_stream: Callable[[Any], Any] = contextlib.nullcontext  # the CPU: no streams
        if dd.on_cuda:
            import torch

            for key in pending:
                streams[key] = torch.cuda.Stream(dd.device)
                streams[key].wait_stream(torch.cuda.current_stream(dd.device))
            on_stream = torch.cuda.stream
        while pending:
            for key in list(pending):
                with on_stream(streams.get(key)):
                    try:
                        next(pending[key])
                        continue
                    except StopIteration as done:
                        result = done.value
                    if key in streams:
                        streams[key].synchronize()
                del pending[key]
                yield key, result  # on the caller's stream

    def _perception(self, encode: Callable[[np.ndarray], np.ndarray]) -> dict[str, Any] | None:
        """The perception probe's answers with ``encode``; the questions are planned on the
        first call and the plan reused by every model and seed after it (the same train and
        eval parts throughout), so each call costs the encoder and the cosines only."""
        if not self.with_questions:
            return None
        if self._question_plan is None:
            from studio.baselines.perception import plan_questions

            self._question_plan = plan_questions(self.data, self.train, self.eval)
        return self._question_plan.answer(encode).to_json()

    def training_free(self, baseline: Any) -> dict[str, Any]:
        self._check()
        start = time.perf_counter()
        baseline.prepare(self.data, self.cache)
        prepared = time.perf_counter()
        idx = np.arange(self.data.n)
        probs = self.data.mask_probs(baseline.predict(self.data, idx), idx)
        seconds = time.perf_counter() - prepared
        # the answers-only probes say why they chose (per-puzzle reasons, fitted weights)
        explain = getattr(baseline, "explain", None)
        extra = explain() if callable(explain) else {}
        return {
            **extra,
            "choices": probs.argmax(axis=1).tolist(),
            "confidence": rounded(probs.max(axis=1)),
            "curve": [],
            "epochs": 0,
            "train_seconds": 0.0,
            "train_puzzles": 0,
            "prepare_seconds": round(prepared - start, 3),
            "infer_seconds": round(seconds, 4),
            "infer_puzzles": int(self.data.n),
            "perception": self._perception(baseline.embed),
        }

    def trained_steps(
        self, factory: Callable[[], Any], seeds: Sequence[int], tick: Callable[[float, str], None]
    ) -> Steps[dict[int, dict[str, Any]]]:
        """Every seed of one model, trained together (:meth:`TorchBaseline.fit_steps`):
        the main fits side by side, then every seed's two cross-fitted halves side by side.
        One unit result per seed, as when the seeds ran one after another. A generator
        that yields after each optimiser step (:meth:`take_turns`)."""
        from studio.baselines.trained import Member

        dd = self.device_data()
        n = self.data.n
        fits = 3 if self.cross_fit and len(self.train) >= 2 else 1

        def sub_tick(k: int, label: str) -> Callable[[float, str], None]:
            # the main fits take a third of the time, the halves (twice as many) the rest
            lo, span = (0.0, 1.0 / fits) if k == 0 else (1.0 / fits, 1.0 - 1.0 / fits)
            return lambda f, msg: tick(lo + span * f, msg + label)

        mains = [Member(s, _rng(s, 0), self.train, self.epochs) for s in seeds]
        fitted = yield from factory().fit_steps(
            dd, mains, self.val, sub_tick(0, ""), self.should_stop
        )
        self._check()
        out: dict[int, dict[str, Any]] = {}
        choices = {s: np.full(n, -1, np.int64) for s in seeds}
        confidence = {s: np.zeros(n) for s in seeds}
        # every seed's held-out predictions together (one batched call on a GPU)
        start = time.perf_counter()
        held = factory().predict_members(dd, [m for _, m in fitted], [self.held] * len(seeds))
        infer_seconds = (time.perf_counter() - start) / max(1, len(seeds))
        for seed, (fit, model), probs in zip(seeds, fitted, held, strict=True):
            choices[seed][self.held] = probs.argmax(axis=1)
            confidence[seed][self.held] = probs.max(axis=1)
            out[seed] = {
                "curve": fit.curve,
                "epochs": fit.epochs,
                "best_epoch": fit.best_epoch,
                "train_seconds": round(fit.seconds, 3),
                "train_puzzles": int(fit.puzzles),
                "infer_seconds": round(infer_seconds, 4),
                "infer_puzzles": len(self.held),
                "perception": self._perception(lambda f, m=model: m.embed(f)),
            }
        if fits == 3:
            halves: list[tuple[int, np.ndarray]] = []
            members = []
            for seed, (fit, _) in zip(seeds, fitted, strict=True):
                order = _rng(seed, 1).permutation(self.train)
                half = (np.sort(order[: len(order) // 2]), np.sort(order[len(order) // 2 :]))
                for k, (fit_on, predict_on) in enumerate(((half[0], half[1]), half[::-1]), 1):
                    # the main fit's early stopping chose the epoch count: the halves train
                    # that many epochs, with no validation passes and no epochs past the best
                    epochs = max(1, fit.best_epoch)
                    members.append(Member(seed, _rng(seed, 2, k), fit_on, epochs, True))
                    halves.append((seed, predict_on))
            label = " · cross-fits"
            crossed = yield from factory().fit_steps(
                dd, members, self.val, sub_tick(1, label), self.should_stop
            )
            crossed_probs = factory().predict_members(
                dd, [m for _, m in crossed], [predict_on for _, predict_on in halves]
            )
            for (seed, predict_on), p in zip(halves, crossed_probs, strict=True):
                choices[seed][predict_on] = p.argmax(axis=1)
                confidence[seed][predict_on] = p.max(axis=1)
        for seed in seeds:
            out[seed]["choices"] = choices[seed].tolist()
            out[seed]["confidence"] = rounded(confidence[seed])
        return out


class _Shares:
    """The job's progress while models run one after another or take turns: each model's
    share of the work done, summed (models taking turns tick in any order)."""

    def __init__(self, progress: Progress | None, total: float) -> None:
        self.progress, self.total = progress, total
        self.done: dict[str, float] = {}

    def credit(self, key: str, amount: float) -> None:
        self.done[key] = amount

    def ticker(self, key: str, base: float, weight: float, label: str) -> Progress:
        """``tick(fraction, message)`` for one model: ``base`` done before, ``weight`` to do."""

        def tick(f: float, msg: str) -> None:
            if self.progress is None:
                return
            self.done[key] = base + weight * f
            fraction = min(1.0, sum(self.done.values()) / self.total)
            self.progress(fraction, f"{label} · {msg}" if msg else label)

        return tick


# ---- the report ---------------------------------------------------------------------------------
def _model_entry(
    model: str,
    meta: Mapping[str, Any],
    units: Sequence[tuple[int | None, dict[str, Any]]],
    data: PuzzleArrays,
    eval_idx: np.ndarray,
) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """The report's entry for one model, and its (seeds × n) choices and confidences."""
    choices = np.array([u["choices"] for _, u in units], dtype=np.int64)
    confidence = np.array([u["confidence"] for _, u in units], dtype=float)
    chance = data.chances[eval_idx]  # each puzzle's own: sets may differ in size
    correct = choices[:, eval_idx] == data.keys[eval_idx]
    per_seed = []
    for (seed, u), row in zip(units, correct, strict=True):
        per_seed.append(
            {
                "seed": seed,
                "accuracy": round(float(row.mean()) if row.size else 0.0, 4),
                "train_seconds": u["train_seconds"],
                "epochs": u["epochs"],
                "curve": u["curve"],
            }
        )
    groups = {by: group_table(correct, data.labels[by][eval_idx], chance) for by in GROUP_KEYS}
    group_accuracy = None
    if all(u.get("perception") for _, u in units):
        perception = [u["perception"] for _, u in units]
        group_accuracy = marvel_group_accuracy(
            correct,
            np.array([p["all_right"] for p in perception], dtype=bool),
            np.array([p["right"] for p in perception]),
            np.array([p["asked"] for p in perception]),
        )
    train_s = sum(u["train_seconds"] for _, u in units)
    train_n = sum(u["train_puzzles"] for _, u in units)
    infer_s = sum(u["infer_seconds"] for _, u in units)
    infer_n = sum(u["infer_puzzles"] for _, u in units)
    entry = {
        "label": meta.get("label", model),
        "group": meta.get("group", ""),
        "recipe": meta.get("recipe", ""),
        "trained": bool(meta.get("trained", False)),
        "flags_shortcuts": bool(meta.get("flags_shortcuts", False)),
        "family_kind": meta.get("applies_to", "any"),
        "overall": accuracy_summary(correct, chance),
        "per_seed": per_seed,
        "groups": groups,
        "group_accuracy": group_accuracy,
        "throughput": {
            "train_puzzles_per_s": round(train_n / train_s, 1) if train_s > 0 else None,
            "infer_puzzles_per_s": round(infer_n / infer_s, 1) if infer_s > 0 else None,
        },
    }
    return entry, choices, confidence


def _group_reasons(
    data: PuzzleArrays, choices: np.ndarray, why: Sequence[str] | None, eval_idx: np.ndarray
) -> dict[tuple[str, str], str] | None:
    """Per (rule or concept, value): the reason a probe gives most often for the puzzles of
    that group (in the eval part) it answered right (its first feature), for the split-level
    flags."""
    if why is None:
        return None
    from collections import Counter

    right = eval_idx[choices[0, eval_idx] == data.keys[eval_idx]]
    out: dict[tuple[str, str], str] = {}
    for by in ("rule", "concept"):
        counts: dict[str, Counter[str]] = {}
        for i in right:
            first = why[i].split("; ")[0].rsplit(" (", 1)[0]
            if first:
                counts.setdefault(str(data.labels[by][i]), Counter())[first] += 1
        for value, c in counts.items():
            text, n = c.most_common(1)[0]
            out[(by, value)] = f"{text} ({n} of its right answers here)"
    return out


def _strings(values: np.ndarray) -> list[str]:
    """``[str(x) for x in values]``, with ``tolist`` doing the work for a numpy string array
    (its elements are Python strings there already)."""
    listed = np.asarray(values).tolist()
    return [x if type(x) is str else str(x) for x in listed]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off (and restored as it was): a report is
    hundreds of thousands of small lists and dicts, none in a cycle, and every few hundred
    of them allocated started a collection that walked the whole report so far — two thirds
    of the time :func:`build_report` took on 10,000 puzzles (0.5 of 0.75 s, more beside a
    trained model's heap). Nothing it builds needs the collector; the next collection after
    it sees everything."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@_collector_paused()
def build_report(
    data: PuzzleArrays,
    models: Sequence[str],
    units: Mapping[str, dict[str, Any]],
    seeds: Sequence[int],
    *,
    eval_part: str,
    device: str,
    epochs: int,
    skipped: Sequence[Mapping[str, str]] = (),
    cross_fit: bool = True,
) -> dict[str, Any]:
    """The report (format in the module docstring) from finished units."""
    from studio.plugins import registry

    reg = registry("baselines")
    eval_idx = data.part_indices(eval_part)
    report_models: dict[str, Any] = {}
    # per puzzle, built from whole columns (a list each) rather than element by element: the
    # default job's report lists 10,000 puzzles, each with every model's choices and confidences
    predictions: list[dict[str, Any]] = [
        {
            "id": pid,
            "part": part,
            "key": key,
            "answers": answers,
            "rule": rule,
            "concept": concept,
            "models": {},
        }
        for pid, part, key, answers, rule, concept in zip(
            data.ids,
            _strings(data.parts),
            np.asarray(data.keys, dtype=np.int64).tolist(),
            np.asarray(data.counts, dtype=np.int64).tolist(),
            _strings(data.labels["rule"]),
            _strings(data.labels["concept"]),
            strict=True,
        )
    ]
    flags: dict[str, list[dict[str, Any]]] = {"puzzles": [], "groups": []}
    for model in models:
        meta = reg.meta(model)
        unit_seeds: list[int | None] = list(seeds) if meta.get("trained") else [None]
        mine = [(s, units[unit_key(model, s)]) for s in unit_seeds]
        entry, choices, confidence = _model_entry(model, meta, mine, data, eval_idx)
        report_models[model] = entry
        why = mine[0][1].get("why") if len(mine) == 1 else None
        if mine and "features" in mine[0][1]:
            entry["features"] = dict(mine[0][1]["features"])
        per_puzzle = zip(choices.T.tolist(), rounded(confidence.T), strict=True)
        for i, (p, (chosen, confident)) in enumerate(zip(predictions, per_puzzle, strict=True)):
            p["models"][model] = {"choices": chosen, "confidence": confident}
            if why is not None:
                p["models"][model]["why"] = why[i]
        if meta.get("flags_shortcuts"):
            reasons = _group_reasons(data, choices, why, eval_idx)
            flags["groups"] += flag_groups(model, entry["groups"], data.chance, reasons=reasons)
            flags["puzzles"] += puzzle_flags(
                model, data.ids, data.keys, choices, confidence, data.chances, reasons=why
            )
    parts = {p: int((data.parts == p).sum()) for p in PARTS}
    return {
        "format": REPORT_FORMAT,
        "format_version": REPORT_FORMAT_VERSION,
        "source": {
            **{k: data.source.get(k) for k in ("kind", "path", "set_id")},
            "family": data.family,
            "layout": data.layout,
            "puzzles": data.n,
            "parts": parts,
            "answers": data.n_answers,
            "skipped_items": list(data.skipped),
        },
        "device": device,
        "seeds": list(seeds),
        "epochs": epochs,
        "cross_fit": cross_fit,
        "eval_part": eval_part,
        # the eval part's own: a part of shorter answer sets has a higher chance
        "chance": round(mean_chance(data.chances, eval_idx), 4),
        "models": report_models,
        "skipped": [dict(s) for s in skipped],
        "predictions": predictions,
        "flags": flags,
        "notes": list(NOTES),
        "plots": {},
    }


def accuracy_by_model(report: Mapping[str, Any]) -> dict[str, float]:
    """``{model: overall accuracy}`` of a report."""
    return {m: e["overall"]["accuracy"] for m, e in report.get("models", {}).items()}


# ---- the entry point ----------------------------------------------------------------------------
def run_baselines(
    source: str | Path | Mapping[str, Any] | PuzzleArrays,
    models: str | Sequence[str],
    *,
    seeds: int | Sequence[int] = 3,
    device: str = "auto",
    epochs: int | None = None,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
    log: Log | None = None,
    cross_fit: bool = True,
    completed: Mapping[str, dict[str, Any]] | None = None,
    on_unit: UnitDone | None = None,
    lower_priority: bool = False,
    on_device: Callable[[str], None] | None = None,
    cuda_speedups: bool = False,
    compile: bool = False,
    force_speedups: bool = False,
    compile_backend: str = "inductor",
    ensemble: str | None = None,
    cuda_graphs: bool = True,
    warm: threading.Thread | None = None,
    side_by_side: bool | None = None,
    loaded_seconds: float = 0.0,
) -> dict[str, Any]:
    """Run ``models`` on ``source`` and return the report (module docstring).

    ``source``: a split folder, a job's source dict, or loaded :class:`PuzzleArrays`.
    ``seeds``: a count (seeds 0..n-1) or the seeds. ``device``: auto, cpu, cuda (see
    :func:`studio.worker.device.choose_device`). ``epochs``: at most this many per fit
    (default 10). ``progress(fraction, message)`` is called often; ``should_stop()`` before
    every batch and unit (True raises :class:`~studio.baselines.BaselineCancelled`).
    ``lower_priority``: the run shares the machine with the studio's window (the worker's
    job): one core is left free and the process is niced; otherwise torch uses every core.
    ``cuda_speedups``: on a CUDA device, bfloat16 autocast and large inference batches;
    ``compile``: ``torch.compile`` the frame encoders on CUDA. Both off by default (float32 and
    eager, as on the CPU): each was slower on the measured GPU, see
    :class:`studio.baselines.trained.DeviceData`. ``force_speedups`` and
    ``compile_backend``: the CUDA path's structure on any device, for the suite (ibid.).
    ``ensemble``: how a model's seeds train together, ``loop`` or ``vmap`` (default: vmap on
    a GPU, loop on the CPU; see :attr:`studio.baselines.trained.DeviceData.ensemble`).
    ``cuda_graphs``: replay a batched step captured as a CUDA graph (on a GPU; a capture that
    fails falls back to the eager step and the report says why). ``side_by_side``: train
    the models whose members run batched at the same time, taking turns step by step, each
    on a CUDA stream of its own (default: where the steps replay CUDA graphs;
    :meth:`_Runner.take_turns`); each model's results are those it gets alone. ``warm``:
    the thread of a :func:`warm_device` started earlier (by a caller that loaded the source
    itself); without one, one starts here (before loading a source given by path).
    ``loaded_seconds``: what reading ``source`` took its caller (a split read beside the
    imports, :func:`~studio.baselines.start.load_beside`), counted in the report's load and
    total."""
    from studio.plugins import registry

    say = log or (lambda line: None)
    began = time.perf_counter() - loaded_seconds  # the caller's reading is this run's load
    phases: dict[str, float] = {}  # where the job's seconds went (the report's compute)

    def lap(phase: str, since: float) -> float:
        now = time.perf_counter()
        phases[phase] = round(phases.get(phase, 0.0) + now - since, 2)
        return now

    epochs, seed_list = run_counts(epochs, seeds)
    ids = expand_models(models)
    if progress is not None and not isinstance(source, PuzzleArrays):
        progress(0.0, "loading the puzzles")
    # torch and the GPU start while the puzzles load, for a job that trains a model at all
    reg = registry("baselines")
    warming = warm_device(device, ids) if warm is None else warm
    data = source if isinstance(source, PuzzleArrays) else load_source(source)
    lap("load", began)
    eval_part = next((p for p in ("test", "val") if (data.parts == p).any()), None)
    if eval_part is None:
        raise StudioError(
            f"{data.source.get('path', 'the source')}: no val or test puzzles to measure on"
        )
    runnable: list[tuple[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for model in ids:
        baseline = reg.get(model)()
        reason = baseline.applies(data)
        if reason is None and reg.meta(model).get("trained") and not (data.parts == "train").any():
            reason = "no train puzzles to train on"
        if reason is not None:
            skipped.append({"model": model, "reason": reason})
            say(f"{model}: skipped ({reason})")
        else:
            runnable.append((model, baseline))
    any_trained = any(reg.meta(m).get("trained") for m, _ in runnable)
    runner = _Runner(
        data,
        eval_part,
        epochs,
        cross_fit,
        "cpu",  # the device is chosen once torch has started (below)
        should_stop,
        log,
        cuda_speedups,
        compile,
        force_speedups,
        compile_backend,
        ensemble,
        cuda_graphs,
        side_by_side,
    )
    # a trained model's seeds train together (one step for all of them), so a model is one
    # entry of the plan; a seed finished in an earlier attempt is not trained again
    plan: list[tuple[str, Any, list[int] | None]] = []
    for model, baseline in runnable:
        plan.append((model, baseline, list(seed_list) if reg.meta(model).get("trained") else None))
    weights = [0.1 if seeds_ is None else float(len(seeds_)) for _, _, seeds_ in plan]
    shares = _Shares(progress, sum(weights) or 1.0)
    units: dict[str, dict[str, Any]] = {}

    def finished(key: str, result: dict[str, Any], trained: bool) -> None:
        units[key] = result
        right = np.array(result["choices"])[runner.eval] == data.keys[runner.eval]
        trained_for = f", {result['epochs']} epochs" if trained else ""
        say(f"{key}: {eval_part} accuracy {right.mean():.3f}{trained_for}")
        if on_unit is not None:
            on_unit(key, result)

    def start(model: str, baseline: Any, seeds_: list[int] | None, weight: float) -> Any:
        """Run a training-free model's unit; a trained model's units as steps to run (None
        when an earlier attempt finished them all)."""
        wanted: list[int | None] = list(seeds_) if seeds_ is not None else [None]
        keys = [unit_key(model, s) for s in wanted]
        todo = []
        for key, seed in zip(keys, wanted, strict=True):
            if completed and key in completed:
                units[key] = dict(completed[key])
                say(f"{key}: done in an earlier attempt")
            else:
                todo.append(seed)
        w = weight * len(todo) / len(keys)
        shares.credit(model, weight - w)  # the seeds an earlier attempt finished
        if not todo:
            return None
        runner._check()
        if seeds_ is None:
            label = model
        elif len(todo) == 1:
            label = f"{model} · seed {todo[0]}"
        else:
            label = f"{model} · seeds {', '.join(str(s) for s in todo)}"
        tick = shares.ticker(model, weight - w, w, label)
        tick(0.0, "")
        if seeds_ is None:
            finished(unit_key(model, None), runner.training_free(baseline), False)
            shares.credit(model, weight)
            return None
        return runner.trained_steps(type(baseline), [int(s) for s in todo if s is not None], tick)

    def training_free() -> None:
        since = time.perf_counter()
        for (model, baseline, seeds_), weight in zip(plan, weights, strict=True):
            if seeds_ is None:
                start(model, baseline, seeds_, weight)
        lap("training_free", since)

    # the training-free models need no torch, so they run while it starts; beside the
    # studio's window (lower_priority) nothing runs before the job is niced
    if not lower_priority:
        training_free()
    since = time.perf_counter()
    if warming is not None and any_trained:
        warming.join()
    device_name = "cpu (numpy, training-free only)"
    torch_device = "cpu"
    if any_trained:
        from studio.worker.device import apply_device, choose_device

        # beside the studio's window (a worker job): one core left free and a lower priority;
        # from the command line or a script: every core
        choice = choose_device(device, leave_core_free=lower_priority)
        apply_device(choice, lower_priority=lower_priority)
        device_name, torch_device = choice.name, choice.torch_device
        lap("torch_wait", since)  # its start (or import, on the CPU) not done beside the load
        say(f"device: {device_name}")
    if on_device is not None:  # the job list names the device while the job trains
        on_device(device_name)
    runner.device = torch_device
    if lower_priority:
        training_free()
    # how busy the GPU is while the job runs (NVML or nvidia-smi; nothing on the CPU)
    watch: Any = contextlib.nullcontext()
    if torch_device.startswith("cuda"):
        from studio.worker.device import GpuUtilisation

        watch = GpuUtilisation(int(torch_device.partition(":")[2] or 0))
    with watch:
        since = time.perf_counter()
        beside = runner.side_by_side([(m, b) for m, b, seeds_ in plan if seeds_ is not None])
        together: dict[str, Any] = {}  # the models that take turns, after the others
        for (model, baseline, seeds_), weight in zip(plan, weights, strict=True):
            if seeds_ is None:
                continue
            steps = start(model, baseline, seeds_, weight)
            if steps is None:
                continue
            if model in beside:
                together[model] = steps
                continue
            for seed, result in run_steps(steps).items():
                finished(unit_key(model, seed), result, True)
            shares.credit(model, weight)  # all of its share, whenever its training stopped
        weight_of = {model: weight for (model, _, _), weight in zip(plan, weights, strict=True)}
        for model, results in runner.take_turns(together):
            for seed, result in results.items():
                finished(unit_key(model, seed), result, True)
            shares.credit(model, weight_of[model])
        since = lap("trained", since)
        if progress is not None:
            progress(1.0, "report")
        report = build_report(
            data,
            [m for m, _ in runnable],
            units,
            seed_list,
            eval_part=eval_part,
            device=device_name,
            epochs=epochs,
            skipped=skipped,
            cross_fit=cross_fit,
        )
    lap("report", since)
    report["compute"] = runner.compute_record()
    report["compute"]["phases"] = {**phases, "total": round(time.perf_counter() - began, 2)}
    if not isinstance(watch, contextlib.nullcontext):
        report["compute"]["gpu_utilisation"] = watch.summary()
    return report


__all__ = [
    "DEFAULT_EPOCHS",
    "REPORT_FORMAT",
    "REPORT_FORMAT_VERSION",
    "accuracy_by_model",
    "build_report",
    "expand_models",
    "run_baselines",
    "unit_key",
    "warm_device",
]
