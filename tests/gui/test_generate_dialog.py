"""The Generate split dialog starts from settings that work on a thinly annotated project."""

from __future__ import annotations

from studio.gui.curator_board import GenerateSplitDialog


def test_the_dialog_defaults_to_balanced_sampling(qtbot) -> None:
    dlg = GenerateSplitDialog(["closure", "aspect"])
    qtbot.addWidget(dlg)
    assert dlg.sampling_combo.currentData() == "balanced"
    assert dlg.params().sampling == "balanced"
    assert "diverse" in dlg.sampling_combo.toolTip()


def test_symmetric_answer_sets_and_strict_vetting_by_default_and_by_choice(qtbot) -> None:
    from PySide6.QtCore import Qt

    dlg = GenerateSplitDialog(["closure", "aspect"])
    qtbot.addWidget(dlg)
    params = dlg.params()
    assert params.answer_sets == "symmetric" and params.strict
    assert dlg.strict_box.isChecked() and "shifted reading" in dlg.strict_box.text()
    dlg.answer_sets_combo.setCurrentIndex(dlg.answer_sets_combo.findData("ua"))
    qtbot.mouseClick(dlg.strict_box, Qt.MouseButton.LeftButton)
    params = dlg.params()
    assert params.answer_sets == "ua" and not params.strict
    assert "reproduce UA" in dlg.answer_sets_combo.toolTip()
