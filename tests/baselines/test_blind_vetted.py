"""The vetted glyph split (the real generator's symmetric answer sets) keeps every answers-only
model near chance: the context-blind CNN and both probes (tags, image features). No rule or
concept is flagged.

Issue 5 found that constant puzzles over ``intersection-quantity`` always keyed the value ``1``
(only that value had glyphs enough for a constant row) and marked it as a strict xfail; issue 11's
symmetric sets make such a tuple dry instead (one key-able value cannot make a set of four), so
the concept is no longer flagged. What a fresh machine renders (which glyphs have an image)
changes which tuples are dry, never whether a set is symmetric, so the assertions hold there
too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from studio.baselines.run import run_baselines


@pytest.fixture(scope="module")
def vetted_report(glyph_split: Path) -> dict[str, Any]:
    return run_baselines(glyph_split, ["blind", "probes"], seeds=3, epochs=6, device="cpu")


def test_vetted_split_keeps_blind_accuracy_near_chance(vetted_report: dict[str, Any]) -> None:
    report = vetted_report
    overall = report["models"]["blind"]["overall"]
    chance = report["chance"]
    assert overall["ci95"][0] <= chance or overall["accuracy"] < chance + 0.10, overall
    # the report is complete: every puzzle predicted in every seed, curves per seed
    assert len(report["predictions"]) == 800
    assert all(len(p["models"]["blind"]["choices"]) == 3 for p in report["predictions"])
    for s in report["models"]["blind"]["per_seed"]:
        assert 1 <= s["epochs"] <= 6 and len(s["curve"]) == s["epochs"]
        assert {"epoch", "loss", "train_acc", "val_acc", "val_loss"} <= set(s["curve"][0])
    assert report["models"]["blind"]["throughput"]["train_puzzles_per_s"] > 0
    assert [g for g in report["flags"]["groups"] if g["model"] == "blind"] == []


@pytest.mark.parametrize("probe", ["probe-tags", "probe-image"])
def test_answers_only_probes_stay_near_chance(vetted_report: dict[str, Any], probe: str) -> None:
    overall = vetted_report["models"][probe]["overall"]
    chance = vetted_report["chance"]
    # 160 held-out puzzles of two or three tuples: a fit on train that happens to lean the way
    # the held-out keys fell by chance reaches 0.35 (probe-tags, this seed: gestalt=1 on the key
    # 37 of 114 times, a uniform draw's p = 0.16); a leak by design reaches 0.43 to 0.61 (the
    # partial views, UA's pool), far above this bound. Key rates per value are tested exactly
    # in tests/families/glyph_pmp/test_answer_sets.py.
    assert overall["ci95"][0] <= chance + 0.05 or overall["accuracy"] < chance + 0.10, overall
    flagged = [f for f in vetted_report["flags"]["puzzles"] if f["model"] == probe]
    assert len(flagged) <= 0.05 * len(vetted_report["predictions"])
    # A group the probe finds (this split: image size leans the key in 42 components-solid
    # puzzles, which vetting's image-feature warnings grade below "high") must say why.
    for group in vetted_report["flags"]["groups"]:
        if group["model"] == probe:
            assert group["reason"] and group["p_holm"] < 0.05, group
