"""A planted biased split (the key is always the answer with the most ink) is caught: the
context-blind model beats chance by far, most test puzzles are flagged shortcut-prone, and
concepts/rules are flagged at split level. Real generator output, real torch training."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from studio.baselines.data import load_source
from studio.baselines.metrics import confidence_threshold
from studio.baselines.run import run_baselines


def test_planted_bias_is_caught_by_the_blind_model(biased_split: Path) -> None:
    data = load_source(biased_split)
    ink = data.answers_u8.reshape(data.n, data.n_answers, -1).astype(np.int64).sum(axis=2)
    assert (data.keys == ink.argmax(axis=1)).all()  # the plant holds

    report = run_baselines(biased_split, ["blind"], seeds=3, epochs=6, device="cpu")
    blind = report["models"]["blind"]
    overall = blind["overall"]
    assert report["chance"] == 0.25 and overall["n"] == 160
    assert overall["accuracy"] > 0.6, overall
    assert overall["ci95"][0] > 0.45 and overall["p_value"] < 1e-10
    assert all(s["accuracy"] > 0.5 for s in blind["per_seed"])

    flags = [f for f in report["flags"]["puzzles"] if f["model"] == "blind"]
    test_ids = set(data.ids[i] for i in data.part_indices("test"))
    flagged_test = {f["id"] for f in flags} & test_ids
    assert len(flagged_test) > len(test_ids) / 2, len(flagged_test)
    key_of = dict(zip(data.ids, data.keys.tolist(), strict=True))
    preds = {p["id"]: p for p in report["predictions"]}
    for f in flags:
        assert f["seeds"] == 3 and f["seeds_correct"] == 3
        assert f["confidence"] >= confidence_threshold(0.25)
        assert preds[f["id"]]["models"]["blind"]["choices"] == [key_of[f["id"]]] * 3
    # train puzzles are flagged too, from cross-fitted (held-out) predictions
    assert any(preds[f["id"]]["part"] == "train" for f in flags)
    assert all(-1 not in p["models"]["blind"]["choices"] for p in report["predictions"])

    groups = report["flags"]["groups"]
    assert groups, "no concept or rule flagged at split level"
    for g in groups:
        assert g["model"] == "blind" and g["by"] in ("rule", "concept")
        assert g["excess_points"] > 5 and g["p_holm"] < 0.05
    assert {g["by"] for g in groups} >= {"rule"}
    flagged_rules = {g["value"] for g in groups if g["by"] == "rule"}
    assert all(blind["groups"]["rule"][r]["flagged"] for r in flagged_rules)
