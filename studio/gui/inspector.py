"""The glyph inspector: a large render, the Unicode facts, the font used and every tag."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.core.keys import GlyphKey
from studio.core.schema import Concept, Value
from studio.glyphs.unicode import block, char_name, script_name
from studio.gui.definitions import value_tip
from studio.gui.glyph_grid import to_qimage
from studio.store.project import GlyphRecord, TagRecord

BIG = 220
EXAMPLE = 44  # an example glyph's side in the definition panel
MAX_EXAMPLES = 6


class Inspector(QWidget):
    """Shows one glyph. ``remove_tag(concept, value)`` asks the window to untag it."""

    remove_tag = Signal(str, str)

    def __init__(
        self,
        master_image: Callable[[GlyphRecord], np.ndarray | None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("inspector")
        self._master_image = master_image
        self._record: GlyphRecord | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 9, 4, 9)  # the big render and 8 px beside it: 236 px wide
        self.image = QLabel(alignment=Qt.AlignmentFlag.AlignCenter)
        self.image.setFixedSize(BIG + 8, BIG + 8)
        self.image.setStyleSheet("background: white; border: 1px solid #ccc;")
        lay.addWidget(self.image, alignment=Qt.AlignmentFlag.AlignHCenter)
        form = QFormLayout()
        self.name = QLabel(
            wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse
        )
        self.key = QLabel(textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.block = QLabel(wordWrap=True)
        self.font_label = QLabel(wordWrap=True)
        self.status = QLabel(wordWrap=True)
        form.addRow("Name", self.name)
        form.addRow("Key", self.key)
        form.addRow("Block", self.block)
        form.addRow("Font", self.font_label)
        form.addRow("Status", self.status)
        lay.addLayout(form)
        self.tags_title = QLabel("<b>Tags</b> (all concepts)")
        lay.addWidget(self.tags_title)
        self.tags = QTableWidget(0, 3)
        self.tags.setObjectName("inspectorTags")
        self.tags.setHorizontalHeaderLabels(["Concept", "Value", "By"])
        # value and author as wide as they are, the concept the rest, wrapped at its hyphens
        # in a row as tall as it needs ("stroke-line-straight-quantity" was elided: issue 28)
        header = self.tags.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.tags.setWordWrap(True)
        self.tags.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.tags.verticalHeader().setVisible(False)
        self.tags.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tags.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        lay.addWidget(self.tags, 1)
        self.remove_button = QPushButton("Remove selected tag")
        self.remove_button.clicked.connect(self._remove_selected)
        lay.addWidget(self.remove_button)
        # each other person's own tags of the glyph (a lab), unless hidden while tagging
        self.others_title = QLabel("<b>Others' tags</b>", objectName="inspectorOthersTitle")
        self.others = QListWidget(objectName="inspectorOthers")
        self.others.setMaximumHeight(120)
        self.others.setToolTip("What each other annotator tagged this glyph with "
                               "(View ▸ Hide others' tags hides them while you tag)")  # fmt: skip
        lay.addWidget(self.others_title)
        lay.addWidget(self.others)
        # what the tagged concept means (issue 28): the tree's current concept or value
        self.definition_title = QLabel("<b>Definition</b>", objectName="inspectorDefinitionTitle")
        self.definition = QLabel(wordWrap=True, objectName="inspectorDefinition")
        self.definition.setTextFormat(Qt.TextFormat.RichText)
        self.examples = QHBoxLayout()
        self.example_labels: list[QLabel] = []
        for _ in range(MAX_EXAMPLES):
            label = QLabel(alignment=Qt.AlignmentFlag.AlignCenter)
            label.setFixedSize(EXAMPLE + 4, EXAMPLE + 4)
            label.setStyleSheet("background: white; border: 1px solid #ddd;")
            label.setVisible(False)
            self.examples.addWidget(label)
            self.example_labels.append(label)
        self.examples.addStretch(1)
        lay.insertWidget(lay.indexOf(self.tags_title), self.definition_title)
        lay.insertWidget(lay.indexOf(self.tags_title), self.definition)
        lay.insertLayout(lay.indexOf(self.tags_title), self.examples)
        self._concepts: dict[str, Concept] = {}
        self.show_glyph(None, [])
        self.show_others(None)
        self.show_definition(None, None)

    def set_concepts(self, concepts: dict[str, Concept]) -> None:
        """The schema's concepts, for the tags' tooltips (their definitions)."""
        self._concepts = dict(concepts)

    def show_definition(
        self,
        concept: Concept | None,
        value: Value | None,
        image_of: Callable[[GlyphKey], np.ndarray | None] | None = None,
    ) -> None:
        """The definition of the concept (and value) being tagged, with its example glyphs
        drawn by ``image_of`` (a key with no image shows its character name as a tooltip
        only)."""
        for label in self.example_labels:
            label.clear()
            label.setVisible(False)
        if concept is None:
            self.definition.setText("<i>Choose a concept on the left to see its definition.</i>")
            return
        described = (value is not None and value.description) or concept.description
        if value is not None:
            text = value_tip(concept, value, None, examples=False)  # drawn below instead
        else:
            text = f"<b>{_escape(concept.display)}</b>"
            if concept.description:
                text += f"<br>{_escape(concept.description)}"
        if not described:
            text += "<br><i>The schema has no definition for it (Edit ▸ Schema… adds one).</i>"
        self.definition.setText(text)
        keys = list(value.examples if value is not None and value.examples else concept.examples)
        for label, text_key in zip(self.example_labels, keys[:MAX_EXAMPLES], strict=False):
            try:
                key = GlyphKey.parse(text_key)
            except ValueError:
                continue
            arr = image_of(key) if image_of is not None else None
            if arr is None:
                label.setText(chr(key.codepoint))
            else:
                label.setPixmap(
                    QPixmap.fromImage(to_qimage(arr)).scaled(
                        EXAMPLE,
                        EXAMPLE,
                        Qt.AspectRatioMode.KeepAspectRatio,
                        Qt.TransformationMode.SmoothTransformation,
                    )
                )
            label.setToolTip(f"{text_key}: {char_name(key.codepoint)}")
            label.setVisible(True)

    def examples_shown(self) -> list[str]:
        """The keys of the example glyphs shown (their tooltips' keys)."""
        shown = [label for label in self.example_labels if label.isVisibleTo(self)]
        return [label.toolTip().split(":", 1)[0] for label in shown]

    def show_glyph(self, g: GlyphRecord | None, tags: list[TagRecord]) -> None:
        self._record = g
        if g is None:
            self.image.clear()
            self.image.setText("Select a glyph")
            for w in (self.name, self.key, self.block, self.font_label, self.status):
                w.setText("")
            self.tags.setRowCount(0)
            self.remove_button.setEnabled(False)
            return
        cp = g.key.codepoint
        self.name.setText(char_name(cp))
        self.key.setText(str(g.key))
        self.block.setText(f"{block(cp)} · {script_name(cp)}")
        if g.substituted:
            self.font_label.setText(
                f"{g.key.font} — not installed here; rendered with {g.render_font}"
            )
        elif g.render_font is None:
            self.font_label.setText(f"{g.key.font} — no installed font covers U+{cp:04X}")
        else:
            self.font_label.setText(g.render_font)
        self.status.setText(g.status + (f" ({g.reason})" if g.reason else ""))
        arr = self._master_image(g)
        if arr is None:
            self.image.clear()
            self.image.setText("no image")
        else:
            qimg = to_qimage(arr)
            self.image.setPixmap(
                QPixmap.fromImage(qimg).scaled(
                    BIG,
                    BIG,
                    Qt.AspectRatioMode.KeepAspectRatio,
                    Qt.TransformationMode.SmoothTransformation,
                )
            )
        self.tags.setRowCount(len(tags))
        for i, t in enumerate(tags):
            when = (t.created_at or "")[:16].replace("T", " ")
            c = self._concepts.get(t.concept)
            tip = f"{t.concept} = {t.value or 'present'}, by {t.author} {when}"
            if c is not None and c.has_value(t.value):
                who = _escape(f"{t.author} {when}")
                tip = f"{value_tip(c, c.value(t.value), None)}<br>by {who}"
            for col, text in enumerate((t.concept, t.value or "present", t.author)):
                item = QTableWidgetItem(text)
                item.setToolTip(tip)
                item.setData(Qt.ItemDataRole.UserRole, (t.concept, t.value))
                self.tags.setItem(i, col, item)
        self.remove_button.setEnabled(bool(tags))

    def show_others(self, lines: list[str] | None, *, hidden: bool = False) -> None:
        """Others' own tags of the glyph shown, one line each ("bea: shape=round"); None
        hides the section (nobody else, or no glyph); ``hidden`` says they are hidden."""
        self.others.clear()
        if hidden:
            self.others_title.setText("<b>Others' tags</b> hidden (View ▸ Hide others' tags)")
            self.others_title.setVisible(True)
            self.others.setVisible(False)
            return
        self.others_title.setText("<b>Others' tags</b>")
        self.others_title.setVisible(lines is not None)
        self.others.setVisible(lines is not None)
        if lines:
            self.others.addItems(lines)
        elif lines is not None:
            self.others.addItem("none yet")

    def others_shown(self) -> list[str]:
        """The lines of others' tags shown now (empty when hidden)."""
        if not self.others.isVisibleTo(self):
            return []
        return [self.others.item(i).text() for i in range(self.others.count())]

    def _remove_selected(self) -> None:
        row = self.tags.currentRow()
        if row < 0 or self._record is None:
            return
        concept, value = self.tags.item(row, 0).data(Qt.ItemDataRole.UserRole)
        self.remove_tag.emit(concept, value)


def _escape(text: str) -> str:
    from studio.gui.definitions import text_html

    return text_html(text)
