"""Find text a window shows cut off: elided with "…" or clipped by its widget's edge (issue 28).

Qt elides or clips without telling anyone; what it does tell is how wide a text is (the font
metrics) and how wide the room is (the widget, the style's sub-rectangles, the delegate's size
hint, the header's section). :func:`elided_texts` compares the two for every visible text of a
window — labels, buttons, check boxes, combo boxes (every item they offer), placeholders,
header sections, the cells of item views and a view's first column against its viewport —
checks that a scroll area whose content is larger than its viewport can scroll to the rest,
and that the window got the size it was given. A widget that paints its own text reports what
it elides (``elided_texts()``). Each finding is one human-readable line, so a failing test
says what to widen.

Nothing is excused here: a caller names the combo boxes that list data of any length (whose
current item only must fit), and says why.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator

from PySide6.QtCore import QModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractScrollArea,
    QApplication,
    QComboBox,
    QGroupBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListView,
    QPushButton,
    QScrollArea,
    QStyle,
    QStyleOptionComboBox,
    QStyleOptionHeader,
    QStyleOptionViewItem,
    QTableView,
    QTreeView,
    QWidget,
)

#: Rows of one item view looked at, at most: enough for every list the tests open.
MAX_ROWS = 2000
#: Pixels of slack before a text counts as cut off: none (Qt's size hints round up already,
#: and a table column one pixel short of its hint elides: "train-000…" at 71 px, whole at 72).
SLACK = 0


def _short(text: str, n: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _name(w: QWidget) -> str:
    return w.objectName() or type(w).__name__


def _plain_width(fm: QFontMetrics, text: str) -> int:
    """The widest line of ``text`` (mnemonic ampersands do not count)."""
    text = re.sub(r"&(.)", r"\1", text)
    return max((fm.horizontalAdvance(line) for line in text.split("\n")), default=0)


def _shown(w: QWidget, window: QWidget) -> bool:
    """Visible (so not on a tab page that is not shown), and in this window, not a dialog."""
    return w.isVisible() and w.window() is window


def _label_findings(label: QLabel) -> Iterator[str]:
    text = label.text()
    if not text or (label.pixmap() is not None and not label.pixmap().isNull()):
        return
    if label.wordWrap():
        # a wrapped label needs its height for its width: less and its last lines are cut
        need = label.heightForWidth(label.width())
        if need > label.height() + SLACK:
            yield (
                f"label {_name(label)} {_short(label.text())!r}: needs {need} px of height"
                f" at {label.width()} px wide, has {label.height()}"
            )
        return
    # unwrapped, its size hint is the whole text (plain or rich) plus margins and indent
    need = label.sizeHint().width()
    if need > label.width() + SLACK:
        yield (
            f"label {_name(label)} {_short(_strip_tags(text))!r}: needs {need} px,"
            f" has {label.width()}"
        )


def _strip_tags(text: str) -> str:
    return re.sub(r"<[^>]+>", "", text)


def _button_findings(button: QAbstractButton) -> Iterator[str]:
    text = button.text()
    if not text:
        return
    if isinstance(button, QPushButton):
        # Fusion's size hint is at least 80 px wide: measure the text and margins instead
        style = button.style()
        need = _plain_width(button.fontMetrics(), text)
        if not button.icon().isNull():
            need += button.iconSize().width() + 4
        need += style.pixelMetric(QStyle.PixelMetric.PM_ButtonMargin, None, button)
        need += 2 * style.pixelMetric(QStyle.PixelMetric.PM_DefaultFrameWidth, None, button)
        if button.menu() is not None:
            need += style.pixelMetric(QStyle.PixelMetric.PM_MenuButtonIndicator, None, button)
    else:  # a check box, a radio button, a tool button: their size hint is their content
        need = button.sizeHint().width()
    if need > button.width() + SLACK:
        yield f"button {_name(button)} {_short(text)!r}: needs {need} px, has {button.width()}"


def _combo_findings(combo: QComboBox, current_only: bool = False) -> Iterator[str]:
    """The closed combo box shows its current item: each item it offers must fit, since
    choosing it is one click away ("Not yet tagged for…" was cut only once chosen); a combo
    box of data (``current_only``) only its current one."""
    if combo.isEditable():  # its line edit scrolls; it does not elide
        return
    texts = [combo.itemText(i) for i in range(combo.count())]
    if current_only or not texts:
        texts = [combo.currentText()]
    text = max(texts, key=lambda t: _plain_width(combo.fontMetrics(), t))
    if not text:
        return
    opt = QStyleOptionComboBox()
    opt.initFrom(combo)
    opt.editable = False
    opt.frame = combo.hasFrame()
    opt.currentText = text
    opt.subControls = QStyle.SubControl.SC_All
    field = combo.style().subControlRect(
        QStyle.ComplexControl.CC_ComboBox, opt, QStyle.SubControl.SC_ComboBoxEditField, combo
    )
    have = field.width() - 2  # CE_ComboBoxLabel draws 1 px in from each side
    need = _plain_width(combo.fontMetrics(), text)
    if any(not combo.itemIcon(i).isNull() for i in range(combo.count())):
        need += combo.iconSize().width() + 4
    if need > have + SLACK:
        yield f"combo box {_name(combo)} {_short(text)!r}: needs {need} px, has {have}"


def _placeholder_findings(edit: QLineEdit) -> Iterator[str]:
    """An empty line edit shows its placeholder, elided when wider than the text's room
    (inside the frame and the text margins, beside the clear button's place)."""
    text = edit.placeholderText()
    if not text or edit.text():
        return
    style = edit.style()
    frame = style.pixelMetric(QStyle.PixelMetric.PM_DefaultFrameWidth, None, edit)
    margins = edit.textMargins()
    have = edit.width() - 2 * frame - 4 - margins.left() - margins.right()
    if edit.isClearButtonEnabled():
        have -= style.pixelMetric(QStyle.PixelMetric.PM_SmallIconSize, None, edit) + 8
    need = _plain_width(edit.fontMetrics(), text)
    if need > have + SLACK:
        yield f"placeholder of {_name(edit)} {_short(text)!r}: needs {need} px, has {have}"


def _header_findings(header: QHeaderView, where: str) -> Iterator[str]:
    model = header.model()
    if model is None:
        return
    horizontal = header.orientation() == Qt.Orientation.Horizontal
    # a highlighted section (one of the selection's columns) is drawn in bold: measure bold
    font = QFont(header.font())
    if header.highlightSections():
        font.setBold(True)
    fm = QFontMetrics(font)
    style = header.style()
    for section in range(header.count()):
        if header.isSectionHidden(section) or header.sectionSize(section) <= 0:
            continue
        text = model.headerData(section, header.orientation(), Qt.ItemDataRole.DisplayRole)
        if text is None or str(text) == "":
            continue
        text = str(text)
        opt = QStyleOptionHeader()
        opt.initFrom(header)
        opt.section = section
        opt.text = text
        size = header.sectionSize(section)
        opt.rect = QRect(0, 0, size, header.height()) if horizontal else QRect(0, 0, 60, size)
        if horizontal:
            opt.state |= QStyle.StateFlag.State_Horizontal
        if header.isSortIndicatorShown() and header.sortIndicatorSection() == section:
            opt.sortIndicator = (
                QStyleOptionHeader.SortIndicator.SortDown
                if header.sortIndicatorOrder() == Qt.SortOrder.AscendingOrder
                else QStyleOptionHeader.SortIndicator.SortUp
            )
        label = style.subElementRect(QStyle.SubElement.SE_HeaderLabel, opt, header)
        need = _plain_width(fm, text)
        have = label.width()
        if need > have + SLACK:
            yield (
                f"{where}: header {_name(header.parentWidget() or header)} {text!r}"
                f" (column {section}) needs {need} px, has {have}"
            )


def _indexes(view: QAbstractItemView) -> Iterator[QModelIndex]:
    """The rows a user can see by scrolling (children of expanded tree items only)."""
    model = view.model()
    if model is None:
        return
    count = 0
    stack = [QModelIndex()]
    while stack:
        parent = stack.pop()
        for row in range(model.rowCount(parent)):
            if isinstance(view, QTableView | QListView) and view.isRowHidden(row):
                continue
            if isinstance(view, QTreeView) and view.isRowHidden(row, parent):
                continue
            index = model.index(row, 0, parent)
            yield index
            count += 1
            if count >= MAX_ROWS:
                return
            if isinstance(view, QTreeView) and view.isExpanded(index):
                stack.append(index)


def _view_findings(view: QAbstractItemView, where: str) -> Iterator[str]:
    if isinstance(view, QListView) and view.viewMode() == QListView.ViewMode.IconMode:
        return  # a grid of thumbnails: its delegate draws no elided text
    header = view.horizontalHeader() if isinstance(view, QTableView) else None
    if isinstance(view, QTreeView):
        header = view.header()
    if header is not None and not header.isHidden() and header.count():
        # the names a view lists are its first column: cut by the view's edge, they are not
        # elided but clipped, and a scroll bar does not make them readable at a glance
        first = header.logicalIndex(0)
        if header.sectionSize(first) > view.viewport().width() + SLACK:
            title = header.model().headerData(
                first, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole
            )
            yield (
                f"{where}: {_name(view)} shows {view.viewport().width()} px of its first column"
                f" ({title or '—'}), {header.sectionSize(first)} px wide"
            )
    # a table wraps a text at its spaces, but its rows keep their height: a wrapped cell is
    # cut at the bottom (Qt elides its last line), so a cell must fit on one line, except in
    # a view whose rows grow with their text (a word-wrapped list without uniform heights, a
    # word-wrapped table whose rows fit their contents); a tree that wraps does so through
    # its delegate (studio.gui.widgets.WrappingDelegate), whose size hint is the wrapped one
    rows_grow = (
        isinstance(view, QListView) and view.wordWrap() and not view.uniformItemSizes()
    ) or (
        isinstance(view, QTableView)
        and view.wordWrap()
        and view.verticalHeader().sectionResizeMode(0) == QHeaderView.ResizeMode.ResizeToContents
    )
    model = view.model()
    if model is None:
        return
    # a list model's columnCount is private to it (QAbstractListModel): a list has one
    columns = 1 if isinstance(view, QListView) else model.columnCount(QModelIndex())
    reported: set[int] = set()
    for first in _indexes(view):
        for col in range(columns):
            if col in reported:
                continue
            if isinstance(view, QTableView | QTreeView) and view.isColumnHidden(col):
                continue
            index = first.siblingAtColumn(col)
            text = index.data(Qt.ItemDataRole.DisplayRole)
            if text is None or str(text) == "":
                continue
            rect = view.visualRect(index)
            if rect.width() <= 0:
                continue
            opt = QStyleOptionViewItem()
            opt.initFrom(view)
            opt.rect = rect
            opt.font = view.font()
            opt.fontMetrics = view.fontMetrics()
            icon = view.iconSize()
            if not icon.isValid():
                side = view.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize, None, view)
                icon = QSize(side, side)
            opt.decorationSize = icon
            opt.textElideMode = view.textElideMode()
            if rows_grow:
                opt.features |= QStyleOptionViewItem.ViewItemFeature.WrapText
            hint = view.itemDelegateForIndex(index).sizeHint(opt, index)
            need = hint.width()
            if rows_grow and hint.height() > rect.height() + SLACK:
                need = hint.width() + 1  # cut at the bottom: reported as too narrow
            if need > rect.width() + SLACK:
                reported.add(col)  # one finding per column: the first cell cut off
                title = ""
                if isinstance(view, QTableView | QTreeView):
                    title = model.headerData(
                        col, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole
                    )
                yield (
                    f"{where}: {_name(view)} column {col} ({title or '—'}) cell"
                    f" {_short(str(text))!r} needs {need} px, has {rect.width()}"
                )


