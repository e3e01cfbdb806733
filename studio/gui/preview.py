"""The Preview tab: transformations of 3D objects and images, a polyomino/polycube builder, the
catalog browser, and previews of every task generator with their vet verdicts.

All rendering and generation runs off the GUI thread, in ONE background thread
(:class:`RenderService`): an EGL context belongs to the thread that made it, so the renderer lives
there for the life of the tab. Requests are numbered; a result that arrives after a newer request
was made is dropped, so dragging a slider never shows a stale picture. Inputs are debounced
(:data:`DEBOUNCE_MS`) rather than rendered on every slider tick. The heavy modules (trimesh,
pyrender, the transforms) are imported the first time the tab is shown, not at start-up.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image
from PySide6.QtCore import QObject, QPoint, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QPixmap
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSlider,
    QSpinBox,
    QStackedWidget,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.gui.options_form import OptionsForm

DEBOUNCE_MS = 120
PREVIEW_SIZE = 224


def pil_to_pixmap(image: Image.Image) -> QPixmap:
    """A deep copy: the QImage must not point into the PIL buffer once it is gone."""
    rgba = image.convert("RGBA")
    data = rgba.tobytes()
    qimage = QImage(data, rgba.width, rgba.height, 4 * rgba.width, QImage.Format.Format_RGBA8888)
    return QPixmap.fromImage(qimage.copy())


# ---- the render thread -----------------------------------------------------------------------
class RenderService(QObject):
    """One worker thread for every render and generator preview of the tab.

    ``finished(seq, result)`` and ``failed(seq, message)`` are emitted from the worker thread
    and, this object living in the GUI thread, delivered queued to slots in the GUI thread."""

    finished = Signal(int, object)
    failed = Signal(int, str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="preview-render")
        self._seq = 0
        self._closed = False

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        self._seq += 1
        seq = self._seq
        future = self._pool.submit(fn, *args)
        future.add_done_callback(lambda f, s=seq: self._done(s, f))
        return seq

    def _done(self, seq: int, future: Future) -> None:
        if self._closed:
            return
        error = future.exception()
        if error is None:
            self.finished.emit(seq, future.result())
        else:
            detail = "".join(traceback.format_exception_only(type(error), error)).strip()
            self.failed.emit(seq, detail)

    def shutdown(self) -> None:
        """Close the thread's renderers in their own thread, then stop the thread."""
        if self._closed:
            return
        self._closed = True
        self._pool.submit(_close_thread_renderers)
        self._pool.shutdown(wait=True, cancel_futures=True)


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
        self.latest = self.service.submit(fn, *args)

    def _finished(self, seq: int, result: Any) -> None:
        if seq == self.latest:
            self.latest = -seq  # answered
            self.on_result(result)

    def _failed(self, seq: int, message: str) -> None:
        if seq == self.latest:
            self.latest = -seq
            self.on_error(message)


def _checks_tree(name: str) -> QTreeWidget:
    tree = QTreeWidget(objectName=name)
    tree.setHeaderLabels(["Check", "Verdict", "Measure", "Detail"])
    tree.setRootIsDecorated(False)
    tree.setColumnWidth(0, 230)
    tree.setColumnWidth(1, 70)
    tree.setColumnWidth(2, 80)
    return tree


def fill_checks(tree: QTreeWidget, verdict: Any) -> None:
    """Show an ItemVerdict's checks: failed errors red, failed warnings amber."""
    tree.clear()
    for c in verdict.checks:
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


# ---- 1. transformations ----------------------------------------------------------------------
@dataclass(frozen=True)
class TransformRequest:
    source: str  # "object:<name>", "mesh:<path>" or "image:<path>"
    domain: str
    value: str
    azimuth: float
    elevation: float
    projection: str
    start_count: int
    mode: str = "kiva-adults"
    size: int = PREVIEW_SIZE


@dataclass
class TransformResult:
    request: TransformRequest
    before: Image.Image
    after: Image.Image
    verdict: Any
    ms: float


_source_cache: dict[str, Any] = {}


