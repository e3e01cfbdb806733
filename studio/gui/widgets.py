"""Small widget helpers shared by the windows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRect,
    QRectF,
    QSize,
    Qt,
    QTimer,
)
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPalette, QTextLayout, QTextOption
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionHeader,
    QStyleOptionViewItem,
    QTableView,
    QTreeView,
    QWidget,
)


def refill_combo(combo: QComboBox, all_text: str, items: Sequence[str]) -> None:
    """Replace a filter combo's items (first item: ``all_text``, data ``""``), keeping the
    current choice when it is still there, without emitting change signals."""
    current = combo.currentData()
    combo.blockSignals(True)
    combo.clear()
    combo.addItem(all_text, "")
    for it in items:
        combo.addItem(it, it)
    combo.setCurrentIndex(max(0, combo.findData(current)))
    combo.blockSignals(False)


class RefocusAfterDialogs(QObject):
    """Give the keyboard back to ``window`` when one of its dialogs closes with no window
    active (issue 28).

    A window manager hands focus back to a closed dialog's parent; without one (a bare X
    server such as Xvfb, a kiosk session) nothing does, and the window's shortcuts are dead
    until a click. Only a dialog that had the keyboard as it closed counts (one closing in the
    background while the user is in another application does not), and the check comes a
    moment later, only when no window of the application is active: a window manager's own
    choice is never overridden."""

    #: milliseconds after a dialog hides before the check: a window manager answers in less
    DELAY_MS = 50

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self._window = window
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.Hide
            and isinstance(watched, QDialog)
            and watched.parentWidget() is not None
            and watched.parentWidget().window() is self._window
            # the user was in the studio as it closed, not in another application
            and QApplication.applicationState() == Qt.ApplicationState.ApplicationActive
        ):
            QTimer.singleShot(self.DELAY_MS, self, self._refocus)
        return False

    def _refocus(self) -> None:
        if (
            self._window.isVisible()
            and QApplication.activeWindow() is None
            and QApplication.activeModalWidget() is None
        ):
            self._window.activateWindow()


# ---- widths that fit the text (issue 28: nothing elided at 1280×800) ---------------------------
def cell_width(view: QAbstractItemView, texts: Iterable[str], font: QFont | None = None) -> int:
    """The width a column of ``view`` needs to show each of ``texts`` whole on one line (in
    ``font``, by default the view's): what its (default) delegate asks for a cell, text and
    margins. Computed from the distinct texts, so sizing a column of 10,000 rows costs as
    many strings as it has values."""
    opt = QStyleOptionViewItem()
    opt.initFrom(view)
    opt.font = font or view.font()
    opt.fontMetrics = QFontMetrics(opt.font)
    opt.features = QStyleOptionViewItem.ViewItemFeature.HasDisplay
    style = view.style()
    best = 0
    for text in set(texts):
        opt.text = text
        size = style.sizeFromContents(QStyle.ContentsType.CT_ItemViewItem, opt, QSize(), view)
        best = max(best, size.width())
    if isinstance(view, QTableView) and view.showGrid():
        best += 1  # the grid line is drawn inside the column, beside the text
    return best


def header_width(header: QHeaderView, text: str, sort_arrow: bool = False) -> int:
    """The width a section of ``header`` needs for ``text`` whole: a highlighted section (one
    the selection crosses) is drawn in bold, so bold is measured; plus what the style keeps
    around the label, and the sort arrow's room when ``sort_arrow`` (the column sorted by)."""
    font = QFont(header.font())
    font.setBold(True)
    opt = QStyleOptionHeader()
    opt.initFrom(header)
    opt.rect = QRect(0, 0, 200, max(header.height(), header.sizeHint().height()))
    if header.orientation() == Qt.Orientation.Horizontal:
        opt.state |= QStyle.StateFlag.State_Horizontal
    if sort_arrow:
        opt.sortIndicator = QStyleOptionHeader.SortIndicator.SortDown
    label = header.style().subElementRect(QStyle.SubElement.SE_HeaderLabel, opt, header)
    return QFontMetrics(font).horizontalAdvance(text) + 200 - label.width() + 2


class WrappingDelegate(QStyledItemDelegate):
    """A tree's cells wrapped to their column's width — at spaces and hyphens, else anywhere
    (``concept=value`` has no space) — and each row as tall as its longest cell. A QTreeView
    asks a delegate for a row's height without the column's width, and Qt's own wrapping
    never breaks a word, so a long value was cut to one line and elided; :func:`wrap_cells`
    sets this up."""

    def __init__(self, view: QTreeView) -> None:
        super().__init__(view)
        self._view = view

    def _text_width(self, index: QModelIndex | QPersistentModelIndex) -> int:
        header = self._view.header()
        width = header.sectionSize(index.column())
        if index.column() == header.logicalIndex(0) and self._view.rootIsDecorated():
            width -= self._view.indentation()
        return max(1, width - 2 * self._margin())

    def _margin(self) -> int:
        style = self._view.style()
        return style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self._view) + 1

    @staticmethod
    def _breakable(text: str) -> str:
        """``concept=value`` may break after its ``=`` (a zero-width space, drawn as
        nothing), rather than inside a word."""
        return text.replace("=", "=\u200b")

    @staticmethod
    def _option() -> QTextOption:
        option = QTextOption()
        option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        return option

    def _lines(self, text: str, font: QFont, width: int) -> int:
        layout = QTextLayout(text, font)
        layout.setTextOption(self._option())
        layout.beginLayout()
        lines = 0
        while True:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(width)
            lines += 1
        layout.endLayout()
        return max(1, lines)

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        one_line = super().sizeHint(option, index)
        text = index.data(Qt.ItemDataRole.DisplayRole)
        fitted = QHeaderView.ResizeMode.ResizeToContents
        if not text or self._view.header().sectionResizeMode(index.column()) == fitted:
            return one_line  # the column is as wide as this asks: nothing to wrap
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        width = self._text_width(index)
        fm = QFontMetrics(opt.font)  # type: ignore[attr-defined]
        lines = self._lines(self._breakable(str(text)), opt.font, width)  # type: ignore[attr-defined]
        extra = lines - 1
        column = width + 2 * self._margin()
        return QSize(min(one_line.width(), column), one_line.height() + extra * fm.lineSpacing())

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text = opt.text  # type: ignore[attr-defined]
        opt.text = ""  # type: ignore[attr-defined]
        widget = opt.widget  # type: ignore[attr-defined]
        style = widget.style() if widget is not None else self._view.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, widget)
        rect = rect.adjusted(self._margin(), 0, -self._margin(), 0)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)  # type: ignore[attr-defined]
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        text_option = self._option()
        text_option.setAlignment(opt.displayAlignment)  # type: ignore[attr-defined]
        painter.save()
        painter.setFont(opt.font)  # type: ignore[attr-defined]
        painter.setPen(opt.palette.color(role))  # type: ignore[attr-defined]
        painter.drawText(QRectF(rect), self._breakable(text), text_option)
        painter.restore()


def wrap_cells(view: QTreeView) -> None:
    """Wrap ``view``'s long cells at their column's width instead of eliding them: rows grow,
    and are measured again whenever a column is resized."""
    view.setWordWrap(True)
    view.setUniformRowHeights(False)
    view.setItemDelegate(WrappingDelegate(view))
    view.header().sectionResized.connect(lambda *_: view.doItemsLayout())


def replace_buttons(dialog: QDialog) -> QDialogButtonBox:
    """Replace and Cancel for a dialog that replaces a foil (a glyph puzzle's or an item's):
    Replace accepts, Cancel rejects."""
    buttons = QDialogButtonBox(
        QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
    )
    buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Replace")
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    return buttons
