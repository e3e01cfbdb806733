"""The vetted glyph split (the real generator's balanced answer sets) keeps the context-blind
model near chance overall: its 95% interval reaches chance, or it stays within 10 points.

Known generator bias (issue 5 finding, kept visible rather than hidden): in constant puzzles
over ``intersection-quantity`` every key carries the value ``1`` (only that value has enough
glyphs for a constant row), while the foils carry 2-5; the blind model learns "one
intersection" and the concept is flagged at split level. The strict xfail below turns into a
failure once the generator stops doing it, so the marker gets removed then."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from studio.baselines.run import run_baselines


@pytest.fixture(scope="module")
def vetted_report(glyph_split: Path) -> dict[str, Any]:
    return run_baselines(glyph_split, ["blind"], seeds=3, epochs=6, device="cpu")


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
    # no rule is flagged: the bias found is one concept's (module docstring)
    assert [g for g in report["flags"]["groups"] if g["by"] == "rule"] == []
    assert {g["value"] for g in report["flags"]["groups"]} <= {"intersection-quantity"}


@pytest.mark.xfail(
    strict=True,
    reason="generator bias: constant intersection-quantity keys always carry the value 1",
)
def test_vetted_split_has_no_blind_concept_flags(vetted_report: dict[str, Any]) -> None:
    assert vetted_report["flags"]["groups"] == []
