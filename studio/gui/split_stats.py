"""The split statistics panel of the curator's board: what a puzzle set is made of and whether
its answers give anything away (``Curator.stats``, i.e. ``studio.vet.balance.split_stats``
plus the generator's rejection reasons): curation statuses, counts per rule and per concept,
the key's answer-position histogram with its chi-square p, the answer-set audit
(``studio.vet.audit``: the overall key-rate G-test verdict, the "answers sharing my value"
distribution of the key against the foils, and the values furthest off; clicking one emits
:attr:`SplitStatsPanel.value_clicked` with the puzzles whose answers carry it), the foil-value
balance per concept (p-values, the most frequent value's share), the rejection reasons and the
tuples that ran dry.

Bars are painted with QPainter; the panel only displays a dict computed elsewhere (the board
computes it on a worker thread).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from PySide6.QtCore import QEvent, QObject, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPaintEvent, QResizeEvent
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

from studio.gui.widgets import wrap_cells

PARTS = (("all", "All parts"), ("train", "Train"), ("val", "Val"), ("test", "Test"))
BAR = QColor("#5c7cba")
LOW_P = 0.05  # p-values below are shown in red
OFF = "#c62828"
BALANCED = "#2e7d32"
AUDIT_SCOPES = (("intended", "Intended concept"), ("all", "All concepts"))
VALUE_ROLE = Qt.ItemDataRole.UserRole + 1


def _small_table(
    name: str, headers: list[str], selection: QAbstractItemView.SelectionMode
) -> QTreeWidget:
    """A compact three-column table of the panel: the first column stretches and wraps what
    is longer than it (``stroke-line-straight-quantity=3`` on two lines rather than elided:
    issue 28), the second fits its contents."""
    table = QTreeWidget(objectName=name)
    table.setColumnCount(len(headers))
    table.setHeaderLabels(headers)
    table.setRootIsDecorated(False)
    table.setSelectionMode(selection)
    table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    wrap_cells(table)
    header = table.header()
    header.setStretchLastSection(False)
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
    return table


class BarChart(QWidget):
    """Horizontal bars: one row per (label, count), the count written after the bar. Labels
    stand left of their bars while label, bar and count fit the width; otherwise each label
    gets its own line above its bar, so a narrow panel wraps the chart instead of eliding
    its labels or pushing its counts off the side (issue 28)."""

    ROW = 17
    MIN_BAR = 40  # the least room a bar gets beside its label

    def __init__(self, object_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(object_name)
        self.rows: list[tuple[str, float]] = []
        self.reference: float | None = None  # a dashed line, e.g. the count expected by chance
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_rows(self, rows: Sequence[tuple[str, float]], reference: float | None = None) -> None:
        self.rows = list(rows)
        self.reference = reference
        self._fit_height()
        self.update()

    def _columns(self, fm: QFontMetrics) -> tuple[int, int, bool]:
        """The label column's and the number column's widths, and whether the labels go on
        lines of their own (then the label column is 0 wide)."""
        if not self.rows:
            return 0, 0, False
        label_w = max(fm.horizontalAdvance(lbl) for lbl, _ in self.rows) + 8
        num_w = max(fm.horizontalAdvance(_num(v)) for _, v in self.rows) + 8
        stacked = label_w + self.MIN_BAR + num_w > self.width()
        return (0 if stacked else label_w), num_w, stacked

    def _fit_height(self) -> None:
        stacked = self._columns(QFontMetrics(self.font()))[2]
        lines = max(1, len(self.rows)) * (2 if stacked else 1)
        height = lines * self.ROW + 4
        if self.height() != height or self.minimumHeight() != height:
            self.setFixedHeight(height)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_height()  # narrower than the labels: a line each

    def sizeHint(self) -> QSize:
        return QSize(260, max(1, len(self.rows)) * self.ROW + 4)

    def minimumSizeHint(self) -> QSize:
        return QSize(self.MIN_BAR * 2, self.ROW + 4)

    def elided_texts(self) -> list[str]:
        """The labels painted elided (only a label wider than the whole chart is): what a
        layout check reads, since the chart paints its own text."""
        fm = QFontMetrics(self.font())
        return [
            f"label {lbl!r} needs {fm.horizontalAdvance(lbl)} px, has {self.width()}"
            for lbl, _ in self.rows
            if fm.horizontalAdvance(lbl) > self.width()
        ]

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        fm = QFontMetrics(self.font())
        if not self.rows:
            p.setPen(QColor("#888"))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignLeft, "—")
            return
        label_w, num_w, stacked = self._columns(fm)
        top = max(v for _, v in self.rows) or 1
        if self.reference:
            top = max(top, self.reference)
        span = max(10, self.width() - label_w - num_w)
        step = self.ROW * (2 if stacked else 1)
        for i, (label, value) in enumerate(self.rows):
            y = 2 + i * step
            p.setPen(QColor("#333"))
            if stacked:
                p.drawText(
                    QRect(0, y, self.width(), self.ROW),
                    Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                    fm.elidedText(label, Qt.TextElideMode.ElideMiddle, self.width()),
                )
                y += self.ROW
            else:
                p.drawText(
                    QRect(0, y, label_w - 6, self.ROW),
                    Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                    label,
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


def _p_html(p: float | None) -> str:
    """``_p_text`` for rich text (its ``<`` would open a tag)."""
    return html.escape(_p_text(p))


def _p_short(p: float | None) -> str:
    if p is None:
        return "—"
    return f"{p:.3f}" if p >= 0.001 else "< 0.001"


def _mean(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _heading(text: str) -> QLabel:
    """A section's title, wrapped when the panel is narrower (never cut at its edge)."""
    label = QLabel(f"<b>{text}</b>", wordWrap=True)
    label.setContentsMargins(0, 8, 0, 2)
    return label


