"""Preview page 2: a polyomino / polycube builder, drawn as the task generators draw shapes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PIL import Image
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QMouseEvent, QPainter
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from studio.gui.preview.common import (
    PREVIEW_SIZE,
    ImageView,
    RenderService,
    _Requester,
    pil_to_pixmap,
)


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
