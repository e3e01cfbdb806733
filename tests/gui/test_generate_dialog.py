"""The Generate dialog: every registered family, its controls built from its options schema."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from studio.gui.generate_dialog import GenerateSplitDialog


def test_the_dialog_defaults_to_balanced_sampling(qtbot) -> None:
    dlg = GenerateSplitDialog(["closure", "aspect"])
    qtbot.addWidget(dlg)
    assert dlg.family.id == "glyph-pmp"
    sampling = dlg.form.widget("sampling")
    assert sampling.currentData() == "balanced"
    assert dlg.params().sampling == "balanced"
    assert "diverse" in sampling.toolTip()


def test_symmetric_answer_sets_and_strict_vetting_by_default_and_by_choice(qtbot) -> None:
    dlg = GenerateSplitDialog(["closure", "aspect"])
    qtbot.addWidget(dlg)
    params = dlg.params()
    assert params.answer_sets == "symmetric" and params.strict
    strict, answer_sets = dlg.form.widget("strict"), dlg.form.widget("answer_sets")
    assert strict.isChecked() and "shifted reading" in strict.text()
    answer_sets.setCurrentIndex(answer_sets.findData("ua"))
    qtbot.mouseClick(strict, Qt.MouseButton.LeftButton)
    params = dlg.params()
    assert params.answer_sets == "ua" and not params.strict
    assert "reproduce UA" in answer_sets.toolTip()


def test_concepts_and_rules_come_from_the_schema_and_the_family(qtbot) -> None:
    names = [f"concept-{i}" for i in range(12)]
    dlg = GenerateSplitDialog(names)
    qtbot.addWidget(dlg)
    concepts = dlg.form.widget("concepts")  # many choices: a checkable list
    assert [concepts.item(i).text() for i in range(concepts.count())] == names
    assert dlg.params().concepts == ()
    concepts.item(1).setCheckState(Qt.CheckState.Checked)
    dlg.show()
    union = dlg.findChild(type(dlg.form.widget("strict")), "option_rules_union")
    # unticked by default, and the rules' tooltip says why (issue 24)
    assert not union.isChecked() and "union" not in dlg.params().rules
    assert "two values of one concept" in dlg.form.widget("rules").toolTip()
    qtbot.mouseClick(union, Qt.MouseButton.LeftButton)
    params = dlg.params()
    assert params.concepts == ("concept-1",) and "union" in params.rules


def test_a_stimulus_family_gets_its_own_options_and_an_output_folder(qtbot, tmp_path: Path) -> None:
    dlg = GenerateSplitDialog(["closure"])
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.family_combo.setCurrentIndex(dlg.family_combo.findData("shape-composition"))
    # its items become a set on the board (named) and a split folder (their pictures)
    assert dlg.folder_edit.isVisible() and dlg.name_edit.isVisible()
    pieces = dlg.form.widget("pieces")
    assert (pieces.minimum(), pieces.maximum(), pieces.value()) == (2, 5, 3)
    assert dlg.form.widget("design").currentData() == "balanced"
    qtbot.mouseClick(dlg.buttons.button(dlg.buttons.StandardButton.Ok), Qt.MouseButton.LeftButton)
    assert "output folder" in dlg.error_label.text() and dlg.isVisible()
    dlg.folder_edit.setText(str(tmp_path / "comp"))
    pieces.setValue(4)
    request = dlg.folder_request()
    assert request["family"] == "shape-composition" and request["options"]["pieces"] == 4
    assert request["name"] == dlg.name_edit.text()