def load_source(source: str) -> Any:
    """An Object3D (library or mesh file) or a PIL image, cached by name (worker thread)."""
    if source not in _source_cache:
        kind, _, name = source.partition(":")
        if kind == "object":
            from studio.render3d.objects import library_object

            _source_cache[source] = library_object(name)
        elif kind == "mesh":
            from studio.render3d.objects import load_object

            _source_cache[source] = load_object(name)
        else:
            from studio.core.errors import StudioError

            try:
                with Image.open(name) as im:
                    _source_cache[source] = im.convert("RGBA")
            except OSError as e:
                raise StudioError(f"cannot be read as an image: {e}", name) from e
    return _source_cache[source]


def transform_job(req: TransformRequest) -> TransformResult:
    """Runs in the render thread: the before/after pair and its ambiguity verdict."""
    from studio.families.kiva.ambiguity import vet_transform
    from studio.families.kiva.transforms import (
        StateRenderer,
        StimulusState,
        TransformSpec,
        preview_pair,
        specs,
    )
    from studio.render3d import Camera, thread_renderer

    t0 = time.perf_counter()
    source = load_source(req.source)
    spec = TransformSpec(req.domain, req.value)
    state = StimulusState(count=req.start_count)
    camera = Camera(req.azimuth, req.elevation, req.projection)  # type: ignore[arg-type]
    renderer = thread_renderer(req.size)
    # one drawer for the pair and the checks: the checks reuse the pictures just drawn
    drawer = StateRenderer(source, renderer, camera, req.size)
    before, after = preview_pair(
        source, spec, state=state, renderer=renderer, camera=camera, size=req.size, drawer=drawer
    )
    ms = (time.perf_counter() - t0) * 1000
    verdict = vet_transform(
        source,
        spec,
        state,
        renderer,
        camera,
        req.size,
        candidates=specs(req.mode),
        drawer=drawer,
    )
    return TransformResult(req, before, after, verdict, ms)


