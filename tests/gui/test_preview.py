"""The Preview tab, driven like a user: click cells, pick transforms, wait for the renders."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt

from studio.gui.preview import CellGrid, PreviewPanel

pytestmark = pytest.mark.gui


@pytest.fixture
def panel(qtbot):
    p = PreviewPanel()
    qtbot.addWidget(p)
    p.resize(1200, 800)
    p.show()
    qtbot.waitExposed(p)
    yield p
    p.shutdown()


def _click_cells(qtbot, grid: CellGrid, cells) -> None:
    c = CellGrid.CELL
    for x, y in cells:
        qtbot.mouseClick(
            grid, Qt.MouseButton.LeftButton, pos=QPoint(x * c + c // 2, y * c + c // 2)
        )


def _pixmap_array(label) -> np.ndarray:
    img = label.pixmap().toImage().convertToFormat(label.pixmap().toImage().Format.Format_RGB888)
    ptr = img.constBits()
    return (
        np.frombuffer(ptr, np.uint8, img.sizeInBytes())
        .reshape(img.height(), -1)[:, : img.width() * 3]
        .copy()
    )


def test_builder_tells_chiral_from_achiral(qtbot, panel):
    b = panel.builder
    panel.pages.setCurrentWidget(b)
    _click_cells(qtbot, b.grid, [(1, 1), (2, 1), (2, 2), (3, 2)])  # the S tetromino
    assert "4-cell polyomino" in b.info.text() and "chiral: <b>yes" in b.info.text()
    before = sorted(b.grid.cells)
    qtbot.mouseClick(b.mirror_button, Qt.MouseButton.LeftButton)
    assert sorted(b.grid.cells) != before
    assert b.last_info["one-sided"] != tuple(before)  # the mirror image is the other S
    qtbot.mouseClick(b.clear_button, Qt.MouseButton.LeftButton)
    _click_cells(qtbot, b.grid, [(1, 1), (2, 1), (3, 1), (2, 2)])  # the T tetromino
    assert "chiral: <b>no" in b.info.text()
    _click_cells(qtbot, b.grid, [(5, 5)])
    assert "not connected" in b.info.text()


def test_polycube_builder_renders_off_thread(qtbot, panel):
    b = panel.builder
    panel.pages.setCurrentWidget(b)
    b.dims_combo.setCurrentIndex(1)
    _click_cells(qtbot, b.grid, [(1, 1), (2, 1), (2, 2)])
    b.layer_spin.setValue(1)
    _click_cells(qtbot, b.grid, [(2, 2)])
    assert "4-cell polycube" in b.info.text() and "chiral: <b>yes" in b.info.text()
    qtbot.waitUntil(
        lambda: b.view3d.pixmap() is not None and not b.view3d.pixmap().isNull(), timeout=60_000
    )
    a = _pixmap_array(b.view3d)
    assert (a < 200).any()  # cubes were drawn on the white background


def test_catalog_counts_the_free_pentominoes(qtbot, panel):
    c = panel.catalog
    panel.pages.setCurrentWidget(c)
    c.dims_combo.setCurrentIndex(0)
    c.cells_spin.setValue(5)
    c.equivalence.setCurrentText("free")
    qtbot.mouseClick(c.show_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: c.last_count is not None, timeout=60_000)
    assert c.last_count == 12 and c.count_label.text().startswith("12 shapes")
    assert not c.sheet.pixmap().isNull()
    c.dims_combo.setCurrentIndex(1)
    c.cells_spin.setValue(4)
    c.equivalence.setCurrentText("one-sided")
    qtbot.mouseClick(c.show_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: c.last_count == 8, timeout=60_000)


def test_transform_preview_updates_live_with_verdicts(qtbot, panel, tmp_path):
    t = panel.transform
    panel.pages.setCurrentWidget(t)
    qtbot.waitUntil(lambda: t.last_result is not None, timeout=30_000)
    t.source_combo.setCurrentText("mug")
    t.domain_combo.setCurrentText("reflection")
    t.value_combo.setCurrentIndex(0)
    # several quick slider moves: debounced, and only the last request's picture is shown
    for az in (10, 20, 40, 60):
        t.azimuth.setValue(az)
    qtbot.waitUntil(
        lambda: (
            t.last_result is not None
            and t.last_result.request.azimuth == 60
            and t.last_result.request.domain == "reflection"
            and t.last_result.request.source == "object:mug"
        ),
        timeout=30_000,
    )
    before, after = _pixmap_array(t.before_view), _pixmap_array(t.after_view)
    assert before.shape == after.shape and (before != after).mean() > 0.01  # the mug flipped
    assert t.checks.topLevelItemCount() > 0
    assert "rendered in" in t.status.text()
    # a colour change to the colour the mug already has is flagged or refused, with a measure
    t.domain_combo.setCurrentText("color")
    t.value_combo.setCurrentIndex(t.value_combo.findData("red"))
    qtbot.waitUntil(
        lambda: t.last_result.request.domain == "color" and t.last_result.request.value == "red",
        timeout=30_000,
    )
    failed = [
        t.checks.topLevelItem(i)
        for i in range(t.checks.topLevelItemCount())
        if t.checks.topLevelItem(i).text(1) != "pass"
    ]
    assert failed and any(item.text(2) for item in failed)
    # dragging on the picture orbits the camera
    az = t.azimuth.value()
    qtbot.mousePress(t.before_view, Qt.MouseButton.LeftButton, pos=QPoint(100, 100))
    qtbot.mouseMove(t.before_view, QPoint(130, 100))
    qtbot.mouseRelease(t.before_view, Qt.MouseButton.LeftButton, pos=QPoint(130, 100))
    assert t.azimuth.value() != az


def test_an_imported_image_is_transformed_and_a_broken_mesh_is_named(qtbot, panel, tmp_path):
    from PIL import Image, ImageDraw

    t = panel.transform
    panel.pages.setCurrentWidget(t)
    png = tmp_path / "glyph.png"
    im = Image.new("RGB", (80, 80), "white")
    ImageDraw.Draw(im).polygon([(10, 70), (10, 10), (40, 10), (40, 40), (70, 70)], fill="black")
    im.save(png)
    t.import_source("image", str(png))
    t.domain_combo.setCurrentText("rotation")
    t.value_combo.setCurrentIndex(0)
    qtbot.waitUntil(
        lambda: (
            t.last_result is not None
            and t.last_result.request.source == f"image:{png}"
            and t.last_result.request.domain == "rotation"
        ),
        timeout=30_000,
    )
    assert (_pixmap_array(t.before_view) != _pixmap_array(t.after_view)).any()
    bad = tmp_path / "broken.stl"
    bad.write_bytes(b"solid nothing\nthis is not an stl\n")
    t.import_source("mesh", str(bad))
    qtbot.waitUntil(lambda: "broken.stl" in t.status.text(), timeout=30_000)


def test_task_generator_preview_shows_sheet_and_checks(qtbot, panel):
    tp = panel.tasks
    panel.pages.setCurrentWidget(tp)
    tp.family.setCurrentText("polycube-rotation")
    qtbot.waitUntil(
        lambda: tp.last_item is not None and tp.last_item.family == "polycube-rotation",
        timeout=60_000,
    )
    assert not tp.sheet.pixmap().isNull() and tp.sheet.pixmap().width() <= tp.sheet.width()
    assert tp.checks.topLevelItemCount() >= 3 and "valid" in tp.status.text()
    # the key, as the sheet labels the candidates (issue 28: the preview never said)
    key = tp.last_item.record["key"]
    assert f"Key: {'ABCD'[key]} (candidate-{key})" in tp.status.text()
    tp.family.setCurrentText("cube-net")
    qtbot.waitUntil(lambda: tp.last_item.family == "cube-net", timeout=60_000)
    assert "Key: " in tp.status.text()


def test_a_kiva_trial_shows_its_three_questions_with_the_right_options_marked(qtbot, panel):
    tp = panel.tasks
    panel.pages.setCurrentWidget(tp)
    tp.family.setCurrentText("kiva")
    qtbot.waitUntil(
        lambda: tp.last_item is not None and tp.last_item.family == "kiva", timeout=120_000
    )
    shown = tp.questions.text()
    for q in tp.last_item.record["questions"]:
        assert f"<b>{q['id']}</b>" in shown
        right = q["options"][q["key"]]
        assert f"<b>{right}" in shown and "✓</b>" in shown
    ext = next(q for q in tp.last_item.record["questions"] if q["id"] == "extrapolate")
    assert f"Key: {'ABCD'[ext['key']]} (option-{ext['key']})" in tp.status.text()


def test_a_request_after_shutdown_is_dropped(qtbot) -> None:
    """A debounce timer that fires while the tab closes must not raise in the event loop."""
    from studio.gui.preview.common import RenderService

    service = RenderService()
    assert service.submit(lambda: 1) == 1
    service.shutdown()
    assert service.submit(lambda: 2) == 0


def test_a_page_s_waiting_request_is_replaced_by_its_newer_one(qtbot, panel, monkeypatch) -> None:
    """Latest wins on the render thread: while it is busy, Show for 3 cells then for 4 leaves
    one request of the catalog waiting, the newer; the 3-cell sheet is never enumerated. The
    answer is shown though it may be ready at once (answers come through the event loop, never
    inside submit: the catalog once lost such answers, the flaky 60 s wait of an old test)."""
    import threading

    import studio.gui.preview.catalog as catalog

    c = panel.catalog
    service = c.requester.service
    busy, release = threading.Event(), threading.Event()

    def hold() -> None:
        busy.set()
        release.wait(10)

    asked: list[int] = []
    real_job = catalog.catalog_job

    def counted(cells: int, dims: int, equivalence: str):  # type: ignore[no-untyped-def]
        asked.append(cells)
        return real_job(cells, dims, equivalence)

    monkeypatch.setattr(catalog, "catalog_job", counted)
    try:
        panel.pages.setCurrentWidget(c)
        service.submit(hold)
        assert busy.wait(10)
        for cells in (3, 4):
            c.cells_spin.setValue(cells)
            qtbot.mouseClick(c.show_button, Qt.MouseButton.LeftButton)
        release.set()
        qtbot.waitUntil(lambda: c.last_count == 5, timeout=60_000)  # the 5 free tetrominoes
        assert asked == [4]
    finally:
        release.set()
