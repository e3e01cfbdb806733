"""The Baselines tab, driven like a user: real projects, real jobs in real worker processes
through the real WorkerHost; clicks on its buttons, keys and double-clicks on its tables.

A finished baseline job is put in the project with ``JobQueue.finish`` and a hand-written
report (the worker's and the baselines' own tests cover real training runs); everything else
runs for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from studio.app import Studio
from studio.baselines import DEFAULT_MODELS
from studio.core.errors import StudioError
from studio.core.schema import Schema
from studio.gui.baseline_job_dialog import BaselineJobDialog
from studio.gui.dashboard import BaselineDashboard
from studio.gui.job_controller import JobController
from studio.gui.job_list import COL_PROGRESS, COL_STATUS, ProgressDelegate
from studio.gui.main_window import MainWindow
from studio.gui.settings import StudioSettings
from studio.store.jobs import JobQueue
from studio.store.project import Project, PuzzleSetRecord

pytestmark = pytest.mark.gui

WAIT = 30_000  # ms; generous: two busy cores start Python children slowly
LONG_SLEEP = {"action": "sleep", "seconds": 60, "steps": 600}
SET_ID = 7
RULES = ("constant", "progression", "xor")
CONCEPTS = ("closure", "stroke-count-of-the-glyph")


@pytest.fixture
def project_path(tmp_path: Path, ua_schema: Schema) -> Path:
    path = tmp_path / "jobs.studio"
    Project.create(path, ua_schema, author="setup").close()
    return path


@pytest.fixture
def open_dashboard(qtbot) -> Iterator[Callable[[Path], BaselineDashboard]]:
    opened: list[tuple[BaselineDashboard, Studio]] = []

    def open_(path: Path) -> BaselineDashboard:
        studio = Studio(Project.open(path), author="ann")
        dash = BaselineDashboard(studio, poll_interval=50)
        qtbot.addWidget(dash)
        opened.append((dash, studio))
        dash.resize(1200, 800)
        dash.show()
        qtbot.waitExposed(dash)
        return dash

    yield open_
    for dash, studio in opened:
        dash.shutdown()
        studio.close()


def row(dash: BaselineDashboard, job_id: int) -> int:
    r = dash.model.row_of(job_id)
    assert r is not None, f"job {job_id} is not listed"
    return r


def status(dash: BaselineDashboard, job_id: int) -> str | None:
    r = dash.model.row_of(job_id)
    return None if r is None else dash.model.index(r, COL_STATUS).data()


def job(dash: BaselineDashboard, job_id: int) -> Any:
    return dash.model.job(row(dash, job_id))


def click(qtbot, button) -> None:
    assert button.isEnabled(), f"{button.objectName()} is disabled"
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


# ---- a hand-written report -----------------------------------------------------------------------
def _summary(acc: float, n: int) -> dict[str, Any]:
    half = 1.96 * (acc * (1 - acc) / n) ** 0.5
    return {"n": n, "accuracy": acc, "ci95": [round(acc - half, 4), round(acc + half, 4)],
            "chance": 0.25, "p_value": 0.01, "flagged": False}  # fmt: skip


def _model(label: str, acc: float, trained: bool) -> dict[str, Any]:
    seeds = (0, 1) if trained else (None,)
    curve = [{"epoch": e, "loss": 1.4 - 0.1 * e, "train_acc": 0.3, "val_acc": acc - 0.1 + 0.03 * e}
             for e in range(1, 5)]  # fmt: skip
    return {
        "label": label,
        "group": "",
        "recipe": f"recipe of {label}",
        "trained": trained,
        "family_kind": "any",
        "overall": _summary(acc, 120),
        "per_seed": [
            {
                "seed": s,
                "accuracy": acc,
                "train_seconds": 1.0,
                "epochs": 4,
                "curve": curve if trained else [],
            }
            for s in seeds
        ],
        "groups": {
            "rule": {r: _summary(acc + 0.05 * i, 40) for i, r in enumerate(RULES)},
            "concept": {c: _summary(acc + 0.04 * i, 60) for i, c in enumerate(CONCEPTS)},
        },
        "group_accuracy": None,
        "throughput": {"train_puzzles_per_s": 500.0, "infer_puzzles_per_s": 4000.0},
    }


FLAGS = [
    {"id": "test-00012", "model": "blind", "confidence": 0.91, "seeds_correct": 2, "seeds": 2},
    {"id": "test-00031", "model": "partial-answers", "confidence": 0.83, "seeds_correct": 2,
     "seeds": 2},
]  # fmt: skip


def make_report(project: Path) -> dict[str, Any]:
    return {
        "format": "analogy-studio.baseline-report",
        "format_version": 1,
        "source": {"kind": "project-set", "path": str(project), "set_id": SET_ID,
                   "family": "glyph-pmp", "puzzles": 600,
                   "parts": {"train": 420, "val": 60, "test": 120}, "answers": 4},
        "device": "cpu (1 thread)",
        "compute": {"device": "cpu", "trained": True, "autocast": None, "compiled": None,
                    "eval_batch": 256, "ensemble": "loop", "cuda_graphs": False},
        "seeds": [0, 1],
        "eval_part": "test",
        "chance": 0.25,
        "models": {
            "blind": _model("Context-blind CNN", 0.41, True),
            "context": _model("Full-context ResNet", 0.62, True),
            "partial-answers": _model("Partial input: answers only", 0.37, True),
            "pixel-similarity": _model("Pixel similarity", 0.3, False),
        },
        "predictions": [],
        "flags": {
            "puzzles": FLAGS,
            "groups": [{"model": "blind", "by": "rule", "value": "xor", "n": 40,
                        "accuracy": 0.51, "chance": 0.25, "excess_points": 26.0,
                        "p_value": 0.0003, "p_holm": 0.0009}],
        },
        "plots": {},
        "puzzle_flags": {"set_id": SET_ID, "flags": FLAGS},
    }  # fmt: skip


def add_done_baseline_job(path: Path) -> int:
    """A finished baseline job, recorded as the worker would (before the studio opens)."""
    with JobQueue(path) as q:
        params = {"source": {"kind": "project-set", "project": str(path), "set_id": SET_ID},
                  "models": ["blind", "context", "partial", "similarity"], "seeds": 2,
                  "device": "auto", "epochs": None}  # fmt: skip
        job_id = q.submit("baseline", params, "Baselines on set “vetted”")
        assert q.claim(job_id, os.getpid())
        q.set_device(job_id, "cpu (1 thread)")
        q.log(job_id, "device: cpu (1 thread)")
        assert q.finish(job_id, "done", result=make_report(path), pid=os.getpid())
    return job_id


# ---- the job list --------------------------------------------------------------------------------
def test_a_job_runs_to_done_with_its_log(qtbot, project_path: Path, open_dashboard) -> None:
    dash = open_dashboard(project_path)
    assert dash.model.rowCount() == 0 and not dash.cancel_button.isEnabled()
    job_id = dash.submit(
        "diagnostic", {"action": "sleep", "seconds": 0.2, "steps": 50}, "Quick diagnostic"
    )
    assert job_id is not None and dash.selected_id() == job_id
    qtbot.waitUntil(lambda: status(dash, job_id) == "done", timeout=WAIT)
    assert dash.model.index(row(dash, job_id), COL_PROGRESS).data().startswith("100%")
    qtbot.waitUntil(lambda: "diagnostic: sleep" in dash.log_view.toPlainText(), timeout=WAIT)
    assert dash.outcome_view.isVisible()
    assert '"completed": 50' in dash.outcome_view.toPlainText()
    assert "done" in dash.job_title.text()
    # a diagnostic result is no report: its result tabs stay off
    assert not dash.detail_tabs.isTabEnabled(2)
    assert not dash.export_button.isEnabled() and dash.rerun_button.isEnabled()


def test_running_job_shows_progress_then_cancel_and_resume(
    qtbot, project_path: Path, open_dashboard
) -> None:
    dash = open_dashboard(project_path)
    assert isinstance(dash.table.itemDelegateForColumn(COL_PROGRESS), ProgressDelegate)
    job_id = dash.submit("diagnostic", {"action": "sleep", "seconds": 6, "steps": 120}, "Sleep")
    qtbot.waitUntil(
        lambda: status(dash, job_id) == "running" and job(dash, job_id).progress > 0,
        timeout=WAIT,
    )
    text = dash.model.index(row(dash, job_id), COL_PROGRESS).data()
    assert "step" in text and text.endswith("/120")
    assert "running" in dash.job_title.text()
    assert dash.summary_label.text().startswith("1 running")
    assert not dash.resume_button.isEnabled()

    click(qtbot, dash.cancel_button)
    qtbot.waitUntil(lambda: status(dash, job_id) == "cancelled", timeout=5000)
    stopped_at = job(dash, job_id).progress
    assert 0 < stopped_at < 1
    assert not dash.cancel_button.isEnabled() and dash.resume_button.isEnabled()
    assert "resumable" in dash.job_title.text()

    click(qtbot, dash.resume_button)  # continues from its checkpoint, same job
    qtbot.waitUntil(lambda: status(dash, job_id) == "done", timeout=WAIT)
    result = job(dash, job_id).result
    assert result["started_at_step"] > 0
    assert dash.model.rowCount() == 1


def test_a_failing_job_shows_its_error_and_reruns(
    qtbot, project_path: Path, open_dashboard
) -> None:
    dash = open_dashboard(project_path)
    job_id = dash.submit("diagnostic", {"action": "raise"}, "Raising diagnostic")
    qtbot.waitUntil(lambda: status(dash, job_id) == "failed", timeout=WAIT)
    assert dash.selected_id() == job_id
    qtbot.waitUntil(lambda: dash.outcome_view.isVisible(), timeout=WAIT)
    assert dash.outcome_view.toPlainText().startswith("RuntimeError: diagnostic failure")
    assert "failed" in dash.job_title.text()
    tip = dash.model.index(row(dash, job_id), COL_STATUS).data(Qt.ItemDataRole.ToolTipRole)
    assert "diagnostic failure" in tip

    click(qtbot, dash.rerun_button)  # a new job, same kind and parameters
    new_id = dash.selected_id()
    assert new_id is not None and new_id > job_id
    assert dash.model.rowCount() == 2
    again = job(dash, new_id)
    assert (again.kind, again.params, again.title) == ("diagnostic", {"action": "raise"},
                                                       "Raising diagnostic")  # fmt: skip
    qtbot.waitUntil(lambda: status(dash, new_id) == "failed", timeout=WAIT)
    assert status(dash, job_id) == "failed"


def test_jobs_left_running_show_interrupted_and_resume(
    qtbot, project_path: Path, open_dashboard
) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with JobQueue(project_path) as q:
        job_id = q.submit("diagnostic", {"action": "sleep", "seconds": 0.2, "steps": 4}, "Left")
        assert q.claim(job_id, dead.pid)  # its process is gone, as after a crash
    dash = open_dashboard(project_path)
    assert status(dash, job_id) == "interrupted"
    assert "interrupted when the studio closed" in dash.summary_label.text()
    dash.select_job(job_id)
    click(qtbot, dash.resume_button)
    qtbot.waitUntil(lambda: status(dash, job_id) == "done", timeout=WAIT)
    assert "interrupted" not in dash.summary_label.text()


def test_a_job_with_puzzle_flags_tells_the_board(qtbot, project_path: Path, open_dashboard) -> None:
    dash = open_dashboard(project_path)
    flags = {"set_id": SET_ID, "models": ["blind"], "flags": FLAGS[:1]}
    with qtbot.waitSignal(dash.flags_changed, timeout=WAIT) as blocker:
        dash.submit("diagnostic", {"action": "sleep", "seconds": 0.1, "steps": 2,
                                   "puzzle_flags": flags})  # fmt: skip
    assert blocker.args == [SET_ID]
    assert list(dash.host.queue.flags(SET_ID)) == ["test-00012"]


def test_the_job_controller_drives_jobs_without_a_widget(qtbot, project_path: Path) -> None:
    """The host and its clock live outside the dashboard: a controller alone runs a job to
    its end, tells about its flags and reads the list for whoever listens."""
    controller = JobController(poll_interval=50)
    reads: list[list[Any]] = []
    controller.jobs_read.connect(reads.append)
    controller.start(project_path)
    try:
        assert controller.running and reads == [[]]
        flags = {"set_id": SET_ID, "models": ["blind"], "flags": FLAGS[:1]}
        with qtbot.waitSignal(controller.flags_changed, timeout=WAIT) as blocker:
            job_id = controller.submit(
                "diagnostic", {"action": "sleep", "seconds": 0.1, "steps": 2, "puzzle_flags": flags}
            )
        assert blocker.args == [SET_ID]
        [done] = controller.jobs
        assert (done.id, done.status) == (job_id, "done") and reads[-1] == controller.jobs
    finally:
        controller.shutdown()
    assert not controller.running and controller.queue is None
    controller.refresh()  # no host: nothing to read, nothing emitted
    assert reads[-1] == [done]
    with pytest.raises(StudioError, match="not running"):
        controller.submit("diagnostic", {"action": "raise"})


# ---- a finished baseline job ---------------------------------------------------------------------
def test_finished_baseline_job_shows_charts_tables_and_opens_flagged_puzzles(
    qtbot, project_path: Path, open_dashboard, tmp_path: Path
) -> None:
    job_id = add_done_baseline_job(project_path)
    dash = open_dashboard(project_path)
    assert dash.selected_id() == job_id  # the newest job is shown
    assert all(dash.detail_tabs.isTabEnabled(i) for i in range(dash.detail_tabs.count()))
    assert "device: cpu (1 thread)" in dash.job_title.text()
    assert "device: cpu (1 thread)" in dash.log_view.toPlainText()

    # the models' summary
    summary = dash.summary_model
    assert summary.rowCount() == 4
    first = [summary.item(0, c).text() for c in range(summary.columnCount())]
    assert first[0] == "Context-blind CNN (blind)"
    assert first[1] == "41.0%" and first[3] == "25%" and first[4] == "+16.0"
    assert first[7] == "2" and first[8] == "1" and first[9] == "1"
    # how the job ran, under the table
    assert "Ran on cpu (1 thread) · the seeds trained together" in dash.report_notes.text()

    # the charts: built off the main thread when the Plots tab shows, cached per job
    dash.detail_tabs.setCurrentIndex(2)
    qtbot.waitUntil(lambda: len(dash.plot_canvases()) == 4, timeout=WAIT)
    canvases = dash.plot_canvases()
    assert list(canvases) == ["accuracy-rule", "accuracy-concept", "training-curves",
                              "blind-vs-context"]  # fmt: skip
    rule = canvases["accuracy-rule"].figure
    heights = {p.get_gid(): p.get_height() for p in rule.axes[0].patches if p.get_gid()}
    assert heights["blind|all puzzles"] == pytest.approx(0.41)
    assert heights["context|xor"] == pytest.approx(0.62 + 0.10)
    assert dash.plot_tabs.tabText(0) == "Accuracy per rule"
    canvases["accuracy-rule"].draw()
    assert canvases["accuracy-rule"].isVisible()
    dash.detail_tabs.setCurrentIndex(0)
    dash.detail_tabs.setCurrentIndex(2)
    assert dash.plot_canvases()["accuracy-rule"].figure is rule  # from the cache

    # split-level flags
    groups = dash.group_flags_model
    assert groups.rowCount() == 1
    assert [groups.item(0, c).text() for c in range(6)] == [
        "blind", "rule", "xor", "40", "51.0%", "25%"
    ]  # fmt: skip
    assert groups.item(0, 6).text() == "+26.0"
    # why, as a column and not only a tooltip (issue 28)
    assert groups.headerData(9, Qt.Orientation.Horizontal) == "Why"
    assert groups.item(0, 9).text() == (
        "blind beats chance by 26.0 points here without the whole context"
    )

    # flagged puzzles: Enter or a double-click opens one
    dash.detail_tabs.setCurrentIndex(3)
    table, flagged = dash.flagged_table, dash.flagged_model
    assert flagged.rowCount() == 2
    assert [flagged.item(1, c).text() for c in range(4)] == [
        "test-00031", "partial-answers", "0.83", "2/2"
    ]  # fmt: skip
    assert flagged.headerData(4, Qt.Orientation.Horizontal) == "Why"
    assert flagged.item(1, 4).text() == (
        "partial-answers chose the key in 2 of 2 seeds without the whole context, "
        "mean confidence 0.83"
    )
    table.setFocus()
    table.setCurrentIndex(flagged.index(1, 0))
    with qtbot.waitSignal(dash.open_puzzle, timeout=2000) as blocker:
        qtbot.keyClick(table, Qt.Key.Key_Return)
    assert blocker.args == [SET_ID, "test-00031"]
    rect = table.visualRect(flagged.index(0, 1))
    with qtbot.waitSignal(dash.open_puzzle, timeout=2000) as blocker:
        # a double-click is a press and release, then the double-click itself
        qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert blocker.args == [SET_ID, "test-00012"]

    # Export report…: report.json and the PNGs it names
    with qtbot.waitSignal(dash.exported, timeout=WAIT) as blocker:
        dash.export_report(str(tmp_path / "export"))
    exported = Path(blocker.args[0])
    data = json.loads(exported.read_text(encoding="utf-8"))
    assert set(data["plots"]) == set(canvases)
    for rel in data["plots"].values():
        assert (exported.parent / rel).read_bytes()[:4] == b"\x89PNG"


# ---- the new-job dialog --------------------------------------------------------------------------
def test_new_job_dialog_submits_a_baseline_job(
    qtbot, project_path: Path, open_dashboard, tmp_path: Path
) -> None:
    dash = open_dashboard(project_path)
    click(qtbot, dash.new_button)
    dlg = dash.job_dialog
    assert dlg is not None and dlg.isVisible()
    assert list(dlg.group_boxes) == [
        "blind", "context", "similarity", "partial", "spatial", "probes", "published"
    ]  # fmt: skip
    # the papers' solvers are offered, unticked (minutes on a CPU), each named in the tooltip
    published = dlg.group_boxes["published"]
    assert not published.isChecked()
    assert all(name in published.toolTip() for name in ("ResNet-18", "WReN", "SCL"))
    # ticked by default: what a job and `analogy-studio baseline` run, the probes included
    assert [g for g, b in dlg.group_boxes.items() if b.isChecked()] == [
        "blind", "context", "similarity", "partial", "probes"
    ] == list(DEFAULT_MODELS)  # fmt: skip
    assert "Context-blind CNN" in dlg.group_boxes["blind"].toolTip()
    assert dlg.seeds_spin.value() == 3 and dlg.device_combo.currentText() == "auto"
    assert dlg.epochs_spin.text() == "model default"
    # no puzzle set in this project: a split folder is the only source
    assert not dlg.set_radio.isEnabled() and dlg.dir_radio.isChecked()
    ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled() and "split folder" in dlg.problem.text()
    qtbot.keyClicks(dlg.dir_edit, str(tmp_path / "nowhere"))
    assert not ok.isEnabled() and "not a folder" in dlg.problem.text()
    split = tmp_path / "split"
    split.mkdir()
    dlg.dir_edit.setText(str(split))
    dlg.group_boxes["similarity"].setChecked(False)
    dlg.seeds_spin.setValue(2)
    dlg.device_combo.setCurrentText("cpu")
    dlg.epochs_spin.setValue(4)
    assert ok.isEnabled()
    click(qtbot, ok)

    job_id = dash.selected_id()
    assert job_id is not None
    submitted = job(dash, job_id)
    assert submitted.kind == "baseline"
    assert submitted.params == {
        "source": {"kind": "split-dir", "path": str(split)},
        "models": ["blind", "context", "partial", "probes"],
        "seeds": 2,
        "device": "cpu",
        "epochs": 4,
        # every field recorded (studio.baselines.params), as `jobs baseline` records them
        "beside_window": True,
        "cross_fit": True,
        "cuda_speedups": False,
        "compile": False,
        "cuda_graphs": True,
    }
    assert submitted.title == "Baselines (blind, context, partial, probes) on split split"
    click(qtbot, dash.cancel_button)
    qtbot.waitUntil(lambda: job(dash, job_id).final, timeout=WAIT)


def test_dialog_with_puzzle_sets(qtbot, project_path: Path) -> None:
    sets = [
        PuzzleSetRecord(3, "draft", {}, {}, "", "ann", 40),
        PuzzleSetRecord(5, "vetted", {}, {}, "", "ann", 200),
    ]
    dlg = BaselineJobDialog(project_path, sets)
    qtbot.addWidget(dlg)
    assert dlg.set_radio.isChecked() and dlg.set_combo.currentText() == "vetted (200 puzzles)"
    params = dlg.params()
    assert params["source"] == {"kind": "project-set", "project": str(project_path), "set_id": 5}
    assert params["epochs"] is None and params["seeds"] == 3
    assert params["models"] == ["blind", "context", "similarity", "partial", "probes"]
    assert (
        dlg.job_title() == "Baselines (blind, context, similarity, partial, probes) on set “vetted”"
    )
    for box in dlg.group_boxes.values():
        box.setChecked(False)
    assert "at least one model group" in dlg.problem_text()


def test_on_a_lab_database_the_dialog_offers_its_sets_only(qtbot) -> None:
    """A lab's jobs run on its workers, which read the database's sets, never a folder of
    the submitter's computer (a job naming one is refused there): the folder choice is off,
    and says why."""
    sets = [PuzzleSetRecord(5, "vetted", {}, {}, "", "ann", 200)]
    dlg = BaselineJobDialog(None, sets)
    qtbot.addWidget(dlg)
    assert not dlg.dir_radio.isEnabled() and not dlg.dir_edit.isEnabled()
    assert "lab's workers" in dlg.dir_radio.toolTip()
    assert dlg.params()["source"] == {"kind": "project-set", "set_id": 5}  # no project named
    empty = BaselineJobDialog(None, [])
    qtbot.addWidget(empty)
    assert "No puzzle set in this lab database" in empty.problem_text()


# ---- in the main window --------------------------------------------------------------------------
def test_main_window_tab_shortcut_open_puzzle_and_close(
    qtbot, project_path: Path, ua_schema: Schema
) -> None:
    studio = Studio(Project.open(project_path), author="ann")
    window = MainWindow(studio, StudioSettings())
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    assert window.tabs.tabText(window.tabs.indexOf(window.dashboard)) == "Baselines"
    qtbot.keyClick(window, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentWidget() is window.dashboard
    qtbot.keyClick(window, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentWidget() is window.board
    window.show_baselines()

    # a flagged puzzle opens on the board; one that is gone says so
    window.dashboard.open_puzzle.emit(SET_ID, "test-00012")
    assert window.tabs.currentWidget() is window.board
    assert "no longer in puzzle set 7" in window.statusBar().currentMessage()

    # closing the window stops the worker: a running job is left interrupted, resumable
    job_id = window.dashboard.submit("diagnostic", LONG_SLEEP, "Long")
    qtbot.waitUntil(lambda: status(window.dashboard, job_id) == "running", timeout=WAIT)
    window.close()  # a job runs: the window asks first
    assert window.isVisible() and window.quit_box is not None
    quit_anyway = next(b for b in window.quit_box.buttons() if b.objectName() == "quitAnyway")
    qtbot.mouseClick(quit_anyway, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.dashboard.host is None, timeout=5000)
    studio.close()
    with JobQueue(project_path) as q:
        assert q.job(job_id).status == "interrupted"