class TransformPreview(QWidget):
    """Choose an object or image, orbit the camera, pick a transform: before/after update live."""

    def __init__(self, service: RenderService) -> None:
        super().__init__(objectName="transformPreview")
        from studio.families.kiva.transforms import DOMAINS, VALUES
        from studio.render3d.objects import library_names

        self._values = VALUES
        self.source_combo = QComboBox(objectName="previewSource")
        for name in library_names():
            self.source_combo.addItem(name, f"object:{name}")
        self.import_mesh_button = QPushButton("Import mesh…", objectName="importMesh")
        self.import_image_button = QPushButton("Import image…", objectName="importImage")
        self.import_mesh_button.clicked.connect(lambda: self.import_source("mesh"))
        self.import_image_button.clicked.connect(lambda: self.import_source("image"))
        self.azimuth = QSlider(Qt.Orientation.Horizontal, objectName="azimuth")
        self.azimuth.setRange(-180, 180)
        self.azimuth.setValue(30)
        self.elevation = QSlider(Qt.Orientation.Horizontal, objectName="elevation")
        self.elevation.setRange(-30, 85)
        self.elevation.setValue(20)
        self.projection = QComboBox(objectName="projection")
        self.projection.addItems(["orthographic", "perspective"])
        self.domain_combo = QComboBox(objectName="domain")
        self.domain_combo.addItems(list(DOMAINS))
        self.value_combo = QComboBox(objectName="transformValue")
        self.start_count = QSpinBox(objectName="startCount", minimum=1, maximum=8, value=1)
        self.mode_combo = QComboBox(objectName="transformMode")
        self.mode_combo.addItems(["kiva", "kiva-adults"])
        self.mode_combo.setCurrentText("kiva-adults")
        self.mode_combo.setToolTip(
            "The transforms a trial of this mode offers: the checks "
            "compare the chosen one against each of them"
        )
        self.domain_combo.currentTextChanged.connect(self._refill_values)
        self._refill_values(self.domain_combo.currentText())

        form = QFormLayout()
        src_row = QHBoxLayout()
        src_row.addWidget(self.source_combo, 1)
        src_row.addWidget(self.import_mesh_button)
        src_row.addWidget(self.import_image_button)
        form.addRow("Object", src_row)
        form.addRow("Azimuth", self.azimuth)
        form.addRow("Elevation", self.elevation)
        form.addRow("Camera", self.projection)
        form.addRow("Transform", self.domain_combo)
        form.addRow("Value", self.value_combo)
        form.addRow("Objects before", self.start_count)
        form.addRow("Compare with", self.mode_combo)

        self.before_view = ImageView("beforeImage")
        self.after_view = ImageView("afterImage")
        self.before_view.setToolTip("Drag to orbit the camera")
        self.before_view.dragged.connect(self._orbit)
        self.after_view.dragged.connect(self._orbit)
        arrow = QLabel("→", alignment=Qt.AlignmentFlag.AlignCenter)
        arrow.setStyleSheet("font-size: 32px; color: #555;")
        pair = QHBoxLayout()
        pair.addWidget(self.before_view)
        pair.addWidget(arrow)
        pair.addWidget(self.after_view)
        pair.addStretch(1)
        self.status = QLabel("", objectName="previewStatus")
        self.checks = _checks_tree("transformChecks")

        left = QWidget()
        left.setLayout(form)
        left.setMaximumWidth(420)
        right = QVBoxLayout()
        right.addLayout(pair)
        right.addWidget(self.status)
        right.addWidget(QLabel("Ambiguity checks (the measure behind each verdict)"))
        right.addWidget(self.checks, 1)
        lay = QHBoxLayout(self)
        lay.addWidget(left)
        lay.addLayout(right, 1)

        self.requester = _Requester(self, service, self._job, self._show, self._error)
        combos = (self.source_combo, self.projection, self.domain_combo, self.value_combo)
        for w in (*combos, self.mode_combo):
            w.currentIndexChanged.connect(lambda _i: self.requester.request())
        for s in (self.azimuth, self.elevation, self.start_count):
            s.valueChanged.connect(lambda _v: self.requester.request())
        self.last_result: TransformResult | None = None

    def _refill_values(self, domain: str) -> None:
        self.value_combo.blockSignals(True)
        self.value_combo.clear()
        from studio.families.kiva.transforms import TransformSpec

        for value in self._values.get(domain, ()):
            self.value_combo.addItem(TransformSpec(domain, value).label, value)
        self.value_combo.blockSignals(False)
        self.start_count.setEnabled(domain == "number")

    def _orbit(self, dx: int, dy: int) -> None:
        az = self.azimuth.value() - dx
        az = (az + 180) % 360 - 180
        self.azimuth.setValue(az)
        self.elevation.setValue(self.elevation.value() + dy)

    def import_source(self, kind: str, path: str | None = None) -> None:
        if path is None:
            if kind == "mesh":
                flt = "Meshes (*.obj *.glb *.gltf *.ply *.stl *.off)"
            else:
                flt = "Images (*.png *.jpg *.jpeg *.bmp)"
            path, _ = QFileDialog.getOpenFileName(self, f"Import {kind}", "", flt)
            if not path:
                return
        self.source_combo.addItem(f"{Path(path).name} ({kind})", f"{kind}:{path}")
        self.source_combo.setCurrentIndex(self.source_combo.count() - 1)

    def request(self) -> TransformRequest:
        return TransformRequest(
            source=self.source_combo.currentData(),
            domain=self.domain_combo.currentText(),
            value=self.value_combo.currentData(),
            azimuth=float(self.azimuth.value()),
            elevation=float(self.elevation.value()),
            projection=self.projection.currentText(),
            start_count=self.start_count.value(),
            mode=self.mode_combo.currentText(),
        )

    def _job(self) -> tuple[Callable[..., Any], tuple[Any, ...]] | None:
        if self.value_combo.currentData() is None or self.source_combo.currentData() is None:
            return None
        self.status.setText("Rendering…")
        return transform_job, (self.request(),)

    def _show(self, result: TransformResult) -> None:
        self.last_result = result
        self.before_view.setPixmap(pil_to_pixmap(result.before))
        self.after_view.setPixmap(pil_to_pixmap(result.after))
        verdict = "kept" if result.verdict.valid else "refused"
        label = self.value_combo.currentText()
        self.status.setText(
            f"{result.request.domain} ({label}): {verdict} · rendered in {result.ms:.0f} ms"
        )
        self.status.setStyleSheet("" if result.verdict.valid else "color: #b00;")
        fill_checks(self.checks, result.verdict)

    def _error(self, message: str) -> None:
        self.status.setText(message)
        self.status.setStyleSheet("color: #b00;")
        self.checks.clear()


