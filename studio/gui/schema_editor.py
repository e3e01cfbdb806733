"""Edit ▸ Edit schema…: a dialog that edits a concept schema, one undoable command per edit.

Every edit goes through the core's ``Schema.with_*`` methods (and the JSON Schema of the file
format), so the dialog can never produce a schema the core would refuse to load; a refused edit
is shown with its JSON path and problem and leaves the schema as it was.

The caller gets back :meth:`SchemaEditor.result_schema` and :meth:`SchemaEditor.tag_changes`:
the renames and removals still in effect after any undo/redo, in the order they were made, to
apply to the project's tags in that order (each names the ids as they were at that moment).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, cast

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QFocusEvent, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.core.commands import FunctionCommand, UndoStack
from studio.core.errors import SchemaError
from studio.core.keys import GlyphKey
from studio.core.schema import (
    NONE_VALUE,
    Concept,
    ConstantMode,
    Rule,
    RuleSpec,
    Schema,
    Value,
    ValueKind,
    validate_structure,
)
from studio.gui.actions import ActionSpec, action_spec

TagCounts = Callable[[str, str | None], int]
TagChangeKind = Literal["rename_concept", "remove_concept", "rename_value", "remove_value"]

NODE_ROLE = Qt.ItemDataRole.UserRole
EMPTY_ID_TEXT = '""'
RULE_HINTS: dict[Rule, str] = {
    Rule.CONSTANT: "Rows share a value (select), or contrast a value with its absence (negate)",
    Rule.PROGRESSION: "Values step evenly along the row; for an ordinal concept, in this order",
    Rule.ARITHMETIC: "Third value is the sum or difference of the first two (integers only)",
    Rule.DIST3: "Three distinct values, the same three in both rows",
    Rule.UNION: "The third glyph carries both values of the first two",
}


@dataclass(frozen=True)
class TagChange:
    """A schema edit that the project's tags must follow.

    ``rename_concept``: concept → new_name; ``remove_concept``: concept;
    ``rename_value``: value of concept → new_name; ``remove_value``: value of concept.
    """

    kind: TagChangeKind
    concept: str
    value: str | None = None
    new_name: str | None = None


Focus = tuple[str | None, str | None]  # (concept id, value id) to select after a change


@dataclass(frozen=True)
class _Edit:
    """One applied edit, as kept in the dialog's history (mirrors the undo stack)."""

    label: str
    before: Schema
    after: Schema
    kind: str  # a TagChangeKind, "add_concept", "add_value" or "other"
    concept: str
    value: str | None
    new_name: str | None
    focus_before: Focus
    focus_after: Focus

    def tag_change(self) -> TagChange | None:
        if self.kind not in ("rename_concept", "remove_concept", "rename_value", "remove_value"):
            return None
        return TagChange(cast(TagChangeKind, self.kind), self.concept, self.value, self.new_name)


def value_text(value_id: str) -> str:
    """How a value id is written in the editor's text fields (the empty id as ``""``)."""
    return EMPTY_ID_TEXT if value_id == "" else value_id


def parse_value_list(text: str) -> tuple[str, ...] | None:
    """``"tall, square, wide"`` → ``("tall", "square", "wide")``; blank → None (all values);
    ``""`` stands for the empty id of a presence concept."""
    parts = [p.strip() for p in text.split(",")]
    ids = tuple("" if p == EMPTY_ID_TEXT else p for p in parts if p)
    return ids or None


def format_value_list(values: tuple[str, ...] | None) -> str:
    return "" if values is None else ", ".join(value_text(v) for v in values)


#: the longest definition the schema file takes (concept-schema.schema.json)
MAX_DEFINITION = 4000


def parse_examples(text: str) -> tuple[str, ...]:
    """Example glyph keys typed comma- or space-separated; raises SchemaError naming the first
    one that is no glyph key (the schema file would refuse it)."""
    out: list[str] = []
    for part in text.replace(",", " ").split():
        try:
            key = str(GlyphKey.parse(part))
        except ValueError:
            raise SchemaError(
                None, "examples", f"{part!r} is not a glyph key like U+25CB@symbola"
            ) from None
        if key not in out:
            out.append(key)
    return tuple(out)


class DefinitionEdit(QPlainTextEdit):
    """A definition's text box: ``editing_finished`` when focus leaves it (as a line edit's
    editingFinished), so each definition edit is one undoable step, not one per keystroke."""

    editing_finished = Signal()

    def focusOutEvent(self, event: QFocusEvent) -> None:
        super().focusOutEvent(event)
        self.editing_finished.emit()


def _tags(n: int) -> str:
    return f"{n} tag" if n == 1 else f"{n} tags"


