"""The schema tree an annotator steps through: category → concept → value, with tag counts and
a "needs glyphs" marker: how many more glyphs of a value the generator lacks for symmetric
answer sets (:mod:`studio.families.glyph_pmp.needs`), so the next round of tagging fills exactly
that."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QStyle, QTreeWidget, QTreeWidgetItem, QWidget

from studio.core.schema import Schema
from studio.gui.definitions import concept_tip, value_tip
from studio.gui.widgets import cell_width

ROLE = Qt.ItemDataRole.UserRole
DISPLAY_ROLE = Qt.ItemDataRole.UserRole + 1  # a value's display name, without its number
NEEDS_COLUMN = 2
NEEDS_COLOUR = QColor("#c25e00")
#: The most the tree asks of the window's width for its columns (a schema's longest name may
#: need more: then it scrolls sideways).
MAX_TREE_WIDTH = 360


#: Values 1…9 of a concept have a number key (the ``tag.value_n`` actions).
MAX_VALUE_KEY = 9


def value_label(n: int, display: str) -> str:
    """A value's text in the tree and the Tag menu: ``"1  round"`` for the values that have a
    number key, the plain name for the others."""
    return f"{n}  {display}" if 1 <= n <= MAX_VALUE_KEY else display


class SchemaTree(QTreeWidget):
    """Emits ``current_changed(concept, value)`` (value None when a concept row is current);
    both None for a category row."""

    current_changed = Signal(object, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("schemaTree")
        self.setHeaderLabels(["Concept / value", "Tags", "Needs"])
        self.headerItem().setToolTip(
            NEEDS_COLUMN,
            "Glyphs to tag so that a default two-row split can give every rule a symmetric "
            "answer set (4 values that could each be the key); `analogy-studio needs` lists "
            "them per tuple",
        )
        self.setColumnWidth(0, 200)
        self.setColumnWidth(1, 44)
        self.setColumnWidth(NEEDS_COLUMN, 44)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setUniformRowHeights(True)
        self._items: dict[tuple[str, str | None], QTreeWidgetItem] = {}
        self._concepts: list[str] = []
        self.currentItemChanged.connect(self._on_current)

    def set_schema(self, schema: Schema, counts: Counter[tuple[str, str]]) -> None:
        current = self.current()
        self.blockSignals(True)
        self.clear()
        self._items.clear()
        self._concepts = []
        bold = QFont(self.font())
        bold.setBold(True)
        for cat in schema.categories:
            cat_item = QTreeWidgetItem(self, [cat.display, ""])
            cat_item.setFont(0, bold)
            cat_item.setData(0, ROLE, (None, None))
            cat_item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            for c in schema.concepts_in(cat.id):
                c_item = QTreeWidgetItem(cat_item, [c.display, ""])
                c_item.setData(0, ROLE, (c.id, None))
                c_item.setToolTip(0, concept_tip(c))
                self._items[(c.id, None)] = c_item
                self._concepts.append(c.id)
                for n, v in enumerate(c.values, start=1):
                    v_item = QTreeWidgetItem(c_item, [value_label(n, v.display), ""])
                    v_item.setData(0, ROLE, (c.id, v.id))
                    v_item.setData(0, DISPLAY_ROLE, v.display)
                    v_item.setToolTip(0, value_tip(c, v, n if n <= MAX_VALUE_KEY else None))
                    self._items[(c.id, v.id)] = v_item
            cat_item.setExpanded(True)
        self._fit_first_column(bold)
        self.update_counts(counts)
        self.blockSignals(False)
        if current != (None, None) and current in self._items:
            self.select(*current)
        elif current != (None, None) and (current[0], None) in self._items:
            self.select(current[0], None)
        else:
            self.current_changed.emit(*self.current())

    def _fit_first_column(self, bold: QFont) -> None:
        """The name column as wide as its longest concept or value, each at its depth,
        expanded or not (issue 28: "stroke-line-straight-quant…" was elided at 200 px)."""
        indent = self.indentation()
        need = 200
        for i in range(self.topLevelItemCount()):
            cat = self.topLevelItem(i)
            need = max(need, cell_width(self, [cat.text(0)], bold) + indent)
            for j in range(cat.childCount()):
                concept = cat.child(j)
                values = [concept.child(k).text(0) for k in range(concept.childCount())]
                need = max(need, cell_width(self, [concept.text(0)]) + 2 * indent)
                need = max(need, cell_width(self, values) + 3 * indent)
        self.setColumnWidth(0, need)
        # the pane holds the three columns: the Needs column was cut at its edge
        columns = need + self.columnWidth(1) + self.columnWidth(NEEDS_COLUMN)
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, self)
        self.setMinimumWidth(min(columns + bar + 2 * self.frameWidth(), MAX_TREE_WIDTH))

    def update_counts(self, counts: Counter[tuple[str, str]]) -> None:
        per_concept: Counter[str] = Counter()
        for (c, v), n in counts.items():
            per_concept[c] += n
            item = self._items.get((c, v))
            if item is not None:
                item.setText(1, str(n))
        for (c, v), item in self._items.items():
            if v is None:
                item.setText(1, str(per_concept.get(c, 0)))
            elif (c, v) not in counts:
                item.setText(1, "0")

    def update_needs(
        self,
        needs: Mapping[tuple[str, str], int],
        tuples_of: Callable[[str, str], list[str]] | None = None,
        side_text: Callable[[str, str], str] | None = None,
        unmendable: Mapping[str, list[str]] | None = None,
    ) -> None:
        """Show ``+n`` beside each value the generator lacks ``n`` glyphs of (and the sum on
        its concept); the tooltip names the dry tuples it would mend and, with a hold-out,
        how many of the glyphs must be held-out ones (``side_text``: "2 held-out, 1 train").
        A blank cell says why it is blank (issue 28): nothing to tag for the default split,
        or tuples of the concept that no tagging can mend (``unmendable``: concept → their
        names)."""
        per_concept: Counter[str] = Counter()
        for (c, _v), n in needs.items():
            per_concept[c] += n
        brush = QBrush(NEEDS_COLOUR)
        for (c, v), item in self._items.items():
            n = per_concept.get(c, 0) if v is None else needs.get((c, v), 0)
            item.setText(NEEDS_COLUMN, f"+{n}" if n else "")
            item.setForeground(NEEDS_COLUMN, brush)
            if not n:
                item.setToolTip(NEEDS_COLUMN, _blank_needs_tip(c, v, (unmendable or {}).get(c)))
            elif v is None:
                item.setToolTip(
                    NEEDS_COLUMN, f"{n} more glyphs over the values of {c} marked below"
                )
            else:
                names = tuples_of(c, v) if tuples_of is not None else []
                what = f": {', '.join(names)}" if names else ""
                sides = side_text(c, v) if side_text is not None else ""
                where = f" ({sides})" if sides else ""
                if "held-out" in sides:
                    where += (
                        " — View ▸ Only held-out glyphs (Ctrl+Shift+T) shows the glyphs held "
                        "out for val and test"
                    )
                item.setToolTip(
                    NEEDS_COLUMN,
                    f"tag {n} more glyphs with {c} = {v or '(present)'}{where} to mend the dry "
                    f"tuple(s){what}",
                )

    def needs_tip(self, concept: str, value: str | None) -> str:
        item = self._items.get((concept, value))
        return item.toolTip(NEEDS_COLUMN) if item is not None else ""

    def name_tip(self, concept: str, value: str | None) -> str:
        """A concept's or value's tooltip in the first column: its definition (issue 28)."""
        item = self._items.get((concept, value))
        return item.toolTip(0) if item is not None else ""

    def needs_text(self, concept: str, value: str | None) -> str:
        item = self._items.get((concept, value))
        return item.text(NEEDS_COLUMN) if item is not None else ""

    def current(self) -> tuple[str | None, str | None]:
        item = self.currentItem()
        return item.data(0, ROLE) if item is not None else (None, None)

    def select(self, concept: str, value: str | None) -> None:
        item = self._items.get((concept, value))
        if item is not None:
            if item.parent() is not None:
                item.parent().setExpanded(True)
            self.setCurrentItem(item)
            self.scrollToItem(item)

    def _on_current(self, item: QTreeWidgetItem | None, _prev: QTreeWidgetItem | None) -> None:
        concept, value = item.data(0, ROLE) if item is not None else (None, None)
        self.current_changed.emit(concept, value)

    # ---- stepping through the schema (UA's method) ---------------------------------------
    def step_concept(self, delta: int) -> None:
        concept, _ = self.current()
        if not self._concepts:
            return
        i = self._concepts.index(concept) + delta if concept in self._concepts else 0
        i = max(0, min(len(self._concepts) - 1, i))
        c_item = self._items[(self._concepts[i], None)]
        c_item.setExpanded(True)
        first = c_item.child(0)
        self.select(self._concepts[i], first.data(0, ROLE)[1] if first is not None else None)

    def step_value(self, delta: int) -> None:
        concept, value = self.current()
        if concept is None:
            return
        c_item = self._items[(concept, None)]
        values = [c_item.child(i).data(0, ROLE)[1] for i in range(c_item.childCount())]
        if not values:
            return
        i = values.index(value) + delta if value in values else 0
        self.select(concept, values[max(0, min(len(values) - 1, i))])

    def values_of(self, concept: str | None) -> list[tuple[str, str]]:
        """The (id, display name) of each value of ``concept`` in tree order (key 1 first)."""
        c_item = self._items.get((concept, None)) if concept is not None else None
        if c_item is None:
            return []
        out = []
        for i in range(c_item.childCount()):
            child = c_item.child(i)
            out.append((child.data(0, ROLE)[1], child.data(0, DISPLAY_ROLE)))
        return out

    def nth_value_problem(self, n: int) -> str | None:
        """Why key ``n`` cannot pick a value now (a sentence for the status bar), or None."""
        concept, _ = self.current()
        if concept is None:
            return "No concept chosen: pick one on the left (or press ] for the next)"
        count = len(self.values_of(concept))
        if count == 0:
            return f"Concept '{concept}' has no values to tag with"
        if not 1 <= n <= count:
            return f"Concept '{concept}' has no value {n} (it has {count}: keys 1–{count})"
        return None

    def nth_value(self, n: int) -> str | None:
        """Select the n-th (1-based) value of the current concept; returns it, or None (see
        :meth:`nth_value_problem` for why)."""
        if self.nth_value_problem(n) is not None:
            return None
        concept, _ = self.current()
        value = self.values_of(concept)[n - 1][0]
        self.select(concept, value)  # type: ignore[arg-type]
        return value


def _blank_needs_tip(concept: str, value: str | None, unmendable: list[str] | None) -> str:
    """Why a Needs cell is blank."""
    what = concept if value is None else f"{concept} = {value or '(present)'}"
    text = (
        f"No glyphs to tag for {what}: no tuple of the default split is short of them (the "
        "tuples that can be built are built)."
    )
    if unmendable:
        text += (
            f" {', '.join(unmendable)} cannot be built whatever is tagged: the schema's values "
            "of the concept cannot make a symmetric answer set."
        )
    return text