# ---- 2. polyomino / polycube builder ---------------------------------------------------------
class CellGrid(QWidget):
    """Click cells to toggle them. In 3D the grid is one layer (z) of the polycube; cubes of
    the other layers show faintly so the shape can be built layer by layer."""

    changed = Signal()
    CELL = 26

    def __init__(self, side: int = 8) -> None:
        super().__init__(objectName="cellGrid")
        self.side = side
        self.layer = 0
        self.cells: set[tuple[int, ...]] = set()
        self.dims = 2
        self.setFixedSize(side * self.CELL + 1, side * self.CELL + 1)

    def cell_at(self, x: int, y: int) -> tuple[int, ...]:
        col, row = x // self.CELL, y // self.CELL
        return (col, row) if self.dims == 2 else (col, row, self.layer)

    def mousePressEvent(self, e: QMouseEvent) -> None:
        p = e.position().toPoint()
        cell = self.cell_at(p.x(), p.y())
        if not all(0 <= v < self.side for v in cell[:2]):
            return
        self.toggle(cell)

    def toggle(self, cell: tuple[int, ...]) -> None:
        self.cells.symmetric_difference_update({cell})
        self.update()
        self.changed.emit()

    def set_cells(self, cells: Sequence[Sequence[int]]) -> None:
        self.cells = {tuple(int(v) for v in c) for c in cells}
        self.update()
        self.changed.emit()

    def paintEvent(self, _e: object) -> None:
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("white"))
        c = self.CELL
        here = [cell for cell in self.cells if self.dims == 2 or cell[2] == self.layer]
        other = [cell for cell in self.cells if cell not in here]
        for cells, fill in (
            (other, QColor(215, 225, 240)),
            (here, QColor(*layer_color(self.layer))),
        ):
            for cell in cells:
                p.fillRect(cell[0] * c + 1, cell[1] * c + 1, c - 1, c - 1, fill)
        p.setPen(QColor(200, 200, 200))
        for i in range(self.side + 1):
            p.drawLine(i * c, 0, i * c, self.side * c)
            p.drawLine(0, i * c, self.side * c, i * c)
        p.end()


LAYER_COLORS = ((90, 140, 220), (235, 150, 60), (80, 170, 100), (200, 90, 160))


def layer_color(layer: int) -> tuple[int, int, int]:
    """Cubes of each layer in their own colour, in the grid and in the render, so the layers
    of a polycube can be told apart (one colour would merge neighbouring cubes)."""
    return LAYER_COLORS[layer % len(LAYER_COLORS)]


def describe_shape(cells: Sequence[Sequence[int]], dims: int) -> dict[str, Any]:
    """What the builder shows about a shape (core functions, as the CLI uses them)."""
    from studio.stimuli import polycube, polyomino

    cells = [tuple(c) for c in cells]
    info: dict[str, Any] = {"cells": len(cells)}
    if not cells:
        return info
    if dims == 2:
        info["connected"] = polyomino.is_connected(cells)
        info["free"] = polyomino.canonical_form(cells, "free")
        info["one-sided"] = polyomino.canonical_form(cells, "one-sided")
        info["chiral"] = polyomino.is_chiral(cells)
    else:
        info["connected"] = polyomino.is_connected(cells)
        info["free"] = polycube.canonical_polycube(cells, "free")
        info["one-sided"] = polycube.canonical_polycube(cells, "one-sided")
        info["chiral"] = polycube.is_chiral_polycube(cells)
    return info


