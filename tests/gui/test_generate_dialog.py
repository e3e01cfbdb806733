"""The Generate split dialog starts from settings that work on a thinly annotated project."""

from __future__ import annotations

from studio.gui.curator_board import GenerateSplitDialog


def test_the_dialog_defaults_to_balanced_sampling(qtbot) -> None:
    dlg = GenerateSplitDialog(["closure", "aspect"])
    qtbot.addWidget(dlg)
    assert dlg.sampling_combo.currentData() == "balanced"
    assert dlg.params().sampling == "balanced"
    assert "diverse" in dlg.sampling_combo.toolTip()
