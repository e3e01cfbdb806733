"""What the Preview tab's pages share: the one render thread (:class:`RenderService`), the
debounced, numbered requests (:class:`_Requester`), image views and the checks tree.

An EGL context belongs to the thread that made it, so the renderer lives in that one thread for
the life of the tab; a request waiting when a newer one of the same page comes is dropped, and
a result that arrives after a newer request was made is not shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PIL import Image
from PySide6.QtCore import QObject, QPoint, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPixmap
from PySide6.QtWidgets import (
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QWidget,
)

from studio.gui.jobs import ServiceThread
from studio.gui.widgets import wrap_cells

DEBOUNCE_MS = 120
PREVIEW_SIZE = 224


def pil_to_pixmap(image: Image.Image) -> QPixmap:
    """A deep copy: the QImage must not point into the PIL buffer once it is gone."""
    rgba = image.convert("RGBA")
    data = rgba.tobytes()
    qimage = QImage(data, rgba.width, rgba.height, 4 * rgba.width, QImage.Format.Format_RGBA8888)
    return QPixmap.fromImage(qimage.copy())


# ---- the render thread -----------------------------------------------------------------------
class RenderService(ServiceThread):
    """One thread for every render and generator preview of the tab (the board has one for its
    items' sheets): a :class:`~studio.gui.jobs.ServiceThread`, first in first out, whose
    renderers are closed on it when it is shut down. ``finished(seq, result)`` and
    ``failed(seq, message)`` arrive on the GUI thread."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__("preview-render", on_stop=_close_thread_renderers, parent=parent)


def _close_thread_renderers() -> None:
    from studio.render3d import scene

    cache = getattr(scene._local, "renderers", None) or {}
    for renderer in cache.values():
        renderer.close()
    cache.clear()


class _Requester:
    """Debounce + latest-wins for one consumer of the RenderService."""

    def __init__(
        self,
        owner: QWidget,
        service: RenderService,
        make_job: Callable[[], tuple[Callable[..., Any], tuple[Any, ...]] | None],
        on_result: Callable[[Any], None],
        on_error: Callable[[str], None],
        delay: int = DEBOUNCE_MS,
    ) -> None:
        self.service = service
        self.make_job = make_job
        self.on_result = on_result
        self.on_error = on_error
        self.latest = 0
        self.timer = QTimer(owner, singleShot=True, interval=delay)
        self.timer.timeout.connect(self.fire)
        service.finished.connect(self._finished)
        service.failed.connect(self._failed)

    def request(self) -> None:
        self.timer.start()

    def fire(self) -> None:
        job = self.make_job()
        if job is None:
            return
        fn, args = job
        # latest wins: this page's request still waiting is replaced, not drawn
        self.latest = self.service.submit(fn, *args, key=self)

    def _finished(self, seq: int, result: Any) -> None:
        if seq == self.latest:
            self.latest = -seq  # answered
            self.on_result(result)

    def _failed(self, seq: int, message: str) -> None:
        if seq == self.latest:
            self.latest = -seq
            self.on_error(message)


def _checks_tree(name: str) -> QTreeWidget:
    """A verdict's checks; a detail longer than its column wraps (issue 28: it was elided)."""
    tree = QTreeWidget(objectName=name)
    tree.setHeaderLabels(["Check", "Verdict", "Measure", "Detail"])
    tree.setRootIsDecorated(False)
    wrap_cells(tree)
    tree.setColumnWidth(0, 230)
    tree.setColumnWidth(1, 70)
    tree.setColumnWidth(2, 80)
    return tree


def fill_checks(tree: QTreeWidget, verdict: Any) -> None:
    """Show a Verdict's checks: failed errors red, failed warnings amber."""
    tree.clear()
    for c in verdict.findings:
        verdict_text = "pass" if c.ok else ("REFUSED" if c.severity == "error" else "warning")
        measure = "" if c.measure is None else f"{c.measure:.4g}"
        item = QTreeWidgetItem([c.check, verdict_text, measure, c.detail])
        item.setToolTip(3, c.detail)
        if not c.ok:
            color = QColor(190, 30, 30) if c.severity == "error" else QColor(170, 110, 0)
            for col in range(4):
                item.setForeground(col, color)
        tree.addTopLevelItem(item)


class ImageView(QLabel):
    """A fixed-size picture; dragging on it reports the mouse movement (orbiting)."""

    dragged = Signal(int, int)

    def __init__(self, name: str, size: int = PREVIEW_SIZE) -> None:
        super().__init__(objectName=name)
        self.setFixedSize(QSize(size + 2, size + 2))
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setStyleSheet("background: white; border: 1px solid #bbb;")
        self._last: QPoint | None = None

    def mousePressEvent(self, e: QMouseEvent) -> None:
        self._last = e.position().toPoint()

    def mouseMoveEvent(self, e: QMouseEvent) -> None:
        if self._last is not None:
            p = e.position().toPoint()
            self.dragged.emit(p.x() - self._last.x(), p.y() - self._last.y())
            self._last = p

    def mouseReleaseEvent(self, e: QMouseEvent) -> None:
        self._last = None


class FittedImage(QLabel):
    """A picture scaled down (never up) to the width it is given, keeping its aspect, so a wide
    stitched sheet is seen whole; the full-size original is kept for re-scaling."""

    def __init__(self, name: str) -> None:
        super().__init__(objectName=name)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.setMinimumSize(200, 120)
        self.original: QPixmap | None = None

    def set_image(self, pixmap: QPixmap) -> None:
        self.original = pixmap
        self._fit()

    def resizeEvent(self, e: object) -> None:
        super().resizeEvent(e)  # type: ignore[arg-type]
        self._fit()

    def _fit(self) -> None:
        if self.original is None or self.original.isNull():
            return
        w, h = self.width(), self.height()
        if self.original.width() <= w and self.original.height() <= h:
            self.setPixmap(self.original)
        else:
            self.setPixmap(
                self.original.scaled(
                    w,
                    h,
                    Qt.AspectRatioMode.KeepAspectRatio,
                    Qt.TransformationMode.SmoothTransformation,
                )
            )
