"""Early stopping on the validation part (a tiny real training run) and the thread choice.

The puzzles are made here with numpy: four answers per puzzle, each a filled square of its own
size. In the train part the key is the largest square, in the val part the smallest, so the
more the context-blind CNN learns the train rule, the worse its validation loss gets: training
must stop :data:`PATIENCE` epochs after the best epoch and give back that epoch's weights."""

from __future__ import annotations

import os

import numpy as np
import pytest

from studio.baselines.data import PuzzleArrays
from studio.baselines.run import run_baselines
from studio.baselines.trained import PATIENCE, BlindBaseline, DeviceData
from studio.worker.device import choose_device, cpu_threads


def squares(n_train: int, n_val: int, n_test: int, seed: int) -> PuzzleArrays:
    """Puzzles whose key is the largest square (train, test) or the smallest (val)."""
    rng = np.random.default_rng(seed)
    n = n_train + n_val + n_test
    answers = np.zeros((n, 4, 80, 80), np.uint8)
    keys = np.zeros(n, np.int64)
    parts = np.array(["train"] * n_train + ["val"] * n_val + ["test"] * n_test, dtype=object)
    for i in range(n):
        sides = rng.choice(np.arange(8, 72, 4), size=4, replace=False)
        for j, side in enumerate(sides):
            top, left = rng.integers(0, 80 - side, size=2)
            answers[i, j, top : top + side, left : left + side] = 255
        keys[i] = int(np.argmin(sides)) if parts[i] == "val" else int(np.argmax(sides))
    labels = {k: np.array(["squares"] * n, dtype=object) for k in ("rule", "concept", "family")}
    labels["layout"] = np.array(["sequence"] * n, dtype=object)
    return PuzzleArrays(
        ids=[f"p{i:04d}" for i in range(n)],
        parts=parts,
        context_u8=np.zeros((n, 1, 80, 80), np.uint8),
        answers_u8=answers,
        keys=keys,
        rows=(1,),
        labels=labels,
        questions=[() for _ in range(n)],
        layout="sequence",
        family="squares",
    )


@pytest.fixture(scope="module")
def data() -> PuzzleArrays:
    return squares(128, 32, 16, seed=5)


def test_training_stops_after_patience_and_restores_the_best_epoch(data: PuzzleArrays) -> None:
    dd = DeviceData(data, "cpu")
    model = BlindBaseline()
    train, val = data.part_indices("train"), data.part_indices("val")
    fit = model.fit(dd, train, val, seed=0, rng=np.random.default_rng(0), epochs=30)
    losses = [c["val_loss"] for c in fit.curve]
    assert len(fit.curve) == fit.epochs
    # it learned the train rule (so the reversed val rule got worse) ...
    assert fit.curve[-1]["train_acc"] > 0.5, fit.curve
    assert fit.curve[-1]["val_loss"] > min(losses) + 0.03, fit.curve
    # ... stopped PATIENCE epochs after its best epoch, long before the cap ...
    assert fit.epochs == fit.best_epoch + PATIENCE < 30, fit.curve
    assert losses[fit.best_epoch - 1] == min(losses)
    # ... and the network it kept is the best epoch's, not the last one's
    _, val_loss = model.evaluate(dd, val)
    assert val_loss == pytest.approx(losses[fit.best_epoch - 1], abs=1e-4)
    assert val_loss < fit.curve[-1]["val_loss"] - 0.03


def test_fixed_epochs_train_exactly_that_many_without_validation(data: PuzzleArrays) -> None:
    dd = DeviceData(data, "cpu")
    model = BlindBaseline()
    train, val = data.part_indices("train"), data.part_indices("val")
    fit = model.fit(
        dd, train, val, seed=0, rng=np.random.default_rng(0), epochs=3, fixed_epochs=True
    )
    assert fit.epochs == fit.best_epoch == 3
    assert [c["val_loss"] for c in fit.curve] == [None, None, None]
    assert fit.puzzles == 3 * len(train)


def test_cross_fit_predicts_every_train_puzzle_after_early_stopping(data: PuzzleArrays) -> None:
    report = run_baselines(data, ["blind"], seeds=[0], epochs=30, device="cpu")
    seed = report["models"]["blind"]["per_seed"][0]
    assert seed["epochs"] < 30  # the reversed val rule stops it early
    # every train puzzle got a held-out prediction from the halves
    assert all(p["models"]["blind"]["choices"][0] >= 0 for p in report["predictions"])


def test_thread_choice_leaves_a_core_free_only_beside_the_window() -> None:
    cores = len(os.sched_getaffinity(0))
    assert cpu_threads(leave_core_free=False) == cores
    assert cpu_threads() == cpu_threads(leave_core_free=True) == max(1, cores - 1)
    alone = choose_device("cpu", leave_core_free=False)
    beside = choose_device("cpu")
    assert alone.threads == cores and beside.threads == max(1, cores - 1)
    assert alone.name == f"cpu ({cores} thread{'s' if cores != 1 else ''})"


def test_a_run_from_the_command_line_uses_every_core(data: PuzzleArrays) -> None:
    import torch

    small = data.subset(np.r_[0:64, 128:144, 160:176])
    report = run_baselines(small, ["blind"], seeds=[0], epochs=1, device="cpu")
    cores = len(os.sched_getaffinity(0))
    assert report["device"] == choose_device("cpu", leave_core_free=False).name
    assert torch.get_num_threads() == cores
