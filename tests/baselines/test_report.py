"""The report's per-puzzle lists, built from whole columns, hold what the element-by-element
build held (the choices as ints, each confidence as ``round(float(c), 4)``); the garbage
collector is paused while it is built (its passes over the growing report took two thirds of
the time) and left as it was found."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from studio.baselines.data import load_source
from studio.baselines.metrics import puzzle_flags
from studio.baselines.run import build_report, unit_key


def unit(choices: np.ndarray, confidence: np.ndarray) -> dict[str, Any]:
    return {
        "choices": choices.tolist(),
        "confidence": confidence.tolist(),
        "curve": [],
        "epochs": 1,
        "train_seconds": 1.0,
        "train_puzzles": 1,
        "infer_seconds": 1.0,
        "infer_puzzles": 1,
        "perception": None,
    }


@pytest.mark.parametrize("collector", [True, False])
def test_the_predictions_hold_each_puzzles_choices_and_rounded_confidences(
    glyph_split: Path, collector: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from studio.baselines import run

    data = load_source(glyph_split)
    collecting: list[bool] = []

    def flags(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        collecting.append(gc.isenabled())
        return puzzle_flags(*args, **kwargs)

    monkeypatch.setattr(run, "puzzle_flags", flags)
    rng = np.random.default_rng(2)
    seeds = [0, 1, 2]
    units: dict[str, dict[str, Any]] = {}
    for model, unit_seeds in (("blind", seeds), ("pixel-similarity", [None])):
        for seed in unit_seeds:
            right = rng.random(data.n) < 0.8
            choices = np.where(right, data.keys, rng.integers(0, data.n_answers, data.n))
            confidence = rng.random(data.n) ** 0.3
            confidence[:50] = [float(f"0.{k:03d}35") for k in range(50)]  # np.round: other way
            units[unit_key(model, seed)] = unit(choices, confidence)
    was = gc.isenabled()
    try:
        (gc.enable if collector else gc.disable)()
        report = build_report(
            data, ["blind", "pixel-similarity"], units, seeds, eval_part="test", device="cpu",
            epochs=1,
        )  # fmt: skip
        assert gc.isenabled() == collector
        assert collecting == [False]  # paused while the report was built
    finally:
        (gc.enable if was else gc.disable)()
    for model, unit_seeds in (("blind", seeds), ("pixel-similarity", [None])):
        mine = [units[unit_key(model, s)] for s in unit_seeds]
        for i, p in enumerate(report["predictions"]):
            want = {
                "choices": [int(u["choices"][i]) for u in mine],
                "confidence": [round(float(u["confidence"][i]), 4) for u in mine],
            }
            assert json.dumps(p["models"][model]) == json.dumps(want), (model, i)
    first = report["predictions"][0]
    assert first["id"] == data.ids[0] and type(first["part"]) is str
    assert (first["key"], first["rule"]) == (int(data.keys[0]), str(data.labels["rule"][0]))
    assert report["flags"]["puzzles"]  # blind flags its confident, always-right puzzles