def _verdict_html(verdict: str | None) -> str:
    colour = {"off": OFF, "balanced": BALANCED}.get(verdict or "", "#555")
    return f"<b style='color:{colour}'>{verdict or '—'}</b>"


def sharing_html(sharing: Mapping[str, Any]) -> str:
    """The key's and the foils' "other answers sharing my value" distributions as a small
    table of shares (one column per count, ``untagged`` last where there are any)."""
    hist = sharing.get("histogram", {})
    key, foil = hist.get("key", {}), hist.get("foil", {})
    cols = [c for c in dict.fromkeys([*key, *foil]) if key.get(c, 0) + foil.get(c, 0) > 0]
    if not cols:
        return "—"

    def row(name: str, h: Mapping[str, int]) -> str:
        total = sum(h.values()) or 1
        cells = "".join(f"<td align='right'>&nbsp;{h.get(c, 0) / total:.0%}</td>" for c in cols)
        return f"<tr><td>{name}</td>{cells}</tr>"

    head = "".join(f"<td align='right'>&nbsp;{'–' if c == 'untagged' else c}</td>" for c in cols)
    return (
        "<table cellspacing='0' cellpadding='1'>"
        f"<tr><td><i>others sharing</i></td>{head}</tr>"
        f"{row('key', key)}{row('foils', foil)}</table>"
    )