def polycube_render_job(
    cells: Sequence[Sequence[int]], azimuth: float, elevation: float
) -> Image.Image:
    from studio.render3d import Camera, thread_renderer
    from studio.stimuli.polycube import polycube_cube_meshes

    meshes = polycube_cube_meshes(
        [(x, -y, z) for x, y, z in cells], colors=[layer_color(z) for _x, _y, z in cells]
    )
    return thread_renderer(PREVIEW_SIZE).render(meshes, Camera(azimuth, elevation, extent=1.1))


class ShapeBuilder(QWidget):
    """Build a polyomino or polycube by clicking cells; shows its canonical forms and chirality."""

    def __init__(self, service: RenderService) -> None:
        super().__init__(objectName="shapeBuilder")
        self.dims_combo = QComboBox(objectName="builderDims")
        self.dims_combo.addItems(["2D polyomino", "3D polycube"])
        self.layer_spin = QSpinBox(objectName="builderLayer", minimum=0, maximum=7)
        self.grid = CellGrid()
        self.clear_button = QPushButton("Clear", objectName="builderClear")
        self.mirror_button = QPushButton("Mirror", objectName="builderMirror")
        self.info = QLabel(objectName="builderInfo", wordWrap=True)
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.info.setMinimumWidth(320)
        self.view3d = ImageView("builderRender")
        self.view3d.dragged.connect(self._orbit)
        self._az, self._el = 35.0, 25.0
        self.dims_combo.currentIndexChanged.connect(self._dims_changed)
        self.layer_spin.valueChanged.connect(self._layer_changed)
        self.grid.changed.connect(self._update)
        self.clear_button.clicked.connect(lambda: self.grid.set_cells([]))
        self.mirror_button.clicked.connect(self.mirror)

        top = QHBoxLayout()
        top.addWidget(self.dims_combo)
        top.addWidget(QLabel("Layer (z)"))
        top.addWidget(self.layer_spin)
        top.addWidget(self.clear_button)
        top.addWidget(self.mirror_button)
        top.addStretch(1)
        body = QHBoxLayout()
        body.addWidget(self.grid, 0, Qt.AlignmentFlag.AlignTop)
        body.addWidget(self.view3d, 0, Qt.AlignmentFlag.AlignTop)
        body.addWidget(self.info, 1, Qt.AlignmentFlag.AlignTop)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addLayout(body)
        lay.addStretch(1)
        self.requester = _Requester(self, service, self._job, self._show, self._error)
        self._dims_changed()

    @property
    def dims(self) -> int:
        return 2 if self.dims_combo.currentIndex() == 0 else 3

    def _dims_changed(self) -> None:
        self.grid.dims = self.dims
        self.grid.cells = set()
        self.layer_spin.setEnabled(self.dims == 3)
        self.view3d.setVisible(self.dims == 3)
        self.grid.update()
        self._update()

    def _layer_changed(self, layer: int) -> None:
        self.grid.layer = layer
        self.grid.update()

    def mirror(self) -> None:
        if self.grid.cells:
            top = max(c[0] for c in self.grid.cells)
            self.grid.set_cells([(top - c[0], *c[1:]) for c in self.grid.cells])

    def _orbit(self, dx: int, dy: int) -> None:
        self._az -= dx
        self._el = max(-80.0, min(80.0, self._el + dy))
        self.requester.request()

    def _update(self) -> None:
        cells = sorted(self.grid.cells)
        info = describe_shape(cells, self.dims)
        if not cells:
            self.info.setText("Click cells to build a shape.")
        else:
            kind = "polyomino" if self.dims == 2 else "polycube"
            lines = [f"<b>{info['cells']}-cell {kind}</b>"]
            if not info["connected"]:
                lines.append("<span style='color:#b00'>not connected: not a polyomino</span>")
            lines.append(f"chiral: <b>{'yes' if info['chiral'] else 'no'}</b>")
            lines.append(f"free canonical form: <tt>{list(info['free'])}</tt>")
            lines.append(f"one-sided canonical form: <tt>{list(info['one-sided'])}</tt>")
            self.info.setText("<br>".join(lines))
        self.last_info = info
        if self.dims == 3:
            self.requester.request()

    def _job(self) -> tuple[Callable[..., Any], tuple[Any, ...]] | None:
        if self.dims != 3 or not self.grid.cells:
            self.view3d.clear()
            return None
        return polycube_render_job, (sorted(self.grid.cells), self._az, self._el)

    def _show(self, image: Image.Image) -> None:
        self.view3d.setPixmap(pil_to_pixmap(image))

    def _error(self, message: str) -> None:
        self.info.setText(message)