def _scroll_findings(area: QAbstractScrollArea, where: str) -> Iterator[str]:
    """Content larger than the viewport needs a scroll bar that is shown."""
    if not isinstance(area, QScrollArea) or area.widget() is None:
        return
    content = area.widget()
    viewport = area.viewport()
    want = content.minimumSizeHint() if area.widgetResizable() else content.size()
    want = want.expandedTo(content.minimumSize())
    for need, have, bar, axis in (
        (want.width(), viewport.width(), area.horizontalScrollBar(), "wide"),
        (want.height(), viewport.height(), area.verticalScrollBar(), "tall"),
    ):
        if need > have + SLACK and not (bar.isVisible() and bar.maximum() >= need - have - 1):
            yield (
                f"{where}: scroll area {_name(area)} content is {need} px {axis}, shows {have}"
                " and cannot scroll to the rest"
            )


def _group_findings(box: QGroupBox) -> Iterator[str]:
    title = box.title()
    if not title:
        return
    need = _plain_width(box.fontMetrics(), title) + 16
    if box.isCheckable():
        need += box.style().pixelMetric(QStyle.PixelMetric.PM_IndicatorWidth, None, box) + 4
    if need > box.width() + SLACK:
        yield f"group box {_name(box)} {_short(title)!r}: needs {need} px, has {box.width()}"


