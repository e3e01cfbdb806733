"""The Preview tab: transformations of 3D objects and images, a polyomino/polycube builder, the
catalog browser, and previews of every task generator with their vet verdicts.

All rendering and generation runs off the GUI thread, in ONE background thread
(:class:`RenderService`, a :class:`~studio.gui.jobs.ServiceThread`): an EGL context belongs to
the thread that made it, so the renderer lives there for the life of the tab. Requests are
numbered; a page's request still waiting is replaced by its newer one, and a result that arrives
after a newer request was made is dropped, so dragging a slider never shows a stale picture.
Inputs are debounced (:data:`DEBOUNCE_MS`) rather than rendered on every slider tick. The heavy
modules (trimesh, pyrender, the transforms) are imported the first time the tab is shown, not at
start-up.
"""

from __future__ import annotations

from PySide6.QtWidgets import QTabWidget, QVBoxLayout, QWidget

from studio.gui.preview.catalog import CatalogBrowser
from studio.gui.preview.common import RenderService
from studio.gui.preview.shapes import CellGrid, ShapeBuilder
from studio.gui.preview.tasks import TaskPreview
from studio.gui.preview.transforms import TransformPreview


class PreviewPanel(QWidget):
    """The Preview tab. Its pages are built on first show, so opening the studio does not pay
    for trimesh, pyrender and the transforms."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, objectName="previewPanel")
        self.service = RenderService(self)
        self.pages = QTabWidget(objectName="previewPages")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.pages)
        self.transform: TransformPreview | None = None
        self.builder: ShapeBuilder | None = None
        self.catalog: CatalogBrowser | None = None
        self.tasks: TaskPreview | None = None

    def ensure_built(self) -> None:
        if self.transform is not None:
            return
        self.transform = TransformPreview(self.service)
        self.builder = ShapeBuilder(self.service)
        self.catalog = CatalogBrowser(self.service)
        self.tasks = TaskPreview(self.service)
        self.pages.addTab(self.transform, "Transformations")
        self.pages.addTab(self.builder, "Shape builder")
        self.pages.addTab(self.catalog, "Catalog")
        self.pages.addTab(self.tasks, "Task generators")
        self.transform.requester.request()

    def showEvent(self, e: object) -> None:
        self.ensure_built()
        super().showEvent(e)  # type: ignore[arg-type]

    def shutdown(self) -> None:
        self.service.shutdown()


__all__ = [
    "CatalogBrowser",
    "CellGrid",
    "PreviewPanel",
    "RenderService",
    "ShapeBuilder",
    "TaskPreview",
    "TransformPreview",
]