# ---- 3. catalog browser -----------------------------------------------------------------------
def catalog_job(cells: int, dims: int, equivalence: str) -> tuple[int, Image.Image, float]:
    from studio.stimuli.contact_sheet import contact_sheet, enumerate_shapes

    t0 = time.perf_counter()
    enum = enumerate_shapes(cells, dims, equivalence)  # type: ignore[arg-type]
    sheet = contact_sheet(enum)
    return enum.count, sheet, time.perf_counter() - t0


class CatalogBrowser(QWidget):
    """Every polyomino or polycube of a size, as the CLI's contact sheet."""

    def __init__(self, service: RenderService) -> None:
        super().__init__(objectName="catalogBrowser")
        self.dims_combo = QComboBox(objectName="catalogDims")
        self.dims_combo.addItems(["2D", "3D"])
        self.cells_spin = QSpinBox(objectName="catalogCells", minimum=1, maximum=10, value=5)
        self.equivalence = QComboBox(objectName="catalogEquivalence")
        self.equivalence.addItems(["free", "one-sided", "fixed"])
        self.show_button = QPushButton("Show", objectName="catalogShow")
        self.show_button.setDefault(True)
        self.busy = QProgressBar(objectName="catalogBusy", maximumWidth=160)
        self.busy.setRange(0, 0)
        self.busy.setVisible(False)
        self.count_label = QLabel(objectName="catalogCount")
        self.sheet = QLabel(objectName="catalogSheet")
        self.sheet.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        scroll = QScrollArea()
        scroll.setWidget(self.sheet)
        scroll.setWidgetResizable(True)
        self.dims_combo.currentIndexChanged.connect(
            lambda i: self.cells_spin.setMaximum(10 if i == 0 else 7)
        )
        self.show_button.clicked.connect(self.show_catalog)
        bar = QHBoxLayout()
        for w in (
            QLabel("Dimensions"),
            self.dims_combo,
            QLabel("Cells"),
            self.cells_spin,
            QLabel("Equivalence"),
            self.equivalence,
            self.show_button,
            self.busy,
            self.count_label,
        ):
            bar.addWidget(w)
        bar.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addLayout(bar)
        lay.addWidget(scroll, 1)
        self.requester = _Requester(self, service, self._job, self._show, self._error, delay=0)
        self.last_count: int | None = None

    def show_catalog(self) -> None:
        self.requester.fire()

    def _job(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        self.busy.setVisible(True)
        self.count_label.setText("Enumerating…")
        dims = 2 if self.dims_combo.currentIndex() == 0 else 3
        return catalog_job, (self.cells_spin.value(), dims, self.equivalence.currentText())

    def _show(self, result: tuple[int, Image.Image, float]) -> None:
        count, sheet, seconds = result
        self.busy.setVisible(False)
        self.last_count = count
        self.count_label.setText(f"{count} shapes ({seconds:.2f} s)")
        self.sheet.setPixmap(pil_to_pixmap(sheet))

    def _error(self, message: str) -> None:
        self.busy.setVisible(False)
        self.count_label.setText(message)


# ---- 4. task generator previews ---------------------------------------------------------------
def task_job(family: str, options: dict[str, Any], seed: int) -> tuple[Any, dict[str, int], float]:
    from studio.stimuli.split import make_generator

    t0 = time.perf_counter()
    generator = make_generator(family, options)
    item = next(iter(generator.items(1, seed)))
    return item, dict(getattr(generator, "rejections", {})), time.perf_counter() - t0


class TaskPreview(QWidget):
    """One item of a task generator, as it would be written, with its vet verdict. The
    family's controls are built from its options schema (those marked ``preview``)."""

    def __init__(self, service: RenderService) -> None:
        super().__init__(objectName="taskPreview")
        from studio.plugins import families

        self.families = {f.id: f for f in families("stimulus")}
        self.family = QComboBox(objectName="taskFamily")
        self.family.addItems(list(self.families))
        self.forms: dict[str, OptionsForm] = {}
        self.form_stack = QStackedWidget(objectName="taskOptions")
        for fid, fam in self.families.items():
            form = OptionsForm(fam, preview_only=True)
            form.layout_.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
            form.changed.connect(lambda: self.requester.request())
            self.forms[fid] = form
            self.form_stack.addWidget(form)
        self.seed = QSpinBox(objectName="taskSeed", minimum=0, maximum=2**31 - 1, value=1)
        self.next_button = QPushButton("Next seed", objectName="taskNext")
        self.next_button.clicked.connect(lambda: self.seed.setValue(self.seed.value() + 1))
        self.status = QLabel(objectName="taskStatus")
        self.sheet = FittedImage("taskSheet")
        self.checks = _checks_tree("taskChecks")
        bar = QHBoxLayout()
        for w in (QLabel("Family"), self.family, QLabel("Seed"), self.seed, self.next_button):
            bar.addWidget(w)
        bar.addStretch(1)
        side = QVBoxLayout()
        self.form_stack.setMaximumWidth(340)
        self.status.setWordWrap(True)
        self.status.setMaximumWidth(340)
        side.addWidget(self.form_stack)
        side.addWidget(self.status)
        side.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addLayout(bar)
        body = QHBoxLayout()
        body.addWidget(self.sheet, 3)
        body.addLayout(side, 1)
        lay.addLayout(body, 3)
        lay.addWidget(self.checks, 2)
        self.requester = _Requester(self, service, self._job, self._show, self._error)
        self.family.currentIndexChanged.connect(self._family_changed)
        self.seed.valueChanged.connect(lambda _v: self.requester.request())
        self.last_item: Any = None
        self._family_changed()

    @property
    def form(self) -> OptionsForm:
        return self.forms[self.family.currentText()]

    def _family_changed(self) -> None:
        if self.forms:
            self.form_stack.setCurrentWidget(self.form)
        if self.isVisible():  # a hidden page generates nothing; showEvent catches up
            self.requester.request()

    def showEvent(self, e: object) -> None:
        super().showEvent(e)  # type: ignore[arg-type]
        shown = self.last_item
        if shown is None or shown.family != self.family.currentText():
            self.requester.request()

    def options(self) -> dict[str, Any]:
        """The shown options, with the family's preview values for the hidden ones."""
        fam = self.families[self.family.currentText()]
        hidden = {k: v for k, v in fam.preview.items() if k not in self.form.names()}
        return {**hidden, **{k: v for k, v in self.form.values().items() if v is not None}}

    def _job(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        self.status.setText("Generating…")
        return task_job, (self.family.currentText(), self.options(), self.seed.value())

    def _show(self, result: tuple[Any, dict[str, int], float]) -> None:
        item, rejections, seconds = result
        self.last_item = item
        self.sheet.set_image(pil_to_pixmap(item.sheet))
        rej = ", ".join(f"{k} {v}" for k, v in sorted(rejections.items())) or "none"
        verdict = "valid" if item.verdict.valid else "INVALID"
        self.status.setText(f"{item.id}: {verdict} · {seconds:.2f} s · rejected on the way: {rej}")
        fill_checks(self.checks, item.verdict)

    def _error(self, message: str) -> None:
        self.status.setText(message)
        self.checks.clear()


# ---- the tab ---------------------------------------------------------------------------------
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
