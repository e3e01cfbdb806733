"""The schema editor, driven like a user: clicks in the tree, buttons, keys; prompts answered."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QDialogButtonBox, QTreeWidget, QTreeWidgetItem

from studio.core.schema import ConstantMode, Rule, Schema, ValueKind
from studio.gui.schema_editor import NewConceptDialog, SchemaEditor, TagChange

pytestmark = pytest.mark.gui


@dataclass
class Prompts:
    """Answers the editor's questions in order and remembers what it asked."""

    texts: list[str | None] = field(default_factory=list)
    confirms: list[bool] = field(default_factory=list)
    new_concepts: list[tuple[str, str, ValueKind] | None] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)

    def ask_text(self, title: str, label: str, default: str = "") -> str | None:
        self.asked.append(label)
        return self.texts.pop(0)

    def confirm(self, text: str) -> bool:
        self.asked.append(text)
        return self.confirms.pop(0)

    def ask_new_concept(self, default_category: str | None) -> tuple[str, str, ValueKind] | None:
        self.asked.append(f"new concept in {default_category}")
        return self.new_concepts.pop(0)


@pytest.fixture
def counts() -> dict[tuple[str, str | None], int]:
    return {("aspect", None): 18, ("aspect", "tall"): 5, ("closure", None): 3}


@pytest.fixture
def prompts() -> Prompts:
    return Prompts()


@pytest.fixture
def editor(qtbot, ua_schema: Schema, counts, prompts: Prompts) -> Iterator[SchemaEditor]:
    ed = SchemaEditor(ua_schema, lambda c, v: counts.get((c, v), 0))
    ed.ask_text = prompts.ask_text  # type: ignore[method-assign]
    ed.confirm = prompts.confirm  # type: ignore[method-assign]
    ed.ask_new_concept = prompts.ask_new_concept  # type: ignore[method-assign]
    ed.show()
    qtbot.waitExposed(ed)
    ed.activateWindow()
    qtbot.waitUntil(ed.isActiveWindow, timeout=2000)
    yield ed
    # Not qtbot.addWidget: its close comes before this teardown, and closing with edits asks
    # whether to discard them.
    ed.confirm = lambda text: True  # type: ignore[method-assign]
    ed.close()
    ed.deleteLater()


# ---- helpers -----------------------------------------------------------------------------


def tree_texts(tree: QTreeWidget) -> dict[str, list[str]]:
    """Category label → concept texts, as shown."""
    out = {}
    for i in range(tree.topLevelItemCount()):
        cat = tree.topLevelItem(i)
        out[cat.text(0)] = [cat.child(j).text(0) for j in range(cat.childCount())]
    return out


def concept_item(tree: QTreeWidget, concept_id: str) -> QTreeWidgetItem:
    found = tree.findItems(concept_id, Qt.MatchFlag.MatchExactly | Qt.MatchFlag.MatchRecursive, 0)
    items = [i for i in found if i.parent() is not None and i.parent().parent() is None]
    assert len(items) == 1, f"{concept_id!r} shown {len(items)} times"
    return items[0]


def value_texts(tree: QTreeWidget, concept_id: str) -> list[str]:
    item = concept_item(tree, concept_id)
    return [item.child(k).text(0) for k in range(item.childCount())]


def click_item(qtbot, tree: QTreeWidget, item: QTreeWidgetItem) -> None:
    tree.scrollToItem(item)
    qtbot.mouseClick(
        tree.viewport(), Qt.MouseButton.LeftButton, pos=tree.visualItemRect(item).center()
    )


def click_concept(qtbot, ed: SchemaEditor, concept_id: str) -> None:
    click_item(qtbot, ed.tree, concept_item(ed.tree, concept_id))
    assert ed.concept_heading.text() == concept_id


