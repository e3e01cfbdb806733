"""The Baselines tab: the project's background jobs and what the baselines found.

The project's jobs are driven by a :class:`~studio.gui.job_controller.JobController` (the
worker host and its clock, outside any widget; the dashboard makes one, starts it when a project
opens and shuts it down when the window closes or the project changes): the dashboard shows
the job list it reads and sends it the user's commands. Jobs run in child processes, so a
training run, a crash or an out-of-memory kill never stalls or ends the studio.

What it shows: the job list (:mod:`studio.gui.job_list`: status, a progress bar with the job's
last message, device, machine, start and duration) with New job… (the dialog of
:mod:`studio.gui.baseline_job_dialog`), Cancel, Re-run, Resume and Export report…; for the
selected job its log and error; for a finished baseline job the charts of
:mod:`studio.baselines.plots` on Qt canvases (built off the main thread, cached per job), the
models' summary, the puzzles flagged as shortcut-prone and the split-level flags. Activating a
flagged puzzle (double-click or Enter) emits :attr:`BaselineDashboard.open_puzzle`; the main
window opens it on the curator's board.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import QCloseEvent, QColor, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QStyleOptionViewItem,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)
from sqlalchemy.exc import SQLAlchemyError

from studio.baselines.present import (
    compute_text,
    count_text,
    flag_reason,
    group_flag_reason,
    is_report,
)
from studio.core.errors import StudioError
from studio.gui.baseline_job_dialog import BaselineJobDialog
from studio.gui.job_controller import JOB_ERRORS, JobController, report_set_id
from studio.gui.job_list import (
    COL_PROGRESS,
    COL_TITLE,
    PROGRESS_SAMPLE,
    STATUS_COLOURS,
    JobTableModel,
    ProgressDelegate,
)
from studio.gui.jobs import ThreadJob
from studio.gui.settings import StudioSettings
from studio.worker.jobtext import duration_text, job_machine_text, job_seconds, local_time

if TYPE_CHECKING:
    from studio.app import Studio
    from studio.store.jobs import JobQueue
    from studio.worker.host import WorkerHost

__all__ = ["BaselineDashboard"]

#: Roles of the result tables' cells (the job list's are in studio.gui.job_list)
SORT_ROLE = Qt.ItemDataRole.UserRole + 3  # numbers for sorting the result tables
PUZZLE_ROLE = Qt.ItemDataRole.UserRole + 4  # a flagged row's puzzle id

_LOG_LINES = 1000  # log lines kept in the view
_FIGURE_CACHE = 6  # finished jobs whose charts stay built


# ---- result tables -------------------------------------------------------------------------------
def _item(text: str, sort: Any = None, tip: str = "") -> QStandardItem:
    item = QStandardItem(text)
    item.setEditable(False)
    item.setData(text if sort is None else sort, SORT_ROLE)
    if tip:
        item.setToolTip(tip)
    return item


def _number(value: Any, fmt: str) -> QStandardItem:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return _item("—", -1.0)
    item = _item(format(value, fmt), float(value))
    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def _p_text(p: Any) -> QStandardItem:
    if p is None:
        return _item("—", 2.0)
    p = float(p)
    item = _item("< 0.0001" if p < 1e-4 else f"{p:.4f}", p)
    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def _table(name: str, headers: Sequence[str]) -> tuple[QTableView, QStandardItemModel]:
    model = QStandardItemModel(0, len(headers))
    model.setHorizontalHeaderLabels(list(headers))
    model.setSortRole(SORT_ROLE)
    view = QTableView(objectName=name)
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setSortingEnabled(True)
    view.sortByColumn(-1, Qt.SortOrder.AscendingOrder)
    view.verticalHeader().setVisible(False)
    view.verticalHeader().setDefaultSectionSize(22)
    view.setAlternatingRowColors(True)
    view.horizontalHeader().setStretchLastSection(False)
    return view, model


def _fill(view: QTableView, model: QStandardItemModel, rows: list[list[QStandardItem]]) -> None:
    view.setSortingEnabled(False)
    model.removeRows(0, model.rowCount())
    for row in rows:
        model.appendRow(row)
    view.setSortingEnabled(True)
    view.resizeColumnsToContents()


# ---- the dashboard -------------------------------------------------------------------------------
class BaselineDashboard(QWidget):
    """The project's jobs and the baselines' results.

    ``open_puzzle(set_id, puzzle_id)`` fires (main thread) when the user activates a flagged
    puzzle; ``flags_changed(set_id)`` when a job that stored puzzle flags for a set has just
    ended, so the curator's board can re-read them (relayed from :attr:`controller`, the
    :class:`~studio.gui.job_controller.JobController` that drives the project's jobs).
    ``worker_command`` overrides how worker children start (tests and the bundle use the
    default)."""

    open_puzzle = Signal(int, str)
    flags_changed = Signal(int)
    exported = Signal(str)

    def __init__(
        self,
        studio: Studio,
        parent: QWidget | None = None,
        *,
        poll_interval: int = 250,
        worker_command: Sequence[str] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("baselineDashboard")
        self.studio = studio
        self.controller = JobController(
            poll_interval=poll_interval, worker_command=worker_command, parent=self
        )
        self.controller.jobs_read.connect(self._show_jobs)
        self.controller.read_failed.connect(self._on_read_failed)
        self.controller.flags_changed.connect(self.flags_changed)
        self.job_dialog: BaselineJobDialog | None = None
        self._shown_id: int | None = None
        self._shown_job: Any = None
        self._log_seq = 0
        self._figures: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._building: set[int] = set()
        self._tables_for: int | None = None
        self._plots_for: int | None = None
        self._closed = False
        self._build_ui()
        self.start_host()

    # ---- construction ----------------------------------------------------------------------
    def _build_ui(self) -> None:
        self.new_button = QPushButton("New job…", objectName="newJobButton")
        self.new_button.setToolTip("Run baselines on a puzzle set or a split in the background")
        self.new_button.clicked.connect(lambda: self.new_job())
        self.cancel_button = QPushButton("Cancel", objectName="cancelJobButton")
        self.cancel_button.setToolTip("Stop the selected job (within a second)")
        self.cancel_button.clicked.connect(lambda: self.cancel_selected())
        self.rerun_button = QPushButton("Re-run", objectName="rerunJobButton")
        self.rerun_button.setToolTip("Run the selected job again from scratch, as a new job")
        self.rerun_button.clicked.connect(lambda: self.rerun_selected())
        self.resume_button = QPushButton("Resume", objectName="resumeJobButton")
        self.resume_button.setToolTip(
            "Continue an interrupted, failed or cancelled job from the units it completed"
        )
        self.resume_button.clicked.connect(lambda: self.resume_selected())
        self.export_button = QPushButton("Export report…", objectName="exportReportButton")
        self.export_button.setToolTip("Write report.json and the charts (PNG) to a folder")
        self.export_button.clicked.connect(lambda: self.export_report())
        self.summary_label = QLabel(objectName="jobsSummary")
        # a lab database's jobs run on the lab's workers unless this computer joins in
        self.run_here_check = QCheckBox("Run jobs on this computer too", objectName="runHere")
        self.run_here_check.setToolTip(
            "A lab database's queued jobs are run by its workers (analogy-studio worker serve "
            "on the lab's GPU servers). Tick to let this computer claim them as well."
        )
        self.run_here_check.setChecked(StudioSettings().run_lab_jobs_here())
        self.run_here_check.toggled.connect(self._run_here_toggled)
        self.run_here_check.setVisible(False)

        top = QHBoxLayout()
        for b in (self.new_button, self.cancel_button, self.rerun_button, self.resume_button,
                  self.export_button):  # fmt: skip
            top.addWidget(b)
        top.addSpacing(12)
        top.addWidget(self.summary_label, 1)
        top.addWidget(self.run_here_check)

        self.model = JobTableModel(self)
        self.table = QTableView(objectName="jobTable")
        self.table.setModel(self.model)
        self.table.setItemDelegateForColumn(COL_PROGRESS, ProgressDelegate(self.table))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(24)
        self.table.setAlternatingRowColors(True)
        # the short columns fit what they say (a few jobs: cheap), the progress bar is as wide
        # as a running job's text (PROGRESS_SAMPLE) and grows for a longer one, and the title
        # takes the rest (issue 28: at 1280 px the progress text was cut)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(COL_PROGRESS, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(
            COL_PROGRESS,
            self.table.fontMetrics().horizontalAdvance(PROGRESS_SAMPLE) + ProgressDelegate.PADDING,
        )
        header.setSectionResizeMode(COL_TITLE, QHeaderView.ResizeMode.Stretch)
        self.table.selectionModel().currentRowChanged.connect(lambda *_: self._on_selected())

        # the selected job
        self.job_title = QLabel(objectName="jobTitle")
        self.job_title.setTextFormat(Qt.TextFormat.RichText)
        self.job_title.setWordWrap(True)
        self.job_title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.log_view = QPlainTextEdit(objectName="jobLog", readOnly=True)
        self.log_view.setMaximumBlockCount(_LOG_LINES)
        self.log_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.log_view.setPlaceholderText("The job's log appears here.")
        self.outcome_label = QLabel(objectName="jobOutcomeLabel")
        self.outcome_view = QPlainTextEdit(objectName="jobOutcome", readOnly=True)
        self.outcome_view.setMaximumHeight(140)
        log_page = QWidget()
        ll = QVBoxLayout(log_page)
        ll.setContentsMargins(4, 4, 4, 4)
        ll.addWidget(self.log_view, 1)
        ll.addWidget(self.outcome_label)
        ll.addWidget(self.outcome_view)

        self.summary_table, self.summary_model = _table(
            "modelSummary",
            ("Model", "Accuracy", "95% CI", "Chance", "Over chance", "p", "n", "Seeds",
             "Flagged groups", "Flagged puzzles"),
        )  # fmt: skip
        self.report_notes = QLabel(objectName="reportNotes", wordWrap=True)
        self.report_notes.setTextFormat(Qt.TextFormat.RichText)
        summary_page = QWidget()
        sl = QVBoxLayout(summary_page)
        sl.setContentsMargins(4, 4, 4, 4)
        sl.addWidget(self.summary_table, 1)
        sl.addWidget(self.report_notes)

        self.plot_tabs = QTabWidget(objectName="plotTabs")
        self.plot_tabs.setDocumentMode(True)
        self.plot_status = QLabel(objectName="plotStatus", alignment=Qt.AlignmentFlag.AlignCenter)
        plots_page = QWidget()
        pl = QVBoxLayout(plots_page)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.addWidget(self.plot_status)
        pl.addWidget(self.plot_tabs, 1)

        self.flagged_table, self.flagged_model = _table(
            "flaggedPuzzles", ("Puzzle", "Model", "Confidence", "Seeds", "Why")
        )
        self.flagged_table.horizontalHeader().setStretchLastSection(True)
        self.flagged_table.activated.connect(self._on_flagged_activated)
        self.flagged_hint = QLabel(objectName="flaggedHint", wordWrap=True)
        flagged_page = QWidget()
        fl = QVBoxLayout(flagged_page)
        fl.setContentsMargins(4, 4, 4, 4)
        fl.addWidget(self.flagged_hint)
        fl.addWidget(self.flagged_table, 1)

        self.group_flags_table, self.group_flags_model = _table(
            "groupFlags", ("Model", "By", "Value", "n", "Accuracy", "Chance", "Excess points",
                           "p", "Holm p", "Why"),
        )  # fmt: skip
        self.group_flags_table.horizontalHeader().setStretchLastSection(True)
        self.group_flags_hint = QLabel(objectName="groupFlagsHint", wordWrap=True)
        groups_page = QWidget()
        gl = QVBoxLayout(groups_page)
        gl.setContentsMargins(4, 4, 4, 4)
        gl.addWidget(self.group_flags_hint)
        gl.addWidget(self.group_flags_table, 1)

        self.detail_tabs = QTabWidget(objectName="jobDetailTabs")
        self.detail_tabs.addTab(log_page, "Log")
        self.detail_tabs.addTab(summary_page, "Summary")
        self.detail_tabs.addTab(plots_page, "Plots")
        self.detail_tabs.addTab(flagged_page, "Flagged puzzles")
        self.detail_tabs.addTab(groups_page, "Split flags")
        self.detail_tabs.currentChanged.connect(lambda _i: self._show_plots_if_visible())

        detail = QWidget()
        dl = QVBoxLayout(detail)
        dl.setContentsMargins(0, 0, 0, 0)
        dl.addWidget(self.job_title)
        dl.addWidget(self.detail_tabs, 1)

        self.splitter = QSplitter(Qt.Orientation.Vertical, objectName="dashboardSplitter")
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(detail)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setSizes([200, 600])

        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.splitter, 1)
        self._show_job(None)

    # ---- the project's jobs ----------------------------------------------------------------
    def start_host(self) -> None:
        """Start driving the open project's jobs: jobs a closed studio left running become
        interrupted (listed in the summary until one is touched)."""
        self._closed = False
        lab = self.studio.project.is_database
        self.run_here_check.setVisible(lab)
        try:
            self.controller.start(
                self.studio.project.target, run_jobs=not lab or self.run_here_check.isChecked()
            )
        except JOB_ERRORS as e:
            self.summary_label.setText(f"Background jobs are unavailable: {e}")
            self._set_enabled_all(False)

    def _run_here_toggled(self, run: bool) -> None:
        StudioSettings().set_run_lab_jobs_here(run)
        if self.controller.host is not None and self.studio.project.is_database:
            self.controller.host.max_running = 1 if run else 0

    def shutdown(self) -> None:
        """The window closes or the project changes: stop polling, kill running children and
        record their jobs as interrupted (resumable). Safe to call twice."""
        self._closed = True
        try:
            self.controller.shutdown()
        except JOB_ERRORS as e:
            self.summary_label.setText(f"Stopping the jobs failed: {e}")

    def closeEvent(self, event: QCloseEvent) -> None:
        """Closed on its own (not as a tab of the main window, which calls :meth:`shutdown`):
        stop its jobs too."""
        self.shutdown()
        super().closeEvent(event)

    def project_switched(self) -> None:
        """The window opened another project: its jobs replace this one's."""
        self.shutdown()
        self._figures.clear()
        self._building.clear()
        self.model.set_jobs([])
        self._show_job(None)
        self.start_host()

    @property
    def host(self) -> WorkerHost | None:
        """The project's worker host (None while jobs are unavailable)."""
        return self.controller.host

    @property
    def queue(self) -> JobQueue | None:
        return self.controller.queue

    # ---- refreshing ------------------------------------------------------------------------
    def refresh(self, *, force: bool = True) -> None:
        """Read the jobs now (see :meth:`JobController.refresh`); the list and the selected
        job follow. Errors (a locked or vanished file) show in the summary line; the next
        tick tries again."""
        self.controller.refresh(force=force)

    def _show_jobs(self, jobs: list[Any]) -> None:
        """The controller read the jobs: update the list, the selection and the summary."""
        selected = self.selected_id()
        self.model.set_jobs(jobs)
        self._fit_progress_column()
        if selected is not None and self.selected_id() != selected:
            self.select_job(selected)
        elif selected is None and jobs and self.selected_id() is None and self._shown_id is None:
            self.select_job(jobs[0].id)
        self._update_summary(jobs)
        self._refresh_shown()
        self._update_buttons()

    def _fit_progress_column(self) -> None:
        """Widen the Progress column to a longer text than PROGRESS_SAMPLE (never narrow it:
        the time left changes every second, the columns must not jump)."""
        delegate = self.table.itemDelegateForColumn(COL_PROGRESS)
        option = QStyleOptionViewItem()
        option.initFrom(self.table)
        option.fontMetrics = self.table.fontMetrics()  # type: ignore[attr-defined]
        need = max(
            (
                delegate.sizeHint(option, self.model.index(r, COL_PROGRESS)).width()
                for r in range(self.model.rowCount())
            ),
            default=0,
        )
        header = self.table.horizontalHeader()
        if need > header.sectionSize(COL_PROGRESS):
            header.resizeSection(COL_PROGRESS, need)

    def _on_read_failed(self, message: str) -> None:
        self.summary_label.setText(f"Cannot read the jobs: {message}")

    def _update_summary(self, jobs: Sequence[Any]) -> None:
        counts: dict[str, int] = {}
        for j in jobs:
            counts[j.status] = counts.get(j.status, 0) + 1
        parts = [f"{counts[s]} {s}" for s in ("running", "queued") if counts.get(s)]
        text = " · ".join(parts) if parts else "No job running"
        lab_only = self.run_here_check.isVisible() and not self.run_here_check.isChecked()
        if counts.get("queued") and lab_only:
            text += " — queued jobs wait for a lab worker (analogy-studio worker serve)"
        waiting = self.controller.waiting_interrupted()
        if waiting:
            ids = ", ".join(str(i) for i in waiting)
            text += f" — interrupted when the studio closed: job {ids} (Resume or Re-run)"
        self.summary_label.setText(text)

    # ---- selection -------------------------------------------------------------------------
    def selected_id(self) -> int | None:
        idx = self.table.currentIndex()
        if not idx.isValid():
            return None
        return self.model.job(idx.row()).id

    def selected_job(self) -> Any:
        idx = self.table.currentIndex()
        return self.model.job(idx.row()) if idx.isValid() else None

    def select_job(self, job_id: int) -> bool:
        row = self.model.row_of(job_id)
        if row is None:
            return False
        self.table.selectRow(row)
        self.table.setCurrentIndex(self.model.index(row, COL_TITLE))
        return True

    def _on_selected(self) -> None:
        job = self.selected_job()
        if job is None or job.id != self._shown_id:  # not a re-selection after a list reset
            self._show_job(job)
        self._update_buttons()

    def _update_buttons(self) -> None:
        job = self.selected_job()
        alive = self.controller.running
        self.new_button.setEnabled(alive)
        self.cancel_button.setEnabled(
            alive and job is not None and job.status in ("queued", "running")
            and not job.cancel_requested
        )  # fmt: skip
        self.rerun_button.setEnabled(alive and job is not None and job.final)
        self.resume_button.setEnabled(
            alive and job is not None and job.status in ("failed", "cancelled", "interrupted")
        )
        self.export_button.setEnabled(job is not None and is_report(job.result))

    def _set_enabled_all(self, enabled: bool) -> None:
        for b in (self.new_button, self.cancel_button, self.rerun_button, self.resume_button):
            b.setEnabled(enabled)

    # ---- the selected job's details ---------------------------------------------------------
    def _show_job(self, job: Any) -> None:
        """Show a (newly) selected job: header, full log tail, outcome; result tabs."""
        self._shown_id = None if job is None else job.id
        self._shown_job = None
        self._log_seq = 0
        self.log_view.clear()
        self._tables_for = None
        self._plots_for = None
        self._clear_plots()
        if job is None:
            self.job_title.setText("<i>No job selected. New job… runs baselines in the "
                                   "background.</i>")  # fmt: skip
            self.outcome_label.hide()
            self.outcome_view.hide()
            for i in range(1, self.detail_tabs.count()):
                self.detail_tabs.setTabEnabled(i, False)
            return
        self._refresh_shown(job)

    def _refresh_shown(self, job: Any = None) -> None:
        if self._shown_id is None:
            return
        if job is None:
            row = self.model.row_of(self._shown_id)
            if row is None:
                return
            job = self.model.job(row)
        changed = job != self._shown_job
        if changed:
            self._shown_job = job
            self._show_header(job)
            self._show_outcome(job)
            has_report = job.status == "done" and is_report(job.result)
            for i in range(1, self.detail_tabs.count()):
                self.detail_tabs.setTabEnabled(i, has_report)
            if has_report and self._tables_for != job.id:
                self._fill_result_tables(job)
            if not has_report and self.detail_tabs.currentIndex() > 0:
                self.detail_tabs.setCurrentIndex(0)
            self._show_plots_if_visible()
        if changed or job.status in ("running", "queued"):
            self._append_logs(job.id)

    def _show_header(self, job: Any) -> None:
        colour = STATUS_COLOURS.get(job.status, "#000")
        status = self.model.status_text(job)
        bits = [
            f"<b>Job {job.id}: {_html(job.title)}</b>",
            f"<span style='color:{colour}'><b>{status}</b></span>",
        ]
        if job.status == "running":
            left = self.model.time_left(job, datetime.now(UTC))
            bits.append(
                f"{job.progress:.0%}"
                + (f" · {left}" if left else "")
                + (f" · {_html(job.message)}" if job.message else "")
            )
        if job.device:
            bits.append(f"device: {_html(job.device)}")
        machine = job_machine_text(job, self.model.machine)
        if machine:
            bits.append(f"machine: {_html(machine)}")
        seconds = job_seconds(job)
        if seconds is not None:
            bits.append(duration_text(seconds))
        if job.attempts > 1:
            bits.append(f"attempt {job.attempts}")
        if job.checkpoint and job.status in ("failed", "cancelled", "interrupted"):
            bits.append("resumable from its checkpoint")
        self.job_title.setText(" — ".join(bits))

    def _show_outcome(self, job: Any) -> None:
        if job.error:
            self.outcome_label.setText("<b style='color:#b00020'>Error</b>")
            self.outcome_view.setPlainText(job.error)
            self.outcome_view.setStyleSheet("color: #b00020;")
        elif job.status == "done" and job.result is not None and not is_report(job.result):
            self.outcome_label.setText("<b>Result</b>")
            self.outcome_view.setPlainText(json.dumps(job.result, indent=1)[:20000])
            self.outcome_view.setStyleSheet("")
        elif job.status in ("cancelled", "interrupted"):
            self.outcome_label.setText(f"<b>{job.status.capitalize()}</b>")
            self.outcome_view.setPlainText(
                "Cancelled on request." if job.status == "cancelled"
                else "The studio closed while the job ran; Resume continues it."
            )  # fmt: skip
            self.outcome_view.setStyleSheet("")
        else:
            self.outcome_label.hide()
            self.outcome_view.hide()
            return
        self.outcome_label.show()
        self.outcome_view.show()

    def _append_logs(self, job_id: int) -> None:
        if self.queue is None:
            return
        try:
            lines = self.queue.logs(job_id, after=self._log_seq)
        except (StudioError, SQLAlchemyError):
            return
        if not lines:
            return
        self._log_seq = lines[-1].seq
        text = "\n".join(
            f"{local_time(ln.at)}  " + ("" if ln.level == "info" else f"{ln.level}: ") + ln.line
            for ln in lines[-_LOG_LINES:]
        )
        bar = self.log_view.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 2
        self.log_view.appendPlainText(text)
        if at_end:
            bar.setValue(bar.maximum())

    # ---- result tables ---------------------------------------------------------------------
    def _fill_result_tables(self, job: Any) -> None:
        from studio.baselines.plots import model_summary_rows

        report = job.result
        self._tables_for = job.id
        rows = []
        for r in model_summary_rows(report):
            name = _item(f"{r.label} ({r.model})" if r.label != r.model else r.model, r.label)
            name.setData(QColor(r.colour), Qt.ItemDataRole.DecorationRole)
            entry = report["models"][r.model]
            name.setToolTip(str(entry.get("recipe") or ""))
            ci = (
                _item(f"{r.ci_low:.1%} – {r.ci_high:.1%}", r.ci_low)
                if not math.isnan(r.ci_low) else _item("—", -1.0)
            )  # fmt: skip
            rows.append([
                name, _number(r.accuracy, ".1%"), ci, _number(r.chance, ".0%"),
                _number(r.excess_points, "+.1f"), _p_text(r.p_value), _number(r.n, ","),
                _number(r.seeds, "d"), _number(r.flagged_groups, "d"),
                _number(r.flagged_puzzles, "d"),
            ])  # fmt: skip
        _fill(self.summary_table, self.summary_model, rows)
        notes = []
        skipped = report.get("skipped") or []
        if skipped:
            notes.append("Skipped: " + "; ".join(
                f"{_html(str(s.get('model', '?')))} ({_html(str(s.get('reason', '')))})"
                for s in skipped
            ))  # fmt: skip
        notes.append(_html(_caption(report)))
        ran = compute_text(report)
        if ran:
            notes.append(_html(ran))
        self.report_notes.setText("<br>".join(notes))

        flags = report.get("flags") or {}
        set_id = report_set_id(job)
        frows = []
        for f in flags.get("puzzles") or []:
            reason = str(f.get("reason") or "")  # the answers-only probes say why
            pid = _item(str(f.get("id", "")), tip=reason)
            pid.setData(str(f.get("id", "")), PUZZLE_ROLE)
            seeds = f"{f.get('seeds_correct', '?')}/{f.get('seeds', '?')}"
            why = reason or flag_reason(f)
            frows.append([pid, _item(str(f.get("model", "")), tip=reason),
                          _number(f.get("confidence"), ".2f"),
                          _item(seeds, f.get("seeds_correct", 0)),
                          _item(why, tip=why)])  # fmt: skip
        _fill(self.flagged_table, self.flagged_model, frows)
        puzzles = count_text(len(frows), "shortcut-prone puzzle")
        if not frows:
            self.flagged_hint.setText(
                "No puzzle was answered from a shortcut: no context-blind or partial-input "
                "model chose the key confidently in every seed."
            )
        elif set_id is None:
            self.flagged_hint.setText(
                f"{puzzles} (from a split folder: not in a puzzle set of this project)."
            )
        else:
            self.flagged_hint.setText(
                f"{puzzles} in set {set_id}: double-click or Enter opens one on the "
                "curator's board."
            )

        grows = []
        for g in flags.get("groups") or []:
            why = str(g.get("reason") or "")
            shown = why or group_flag_reason(g)
            grows.append([
                _item(str(g.get("model", "")), tip=why), _item(str(g.get("by", ""))),
                _item(str(g.get("value", "")), tip=why), _number(g.get("n"), ","),
                _number(g.get("accuracy"), ".1%"), _number(g.get("chance"), ".0%"),
                _number(g.get("excess_points"), "+.1f"), _p_text(g.get("p_value")),
                _p_text(g.get("p_holm")), _item(shown, tip=shown),
            ])  # fmt: skip
        _fill(self.group_flags_table, self.group_flags_model, grows)
        if grows:
            self.group_flags_hint.setText(
                f"{count_text(len(grows), 'rule or concept', 'rules or concepts')} where a "
                "context-blind or partial-input model beats chance by more than 5 points "
                "(Holm-corrected p < 0.05)."
            )
        else:
            self.group_flags_hint.setText(
                "No rule or concept where a context-blind or partial-input model beats chance "
                "by more than 5 points with significance."
            )

    def _on_flagged_activated(self, index: QModelIndex) -> None:
        pid = self.flagged_model.item(index.row(), 0).data(PUZZLE_ROLE)
        job = self._shown_job
        if pid is None or job is None:
            return
        set_id = report_set_id(job)
        if set_id is None:
            self.flagged_hint.setText(
                f"Puzzle {pid} comes from a split folder, not a puzzle set of this project: "
                "import the split to open it on the curator's board."
            )
            return
        self.open_puzzle.emit(set_id, str(pid))

    # ---- plots -----------------------------------------------------------------------------
    def _show_plots_if_visible(self) -> None:
        """Charts are built only for a done job whose Plots tab is shown (in a worker thread,
        cached for the last few jobs), then put on Qt canvases."""
        job = self._shown_job
        if (
            job is None or job.status != "done" or not is_report(job.result)
            or self.detail_tabs.currentIndex() != 2 or self._plots_for == job.id
        ):  # fmt: skip
            return
        figs = self._figures.get(job.id)
        if figs is not None:
            self._figures.move_to_end(job.id)
            self._put_canvases(job.id, figs)
            return
        self.plot_status.setText("Drawing the charts…")
        self.plot_status.show()
        if job.id in self._building:
            return
        self._building.add(job.id)
        ThreadJob.call(
            _build_figures,
            job.id,
            job.result,
            succeeded=self._on_figures_built,
            errored=self._on_figures_failed,
            parent=self,
        )

    def _on_figures_built(self, value: tuple[int, dict[str, Any]]) -> None:
        job_id, figs = value
        self._building.discard(job_id)
        if self._closed:
            return
        self._figures[job_id] = figs
        while len(self._figures) > _FIGURE_CACHE:
            self._figures.popitem(last=False)
        if self._shown_id == job_id:
            self._show_plots_if_visible()

    def _on_figures_failed(self, error: BaseException) -> None:
        self._building.clear()
        self.plot_status.setText(f"The charts could not be drawn: {error}")
        self.plot_status.show()

    def _clear_plots(self) -> None:
        while self.plot_tabs.count():
            page = self.plot_tabs.widget(0)
            self.plot_tabs.removeTab(0)
            page.deleteLater()
        self.plot_status.setText("")
        self.plot_status.hide()

    def _put_canvases(self, job_id: int, figs: Mapping[str, Any]) -> None:
        from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg

        from studio.baselines.plots import PLOT_TITLES

        self._clear_plots()
        self._plots_for = job_id
        if not figs:
            self.plot_status.setText("This report has no data to chart.")
            self.plot_status.show()
        for name, fig in figs.items():
            canvas = FigureCanvasQTAgg(fig)
            canvas.setObjectName(f"plot_{name}")
            # the chart takes the room the window gives it (and redraws at that size)
            canvas.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
            # at least 3/4 of the figure's natural size: a small window scrolls instead of
            # squashing the labels
            w, h = fig.get_size_inches() * fig.dpi
            canvas.setMinimumSize(int(w * 0.75), int(h * 0.75))
            scroll = QScrollArea(objectName=f"plotScroll_{name}")
            scroll.setWidget(canvas)
            scroll.setWidgetResizable(True)
            self.plot_tabs.addTab(scroll, PLOT_TITLES.get(name, name))

    def plot_canvases(self) -> dict[str, Any]:
        """The shown charts' canvases by figure name (for tests and screenshots)."""
        out = {}
        for i in range(self.plot_tabs.count()):
            scroll = self.plot_tabs.widget(i)
            canvas = scroll.widget() if isinstance(scroll, QScrollArea) else None
            if canvas is not None:
                out[canvas.objectName().removeprefix("plot_")] = canvas
        return out

    # ---- commands --------------------------------------------------------------------------
    def new_job(self) -> BaselineJobDialog | None:
        """Open the new-job dialog (non-modal); Submit queues the job."""
        if not self.controller.running:
            return None
        try:
            sets = self.studio.project.puzzle_sets()
        except (StudioError, SQLAlchemyError) as e:
            self._error("Cannot list the puzzle sets", e)
            return None
        project = self.studio.project
        dlg = BaselineJobDialog(None if project.is_database else project.path, sets, self)
        dlg.accepted.connect(lambda: self.submit_baseline(dlg.params(), dlg.job_title()))
        dlg.finished.connect(lambda _r: dlg.deleteLater())
        self.job_dialog = dlg
        dlg.open()
        return dlg

    def submit(self, kind: str, params: dict[str, Any], title: str = "") -> int | None:
        """Queue a job and select it; the next tick starts it."""
        if not self.controller.running:
            return None
        try:
            job_id = self.controller.submit(kind, params, title)
        except JOB_ERRORS as e:
            self._error("Cannot queue the job", e)
            return None
        self.select_job(job_id)
        return job_id

    def submit_baseline(self, params: dict[str, Any], title: str = "") -> int | None:
        return self.submit("baseline", params, title)

    def cancel_selected(self) -> None:
        job = self.selected_job()
        if job is None or not self.controller.running:
            return
        try:
            self.controller.cancel(job.id)
        except JOB_ERRORS as e:
            self._error("Cannot cancel the job", e)

    def rerun_selected(self) -> int | None:
        """A new job with the selected one's kind and parameters, from scratch."""
        job = self.selected_job()
        if job is None or not self.controller.running:
            return None
        try:
            new_id = self.controller.restart(job.id)
        except JOB_ERRORS as e:
            self._error("Cannot re-run the job", e)
            return None
        self.select_job(new_id)
        return new_id

    def resume_selected(self) -> None:
        job = self.selected_job()
        if job is None or not self.controller.running:
            return
        try:
            self.controller.resume(job.id)
        except JOB_ERRORS as e:
            self._error("Cannot resume the job", e)

    def export_report(self, folder: str | None = None) -> None:
        """Write the selected job's report.json and charts (plots/*.png) to a folder, in a
        worker thread; :attr:`exported` fires with the JSON's path."""
        job = self.selected_job()
        if job is None or not is_report(job.result):
            return
        if folder is None:
            settings = StudioSettings()
            folder = QFileDialog.getExistingDirectory(
                self, "Export the baseline report to", settings.dialog_dir("exports")
            )
            if not folder:
                return
            settings.remember_dir("exports", folder)
        self.export_button.setEnabled(False)
        ThreadJob.call(
            _export,
            job.result,
            folder,
            succeeded=self._on_exported,
            errored=self._on_export_failed,
            parent=self,
        )

    def _on_exported(self, path: str) -> None:
        self._update_buttons()
        self.summary_label.setText(f"Report exported to {path}")
        self.exported.emit(path)

    def _on_export_failed(self, error: BaseException) -> None:
        self._update_buttons()
        self._error("Export failed", error)

    def _error(self, title: str, error: BaseException) -> None:
        window = self.window()
        show = getattr(window, "show_error", None)
        if callable(show):
            show(title, error)
            return
        box = QMessageBox(QMessageBox.Icon.Warning, title, str(error).split("\n")[0], parent=self)
        box.setObjectName("errorBox")
        box.open()


# ---- off the main thread -------------------------------------------------------------------------
# studio.baselines.plots imports matplotlib: imported here only when a report's charts, export
# or caption are wanted, so the window starts without it
def _build_figures(job_id: int, report: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    from studio.baselines.plots import figures

    return job_id, figures(report)


def _export(report: Mapping[str, Any], folder: str) -> str:
    from studio.baselines.plots import write_report_bundle

    return str(write_report_bundle(report, folder))


def _caption(report: Mapping[str, Any]) -> str:
    from studio.baselines.plots import report_caption

    return report_caption(report)


def _html(text: str) -> str:
    """Text put in a rich-text label (the job's header, the notes under the summary)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
