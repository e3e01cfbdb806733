"""The split statistics panel of the curator's board: what a puzzle set is made of and whether
its answers give anything away (``Curator.stats``, i.e. ``studio.vet.balance.split_stats``
plus the generator's rejection reasons): curation statuses, counts per rule and per concept,
the key's answer-position histogram with its chi-square p, the foil-value balance per concept
(p-values, the most frequent value's share), the rejection reasons and the tuples that ran dry.

Bars are painted with QPainter; the panel only displays a dict computed elsewhere (the board
computes it on a worker thread).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

PARTS = (("all", "All parts"), ("train", "Train"), ("val", "Val"), ("test", "Test"))
BAR = QColor("#5c7cba")
LOW_P = 0.05  # p-values below are shown in red


class BarChart(QWidget):
    """Horizontal bars: one row per (label, count), the count written after the bar."""

    ROW = 17

    def __init__(self, object_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(object_name)
        self.rows: list[tuple[str, float]] = []
        self.reference: float | None = None  # a dashed line, e.g. the count expected by chance
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_rows(self, rows: Sequence[tuple[str, float]], reference: float | None = None) -> None:
        self.rows = list(rows)
        self.reference = reference
        self.setFixedHeight(max(1, len(self.rows)) * self.ROW + 4)
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(260, max(1, len(self.rows)) * self.ROW + 4)

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        fm = QFontMetrics(self.font())
        if not self.rows:
            p.setPen(QColor("#888"))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignLeft, "—")
            return
        label_w = min(max(fm.horizontalAdvance(lbl) for lbl, _ in self.rows) + 8, self.width() // 2)
        num_w = max(fm.horizontalAdvance(_num(v)) for _, v in self.rows) + 8
        top = max(v for _, v in self.rows) or 1
        if self.reference:
            top = max(top, self.reference)
        span = max(10, self.width() - label_w - num_w)
        for i, (label, value) in enumerate(self.rows):
            y = 2 + i * self.ROW
            p.setPen(QColor("#333"))
            p.drawText(
                QRect(0, y, label_w - 6, self.ROW),
                Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                fm.elidedText(label, Qt.TextElideMode.ElideMiddle, label_w - 6),
            )
            w = round(span * value / top)
            p.fillRect(QRect(label_w, y + 3, max(1 if value else 0, w), self.ROW - 6), BAR)
            p.drawText(
                QRect(label_w + w + 4, y, num_w, self.ROW),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                _num(value),
            )
        if self.reference:
            x = label_w + round(span * self.reference / top)
            p.setPen(QColor("#c62828"))
            p.drawLine(x, 0, x, self.height())
        p.end()


def _num(v: float) -> str:
    return f"{v:g}" if isinstance(v, float) and not v.is_integer() else f"{int(v)}"


def _p_text(p: float | None) -> str:
    if p is None:
        return "p —"
    return f"p = {p:.3f}" if p >= 0.001 else "p < 0.001"


def _heading(text: str) -> QLabel:
    label = QLabel(f"<b>{text}</b>")
    label.setContentsMargins(0, 8, 0, 2)
    return label


class SplitStatsPanel(QScrollArea):
    """Shows ``Curator.stats()``; ``set_stats(None)`` shows that there is nothing yet."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("splitStats")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.stats: Mapping[str, Any] | None = None
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(6, 4, 6, 4)
        lay.setSpacing(2)

        top = QHBoxLayout()
        title = QLabel("<b>Split statistics</b>")
        self.part_combo = QComboBox(objectName="statsPart")
        for key, text in PARTS:
            self.part_combo.addItem(text, key)
        self.part_combo.currentIndexChanged.connect(lambda _i: self._show())
        top.addWidget(title, 1)
        top.addWidget(self.part_combo)
        lay.addLayout(top)

        self.summary = QLabel(objectName="statsSummary", wordWrap=True)
        lay.addWidget(self.summary)
        lay.addWidget(_heading("Status"))
        self.status_chart = BarChart("statusChart")
        lay.addWidget(self.status_chart)
        lay.addWidget(_heading("Puzzles per rule"))
        self.rule_chart = BarChart("ruleChart")
        lay.addWidget(self.rule_chart)
        self.position_heading = _heading("Answer position of the key")
        lay.addWidget(self.position_heading)
        self.position_chart = BarChart("positionChart")
        lay.addWidget(self.position_chart)
        self.position_label = QLabel(objectName="positionTest", wordWrap=True)
        lay.addWidget(self.position_label)
        lay.addWidget(_heading("Foil-value balance (χ² per concept)"))
        self.foil_label = QLabel(objectName="foilBalance", wordWrap=True)
        lay.addWidget(self.foil_label)
        self.foil_table = QTreeWidget(objectName="foilTable")
        self.foil_table.setColumnCount(3)
        self.foil_table.setHeaderLabels(["Concept", "p", "Most frequent"])
        self.foil_table.setRootIsDecorated(False)
        self.foil_table.setUniformRowHeights(True)
        self.foil_table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.foil_table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.foil_table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.foil_table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.foil_table.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Fixed)
        header.resizeSection(2, 96)
        self.foil_table.setFixedHeight(150)
        lay.addWidget(self.foil_table)
        lay.addWidget(_heading("Puzzles per concept"))
        self.concept_chart = BarChart("conceptChart")
        lay.addWidget(self.concept_chart)
        lay.addWidget(_heading("Candidates rejected while generating"))
        self.rejection_chart = BarChart("rejectionChart")
        lay.addWidget(self.rejection_chart)
        self.dry_label = QLabel(objectName="dryTuples", wordWrap=True)
        lay.addWidget(self.dry_label)
        lay.addStretch(1)
        self.setWidget(body)
        self.set_stats(None)

    def _show_foils(self, fv: Mapping[str, Any]) -> None:
        """One row per concept, the least balanced first; p < 0.05 in red."""
        per = fv.get("per_concept", {})
        self.foil_label.setText(
            f"Lowest p: {_p_text(fv.get('min_p'))} ({fv.get('min_p_concept') or '—'}); "
            f"largest share: {fv.get('max_share_value') or '—'} "
            f"{fv.get('max_share') or 0:.0%}"
            if per
            else "—"
        )
        self.foil_table.clear()
        rows = sorted(per.items(), key=lambda kv: (kv[1].get("p") is None, kv[1].get("p") or 1.0))
        for concept, d in rows:
            p = d.get("p")
            share = d.get("max_share") or 0.0
            top = d.get("max_share_value") or "—"
            item = QTreeWidgetItem([concept, _p_text(p).removeprefix("p ").strip("= "), ""])
            item.setText(2, f"{top} {share:.0%}")
            item.setToolTip(0, concept)
            item.setToolTip(
                2, ", ".join(f"{v}: {n}" for v, n in d.get("counts", {}).items()) or "—"
            )
            if p is not None and p < LOW_P:
                item.setForeground(1, QColor("#c62828"))
            self.foil_table.addTopLevelItem(item)

    def set_stats(self, stats: Mapping[str, Any] | None) -> None:
        self.stats = stats
        self._show()

    def part(self) -> str:
        return self.part_combo.currentData() or "all"

    def _show(self) -> None:
        stats = self.stats
        if not stats:
            self.summary.setText("No puzzle set yet: Puzzles ▸ Generate split…")
            for chart in (
                self.status_chart,
                self.rule_chart,
                self.position_chart,
                self.concept_chart,
                self.rejection_chart,
            ):
                chart.set_rows([])
            self.position_label.setText("")
            self.foil_label.setText("")
            self.foil_table.clear()
            self.dry_label.setText("")
            return
        part = stats.get(self.part(), {})
        n = int(part.get("puzzles", 0))
        parts = ", ".join(
            f"{stats.get(k, {}).get('puzzles', 0)} {k}" for k in ("train", "val", "test")
        )
        self.summary.setText(f"{n} puzzles shown ({parts})")
        self.status_chart.set_rows([(s, v) for s, v in stats.get("statuses", {}).items()])
        self.rule_chart.set_rows(list(part.get("per_rule", {}).items()))
        concepts = sorted(part.get("per_concept", {}).items(), key=lambda kv: (-kv[1], kv[0]))
        self.concept_chart.set_rows(concepts)
        pos = part.get("answer_position", {})
        hist = pos.get("histogram", [])
        expected = n / len(hist) if hist else None
        self.position_chart.set_rows(
            [(f"answer {i + 1}", c) for i, c in enumerate(hist)], reference=expected
        )
        self.position_label.setText(
            f"χ² against uniform: {_p_text(pos.get('p'))}"
            + ("  (red line: expected by chance)" if hist else "")
        )
        self._show_foils(part.get("foil_values", {}))
        self.rejection_chart.set_rows(
            sorted(stats.get("rejections", {}).items(), key=lambda kv: (-kv[1], kv[0]))
        )
        dry = stats.get("dry_tuples", {})
        dry_n = {k: len(v) for k, v in dry.items() if v}
        self.dry_label.setText(
            "Tuples that ran dry: " + ", ".join(f"{k} {v}" for k, v in dry_n.items())
            if dry_n
            else "No tuple ran dry."
        )
