"""Preview page 1: KiVA transformations of a 3D object or an image, with the pixel checks."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from studio.gui.preview.common import (
    PREVIEW_SIZE,
    ImageView,
    RenderService,
    _checks_tree,
    _Requester,
    fill_checks,
    pil_to_pixmap,
)


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
        from studio.families.kiva.transforms import DOMAINS, MODES, VALUES
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
        self.mode_combo.addItems(list(MODES))  # KiVA's own list of modes
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
