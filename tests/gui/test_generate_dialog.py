"""The Generate dialog: every registered family, its controls built from its options schema."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from studio.generate.params import SplitParams
from studio.gui.generate_dialog import GenerateSplitDialog


def split_params_of(dlg: GenerateSplitDialog) -> SplitParams:
    """A glyph family's request as the split parameters its pipeline reads."""
    from studio.families.glyph_pmp import split_params

    r = dlg.request()
    return split_params(r.options, r.n, r.seed, r.ratios)


def test_the_dialog_defaults_to_balanced_sampling(qtbot) -> None:
    dlg = GenerateSplitDialog(["closure", "aspect"])
    qtbot.addWidget(dlg)
    assert dlg.family.id == "glyph-pmp"
    sampling = dlg.form.widget("sampling")
    assert sampling.currentData() == "balanced"
    assert split_params_of(dlg).sampling == "balanced"
    assert "diverse" in sampling.toolTip()


def test_symmetric_answer_sets_and_strict_vetting_by_default_and_by_choice(qtbot) -> None:
    dlg = GenerateSplitDialog(["closure", "aspect"])
    qtbot.addWidget(dlg)
    params = split_params_of(dlg)
    assert params.answer_sets == "symmetric" and params.strict
    strict, answer_sets = dlg.form.widget("strict"), dlg.form.widget("answer_sets")
    assert strict.isChecked() and "shifted reading" in strict.text()
    answer_sets.setCurrentIndex(answer_sets.findData("ua"))
    qtbot.mouseClick(strict, Qt.MouseButton.LeftButton)
    params = split_params_of(dlg)
    assert params.answer_sets == "ua" and not params.strict
    assert "reproduce UA" in answer_sets.toolTip()


def test_concepts_and_rules_come_from_the_schema_and_the_family(qtbot) -> None:
    names = [f"concept-{i}" for i in range(12)]
    dlg = GenerateSplitDialog(names)
    qtbot.addWidget(dlg)
    concepts = dlg.form.widget("concepts")  # many choices: a checkable list
    assert [concepts.item(i).text() for i in range(concepts.count())] == names
    assert split_params_of(dlg).concepts == ()
    concepts.item(1).setCheckState(Qt.CheckState.Checked)
    dlg.show()
    union = dlg.findChild(type(dlg.form.widget("strict")), "option_rules_union")
    # unticked by default, and the rules' tooltip says why (issue 24)
    assert not union.isChecked() and "union" not in split_params_of(dlg).rules
    assert "two values of one concept" in dlg.form.widget("rules").toolTip()
    qtbot.mouseClick(union, Qt.MouseButton.LeftButton)
    params = split_params_of(dlg)
    assert params.concepts == ("concept-1",) and "union" in params.rules


def test_a_stimulus_family_gets_its_own_options_and_an_output_folder(qtbot, tmp_path: Path) -> None:
    dlg = GenerateSplitDialog(["closure"])
    qtbot.addWidget(dlg)
    dlg.show()
    dlg.family_combo.setCurrentIndex(dlg.family_combo.findData("shape-composition"))
    # its items become a set on the board (named); a split folder is written when named
    assert dlg.folder_edit.isVisible() and dlg.name_edit.isVisible()
    pieces = dlg.form.widget("pieces")
    assert (pieces.minimum(), pieces.maximum(), pieces.value()) == (2, 5, 3)
    assert dlg.form.widget("design").currentData() == "balanced"
    pieces.setValue(4)
    request = dlg.request()
    assert request.family == "shape-composition" and request.options["pieces"] == 4
    assert request.name == dlg.name_edit.text() and request.out_dir is None
    dlg.folder_edit.setText(str(tmp_path / "comp"))
    assert dlg.request().out_dir == str(tmp_path / "comp")
    # a folder that holds something else is refused before any work, by name
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    dlg.folder_edit.setText(str(tmp_path / "full"))
    qtbot.mouseClick(dlg.buttons.button(dlg.buttons.StandardButton.Ok), Qt.MouseButton.LeftButton)
    assert "full" in dlg.error_label.text() and dlg.isVisible()


def test_one_request_for_every_family(qtbot) -> None:
    """The dialog gives the same type whatever the family (issue 27): no front end asks for
    split parameters of one kind and a folder job of the other."""
    dlg = GenerateSplitDialog(["closure"])
    qtbot.addWidget(dlg)
    for i in range(dlg.family_combo.count()):
        dlg.family_combo.setCurrentIndex(i)
        request = dlg.request()
        assert request.family == dlg.family.id and request.n == dlg.n_spin.value()
        assert dlg.folder_edit.isVisibleTo(dlg)