def elided_texts(
    window: QWidget,
    where: str,
    size: QSize | None = None,
    data_combos: Collection[str] = (),
) -> list[str]:
    """Every text of ``window``'s visible widgets that does not fit where it is drawn, one
    line each, prefixed with ``where`` (a screen's name). Call it with the window shown, its
    layouts settled (``QApplication.processEvents``).

    ``size``: the size the window was given; a window whose layouts need more grows past it
    (and past the screen), which is reported too. A widget that paints its own text says what
    it elides through an ``elided_texts()`` method (the statistics panel's bar charts).
    ``data_combos``: object names of combo boxes that list data of any length (font names,
    Unicode blocks): only their current item must fit, not every item they could show."""
    data = set(data_combos)
    QApplication.processEvents()
    findings: list[str] = []
    if size is not None and window.size() != size:
        findings.append(
            f"{where}: the window needs {window.width()}×{window.height()} px"
            f" (minimum {window.minimumSizeHint().width()}×"
            f"{window.minimumSizeHint().height()}), was given {size.width()}×{size.height()}"
        )
    for w in [window, *window.findChildren(QWidget)]:
        if not _shown(w, window):
            continue
        painted = getattr(w, "elided_texts", None)
        if callable(painted):
            findings += [f"{where}: {_name(w)} {f}" for f in painted()]
        if isinstance(w, QLabel):
            findings += [f"{where}: {f}" for f in _label_findings(w)]
        elif isinstance(w, QAbstractButton):
            findings += [f"{where}: {f}" for f in _button_findings(w)]
        elif isinstance(w, QComboBox):
            findings += [f"{where}: {f}" for f in _combo_findings(w, w.objectName() in data)]
        elif isinstance(w, QLineEdit) and not isinstance(w.parentWidget(), QComboBox):
            findings += [f"{where}: {f}" for f in _placeholder_findings(w)]
        elif isinstance(w, QGroupBox):
            findings += [f"{where}: {f}" for f in _group_findings(w)]
        if isinstance(w, QHeaderView):
            findings += list(_header_findings(w, where))
        elif isinstance(w, QAbstractItemView):
            findings += list(_view_findings(w, where))
        if isinstance(w, QAbstractScrollArea):
            findings += list(_scroll_findings(w, where))
    return findings
