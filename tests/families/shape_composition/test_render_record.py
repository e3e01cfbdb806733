"""A shape-composition item re-drawn from its record is the item generation drew (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.families.redraw import redraws_exactly


@pytest.mark.parametrize("design", ["balanced", "published"])
def test_items_are_redrawn_from_their_records(tmp_path: Path, design: str) -> None:
    redraws_exactly(
        "shape-composition",
        tmp_path / "split",
        3,
        seed=2,
        options={**{"size": 96}, "design": design},
    )