class SplitStatsPanel(QScrollArea):
    """Shows ``Curator.stats()``; ``set_stats(None)`` shows that there is nothing yet.

    ``value_clicked(value, puzzle_ids, total)`` fires (GUI thread) when the curator clicks one
    of the audit's worst values: ``value`` is ``concept=value``, ``puzzle_ids`` the puzzles
    whose answers carry it as the audit listed them (those that show the leak first, at most
    ``studio.vet.audit.MAX_IDS``), ``total`` how many puzzles carry it."""

    value_clicked = Signal(str, list, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("splitStats")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        # everything below wraps to the panel's width; should anything still be wider (a huge
        # font), it scrolls to it rather than running off the side unseen (issue 28)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.stats: Mapping[str, Any] | None = None
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(6, 4, 6, 4)
        lay.setSpacing(2)

        top = QHBoxLayout()
        title = QLabel("<b>Split statistics</b>")
        # shown while the figures below are older than the latest edit (set_updating)
        self.updating_label = QLabel("updating…", objectName="statsUpdating")
        self.updating_label.setStyleSheet("color: #1565c0; font-style: italic;")
        self.updating_label.setToolTip(
            "The statistics are being computed again in the background; the figures below "
            "are those of a moment ago"
        )
        self.updating_label.setVisible(False)
        self.part_combo = QComboBox(objectName="statsPart")
        for key, text in PARTS:
            self.part_combo.addItem(text, key)
        self.part_combo.currentIndexChanged.connect(lambda _i: self._show())
        top.addWidget(title)
        top.addWidget(self.updating_label)
        top.addStretch(1)
        top.addWidget(self.part_combo)
        lay.addLayout(top)

        self.summary = QLabel(objectName="statsSummary", wordWrap=True)
        lay.addWidget(self.summary)
        # what the set covers, at the top: a benchmark whose test holds one tuple must not
        # read as fine until the curator scrolls to the bottom (issue 24)
        self.coverage_heading = _heading("Coverage: (rule, concept) tuples per part")
        lay.addWidget(self.coverage_heading)
        self.coverage_label = QLabel(objectName="statsCoverage", wordWrap=True)
        self.coverage_label.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(self.coverage_label)
        # and whether the puzzles need that context: a first row or an incomplete row that
        # alone finds the key is a defect as much as an invalid puzzle (issue 24)
        lay.addWidget(_heading("Partial views: the key from one row"))
        self.partial_label = QLabel(objectName="statsPartial", wordWrap=True)
        self.partial_label.setTextFormat(Qt.TextFormat.RichText)
        from studio.vet.partial import EXPLANATION

        self.partial_label.setToolTip(EXPLANATION)
        lay.addWidget(self.partial_label)
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
        self._build_audit(lay)
        self.foil_heading = _heading("Foil-value balance (χ² per concept)")
        lay.addWidget(self.foil_heading)
        self.foil_label = QLabel(objectName="foilBalance", wordWrap=True)
        lay.addWidget(self.foil_label)
        self.foil_table = _small_table(
            "foilTable",
            ["Concept", "p", "Top value"],
            QAbstractItemView.SelectionMode.NoSelection,
        )
        self.foil_table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.foil_table.header().setSectionResizeMode(2, QHeaderView.ResizeMode.Interactive)
        # the viewport narrows when the scroll bar shows, the counts' column grows with them
        self.foil_table.viewport().installEventFilter(self)
        self.foil_table.header().sectionResized.connect(
            lambda section, *_: section == 1 and self._fit_foil_columns()
        )
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

    def _build_audit(self, lay: QVBoxLayout) -> None:
        """The answer-set audit: verdicts, the sharing table, the worst values (clickable)."""
        head = QHBoxLayout()
        head.addWidget(_heading("Answer-set audit (answers only)"), 1)
        self.audit_scope = QComboBox(objectName="auditScope")
        for key, text in AUDIT_SCOPES:
            self.audit_scope.addItem(text, key)
        self.audit_scope.setToolTip(
            "Intended concept: only the values of each puzzle's own concept; all concepts: "
            "every tag of every answer (nuisance concepts too)"
        )
        self.audit_scope.currentIndexChanged.connect(lambda _i: self._show())
        head.addWidget(self.audit_scope)
        lay.addLayout(head)
        self.audit_label = QLabel(objectName="auditVerdict", wordWrap=True)
        self.audit_label.setTextFormat(Qt.TextFormat.RichText)
        self.audit_label.setToolTip(
            "Can the key be found from the answers alone? Each value's key rate against its "
            "answer rate (G-test; expected: 1 in k), how many other answers share the key's "
            "value against a foil's, and the key's position."
        )
        lay.addWidget(self.audit_label)
        self.sharing_label = QLabel(objectName="auditSharing", wordWrap=True)
        self.sharing_label.setTextFormat(Qt.TextFormat.RichText)
        self.sharing_label.setToolTip(
            "How many other answers of its puzzle share a value with the key, and with a foil "
            "(– : the answer has no value of the concept). Alike when the answers give nothing "
            "away."
        )
        lay.addWidget(self.sharing_label)
        self.worst_heading = QLabel(
            "Values furthest off (click one to list its puzzles)", wordWrap=True
        )
        self.worst_heading.setContentsMargins(0, 4, 0, 0)
        lay.addWidget(self.worst_heading)
        self.worst_table = _small_table(
            "auditWorst",
            ["Value", "Key/exp.", "p (Holm)"],
            QAbstractItemView.SelectionMode.SingleSelection,
        )
        self.worst_table.setCursor(Qt.CursorShape.PointingHandCursor)
        self.worst_table.header().setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.worst_table.setFixedHeight(150)
        self.worst_table.itemClicked.connect(self._on_value_clicked)
        self.worst_table.itemActivated.connect(self._on_value_clicked)
        lay.addWidget(self.worst_table)

    def _on_value_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        data = item.data(0, VALUE_ROLE)
        if data:
            value, ids, total = data
            self.value_clicked.emit(str(value), list(ids), int(total))

    def audit_scope_key(self) -> str:
        return self.audit_scope.currentData() or "intended"

    def _show_audit(self, audit: Mapping[str, Any] | None) -> None:
        """The overall verdicts in words, the worst values of the chosen scope, and the
        sharing distribution (key against foils)."""
        self.worst_table.clear()
        if not audit or not audit.get("puzzles"):
            self.audit_label.setText("—")
            self.sharing_label.setText("")
            self.audit_scope.setVisible(False)
            self.worst_heading.setVisible(False)
            self.worst_table.setVisible(False)
            return
        from studio.vet.audit import same_scopes

        same = same_scopes(audit)
        self.audit_scope.setVisible(not same)
        scope = "intended" if same else self.audit_scope_key()
        kr = audit.get("key_rates", {}).get(scope, {})
        sh = audit.get("sharing", {}).get(scope, {})
        pos = audit.get("positions", {})
        alpha = float(audit.get("alpha", LOW_P))
        lines = []
        if kr.get("values"):
            lines.append(
                f"Key rate per value: {_verdict_html(kr.get('verdict'))} — G = {kr['G']:.1f}, "
                f"df = {kr['df']}, {_p_html(kr.get('p'))}; {kr.get('off', 0)} of "
                f"{kr['values']} values off after Holm"
            )
        else:
            lines.append("Key rate per value: no value to test")
        if sum(sh.get("answers", {}).values()):
            mean = sh.get("mean", {})
            test = f"{_p_html(sh.get('p'))}" if sh.get("df") else "one category"
            lines.append(
                f"Answers sharing a value: {_verdict_html(sh.get('verdict'))} — key "
                f"{_mean(mean.get('key'))}, foils {_mean(mean.get('foil'))} others on "
                f"average; {test}"
            )
        if pos.get("p") is not None:
            lines.append(
                f"Key position: {_verdict_html(pos.get('verdict'))} — χ² {_p_html(pos['p'])}"
            )
        if same and kr.get("values"):
            lines.append(
                "<i>Answers are tagged in their puzzle's concept only: all concepts = the "
                "intended one.</i>"
            )
        self.audit_label.setText("<br>".join(lines))
        self.sharing_label.setText(sharing_html(sh) if sum(sh.get("answers", {}).values()) else "")
        for r in kr.get("worst", []):
            item = QTreeWidgetItem(
                [r["value"], f"{r['on_key']}/{r['expected_key']:.3g}", _p_short(r["p_holm"])]
            )
            item.setData(
                0,
                VALUE_ROLE,
                (r["value"], list(r.get("puzzles", [])), int(r.get("puzzles_total", 0))),
            )
            item.setToolTip(
                0,
                f"{r['value']}: on the key {r['on_key']} of {r['on_answers']} times it is on an "
                f"answer (expected {r['expected_key']:.3g}); on answers of "
                f"{r['puzzles_total']} puzzles. Click to list them"
                + (
                    f" (the first {len(r.get('puzzles', []))})"
                    if len(r.get("puzzles", [])) < r["puzzles_total"]
                    else ""
                )
                + ".",
            )
            item.setToolTip(1, "times on the key / times expected by chance (1 in k answers)")
            if r["p_holm"] < alpha:
                for col in range(3):
                    item.setForeground(col, QColor(OFF))
            self.worst_table.addTopLevelItem(item)
        has_rows = self.worst_table.topLevelItemCount() > 0
        self.worst_heading.setVisible(has_rows)
        self.worst_table.setVisible(has_rows)

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
        self._fit_foil_columns()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.foil_table.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_foil_columns()
        return super().eventFilter(watched, event)

    def _fit_foil_columns(self) -> None:
        """The most frequent value fits its contents while the concept keeps room for its
        header: fitted to its contents alone, a long value ("horizontal-and-vertical 100%")
        squeezed the concept column under its header's width in a narrow panel. Both wrap."""
        table, header = self.foil_table, self.foil_table.header()
        room = table.viewport().width() - header.sectionSize(1) - header.sectionSizeHint(0)
        fit = min(table.sizeHintForColumn(2), room)
        table.setColumnWidth(2, max(header.sectionSizeHint(2), fit))

    def _show_coverage(self, cov: Mapping[str, Any] | None) -> None:
        if not cov:
            self.coverage_label.setText("")
            self.coverage_label.setToolTip("")
            return
        from studio.vet.coverage import coverage_lines

        lines = [html.escape(line) for line in coverage_lines(cov)]
        warnings = [
            f"<span style='color:#b26a00'>⚠ {html.escape(w)}</span>" for w in cov["warnings"]
        ]
        self.coverage_label.setText("<br>".join(lines + warnings))
        self.coverage_label.setToolTip(
            "\n".join(
                f"{part}: {', '.join(e['tuples']) or 'none'}" for part, e in cov["parts"].items()
            )
        )

    def _show_partial(self, report: Mapping[str, Any] | None) -> None:
        from studio.vet.partial import NAMED_POINTS, floor_points, partial_lines

        lines = partial_lines(report or {})
        if not lines:
            self.partial_label.setText("No partial rows (one-row layouts and other families).")
            return
        views = (report or {}).get("views", {})
        over = any(floor_points(v) > NAMED_POINTS for v in views.values())
        head = html.escape(lines[0])
        if over:
            head = f"<span style='color:#b26a00'>⚠ {head}</span>"
        self.partial_label.setText("<br>".join([head, *(html.escape(x) for x in lines[1:])]))

    def set_stats(self, stats: Mapping[str, Any] | None) -> None:
        self.stats = stats
        self._show()

    def set_updating(self, updating: bool) -> None:
        """Say (True) that newer figures are being computed; the old ones stay until then."""
        if updating != self.is_updating():
            self.updating_label.setVisible(updating)

    def is_updating(self) -> bool:
        return not self.updating_label.isHidden()

    def part(self) -> str:
        return self.part_combo.currentData() or "all"

    def _glyph_sections(self, shown: bool) -> None:
        """Coverage over (rule, concept) tuples and the foils' value balance are a glyph
        split's measures: a stimulus set (KiVA, polycubes) has neither, so they are not shown
        as empty sections for it."""
        for w in (self.coverage_heading, self.coverage_label, self.foil_heading):
            w.setVisible(shown)
        self.foil_label.setVisible(shown)
        self.foil_table.setVisible(shown)

    def _show(self) -> None:
        stats = self.stats
        self._glyph_sections(not stats or "foil_values" in stats.get("all", {}))
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
            self._show_audit(None)
            self.foil_label.setText("")
            self.foil_table.clear()
            self.dry_label.setText("")
            self.coverage_label.setText("")
            self.partial_label.setText("")
            return
        part = stats.get(self.part(), {})
        n = int(part.get("puzzles", 0))
        parts = ", ".join(
            f"{stats.get(k, {}).get('puzzles', 0)} {k}" for k in ("train", "val", "test")
        )
        self.summary.setText(f"{n} puzzles shown ({parts})")
        self._show_coverage(stats.get("coverage"))
        self._show_partial(part.get("partial_views"))
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
        self._show_audit(part.get("audit"))
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
