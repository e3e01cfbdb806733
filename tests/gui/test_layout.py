"""Layout at 1280×800 and 1600×1000 (issue 28): every main screen of the studio, shown with
real content, cuts no text — no label, button, combo box, header or cell elides or clips what
it says — and the split statistics panel fits its pane or scrolls to the rest.

The screens: the Annotate tab (a glyph with tags in the inspector), the Puzzles tab (a real
split of UA's annotations, vetted, its statistics computed, a baseline job's shortcut flags on
it), the Preview tab's four pages, the Baselines tab (a finished job, each of its detail tabs,
and a running job whose progress cell carries the time left and the step), the Lab tab's five
pages, and the Generate split and Export benchmark dialogs. :mod:`tests.gui.elision` says what
does not fit, one line per text.

The interface fonts are chosen here, not taken from the machine (UI_FONTS). Set
``ANALOGY_STUDIO_LAYOUT_SHOTS`` to a folder (``docs``) and the test also writes the screenshots
of DOC_SHOTS there, in the first font (``layout-<screen>-<W>x<H>.png``).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QSize, Qt
from PySide6.QtGui import QFont, QFontInfo
from PySide6.QtWidgets import QApplication, QWidget

from studio import splits
from studio.app import Studio
from studio.core.keys import GlyphKey
from studio.curation import Curator, PuzzleFilter
from studio.demo import build_demo
from studio.generate.params import SplitParams
from studio.gui.board_list import COLUMNS
from studio.gui.glyph_grid import IMAGE_ROLE
from studio.gui.job_list import COL_PROGRESS
from studio.gui.main_window import MainWindow
from studio.gui.preview import CellGrid
from studio.gui.settings import StudioSettings
from studio.store.jobs import JobQueue
from studio.store.project import Project
from tests.gui.elision import elided_texts

pytestmark = pytest.mark.gui

SIZES = ((1280, 800), (1600, 1000))
#: Interface fonts, chosen here rather than taken from the machine: Noto Sans 9 pt (what
#: fontconfig gives Qt's default "Sans Serif 9" on a machine set up by scripts/setup.sh) and
#: DejaVu Sans 9 pt (wider: Debian's default sans where Noto is not installed, as under the
#: Xvfb of the issue's walk — the statistics panel ran off its side with it).
UI_FONTS = (("Noto Sans", 9), ("DejaVu Sans", 9))
SHOTS_ENV = "ANALOGY_STUDIO_LAYOUT_SHOTS"
#: The screens whose screenshots go to docs/, by window size.
DOC_SHOTS = {
    (1280, 800): {
        "annotate",
        "puzzles",
        "puzzles-statistics",
        "preview-transformations",
        "preview-tasks",
        "baselines-summary",
        "baselines-plots",
        "generate-dialog",
        "export-dialog",
    },
    (1600, 1000): {"annotate", "puzzles", "baselines-summary"},
}
#: Combo boxes of names of any length: the fonts and Unicode blocks present (a block's name
#: runs to 45 characters). Only their current item must fit; a long one chosen may be elided
#: in the closed box, since the bar cannot hold the longest at 1280 px — each is whole in the
#: list that opens, and the chosen one is the combo box's tooltip. The issue names neither.
DATA_COMBOS = ("fontFilter", "blockFilter")
#: the longest step a baseline job reports ("<model> · seed <n> · epoch <e>/<epochs>")
RUNNING_STEP = "partial-answers · seed 2 · epoch 3/8"
WAIT_MS = 60_000
#: the groups of the hand-written baseline report (a long concept name among them)
RULES = ("constant", "arithmetic")
CONCEPTS = ("shape-sides", "stroke-line-straight-quantity")


@pytest.fixture(params=UI_FONTS, ids=lambda f: f[0].replace(" ", ""))
def ui_font(request: pytest.FixtureRequest, qapp: QApplication) -> Iterator[QFont]:
    """The interface font for the test, put back afterwards."""
    family, size = request.param
    font = QFont(family, size)
    if QFontInfo(font).family() != family:
        pytest.skip(f"{family} is not installed (fonts-noto-core, fonts-dejavu-core)")
    before = qapp.font()
    qapp.setFont(font)
    yield font
    qapp.setFont(before)


@pytest.fixture(scope="module")
def layout_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """UA's public annotations plus Symbola's Geometric Shapes, rendered; a split of 120
    puzzles generated and vetted (image features included) as the board's job does; a finished
    baseline job whose report flags two of its puzzles and one group."""
    path = tmp_path_factory.mktemp("layout") / "layout.studio"
    for _ in build_demo(path, blocks=["Geometric Shapes"]):
        pass
    studio = Studio(Project.open(path), author="curator")
    try:
        params = SplitParams(n=120, sampling="balanced", seed=3)
        inputs = splits.split_inputs(studio)
        results = splits.generate(studio, params, inputs=inputs)
        keys = {k for r in results for p in r.puzzles for k in p.all_keys()}
        features = splits.feature_index({k: inputs.images[k] for k in keys})
        verdicts = splits.vet(results[0].puzzles, inputs.annotations, studio.schema, features)
        curator = Curator(studio)
        curator.import_results("UA shapes, balanced", params, results, verdicts)
        set_id = curator.set_id
        test_ids = [p.id for p in curator.puzzles(PuzzleFilter()) if p.id.startswith("test")]
    finally:
        studio.close()
    _finished_baseline_job(path, set_id, test_ids[:3])
    return path


def _finished_baseline_job(path: Path, set_id: int, flagged: list[str]) -> None:
    """A finished baseline job, recorded as the worker would, with a report in the format
    of ``studio.baselines.run.build_report`` (the baselines' own tests train real models)."""

    def summary(acc: float, n: int) -> dict[str, object]:
        half = 1.96 * (acc * (1 - acc) / n) ** 0.5
        return {"n": n, "accuracy": acc, "ci95": [round(acc - half, 4), round(acc + half, 4)],
                "chance": 0.25, "p_value": 0.0123, "flagged": acc > 0.4}  # fmt: skip

    def model(label: str, acc: float, trained: bool) -> dict[str, object]:
        curve = [{"epoch": e, "loss": 1.4 - 0.1 * e, "train_acc": 0.3 + 0.02 * e,
                  "val_acc": acc - 0.1 + 0.03 * e} for e in range(1, 5)]  # fmt: skip
        seeds = (0, 1) if trained else (None,)
        return {
            "label": label, "group": "", "recipe": f"recipe of {label}", "trained": trained,
            "family_kind": "any", "overall": summary(acc, 24),
            "per_seed": [{"seed": s, "accuracy": acc, "train_seconds": 1.0, "epochs": 4,
                          "curve": curve if trained else []} for s in seeds],
            "groups": {
                "rule": {r: summary(acc + 0.05 * i, 8) for i, r in enumerate(RULES)},
                "concept": {c: summary(acc + 0.04 * i, 12) for i, c in enumerate(CONCEPTS)},
            },
            "group_accuracy": None,
            "throughput": {"train_puzzles_per_s": 512.5, "infer_puzzles_per_s": 4096.0},
        }  # fmt: skip

    flags = [
        {"id": pid, "model": m, "confidence": c, "seeds_correct": 2, "seeds": 2,
         "reason": "the key is the only answer with a closed contour"}
        for pid, m, c in zip(flagged, ("blind", "partial-answers", "blind"), (0.91, 0.83, 0.77),
                             strict=False)
    ]  # fmt: skip
    report = {
        "format": "analogy-studio.baseline-report", "format_version": 1,
        "source": {"kind": "project-set", "path": str(path), "set_id": set_id,
                   "family": "glyph-pmp", "puzzles": 120,
                   "parts": {"train": 84, "val": 12, "test": 24}, "answers": 4},
        "device": "cpu (16 threads)", "seeds": [0, 1], "eval_part": "test", "chance": 0.25,
        "models": {
            "blind": model("Context-blind CNN", 0.41, True),
            "context": model("Full-context ResNet", 0.62, True),
            "partial-answers": model("Partial input: answers only", 0.37, True),
            "pixel-similarity": model("Pixel similarity", 0.3, False),
        },
        "predictions": [],
        "flags": {
            "puzzles": flags,
            "groups": [{"model": "blind", "by": "concept", "value": "stroke-line-straight-quantity",
                        "n": 12, "accuracy": 0.58, "chance": 0.25, "excess_points": 33.0,
                        "p_value": 0.0003, "p_holm": 0.0009}],
        },
        "plots": {},
        "puzzle_flags": {"set_id": set_id, "models": ["blind", "partial-answers"],
                         "flags": flags},
    }  # fmt: skip
    with JobQueue(path) as q:
        params = {"source": {"kind": "project-set", "project": str(path), "set_id": set_id},
                  "models": ["blind", "context", "partial", "similarity"], "seeds": 2,
                  "device": "auto", "epochs": None}  # fmt: skip
        job_id = q.submit("baseline", params, "Baselines on set “UA shapes, balanced”")
        assert q.claim(job_id, os.getpid())
        q.set_device(job_id, "cpu (16 threads)")
        q.log(job_id, "device: cpu (16 threads)")
        assert q.finish(job_id, "done", result=report, pid=os.getpid())


_open: list[Studio] = []


@pytest.fixture(autouse=True)
def _close_studios() -> Iterator[None]:
    yield
    while _open:
        _open.pop().close()


def open_window(qtbot, path: Path, size: tuple[int, int]) -> MainWindow:
    studio = Studio(Project.open(path), author="curator")
    _open.append(studio)
    window = MainWindow(studio, StudioSettings())
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    return window


def settle() -> None:
    for _ in range(3):
        QApplication.processEvents()


def start_running_job(qtbot, window: MainWindow) -> int:
    """A baseline job that runs (claimed by this process, as a worker would) and has moved
    on by one unit, so its progress cell tells the time left and the step."""
    jobs = window.studio.project.jobs
    job_id = jobs.submit("baseline", {"source": {"kind": "project-set"}}, "Baselines, running")
    assert jobs.claim(job_id, os.getpid())  # before the host polls: it never spawns it
    dash = window.dashboard
    jobs.set_progress(job_id, 0.05, RUNNING_STEP.replace("epoch 3", "epoch 2"))

    def progress_text() -> str:
        row = dash.model.row_of(job_id)
        return "" if row is None else dash.model.index(row, COL_PROGRESS).data() or ""

    qtbot.waitUntil(lambda: progress_text().startswith("5%"), timeout=WAIT_MS)
    jobs.set_progress(job_id, 0.37, RUNNING_STEP)
    qtbot.waitUntil(lambda: progress_text().startswith("37% · "), timeout=WAIT_MS)
    assert " left · " in progress_text()
    return job_id


Screen = tuple[str, QWidget]


def screens(qtbot, window: MainWindow) -> Iterator[Screen]:
    """Shows each screen in turn and yields its name and the widget to grab."""
    tabs = window.tabs
    # Annotate: a glyph tagged with the longest concept's value, in the inspector
    tabs.setCurrentIndex(0)
    project = window.studio.project

    def longest_tag(key: GlyphKey) -> tuple[int, int]:
        tags = project.tags_of(key)
        return max((len(t.concept) + len(t.value) for t in tags), default=0), len(tags)

    tagged = max((r.key for r in project.glyphs() if r.status == "ok"), key=longest_tag)
    window.go_to_glyph(tagged)
    window.tree.select("stroke-line-straight-quantity", None)
    model = window.model
    qtbot.waitUntil(lambda: model.index(0).data(IMAGE_ROLE) is not None, timeout=WAIT_MS)
    qtbot.waitUntil(
        lambda: model.index(model.row_of(tagged)).data(IMAGE_ROLE) is not None, timeout=WAIT_MS
    )
    settle()
    yield "annotate", window

    tabs.setCurrentIndex(1)
    board = window.board
    qtbot.waitUntil(board.isVisible)
    assert board.wait_for_stats()
    # a puzzle with findings (its evidence listed under the sheet), else one a baseline
    # flagged (why, under its title)
    found = [
        p.id
        for kind in ("errors", "warnings")
        for p in board.curator.puzzles(PuzzleFilter(warning=kind))
    ] + sorted(board.model.shortcuts)
    assert found
    assert board.select_puzzle(found[0])
    settle()
    yield "puzzles", window
    yield "puzzles-statistics", board.stats_panel.widget()
    # sorted by its narrowest column: the arrow takes room beside the title
    header = board.table.horizontalHeader()
    warnings = COLUMNS.index("Warn.")
    at = QPoint(header.sectionViewportPosition(warnings) + 4, header.height() // 2)
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=at)
    assert header.sortIndicatorSection() == warnings
    settle()
    yield "puzzles-sorted", window

    tabs.setCurrentIndex(2)
    preview = window.preview
    assert preview.transform is not None and preview.builder is not None
    assert preview.catalog is not None and preview.tasks is not None
    qtbot.waitUntil(lambda: preview.transform.last_result is not None, timeout=WAIT_MS)
    yield "preview-transformations", window
    preview.pages.setCurrentWidget(preview.builder)
    cell = CellGrid.CELL
    for x, y in ((1, 1), (2, 1), (2, 2), (3, 2)):  # the S tetromino
        qtbot.mouseClick(
            preview.builder.grid,
            Qt.MouseButton.LeftButton,
            pos=QPoint(x * cell + cell // 2, y * cell + cell // 2),
        )
    settle()
    yield "preview-shape-builder", window
    catalog = preview.catalog
    preview.pages.setCurrentWidget(catalog)
    qtbot.mouseClick(catalog.show_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "shapes (" in catalog.count_label.text(), timeout=WAIT_MS)
    settle()
    yield "preview-catalog", window
    preview.pages.setCurrentWidget(preview.tasks)
    qtbot.waitUntil(lambda: preview.tasks.last_item is not None, timeout=WAIT_MS)
    settle()
    yield "preview-tasks", window

    tabs.setCurrentIndex(3)
    dash = window.dashboard
    running = start_running_job(qtbot, window)
    dash.select_job(dash.model.job(dash.model.rowCount() - 1).id)  # the finished one
    for i in range(dash.detail_tabs.count()):
        dash.detail_tabs.setCurrentIndex(i)
        if dash.detail_tabs.currentWidget().isAncestorOf(dash.plot_tabs):
            qtbot.waitUntil(lambda: dash.plot_tabs.count() > 0, timeout=WAIT_MS)  # drawn
        settle()
        name = dash.detail_tabs.tabText(i).lower().replace(" ", "-")
        yield f"baselines-{name}", window
    # the job ends (as its worker would record it), so the window closes without asking
    assert window.studio.project.jobs.finish(running, "cancelled", pid=os.getpid())
    qtbot.waitUntil(lambda: not window.running_jobs(), timeout=WAIT_MS)

    tabs.setCurrentIndex(4)
    lab = window.lab
    for i in range(lab.tabs.count()):
        lab.tabs.setCurrentIndex(i)
        settle()
        yield f"lab-{lab.tabs.tabText(i).lower()}", window


def dialogs(window: MainWindow) -> Iterator[tuple[str, Callable[[], QWidget]]]:
    yield "generate-dialog", lambda: window.board.generate_split()
    yield "export-dialog", window.export_benchmark


def statistics_cut_off(window: MainWindow) -> list[str]:
    """The split statistics panel fits its pane's width, and scrolls down to its end."""
    panel = window.board.stats_panel
    body, viewport = panel.widget(), panel.viewport()
    out = []
    if body.width() > viewport.width() and not panel.horizontalScrollBar().isVisible():
        out.append(
            f"statistics: {body.width()} px wide in a pane showing {viewport.width()},"
            " with no scroll bar"
        )
    bar = panel.verticalScrollBar()
    if body.height() > viewport.height() and not (
        bar.isVisible() and bar.maximum() >= body.height() - viewport.height()
    ):
        out.append(f"statistics: {body.height()} px tall, cannot scroll to the end")
    return out


def _what(finding: str) -> str:
    """A finding without its screen and its changing text (a job's time left)."""
    return re.sub(r"'[^']*'|\d+", "", finding.split(": ", 1)[1])


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_no_text_is_cut_off(
    qtbot, ui_font: QFont, layout_project: Path, tmp_path: Path, size: tuple[int, int]
) -> None:
    """Every screen at ``size`` in ``ui_font``: no text cut (issue 28 counted at least 8 at
    1280×800: "Not yet tagged for", "stroke-line-straight-quant…", "two-…", "progressi…",
    "component…", the job's progress, the statistics run off their pane), the window no
    wider than it was made, the statistics panel whole or scrolling."""
    path = tmp_path / "layout.studio"
    shutil.copy(layout_project, path)
    window = open_window(qtbot, path, size)
    folder = os.environ.get(SHOTS_ENV)
    shots = DOC_SHOTS[size] if folder and ui_font.family() == UI_FONTS[0][0] else set()

    def grab(name: str, widget: QWidget) -> None:
        if name in shots:
            widget.grab().save(str(Path(folder or ".") / f"layout-{name}-{size[0]}x{size[1]}.png"))

    findings: list[str] = []
    for name, widget in screens(qtbot, window):
        if widget is window:
            # a text cut on a tab's every page (the job list above the Baselines' detail
            # tabs) is told once
            seen = {_what(f) for f in findings}
            found = elided_texts(window, name, QSize(*size), DATA_COMBOS)
            findings += [f for f in found if _what(f) not in seen]
        grab(name, widget)
    # the statistics panel fits its pane or scrolls to the rest
    window.tabs.setCurrentIndex(1)
    settle()
    findings += statistics_cut_off(window)
    for name, open_dialog in dialogs(window):
        dlg = open_dialog()
        assert dlg is not None
        qtbot.waitExposed(dlg)
        settle()
        findings += elided_texts(dlg, name)
        grab(name, dlg)
        dlg.reject()
    assert findings == [], f"{len(findings)} texts cut off:\n" + "\n".join(findings)