def click_check(qtbot, check) -> None:
    qtbot.mouseClick(check, Qt.MouseButton.LeftButton, pos=QPoint(6, check.height() // 2))


def undo_key(qtbot, ed: SchemaEditor) -> None:
    ed.tree.setFocus()
    qtbot.keyClick(ed.tree, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)


def redo_key(qtbot, ed: SchemaEditor) -> None:
    ed.tree.setFocus()
    qtbot.keyClick(
        ed.tree,
        Qt.Key.Key_Z,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )


def list_texts(ed: SchemaEditor) -> list[str]:
    return [ed.values_list.item(i).text() for i in range(ed.values_list.count())]


# ---- showing ------------------------------------------------------------------------------


def test_shows_the_ua_schema_and_the_selected_concept(qtbot, editor: SchemaEditor) -> None:
    shown = tree_texts(editor.tree)
    assert list(shown) == ["Global", "Local", "Objects & relations"]
    assert shown["Global"][:3] == ["aspect", "closure", "elongation"]
    assert sum(len(v) for v in shown.values()) == 48
    assert editor.panel_stack.currentIndex() == 0  # nothing selected: the hint

    click_concept(qtbot, editor, "aspect")
    assert editor.panel_stack.currentIndex() == 1
    assert editor.kind_combo.currentText() == "ordinal"
    assert "18 tags in this project" in editor.concept_summary.text()
    assert list_texts(editor) == ["tall  · 5 tags", "square", "wide"]
    assert editor.rule_checks[Rule.CONSTANT].isChecked()
    assert editor.constant_mode.currentText() == "select"
    assert editor.rule_checks[Rule.PROGRESSION].isChecked()
    assert editor.rule_values[Rule.PROGRESSION].text() == "tall, square, wide"
    assert not editor.rule_checks[Rule.ARITHMETIC].isChecked()

    # a presence concept's empty value id is shown, not blank
    assert value_texts(editor.tree, "horns") == ['"" (present)', "none"]


# ---- editing, undo and redo ---------------------------------------------------------------


def test_add_rename_values_rule_then_undo_and_redo_by_keyboard(
    qtbot, editor: SchemaEditor, prompts: Prompts, ua_schema: Schema
) -> None:
    click_concept(qtbot, editor, "base-contacts")  # a Local concept: the default category
    prompts.new_concepts.append(("stroke-count", "local", ValueKind.INTEGER))
    qtbot.mouseClick(editor.add_concept_button, Qt.MouseButton.LeftButton)
    assert prompts.asked[-1] == "new concept in local"
    assert tree_texts(editor.tree)["Local"][-1] == "stroke-count"
    assert editor.concept_heading.text() == "stroke-count"
    assert editor.kind_combo.currentText() == "integer"

    prompts.texts.append("stroke-total")
    qtbot.mouseClick(editor.rename_concept_button, Qt.MouseButton.LeftButton)
    assert tree_texts(editor.tree)["Local"][-1] == "stroke-total"
    assert editor.undo_button.toolTip() == "Undo: Rename concept stroke-count to stroke-total"

    for v in ("1", "2", "3"):
        prompts.texts.append(v)
        qtbot.mouseClick(editor.add_value_button, Qt.MouseButton.LeftButton)
    assert value_texts(editor.tree, "stroke-total") == ["1", "2", "3"]
    assert list_texts(editor) == ["1", "2", "3"]

    click_check(qtbot, editor.rule_checks[Rule.PROGRESSION])
    assert editor.rule_checks[Rule.PROGRESSION].isChecked()
    assert Rule.PROGRESSION in editor.result_schema().concept("stroke-total").rules
    assert editor.edit_labels() == [
        "Add integer concept stroke-count to local",
        "Rename concept stroke-count to stroke-total",
        "Add value 1 to stroke-total",
        "Add value 2 to stroke-total",
        "Add value 3 to stroke-total",
        "Enable progression for stroke-total",
    ]
    assert not editor.error_label.isVisible()

    undo_key(qtbot, editor)
    assert not editor.rule_checks[Rule.PROGRESSION].isChecked()
    assert editor.status_label.text() == "Undone: Enable progression for stroke-total."
    for _ in range(3):
        undo_key(qtbot, editor)
    assert value_texts(editor.tree, "stroke-total") == []
    undo_key(qtbot, editor)
    assert tree_texts(editor.tree)["Local"][-1] == "stroke-count"
    assert editor.concept_heading.text() == "stroke-count"

    redo_key(qtbot, editor)
    assert tree_texts(editor.tree)["Local"][-1] == "stroke-total"
    qtbot.mouseClick(editor.redo_button, Qt.MouseButton.LeftButton)
    assert value_texts(editor.tree, "stroke-total") == ["1"]

    undo_key(qtbot, editor)
    undo_key(qtbot, editor)
    undo_key(qtbot, editor)
    assert "stroke-count" not in tree_texts(editor.tree)["Local"]
    assert editor.result_schema() == ua_schema
    assert not editor.undo_button.isEnabled()
    assert editor.redo_button.isEnabled()


def test_label_kind_and_constant_mode_edits(qtbot, editor: SchemaEditor) -> None:
    click_concept(qtbot, editor, "elongation")
    editor.label_edit.setFocus()
    qtbot.keyClicks(editor.label_edit, "Elongation")
    qtbot.keyClick(editor.label_edit, Qt.Key.Key_Return)
    assert editor.isVisible()  # Enter in a field does not close the dialog
    assert editor.result_schema().concept("elongation").label == "Elongation"
    assert concept_item(editor.tree, "elongation (Elongation)") is not None

    editor.constant_mode.setCurrentIndex(editor.constant_mode.findText("negate"))
    editor.constant_mode.activated.emit(editor.constant_mode.currentIndex())
    spec = editor.result_schema().concept("elongation").rules[Rule.CONSTANT]
    assert spec.mode is ConstantMode.NEGATE
    assert editor.undo_button.toolTip() == "Undo: Set the constant rule of elongation to negate"


def test_rule_restriction_is_typed_as_comma_separated_ids(qtbot, editor: SchemaEditor) -> None:
    click_concept(qtbot, editor, "closure")
    field_ = editor.rule_values[Rule.DIST3]
    assert field_.text() == "line, circle, square, triangle"

    field_.setFocus()
    field_.selectAll()
    qtbot.keyClicks(field_, "line, circle")
    qtbot.keyClick(field_, Qt.Key.Key_Return)
    assert editor.error_label.isVisible()
    assert "dist3 needs at least 3 values" in editor.error_label.text()
    assert field_.text() == "line, circle, square, triangle"  # shows what is in effect

    field_.setFocus()
    field_.selectAll()
    qtbot.keyClicks(field_, "line,circle ,square")
    qtbot.keyClick(field_, Qt.Key.Key_Return)
    assert not editor.error_label.isVisible()
    assert editor.result_schema().concept("closure").rules[Rule.DIST3].values == (
        "line",
        "circle",
        "square",
    )
    assert editor.undo_button.toolTip() == "Undo: Restrict dist3 of closure to line, circle, square"
    assert field_.text() == "line, circle, square"


# ---- refused edits ------------------------------------------------------------------------


def test_arithmetic_on_a_nominal_concept_is_refused_with_path_and_problem(
    qtbot, editor: SchemaEditor, ua_schema: Schema
) -> None:
    click_concept(qtbot, editor, "closure")
    click_check(qtbot, editor.rule_checks[Rule.ARITHMETIC])
    assert editor.error_label.isVisible()
    text = editor.error_label.text()
    assert "Not applied: Enable arithmetic for closure" in text
    assert "$.categories[0].concepts[1].rules.arithmetic" in text
    assert "arithmetic needs an integer concept, not nominal" in text
    assert not editor.rule_checks[Rule.ARITHMETIC].isChecked()
    assert editor.result_schema() is ua_schema
    assert not editor.undo_button.isEnabled()


def test_duplicate_value_and_bad_kind_and_bad_id_are_refused(
    qtbot, editor: SchemaEditor, prompts: Prompts, ua_schema: Schema
) -> None:
    click_concept(qtbot, editor, "aspect")
    prompts.texts.append("tall")
    qtbot.mouseClick(editor.add_value_button, Qt.MouseButton.LeftButton)
    assert "'tall' exists" in editor.error_label.text()
    assert list_texts(editor) == ["tall  · 5 tags", "square", "wide"]

    click_concept(qtbot, editor, "closure")
    editor.kind_combo.setCurrentIndex(editor.kind_combo.findText("integer"))
    editor.kind_combo.activated.emit(editor.kind_combo.currentIndex())
    assert "is an integer concept; 'circle' is no integer" in editor.error_label.text()
    assert editor.kind_combo.currentText() == "nominal"

    prompts.texts.append("Closure Shape")
    qtbot.mouseClick(editor.rename_concept_button, Qt.MouseButton.LeftButton)
    assert "does not match" in editor.error_label.text()
    assert concept_item(editor.tree, "closure") is not None

    assert editor.result_schema() is ua_schema
    assert editor.tag_changes() == []


def test_removing_a_value_an_ordinal_progression_needs_is_refused(
    qtbot, editor: SchemaEditor, prompts: Prompts, ua_schema: Schema
) -> None:
    click_item(qtbot, editor.tree, concept_item(editor.tree, "aspect"))
    editor.values_list.setCurrentRow(0)
    prompts.confirms.append(True)
    qtbot.mouseClick(editor.remove_value_button, Qt.MouseButton.LeftButton)
    assert prompts.asked[-1] == "Remove value 'tall' of concept 'aspect' and its 5 tags?"
    assert "an ordinal progression needs the order of 3+ values" in editor.error_label.text()
    assert editor.result_schema() is ua_schema


# ---- removals ask first --------------------------------------------------------------------


def test_removing_a_concept_with_tags_asks_with_the_count_and_cancel_keeps_it(
    qtbot, editor: SchemaEditor, prompts: Prompts, ua_schema: Schema
) -> None:
    click_concept(qtbot, editor, "aspect")
    prompts.confirms.append(False)
    qtbot.mouseClick(editor.remove_concept_button, Qt.MouseButton.LeftButton)
    assert prompts.asked == ["Remove concept 'aspect' and its 18 tags?"]
    assert "aspect" in tree_texts(editor.tree)["Global"]
    assert editor.result_schema() is ua_schema
    assert not editor.undo_button.isEnabled()

    prompts.confirms.append(True)
    editor.tree.setFocus()
    qtbot.keyClick(editor.tree, Qt.Key.Key_Delete)  # Del in the tree removes the selection
    assert "aspect" not in tree_texts(editor.tree)["Global"]
    assert editor.undo_button.toolTip() == "Undo: Remove concept aspect and its 18 tags"
    assert editor.tag_changes() == [TagChange("remove_concept", "aspect")]


def test_removing_an_untagged_concept_does_not_ask(
    qtbot, editor: SchemaEditor, prompts: Prompts
) -> None:
    click_concept(qtbot, editor, "ink")
    qtbot.mouseClick(editor.remove_concept_button, Qt.MouseButton.LeftButton)
    assert prompts.asked == []
    assert "ink" not in tree_texts(editor.tree)["Global"]


# ---- what the caller applies to tags ----------------------------------------------------------


def test_tag_changes_follow_renames_and_removals_and_drop_undone_ones(
    qtbot, editor: SchemaEditor, prompts: Prompts
) -> None:
    click_concept(qtbot, editor, "aspect")
    prompts.texts.append("aspect-ratio")
    qtbot.mouseClick(editor.rename_concept_button, Qt.MouseButton.LeftButton)

    click_item(qtbot, editor.tree, concept_item(editor.tree, "aspect-ratio").child(0))
    assert editor.values_list.currentItem().text() == "tall  · 5 tags"  # counted by old ids
    prompts.texts.append("narrow")
    qtbot.mouseClick(editor.rename_value_button, Qt.MouseButton.LeftButton)
    assert value_texts(editor.tree, "aspect-ratio") == ["narrow", "square", "wide"]
    assert editor.rule_values[Rule.PROGRESSION].text() == "narrow, square, wide"

    click_concept(qtbot, editor, "closure")
    editor.values_list.setCurrentRow(3)  # triangle
    qtbot.mouseClick(editor.remove_value_button, Qt.MouseButton.LeftButton)  # untagged: no ask

    click_concept(qtbot, editor, "aspect-ratio")
    prompts.confirms.append(False)
    qtbot.mouseClick(editor.remove_concept_button, Qt.MouseButton.LeftButton)
    assert prompts.asked[-1] == "Remove concept 'aspect-ratio' and its 18 tags?"

    assert editor.tag_changes() == [
        TagChange("rename_concept", "aspect", new_name="aspect-ratio"),
        TagChange("rename_value", "aspect-ratio", "tall", "narrow"),
        TagChange("remove_value", "closure", "triangle"),
    ]
    undo_key(qtbot, editor)
    undo_key(qtbot, editor)
    assert editor.tag_changes() == [TagChange("rename_concept", "aspect", new_name="aspect-ratio")]
    redo_key(qtbot, editor)
    assert editor.tag_changes()[-1] == TagChange("rename_value", "aspect-ratio", "tall", "narrow")
    undo_key(qtbot, editor)
    undo_key(qtbot, editor)
    assert editor.tag_changes() == []
    assert concept_item(editor.tree, "aspect") is not None


def test_a_new_concept_has_no_tags_to_ask_about(
    qtbot, editor: SchemaEditor, prompts: Prompts, counts
) -> None:
    counts[("fresh", None)] = 99  # a project concept of the same name was removed long ago
    prompts.new_concepts.append(("fresh", "objrel", ValueKind.NOMINAL))
    qtbot.mouseClick(editor.add_concept_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(editor.remove_concept_button, Qt.MouseButton.LeftButton)
    assert prompts.asked == ["new concept in None"]
    assert editor.tag_changes() == [TagChange("remove_concept", "fresh")]


def test_cancel_with_edits_asks_before_discarding(
    qtbot, editor: SchemaEditor, prompts: Prompts
) -> None:
    click_concept(qtbot, editor, "ink")
    qtbot.mouseClick(editor.remove_concept_button, Qt.MouseButton.LeftButton)
    prompts.confirms.append(False)
    cancel = editor.button_box.button(QDialogButtonBox.StandardButton.Cancel)
    qtbot.mouseClick(cancel, Qt.MouseButton.LeftButton)
    assert prompts.asked[-1] == "Discard 1 schema edit?"
    assert editor.isVisible()


# ---- the new-concept prompt --------------------------------------------------------------------


def test_new_concept_dialog(qtbot, ua_schema: Schema) -> None:
    dialog = NewConceptDialog(ua_schema, default_category="objrel")
    qtbot.addWidget(dialog)
    dialog.show()
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert dialog.category_combo.currentText() == "Objects & relations"
    assert not ok.isEnabled()
    qtbot.keyClicks(dialog.id_edit, "loops")
    dialog.kind_combo.setCurrentIndex(dialog.kind_combo.findText("integer"))
    assert ok.isEnabled()
    with qtbot.waitSignal(dialog.accepted):
        qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    assert dialog.result_values() == ("loops", "objrel", ValueKind.INTEGER)


# ---- definitions (issue 28) ---------------------------------------------------------------


def test_definitions_and_examples_are_edited_undone_and_checked(
    qtbot, editor: SchemaEditor
) -> None:
    """A concept's and a value's definition and example glyphs are typed in the panel, each
    edit one undoable step; a key that is no glyph key is refused with the reason."""
    click_concept(qtbot, editor, "elongation")
    before = editor.result_schema().concept("elongation")
    assert editor.description_edit.toPlainText() == before.description
    editor.description_edit.setFocus()
    editor.description_edit.selectAll()
    qtbot.keyClicks(editor.description_edit, "How stretched the glyph's main body is.")
    editor.examples_edit.setFocus()  # leaving the box finishes the edit
    assert (
        editor.result_schema().concept("elongation").description
        == "How stretched the glyph's main body is."
    )
    assert editor.undo_button.toolTip() == "Undo: Set the definition of elongation"
    editor.examples_edit.selectAll()
    qtbot.keyClicks(editor.examples_edit, "U+007C@dejavusans, U+2014@dejavusans")
    qtbot.keyClick(editor.examples_edit, Qt.Key.Key_Return)
    assert editor.result_schema().concept("elongation").examples == (
        "U+007C@dejavusans",
        "U+2014@dejavusans",
    )
    # a value's definition: select it in the list, type, Enter
    editor.values_list.setCurrentRow(0)
    vid = editor.result_schema().concept("elongation").values[0].id
    editor.value_description_edit.setFocus()
    editor.value_description_edit.selectAll()
    qtbot.keyClicks(editor.value_description_edit, "much longer than wide")
    qtbot.keyClick(editor.value_description_edit, Qt.Key.Key_Return)
    value = editor.result_schema().concept("elongation").value(vid)
    assert value.description == "much longer than wide"
    assert editor.values_list.currentRow() == 0  # the value stays selected
    # a bad key is refused, and nothing changes
    editor.value_examples_edit.setFocus()
    editor.value_examples_edit.selectAll()
    qtbot.keyClicks(editor.value_examples_edit, "U+7C|bad")
    qtbot.keyClick(editor.value_examples_edit, Qt.Key.Key_Return)
    assert "'U+7C|bad' is not a glyph key like U+25CB@symbola" in editor.error_label.text()
    assert editor.result_schema().concept("elongation").value(vid).examples == value.examples
    # undo by keyboard takes the value's definition back, then the concept's examples
    undo_key(qtbot, editor)
    assert editor.result_schema().concept("elongation").value(vid).description == (
        before.values[0].description
    )
    undo_key(qtbot, editor)
    assert editor.result_schema().concept("elongation").examples == before.examples
    # and the saved schema carries what is left, loading back the same
    from studio.core.schema import schema_from_json

    back = schema_from_json(editor.result_schema().to_json())
    assert back.concept("elongation").description == "How stretched the glyph's main body is."


def test_a_project_made_before_definitions_takes_them_from_the_bundled_schema(
    qtbot, ua_schema: Schema
) -> None:
    """Issue 28: a project's stored UA schema from before definitions keeps none; the
    editor's "Definitions from…" fills what it lacks (never what the lab wrote), undoably."""
    from dataclasses import replace as dc_replace

    from studio.core.schema import bundled_schema_path

    bare = ua_schema
    for c in ua_schema.concepts:
        values = tuple(dc_replace(v, description="", examples=()) for v in c.values)
        bare = bare.with_concept_replaced(
            c.id, dc_replace(c, description="", examples=(), values=values)
        )
    ours = dc_replace(bare.concept("closure"), description="Our own words for closure.")
    bare = bare.with_concept_replaced("closure", ours)
    ed = SchemaEditor(bare, lambda c, v: 0)
    ed.ask_schema_file = lambda: str(bundled_schema_path())  # type: ignore[method-assign]
    ed.show()
    qtbot.waitExposed(ed)
    qtbot.mouseClick(ed.definitions_button, Qt.MouseButton.LeftButton)
    got = ed.result_schema()
    assert got.concept("closure").description == "Our own words for closure."  # kept
    assert got.concept("closure").value("circle").description == (
        ua_schema.concept("closure").value("circle").description
    )
    assert got.concept("aspect").description == ua_schema.concept("aspect").description
    assert ed.undo_button.toolTip().startswith("Undo: Take ")
    qtbot.mouseClick(ed.undo_button, Qt.MouseButton.LeftButton)
    assert ed.result_schema().concept("aspect").description == ""
    ed.confirm = lambda text: True  # type: ignore[method-assign]
    ed.close()
    ed.deleteLater()


def test_passing_through_a_definition_changes_nothing_and_too_long_keeps_the_text(
    qtbot, ua_schema: Schema
) -> None:
    """Review of issue 28: a stored definition with a trailing space made a mere pass through
    its box an edit; a refused 4,000+ character definition threw the typed text away."""
    from dataclasses import replace as dc_replace

    padded = dc_replace(ua_schema.concept("closure"), description="Implied figures. ")
    ed = SchemaEditor(ua_schema.with_concept_replaced("closure", padded), lambda c, v: 0)
    ed.show()
    qtbot.waitExposed(ed)
    ed.activateWindow()
    qtbot.waitUntil(ed.isActiveWindow, timeout=2000)
    click_concept(qtbot, ed, "closure")
    ed.description_edit.setFocus()
    assert ed.description_edit.hasFocus()
    ed.examples_edit.setFocus()
    assert ed.examples_edit.hasFocus() and not ed.undo_button.isEnabled()
    ed.description_edit.setFocus()
    ed.description_edit.setPlainText("x" * 4001)
    ed.examples_edit.setFocus()
    assert ed.description_edit.toPlainText() == "x" * 4001  # kept to be shortened
    assert "4,001 characters; at most 4,000" in ed.error_label.text()
    assert ed.result_schema().concept("closure").description == "Implied figures. "
    ed.confirm = lambda text: True  # type: ignore[method-assign]
    ed.close()
    ed.deleteLater()
