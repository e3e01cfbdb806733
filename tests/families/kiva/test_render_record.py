"""A KiVA trial re-drawn from its record is the trial generation drew (issue 27)."""

from __future__ import annotations

from pathlib import Path

from tests.families.redraw import redraws_exactly


def test_trials_are_redrawn_from_their_records(tmp_path: Path) -> None:
    # both designs' shuffled options and a no-change trial (the share 1/2 of four trials)
    records = redraws_exactly(
        "kiva",
        tmp_path / "split",
        4,
        seed=5,
        options={"size": 64, "objects": ("l-block", "key", "toy-car"), "no_change_share": 0.5},
    )
    assert any(r["no_change"] for r in records) and not all(r["no_change"] for r in records)


def test_adults_trials_larger_than_the_comparison_size(tmp_path: Path) -> None:
    """Above the rivals' comparison size generation draws with two renderers; the pictures
    are the first's, and the re-draw needs only it."""
    redraws_exactly(
        "kiva",
        tmp_path / "split",
        2,
        seed=4,
        options={
            "size": 128,
            "mode": "kiva-adults",
            "design": "published",
            "objects": ("l-block", "key", "chair"),
        },
    )
