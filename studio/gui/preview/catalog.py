"""Preview page 3: the catalog of every polyomino or polycube of N cells."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PIL import Image
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from studio.gui.preview.common import (
    RenderService,
    _Requester,
    pil_to_pixmap,
)


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
