"""Help ▸ Keyboard shortcuts: every action and its keys, grouped by menu, read from ``ACTIONS``."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.gui.actions import ACTIONS, MENUS, ActionSpec, menu_title, specs_in_menu

ID_ROLE = Qt.ItemDataRole.UserRole


class ShortcutsDialog(QDialog):
    """A read-only list of actions (text, shortcut in the platform's notation), one group per
    menu, with a filter that matches the action's text, id, tip or keys. Escape closes it."""

    def __init__(self, parent: QWidget | None = None, specs: Iterable[ActionSpec] = ACTIONS):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.resize(520, 560)
        self._specs = list(specs)

        self.filter_edit = QLineEdit(self)
        self.filter_edit.setPlaceholderText("Filter by action or key, e.g. “concept” or “Ctrl”")
        self.filter_edit.setClearButtonEnabled(True)

        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(2)
        self.tree.setHeaderLabels(["Action", "Shortcut"])
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.tree.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Fixed)
        header.setStretchLastSection(False)

        self.empty_label = QLabel(self)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.hide()

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(self.filter_edit)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.empty_label)
        layout.addWidget(buttons)

        self._fill()
        self.filter_edit.textChanged.connect(self.set_filter)
        self.filter_edit.setFocus()

    def _fill(self) -> None:
        bold = self.tree.font()
        bold.setBold(True)
        for menu_id, _title in MENUS:
            specs = specs_in_menu(menu_id, self._specs)
            if not specs:
                continue
            group = QTreeWidgetItem(self.tree, [menu_title(menu_id)])
            group.setFont(0, bold)
            group.setFirstColumnSpanned(True)
            group.setFlags(Qt.ItemFlag.ItemIsEnabled)
            for spec in specs:
                item = QTreeWidgetItem(group, [spec.plain_text, spec.shortcut_text()])
                item.setData(0, ID_ROLE, spec.id)
                item.setToolTip(0, spec.tip)
                item.setFlags(Qt.ItemFlag.ItemIsEnabled)
        self.tree.expandAll()
        # room for the longest shortcut and a gap before the scroll bar
        self.tree.header().resizeSection(1, self.tree.sizeHintForColumn(1) + 24)

    def set_filter(self, text: str) -> None:
        """Show only actions whose text, id, tip or shortcut contains ``text`` (any case)."""
        needle = text.strip().casefold()
        shown = 0
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            visible_children = 0
            for j in range(group.childCount()):
                item = group.child(j)
                haystack = " ".join(
                    (item.text(0), item.text(1), item.data(0, ID_ROLE), item.toolTip(0))
                ).casefold()
                match = needle in haystack
                item.setHidden(not match)
                visible_children += match
            group.setHidden(visible_children == 0)
            shown += visible_children
        self.empty_label.setText(f"No action matches “{text.strip()}”.")
        self.empty_label.setVisible(shown == 0)

    def visible_action_ids(self) -> list[str]:
        """Ids of the actions the list shows now, top to bottom."""
        out = []
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            if group.isHidden():
                continue
            for j in range(group.childCount()):
                item = group.child(j)
                if not item.isHidden():
                    out.append(item.data(0, ID_ROLE))
        return out