class NewConceptDialog(QDialog):
    """Asks for a new concept's id, category and value kind."""

    def __init__(
        self, schema: Schema, default_category: str | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Add concept")
        self.id_edit = QLineEdit(self)
        self.id_edit.setPlaceholderText("lower-case id, e.g. stroke-count")
        self.category_combo = QComboBox(self)
        for cat in schema.categories:
            self.category_combo.addItem(cat.display, cat.id)
        if default_category is not None:
            self.category_combo.setCurrentIndex(
                max(0, self.category_combo.findData(default_category))
            )
        self.kind_combo = QComboBox(self)
        for kind in ValueKind:
            self.kind_combo.addItem(kind.value, kind)
        self.kind_combo.setCurrentIndex(self.kind_combo.findData(ValueKind.NOMINAL))
        form = QFormLayout()
        form.addRow("&Id:", self.id_edit)
        form.addRow("&Category:", self.category_combo)
        form.addRow("&Kind:", self.kind_combo)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.buttons)
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setEnabled(False)
        self.id_edit.textChanged.connect(lambda t: ok.setEnabled(bool(t.strip())))

    def result_values(self) -> tuple[str, str, ValueKind]:
        """(id, category id, kind) as entered."""
        return (
            self.id_edit.text().strip(),
            self.category_combo.currentData(),
            ValueKind(self.kind_combo.currentData()),
        )


def schema_label(schema: Schema) -> str:
    """The schema's name and version as a person reads it: ``Unicode Analogies 1.0`` (its
    title already ends with the version: not ``… 1.0 1.0``), ``ua 1.0`` without a title."""
    name = (schema.title or schema.id).strip()
    if name == schema.version or name.endswith(f" {schema.version}"):
        return name
    return f"{name} {schema.version}"


