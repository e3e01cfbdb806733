"""KiVA's exact partial-view solver (issue 24): it knows the design, finds every key from the
whole trial, and measures what part of a trial gives away."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.cli import main
from studio.core.errors import StudioError
from studio.families.kiva.generator import KivaGenerator
from studio.families.kiva.partial import (
    FULL,
    design_draws,
    kiva_partial_views,
    option_scores,
    solver_accuracy,
)
from studio.families.kiva.transforms import StimulusState
from studio.stimuli.symbolic import audit_stimulus_records
from studio.vet.partial import partial_lines

OBJECTS = ["mug", "key"]


def records(mode: str, design: str, n: int, seed: int = 1) -> list[dict]:
    return list(KivaGenerator(mode=mode, design=design, objects=OBJECTS).records(n, seed))


@pytest.mark.parametrize("mode", ["kiva", "kiva-adults"])
@pytest.mark.parametrize("design", ["balanced", "published"])
def test_the_whole_trial_finds_every_key(mode, design):
    """The solver's model of the design explains every trial the generator draws: with every
    picture in view it finds each key (no draw is missing from its enumeration)."""
    recs = records(mode, design, 400)
    report = kiva_partial_views(recs)
    assert report["unexplained"] == 0
    share = round(sum(r["no_change"] for r in recs) / len(recs), 6)
    draws = design_draws(mode, design, tuple(sorted({r["domain"] for r in recs})), share)
    for r in recs[:50]:
        key = r["questions"][2]["key"]
        assert solver_accuracy(option_scores(r, FULL, draws), key)[0] == 1.0


def test_balanced_design_needs_the_training_pair():
    """Without the training pair (the test input and the options, or the options alone) the
    balanced design leaves the exact solver at chance; the published one does not."""
    balanced = kiva_partial_views(records("kiva-adults", "balanced", 1500))["views"]
    published = kiva_partial_views(records("kiva-adults", "published", 1500))["views"]
    for view in ("row2", "answers"):
        assert abs(balanced[view]["accuracy"] - 1 / 3) < 0.03, (view, balanced[view])
    assert published["row2"]["accuracy"] > balanced["row2"]["accuracy"] + 0.1
    assert published["answers"]["accuracy"] > balanced["answers"]["accuracy"] + 0.05


def test_kiva_mode_training_pair_gives_the_key_and_says_why():
    report = kiva_partial_views(records("kiva", "balanced", 300))
    assert report["views"]["row1"]["accuracy"] == 1.0
    lines = partial_lines(report)
    assert any("the training pair alone" in line for line in lines)
    assert any(
        "kiva mode: the test input starts where the training input does" in line for line in lines
    )


def _trial(shown: str, train: int, test: int, options: list[int], key: int) -> dict:
    def st(n: int) -> dict:
        return StimulusState(count=n).to_json()

    return {
        "mode": "kiva-adults",
        "design": "balanced",
        "domain": "number",
        "spec": f"number:{shown}",
        "no_change": False,
        "states": {
            "train_before": st(train),
            "train_after": st(train + int(shown)),
            "test_before": st(test),
        },
        "questions": [
            {"id": "what"},
            {"id": "how"},
            {"id": "extrapolate", "option_states": [st(n) for n in options], "key": key},
        ],
    }


def test_a_chain_of_counts_is_a_decoy_for_the_training_pair():
    """+1 shown as 3 → 4 and asked of 5, options 5, 6, 7: without the test input, 6 → 7 reads
    as a reading too (base 6, sibling −1), so the training pair alone is not sure of the key.
    Asked of 4 with options 4, 5, 2 (sibling −2) there is one reading: 4 → 5."""
    draws = design_draws("kiva-adults", "balanced", ("number",), 1 / 3)
    chain = option_scores(_trial("+1", 3, 5, [5, 6, 7], 1), "row1", draws)
    assert chain[1] > 0 and chain[2] > 0 and chain[0] == 0
    lone = option_scores(_trial("+1", 5, 4, [4, 5, 2], 1), "row1", draws)
    assert solver_accuracy(lone, 1) == (1.0, False)


def test_audit_and_cli_report_the_floors(tmp_path: Path, capsys):
    recs = records("kiva-adults", "balanced", 200)
    audit = audit_stimulus_records("kiva", recs)
    assert audit is not None and set(audit["partial_views"]["views"]) == {"row1", "row2", "answers"}
    out = tmp_path / "k"
    code = main(
        [
            "-q",
            "generate",
            str(out),
            "--family",
            "kiva",
            "--mode",
            "kiva-adults",
            "--size",
            "64",
            "--n",
            "6",
            "--seed",
            "2",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0 and "partial views (exact solver; chance 33%)" in printed
    assert "the training pair alone finds the key" in printed
    report = json.loads((out / "report.json").read_text())
    assert report["audit"]["partial_views"]["views"]["row1"]["puzzles"] == 6
    assert main(["vet", str(out)]) == 0
    assert "the test input alone finds the key" in capsys.readouterr().out
    assert main(["vet", str(out), "--json"]) == 0
    assert "partial_views" in json.loads(capsys.readouterr().out)["audit"]


def test_an_unreadable_record_is_named():
    bad = records("kiva-adults", "balanced", 3)
    del bad[1]["states"]
    with pytest.raises(StudioError, match="cannot be read for its partial views"):
        kiva_partial_views(bad)