class SchemaEditor(QDialog):
    """Edits a Schema: a tree of categories → concepts → values on the left, the selected
    concept (label, kind, values, rules) on the right. See the module docstring.

    ``tag_counts(concept_id, value_id)`` says how many tags of the project use a concept
    (``value_id`` None) or one of its values; ids are those of the schema passed in.
    """

    def __init__(
        self, schema: Schema, tag_counts: TagCounts, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Edit schema — {schema_label(schema)}")
        self.resize(900, 600)
        self._initial = schema
        self._schema = schema
        self._tag_counts = tag_counts
        self._history: list[_Edit] = []
        self._panel_concept: str | None = None
        self.undo_stack = UndoStack()

        self._build_ui()
        self.undo_stack.subscribe(self._update_undo_buttons)
        self._rebuild_tree((None, None))
        self._update_undo_buttons()
        self._update_buttons()

    # ---- public API ---------------------------------------------------------------------
    def result_schema(self) -> Schema:
        """The schema with every edit still in effect (after undo/redo)."""
        return self._schema

    def tag_changes(self) -> list[TagChange]:
        """Renames and removals in effect, in the order made; apply them to tags in order."""
        return [c for e in self._history if (c := e.tag_change()) is not None]

    def edit_labels(self) -> list[str]:
        """The labels of the edits in effect, oldest first."""
        return [e.label for e in self._history]

    def current_concept_id(self) -> str | None:
        """The concept shown on the right, if any."""
        return self._panel_concept

    def select(self, concept_id: str, value_id: str | None = None) -> None:
        """Select a concept (and a value of it) in the tree, as a click would."""
        item = self._find_item(concept_id, value_id)
        if item is not None:
            self.tree.setCurrentItem(item)

    # ---- prompts (overridable, so tests can answer them) --------------------------------
    def confirm(self, text: str) -> bool:
        """Ask a yes/cancel question; True means go ahead."""
        answer = QMessageBox.question(
            self,
            "Edit schema",
            text,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        return answer == QMessageBox.StandardButton.Yes

    def ask_text(self, title: str, label: str, default: str = "") -> str | None:
        """Ask for one line of text; None when cancelled."""
        text, ok = QInputDialog.getText(self, title, label, QLineEdit.EchoMode.Normal, default)
        return text if ok else None

    def ask_schema_file(self) -> str | None:
        """Ask for a schema file to take definitions from; None when cancelled."""
        from PySide6.QtWidgets import QFileDialog

        from studio.core.schema import bundled_schema_path

        path, _ = QFileDialog.getOpenFileName(
            self, "Definitions from a schema", str(bundled_schema_path()), "Schemas (*.json)"
        )
        return path or None

    def ask_new_concept(self, default_category: str | None) -> tuple[str, str, ValueKind] | None:
        """Ask for a new concept's (id, category, kind); None when cancelled."""
        dialog = NewConceptDialog(self._schema, default_category, self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        return dialog.result_values()

    # ---- layout -------------------------------------------------------------------------
    def _build_ui(self) -> None:
        # toolbar row
        self.add_concept_button = QPushButton("Add concept…", self)
        self.rename_concept_button = QPushButton("Rename concept…", self)
        self.remove_concept_button = QPushButton("Remove concept…", self)
        self.undo_button = QPushButton("Undo", self)
        self.redo_button = QPushButton("Redo", self)
        self.definitions_button = QPushButton("Definitions from…", self)
        self.definitions_button.setToolTip(
            "Fill the definitions and example glyphs this schema lacks from another schema "
            "file's concepts and values of the same ids (the bundled UA 1.0 schema by "
            "default); none you wrote is overwritten"
        )
        self.definitions_button.clicked.connect(self.take_definitions)
        self.add_concept_button.clicked.connect(self.add_concept)
        self.rename_concept_button.clicked.connect(self.rename_concept)
        self.remove_concept_button.clicked.connect(self.remove_concept)
        self.undo_button.clicked.connect(self.undo)
        self.redo_button.clicked.connect(self.redo)
        top = QHBoxLayout()
        for b in (self.add_concept_button, self.rename_concept_button, self.remove_concept_button):
            top.addWidget(b)
        top.addWidget(self.definitions_button)
        top.addStretch(1)
        top.addWidget(self.undo_button)
        top.addWidget(self.redo_button)

        # tree
        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["Concept", "Kind"])
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.currentItemChanged.connect(self._on_tree_current)
        self.tree.setMinimumWidth(260)

        # right panel
        self.panel_stack = QStackedWidget(self)
        self.placeholder = QLabel("Select a concept in the tree to edit it,\nor add one.", self)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setEnabled(False)
        self.panel_stack.addWidget(self.placeholder)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self._build_concept_panel())
        self.panel_stack.addWidget(scroll)

        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.addWidget(self.tree)
        splitter.addWidget(self.panel_stack)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        splitter.setSizes([330, 570])
        splitter.setChildrenCollapsible(False)

        # messages and buttons
        self.error_label = QLabel(self)
        self.error_label.setObjectName("schemaError")
        self.error_label.setWordWrap(True)
        self.error_label.setTextFormat(Qt.TextFormat.PlainText)  # ids and values as typed
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.setStyleSheet(
            "QLabel#schemaError { color: #8a1010; background: #fde8e8;"
            " border: 1px solid #e0a0a0; border-radius: 3px; padding: 4px 6px; }"
        )
        self.error_label.hide()
        self.status_label = QLabel(self)
        self.status_label.setTextFormat(Qt.TextFormat.PlainText)
        self.status_label.setEnabled(False)
        self.button_box = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.button_box.accepted.connect(self.accept)
        self.button_box.rejected.connect(self.reject)
        bottom = QHBoxLayout()
        bottom.addWidget(self.status_label, 1)
        bottom.addWidget(self.button_box)

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.error_label)
        layout.addLayout(bottom)

        # Enter in a text field finishes that field; it must not close the dialog.
        for button in self.findChildren(QPushButton):
            button.setAutoDefault(False)
            button.setDefault(False)

        # keyboard
        self.undo_action = self._shortcut_action("Undo", action_spec("edit.undo"), self.undo)
        self.redo_action = self._shortcut_action("Redo", action_spec("edit.redo"), self.redo)
        self._tree_key("F2", self._rename_selected)
        self._tree_key("Del", self._remove_selected)
        self._list_key("F2", self.rename_value)
        self._list_key("Del", self.remove_value)

    def _shortcut_action(self, text: str, spec: ActionSpec, slot: Callable[[], object]) -> QAction:
        action = QAction(text, self)
        action.setShortcuts(spec.key_sequences())
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        action.triggered.connect(lambda _checked=False: slot())
        self.addAction(action)
        return action

    def _key_on(self, widget: QWidget, key: str, slot: Callable[[], object]) -> None:
        action = QAction(widget)
        action.setShortcut(QKeySequence(key))
        action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        action.triggered.connect(lambda _checked=False: slot())
        widget.addAction(action)

    def _tree_key(self, key: str, slot: Callable[[], object]) -> None:
        self._key_on(self.tree, key, slot)

    def _list_key(self, key: str, slot: Callable[[], object]) -> None:
        self._key_on(self.values_list, key, slot)

    def _build_concept_panel(self) -> QWidget:
        panel = QWidget(self)
        self.concept_heading = QLabel(panel)
        self.concept_heading.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = self.concept_heading.font()
        font.setPointSizeF(font.pointSizeF() * 1.35)
        font.setBold(True)
        self.concept_heading.setFont(font)
        self.concept_summary = QLabel(panel)
        self.concept_summary.setEnabled(False)

        self.label_edit = QLineEdit(panel)
        self.label_edit.setPlaceholderText("optional display name")
        self.label_edit.editingFinished.connect(self._on_label_edited)
        self.kind_combo = QComboBox(panel)
        for kind in ValueKind:
            self.kind_combo.addItem(kind.value, kind)
        self.kind_combo.activated.connect(self._on_kind_chosen)
        # what annotators tag by (issue 28): the concept's definition and example glyphs
        self.description_edit = DefinitionEdit(panel)
        self.description_edit.setObjectName("conceptDefinition")
        self.description_edit.setPlaceholderText("what an annotator looks for (optional)")
        self.description_edit.setTabChangesFocus(True)
        self.description_edit.setFixedHeight(self.fontMetrics().lineSpacing() * 3 + 12)
        self.description_edit.editing_finished.connect(self._on_description_edited)
        self.examples_edit = QLineEdit(panel)
        self.examples_edit.setObjectName("conceptExamples")
        self.examples_edit.setPlaceholderText("glyph keys, e.g. U+25CB@symbola U+25A1@symbola")
        self.examples_edit.editingFinished.connect(self._on_examples_edited)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("&Label:", self.label_edit)
        form.addRow("&Kind:", self.kind_combo)
        form.addRow("&Definition:", self.description_edit)
        form.addRow("E&xamples:", self.examples_edit)

        # values
        values_box = QGroupBox("Values", panel)
        self.values_list = QListWidget(values_box)
        self.values_list.setMinimumHeight(64)
        self.values_list.currentRowChanged.connect(lambda _row: self._on_value_row())
        self.add_value_button = QPushButton("Add value…", values_box)
        self.rename_value_button = QPushButton("Rename value…", values_box)
        self.remove_value_button = QPushButton("Remove value…", values_box)
        self.add_value_button.clicked.connect(self.add_value)
        self.rename_value_button.clicked.connect(self.rename_value)
        self.remove_value_button.clicked.connect(self.remove_value)
        value_buttons = QVBoxLayout()
        for b in (self.add_value_button, self.rename_value_button, self.remove_value_button):
            value_buttons.addWidget(b)
        value_buttons.addStretch(1)
        values_row = QHBoxLayout()
        values_row.addWidget(self.values_list, 1)
        values_row.addLayout(value_buttons)
        self.value_description_edit = QLineEdit(values_box)
        self.value_description_edit.setMaxLength(MAX_DEFINITION)
        self.value_description_edit.setObjectName("valueDefinition")
        self.value_description_edit.setPlaceholderText("the selected value's definition")
        self.value_description_edit.editingFinished.connect(self._on_value_description_edited)
        self.value_examples_edit = QLineEdit(values_box)
        self.value_examples_edit.setObjectName("valueExamples")
        self.value_examples_edit.setPlaceholderText("glyph keys that carry the selected value")
        self.value_examples_edit.editingFinished.connect(self._on_value_examples_edited)
        value_form = QFormLayout()
        value_form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        value_form.addRow("Value de&finition:", self.value_description_edit)
        value_form.addRow("Value exa&mples:", self.value_examples_edit)
        values_layout = QVBoxLayout(values_box)
        values_layout.addLayout(values_row, 1)
        values_layout.addLayout(value_form)

        # rules
        rules_box = QGroupBox("Rules", panel)
        grid = QGridLayout(rules_box)
        grid.setColumnStretch(2, 1)
        head = QLabel("Restricted to (value ids, comma-separated; blank = all)", rules_box)
        head.setEnabled(False)
        grid.addWidget(head, 0, 2)
        self.rule_checks: dict[Rule, QCheckBox] = {}
        self.rule_values: dict[Rule, QLineEdit] = {}
        self.constant_mode = QComboBox(rules_box)
        for mode in ConstantMode:
            self.constant_mode.addItem(mode.value, mode)
        self.constant_mode.setToolTip(
            "select: rows contrast chosen values; negate: a row may contrast a value with its"
            " absence (the value 'none')"
        )
        self.constant_mode.activated.connect(self._on_constant_mode)
        for row, rule in enumerate(Rule, start=1):
            check = QCheckBox(rule.value, rules_box)
            check.setToolTip(RULE_HINTS[rule])
            check.clicked.connect(lambda on, r=rule: self._on_rule_toggled(r, on))
            edit = QLineEdit(rules_box)
            edit.setPlaceholderText("all values")
            edit.setToolTip(
                "Comma-separated value ids the rule is restricted to; for a progression over an"
                ' ordinal concept, the order of the steps. Write "" for the empty id.'
            )
            edit.editingFinished.connect(lambda r=rule: self._on_rule_values_edited(r))
            grid.addWidget(check, row, 0)
            if rule is Rule.CONSTANT:
                grid.addWidget(self.constant_mode, row, 1)
            grid.addWidget(edit, row, 2)
            self.rule_checks[rule] = check
            self.rule_values[rule] = edit

        layout = QVBoxLayout(panel)
        layout.setContentsMargins(8, 0, 0, 0)
        layout.addWidget(self.concept_heading)
        layout.addWidget(self.concept_summary)
        layout.addLayout(form)
        layout.addWidget(values_box, 1)
        layout.addWidget(rules_box)
        return panel

    # ---- showing the schema -------------------------------------------------------------
    def _rebuild_tree(self, focus: Focus) -> None:
        expanded = set()
        for i in range(self.tree.topLevelItemCount()):
            cat = self.tree.topLevelItem(i)
            for j in range(cat.childCount()):
                if cat.child(j).isExpanded():
                    expanded.add(cat.child(j).data(0, NODE_ROLE)[1])
        self.tree.blockSignals(True)
        try:
            self.tree.clear()
            for cat in self._schema.categories:
                cat_item = QTreeWidgetItem(self.tree, [cat.display])
                cat_item.setData(0, NODE_ROLE, ("category", cat.id))
                cat_item.setToolTip(0, f"category {cat.id}")
                font = cat_item.font(0)
                font.setBold(True)
                cat_item.setFont(0, font)
                for concept in self._schema.concepts_in(cat.id):
                    text = concept.id + (f" ({concept.label})" if concept.label else "")
                    c_item = QTreeWidgetItem(cat_item, [text, concept.kind.value])
                    c_item.setData(0, NODE_ROLE, ("concept", concept.id))
                    if concept.description:
                        c_item.setToolTip(0, concept.description)
                    for value in concept.values:
                        v_item = QTreeWidgetItem(c_item, [self._value_display(value)])
                        v_item.setData(0, NODE_ROLE, ("value", concept.id, value.id))
                    c_item.setExpanded(concept.id in expanded)
                cat_item.setExpanded(True)
        finally:
            self.tree.blockSignals(False)
        concept_id, value_id = focus
        item = self._find_item(concept_id, value_id) if concept_id is not None else None
        if item is not None:
            if value_id is not None and item.parent() is not None:
                item.parent().setExpanded(True)
            self.tree.blockSignals(True)
            self.tree.setCurrentItem(item)
            self.tree.blockSignals(False)
            self.tree.scrollToItem(item)
        self._show_concept(concept_id if item is not None else None, value_id)

    @staticmethod
    def _value_display(value: Value) -> str:
        text = f'"" ({value.display})' if value.id == "" else value.id
        if value.label and value.id != "":
            text += f" ({value.label})"
        return text

    def _find_item(self, concept_id: str | None, value_id: str | None) -> QTreeWidgetItem | None:
        for i in range(self.tree.topLevelItemCount()):
            cat = self.tree.topLevelItem(i)
            for j in range(cat.childCount()):
                c_item = cat.child(j)
                if c_item.data(0, NODE_ROLE)[1] != concept_id:
                    continue
                if value_id is None:
                    return c_item
                for k in range(c_item.childCount()):
                    if c_item.child(k).data(0, NODE_ROLE)[2] == value_id:
                        return c_item.child(k)
                return c_item
        return None

    def _on_tree_current(self, item: QTreeWidgetItem | None, _prev: object = None) -> None:
        node = item.data(0, NODE_ROLE) if item is not None else None
        if node is None or node[0] == "category":
            self._show_concept(None, None)
        elif node[0] == "concept":
            self._show_concept(node[1], None)
        else:
            self._show_concept(node[1], node[2])

    def _show_concept(self, concept_id: str | None, value_id: str | None) -> None:
        """Fill the right panel from the current schema (drafts of disabled rules kept)."""
        same = concept_id == self._panel_concept
        self._panel_concept = concept_id
        if concept_id is None or not self._schema.has_concept(concept_id):
            self._panel_concept = None
            self.panel_stack.setCurrentIndex(0)
            self._update_buttons()
            return
        c = self._schema.concept(concept_id)
        self.panel_stack.setCurrentIndex(1)
        origin = self._origin_concept(c.id)
        total = self._tag_counts(origin, None) if origin is not None else 0
        category = next(cat for cat in self._schema.categories if cat.id == c.category)
        self.concept_heading.setText(c.id)
        n_values = len(c.values)
        self.concept_summary.setText(
            f"{c.kind.value} concept in {category.display} · "
            f"{n_values} value{'s' if n_values != 1 else ''} · {_tags(total)} in this project"
        )
        self.label_edit.setText(c.label)
        self.kind_combo.setCurrentIndex(self.kind_combo.findData(c.kind))
        if self.description_edit.toPlainText() != c.description:
            self.description_edit.setPlainText(c.description)
        self.examples_edit.setText(" ".join(c.examples))

        self.values_list.blockSignals(True)
        self.values_list.clear()
        row_to_select = -1
        for i, v in enumerate(c.values):
            text = self._value_display(v)
            origin_v = self._origin_value(c.id, v.id)
            if origin_v is not None:
                n = self._tag_counts(*origin_v)
                if n:
                    text += f"  · {_tags(n)}"
            item = QListWidgetItem(text)
            item.setData(NODE_ROLE, v.id)
            self.values_list.addItem(item)
            if v.id == value_id:
                row_to_select = i
        self.values_list.setCurrentRow(row_to_select)
        self.values_list.blockSignals(False)
        self._show_value_fields()

        for rule in Rule:
            spec = c.rules.get(rule)
            edit = self.rule_values[rule]
            self.rule_checks[rule].setChecked(spec is not None)
            edit.setPlaceholderText("all values" if spec is not None else "rule off")
            if spec is not None or not same:
                edit.setText(format_value_list(spec.values if spec else None))
        constant = c.rules.get(Rule.CONSTANT)
        mode = constant.mode if constant is not None and constant.mode else ConstantMode.SELECT
        self.constant_mode.setCurrentIndex(self.constant_mode.findData(mode))
        self.constant_mode.setEnabled(constant is not None)
        self._update_buttons()

    def _update_buttons(self) -> None:
        has_concept = self._panel_concept is not None
        self.rename_concept_button.setEnabled(has_concept)
        self.remove_concept_button.setEnabled(has_concept)
        self.add_value_button.setEnabled(has_concept)
        has_value = has_concept and self.values_list.currentItem() is not None
        self.rename_value_button.setEnabled(has_value)
        self.remove_value_button.setEnabled(has_value)

    def _update_undo_buttons(self) -> None:
        stack = self.undo_stack
        self.undo_button.setEnabled(stack.can_undo)
        self.redo_button.setEnabled(stack.can_redo)
        self.undo_button.setToolTip(f"Undo: {stack.undo_label}" if stack.can_undo else "")
        self.redo_button.setToolTip(f"Redo: {stack.redo_label}" if stack.can_redo else "")
        self.undo_action.setEnabled(stack.can_undo)
        self.redo_action.setEnabled(stack.can_redo)

    def _show_error(self, label: str, error: SchemaError) -> None:
        problem = error.problem
        if len(problem) > 300:  # a refused 4,000-character value is not quoted whole
            problem = problem[:297] + "…"
        self.error_label.setText(f"Not applied: {label}.\n{error.json_path}: {problem}")
        self.error_label.show()

    def _clear_error(self) -> None:
        self.error_label.clear()
        self.error_label.hide()

    # ---- history ------------------------------------------------------------------------
    def _origin_concept(self, concept_id: str) -> str | None:
        """The id this concept had in the schema the dialog opened with (None if added since)."""
        cid = concept_id
        for e in reversed(self._history):
            if e.kind == "rename_concept" and e.new_name == cid:
                cid = e.concept
            elif e.kind == "add_concept" and e.concept == cid:
                return None
        return cid if self._initial.has_concept(cid) else None

    def _origin_value(self, concept_id: str, value_id: str) -> tuple[str, str] | None:
        """(concept, value) ids in the opening schema of a current value (None if added)."""
        cid, vid = concept_id, value_id
        for e in reversed(self._history):
            if e.kind == "rename_concept" and e.new_name == cid:
                cid = e.concept
            elif e.kind == "add_concept" and e.concept == cid:
                return None
            elif e.kind == "rename_value" and e.concept == cid and e.new_name == vid:
                vid = e.value  # type: ignore[assignment]
            elif e.kind == "add_value" and e.concept == cid and e.value == vid:
                return None
        return (cid, vid) if self._initial.has_tag(cid, vid) else None

    def _apply(
        self,
        label: str,
        make: Callable[[Schema], Schema],
        *,
        kind: str = "other",
        concept: str,
        value: str | None = None,
        new_name: str | None = None,
        focus_after: Focus | None = None,
    ) -> bool:
        """Build the edited schema; push it as one command, or show why it was refused."""
        before = self._schema
        try:
            after = make(before)
            validate_structure(after.to_json(), None)
        except SchemaError as error:
            self._show_error(label, error)
            self._show_concept(self._panel_concept, self._current_value_id())
            return False
        focus_before: Focus = (self._panel_concept, self._current_value_id())
        edit = _Edit(
            label, before, after, kind, concept, value, new_name,
            focus_before, focus_after if focus_after is not None else focus_before,
        )  # fmt: skip
        self._clear_error()
        self.undo_stack.push(
            FunctionCommand(label, lambda: self._redo_edit(edit), lambda: self._undo_edit(edit))
        )
        self.status_label.setText(f"{label}.")
        return True

    def _redo_edit(self, edit: _Edit) -> None:
        self._history.append(edit)
        self._schema = edit.after
        self._rebuild_tree(edit.focus_after)

    def _undo_edit(self, edit: _Edit) -> None:
        assert self._history and self._history[-1] is edit
        self._history.pop()
        self._schema = edit.before
        self._rebuild_tree(edit.focus_before)

    def undo(self) -> None:
        label = self.undo_stack.undo()
        if label is not None:
            self._clear_error()
            self.status_label.setText(f"Undone: {label}.")

    def redo(self) -> None:
        label = self.undo_stack.redo()
        if label is not None:
            self._clear_error()
            self.status_label.setText(f"Redone: {label}.")

    def keyPressEvent(self, event: QKeyEvent) -> None:
        # Enter finishes the text field it is typed in; it never closes the dialog (that would
        # be easy to do by accident while typing a restriction). OK and Cancel are buttons.
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not isinstance(
            self.focusWidget(), QPushButton
        ):
            event.accept()
            return
        super().keyPressEvent(event)

    def reject(self) -> None:
        n = len(self._history)
        if n and not self.confirm(f"Discard {n} schema edit{'s' if n != 1 else ''}?"):
            return
        super().reject()

    # ---- edits --------------------------------------------------------------------------
    def _current_value_id(self) -> str | None:
        item = self.values_list.currentItem()
        return item.data(NODE_ROLE) if item is not None else None

    def _selected_category(self) -> str | None:
        item = self.tree.currentItem()
        while item is not None and item.parent() is not None:
            item = item.parent()
        return item.data(0, NODE_ROLE)[1] if item is not None else None

    def add_concept(self) -> None:
        answer = self.ask_new_concept(self._selected_category())
        if answer is None:
            return
        concept_id, category, kind = answer
        if not concept_id:
            return
        concept = Concept(
            id=concept_id,
            category=category,
            kind=kind,
            rules={Rule.CONSTANT: RuleSpec(Rule.CONSTANT, ConstantMode.SELECT)},
        )
        self._apply(
            f"Add {kind.value} concept {concept_id} to {category}",
            lambda s: s.with_concept_added(concept),
            kind="add_concept",
            concept=concept_id,
            focus_after=(concept_id, None),
        )

    def rename_concept(self) -> None:
        cid = self._panel_concept
        if cid is None:
            return
        new = self.ask_text("Rename concept", f"New id for concept '{cid}':", cid)
        if new is None or not new.strip() or new.strip() == cid:
            return
        new = new.strip()
        self._apply(
            f"Rename concept {cid} to {new}",
            lambda s: s.with_concept_renamed(cid, new),
            kind="rename_concept",
            concept=cid,
            new_name=new,
            focus_after=(new, None),
        )

    def remove_concept(self) -> None:
        cid = self._panel_concept
        if cid is None:
            return
        origin = self._origin_concept(cid)
        n = self._tag_counts(origin, None) if origin is not None else 0
        if n and not self.confirm(f"Remove concept '{cid}' and its {_tags(n)}?"):
            return
        self._apply(
            f"Remove concept {cid}" + (f" and its {_tags(n)}" if n else ""),
            lambda s: s.with_concept_removed(cid),
            kind="remove_concept",
            concept=cid,
            focus_after=(None, None),
        )

    def add_value(self) -> None:
        cid = self._panel_concept
        if cid is None:
            return
        text = self.ask_text("Add value", f"New value id for concept '{cid}':", "")
        if text is None or not text.strip():
            return
        vid = "" if text.strip() == EMPTY_ID_TEXT else text.strip()
        self._apply(
            f"Add value {value_text(vid)} to {cid}",
            lambda s: s.with_value_added(cid, Value(vid)),
            kind="add_value",
            concept=cid,
            value=vid,
            focus_after=(cid, vid),
        )

    def rename_value(self) -> None:
        cid, old = self._panel_concept, self._current_value_id()
        if cid is None or old is None:
            return
        text = self.ask_text(
            "Rename value", f"New id for value '{value_text(old)}' of '{cid}':", value_text(old)
        )
        if text is None or not text.strip():
            return
        new = "" if text.strip() == EMPTY_ID_TEXT else text.strip()
        if new == old:
            return
        self._apply(
            f"Rename value {value_text(old)} of {cid} to {value_text(new)}",
            lambda s: s.with_value_renamed(cid, old, new),
            kind="rename_value",
            concept=cid,
            value=old,
            new_name=new,
            focus_after=(cid, new),
        )

    def remove_value(self) -> None:
        cid, vid = self._panel_concept, self._current_value_id()
        if cid is None or vid is None:
            return
        origin = self._origin_value(cid, vid)
        n = self._tag_counts(*origin) if origin is not None else 0
        if n and not self.confirm(
            f"Remove value '{value_text(vid)}' of concept '{cid}' and its {_tags(n)}?"
        ):
            return
        self._apply(
            f"Remove value {value_text(vid)} from {cid}" + (f" and its {_tags(n)}" if n else ""),
            lambda s: s.with_value_removed(cid, vid),
            kind="remove_value",
            concept=cid,
            value=vid,
            focus_after=(cid, None),
        )

    def _rename_selected(self) -> None:
        node = self.tree.currentItem().data(0, NODE_ROLE) if self.tree.currentItem() else None
        if node is None or node[0] == "category":
            return
        if node[0] == "concept":
            self.rename_concept()
        else:
            self.rename_value()

    def _remove_selected(self) -> None:
        node = self.tree.currentItem().data(0, NODE_ROLE) if self.tree.currentItem() else None
        if node is None or node[0] == "category":
            return
        if node[0] == "concept":
            self.remove_concept()
        else:
            self.remove_value()

    def _on_label_edited(self) -> None:
        cid = self._panel_concept
        if cid is None or not self._schema.has_concept(cid):
            return
        c = self._schema.concept(cid)
        label = self.label_edit.text().strip()
        if label == c.label:
            return
        self._apply(
            f"Set label of {cid} to “{label}”" if label else f"Clear the label of {cid}",
            lambda s: s.with_concept_replaced(cid, replace(c, label=label)),
            concept=cid,
        )

    def take_definitions(self) -> None:
        """Definitions from another schema file (one undoable step; nothing overwritten)."""
        path = self.ask_schema_file()
        if path is None:
            return
        from studio.core.schema import load_schema

        try:
            other = load_schema(path)
        except SchemaError as error:
            self._show_error("Take definitions", error)
            return
        _, filled = self._schema.with_definitions_from(other)
        if not filled:
            self.status_label.setText(f"{other.id} {other.version} has no definition this lacks.")
            return
        cid = self._panel_concept or (self._schema.concepts[0].id if self._schema.concepts else "")
        self._apply(
            f"Take {filled} definitions and example lists from {other.id} {other.version}",
            lambda s: s.with_definitions_from(other)[0],
            concept=cid,
        )

    def _on_value_row(self) -> None:
        self._show_value_fields()
        self._update_buttons()

    def _show_value_fields(self) -> None:
        """The selected value's definition and examples (blank and disabled with none)."""
        cid, vid = self._panel_concept, self._current_value_id()
        value = None
        if cid is not None and vid is not None and self._schema.has_concept(cid):
            c = self._schema.concept(cid)
            value = c.value(vid) if c.has_value(vid) else None
        for edit in (self.value_description_edit, self.value_examples_edit):
            edit.setEnabled(value is not None)
        self.value_description_edit.setText(value.description if value else "")
        self.value_examples_edit.setText(" ".join(value.examples) if value else "")

    def _on_description_edited(self) -> None:
        cid = self._panel_concept
        if cid is None or not self._schema.has_concept(cid):
            return
        c = self._schema.concept(cid)
        text = self.description_edit.toPlainText().strip()
        if text == c.description.strip():  # passing through the box changes nothing
            return
        if len(text) > MAX_DEFINITION:
            # refused here, the typed text kept (the schema would refuse it and the panel
            # would show the stored definition again)
            self._show_error(
                f"Set the definition of {cid}",
                SchemaError(
                    None, "description", f"{len(text):,} characters; at most {MAX_DEFINITION:,}"
                ),
            )
            return
        self._apply(
            f"Set the definition of {cid}" if text else f"Clear the definition of {cid}",
            lambda s: s.with_concept_replaced(cid, replace(c, description=text)),
            concept=cid,
        )

    def _on_examples_edited(self) -> None:
        cid = self._panel_concept
        if cid is None or not self._schema.has_concept(cid):
            return
        c = self._schema.concept(cid)
        text = self.examples_edit.text()
        if not self._examples_changed(text, c.examples):
            return
        label = f"Set the example glyphs of {cid}"
        try:
            examples = parse_examples(text)
        except SchemaError as error:
            self._show_error(label, error)
            return
        self._apply(
            label,
            lambda s: s.with_concept_replaced(cid, replace(c, examples=examples)),
            concept=cid,
        )

    def _examples_changed(self, text: str, before: tuple[str, ...]) -> bool:
        """Did the typed examples change (an unreadable key counts: _apply says why)?"""
        try:
            return parse_examples(text) != before
        except SchemaError:
            return True

    def _value_edit(self, label: str, change: Callable[[Value], Value]) -> None:
        cid, vid = self._panel_concept, self._current_value_id()
        if cid is None or vid is None or not self._schema.has_concept(cid):
            return
        c = self._schema.concept(cid)
        values = tuple(change(v) if v.id == vid else v for v in c.values)
        self._apply(
            label,
            lambda s: s.with_concept_replaced(cid, replace(c, values=values)),
            concept=cid,
            value=vid,
            focus_after=(cid, vid),
        )

    def _on_value_description_edited(self) -> None:
        cid, vid = self._panel_concept, self._current_value_id()
        if cid is None or vid is None or not self._schema.has_concept(cid):
            return
        text = self.value_description_edit.text().strip()
        if text == self._schema.concept(cid).value(vid).description.strip():
            return
        self._value_edit(
            f"Set the definition of {cid} = {value_text(vid)}",
            lambda v: replace(v, description=text),
        )

    def _on_value_examples_edited(self) -> None:
        cid, vid = self._panel_concept, self._current_value_id()
        if cid is None or vid is None or not self._schema.has_concept(cid):
            return
        text = self.value_examples_edit.text()
        if not self._examples_changed(text, self._schema.concept(cid).value(vid).examples):
            return
        try:
            examples = parse_examples(text)
        except SchemaError as error:
            self._show_error(f"Set the example glyphs of {cid} = {value_text(vid)}", error)
            return
        self._value_edit(
            f"Set the example glyphs of {cid} = {value_text(vid)}",
            lambda v: replace(v, examples=examples),
        )

    def _on_kind_chosen(self, _index: int) -> None:
        cid = self._panel_concept
        if cid is None:
            return
        c = self._schema.concept(cid)
        kind = ValueKind(self.kind_combo.currentData())  # Qt hands the StrEnum back as str
        if kind is c.kind:
            return
        self._apply(
            f"Change the kind of {cid} to {kind.value}",
            lambda s: s.with_concept_replaced(cid, replace(c, kind=kind)),
            concept=cid,
        )

    def _set_rules(self, label: str, rules: dict[Rule, RuleSpec]) -> bool:
        cid = self._panel_concept
        assert cid is not None
        return self._apply(label, lambda s: s.with_rules(cid, rules), concept=cid)

    def _on_rule_toggled(self, rule: Rule, on: bool) -> None:
        cid = self._panel_concept
        if cid is None:
            return
        c = self._schema.concept(cid)
        rules = dict(c.rules)
        if not on:
            rules.pop(rule, None)
            self._set_rules(f"Disable {rule.value} for {cid}", rules)
            return
        values = parse_value_list(self.rule_values[rule].text())
        if values is None and rule is Rule.PROGRESSION and c.kind is ValueKind.ORDINAL:
            # An ordinal progression needs its order: offer the listed order as a start.
            values = tuple(v for v in c.value_ids if v not in ("", NONE_VALUE)) or None
        mode = ConstantMode(self.constant_mode.currentData()) if rule is Rule.CONSTANT else None
        rules[rule] = RuleSpec(rule, mode, values)
        over = f" over {format_value_list(values)}" if values else ""
        mode_text = f" ({mode.value})" if mode is not None else ""
        self._set_rules(f"Enable {rule.value}{mode_text} for {cid}{over}", rules)

    def _on_constant_mode(self, _index: int) -> None:
        cid = self._panel_concept
        if cid is None:
            return
        c = self._schema.concept(cid)
        spec = c.rules.get(Rule.CONSTANT)
        mode = ConstantMode(self.constant_mode.currentData())
        if spec is None or spec.mode is mode:
            return
        rules = {**c.rules, Rule.CONSTANT: replace(spec, mode=mode)}
        self._set_rules(f"Set the constant rule of {cid} to {mode.value}", rules)

    def _on_rule_values_edited(self, rule: Rule) -> None:
        cid = self._panel_concept
        if cid is None or not self._schema.has_concept(cid):
            return
        c = self._schema.concept(cid)
        spec = c.rules.get(rule)
        if spec is None:
            return  # a draft for a rule not enabled yet; used when it is switched on
        values = parse_value_list(self.rule_values[rule].text())
        if values == spec.values:
            self.rule_values[rule].setText(format_value_list(values))  # tidy the spacing
            return
        rules = {**c.rules, rule: replace(spec, values=values)}
        label = (
            f"Restrict {rule.value} of {cid} to {format_value_list(values)}"
            if values is not None
            else f"Allow every value for {rule.value} of {cid}"
        )
        self._set_rules(label, rules)
