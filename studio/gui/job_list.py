"""The Baselines tab's list of jobs, as a Qt model (split out of dashboard.py, issue 27).

One row per job of the project's queue, newest first, as the dashboard's
:class:`~studio.gui.job_controller.JobController` last read them: its id and title, its status
(in the status's colour; "cancelling…", "stalled" or the attempt where that is what it is
doing), its progress, the device it asked for, the machine whose worker ran it, when it
started and how long it has run. :class:`ProgressDelegate` paints the Progress column as a
bar with the share done, the time left and the job's last message ("blind · seed 2 ·
epoch 3/8").

A model of its own because the list is refreshed every 250 ms while the jobs run:
:meth:`JobTableModel.set_jobs` touches only the rows whose record changed (and the running
jobs' Duration), and the time left is estimated from what the list itself saw (the rate since
a job was first seen working), so the estimate lives with the rows, not in the tab.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QSize,
    Qt,
)
from PySide6.QtGui import QBrush, QColor, QPainter
from PySide6.QtWidgets import (
    QApplication,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QStyleOptionViewItem,
)

from studio.core.progress import UNIT_SHARE
from studio.core.progress import time_left_text as seconds_text
from studio.worker.jobtext import (
    duration_text,
    job_machine_text,
    job_seconds,
    local_time,
    time_left_text,
)

__all__ = [
    "COL_DEVICE",
    "COL_DURATION",
    "COL_ID",
    "COL_MACHINE",
    "COL_PROGRESS",
    "COL_STARTED",
    "COL_STATUS",
    "COL_TITLE",
    "JOB_COLUMNS",
    "JOB_ROLE",
    "PROGRESS_ROLE",
    "PROGRESS_SAMPLE",
    "STATUS_COLOURS",
    "JobTableModel",
    "ProgressDelegate",
    "bar_text",
]

#: Columns of the job list, in order ("Machine": which worker's machine ran the job).
JOB_COLUMNS = ("ID", "Title", "Status", "Progress", "Device", "Machine", "Started", "Duration")
(
    COL_ID,
    COL_TITLE,
    COL_STATUS,
    COL_PROGRESS,
    COL_DEVICE,
    COL_MACHINE,
    COL_STARTED,
    COL_DURATION,
) = range(8)
#: Roles of the job list's cells.
JOB_ROLE = Qt.ItemDataRole.UserRole + 1  # the JobRecord
PROGRESS_ROLE = Qt.ItemDataRole.UserRole + 2  # (fraction, text) for the progress delegate

#: the Status column's colour for each status (and the selected job's header's)
STATUS_COLOURS = {
    "queued": "#555555",
    "running": "#0057b8",
    "done": "#1b7a2f",
    "failed": "#b00020",
    "cancelled": "#7a7a7a",
    "interrupted": "#b35c00",
}


class JobTableModel(QAbstractTableModel):
    """The jobs, newest first. :meth:`set_jobs` replaces them; rows whose record did not
    change are not touched, so a refresh every 250 ms repaints only what moved."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.jobs: list[Any] = []
        self._rows: dict[int, int] = {}
        self._now = datetime.now(UTC)
        #: each running job's message when first seen running: no time left is told until it
        #: changes (a unit finished) or a tenth is done (job_seconds_left)
        self.first_messages: dict[int, str] = {}
        #: each running job's (time, share) when first seen working (a share above 0): the
        #: rate the time left comes from, start-up never in it
        self.work_starts: dict[int, tuple[datetime, float]] = {}
        #: this computer's name, as workers record it (the Machine column)
        import socket

        self.machine = socket.gethostname()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.jobs)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(JOB_COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return JOB_COLUMNS[section]
        return None

    def job(self, row: int) -> Any:
        return self.jobs[row]

    def time_left(self, job: Any, now: datetime | None = None) -> str:
        """``3 min 05 s left`` once one unit of the job has finished since this list first
        saw it working (its message moved on, or a tenth more done), at the rate since then;
        a job first seen a tenth or more done has its own rate since it started; else ``""``
        (issue 28 and its review: start-up made the first estimates hours long)."""
        now = now or self._now
        if job.status != "running" or job.cancel_requested:
            return ""
        fraction = float(job.progress or 0.0)
        start = self.work_starts.get(job.id)
        if start is not None:
            t0, f0 = start
            unit = job.message != self.first_messages.get(job.id) or fraction - f0 >= UNIT_SHARE
            elapsed = (now - t0).total_seconds()
            if unit and fraction > f0 and elapsed > 0 and fraction < 1.0:
                return f"{seconds_text((1.0 - fraction) * elapsed / (fraction - f0))} left"
            if f0 < UNIT_SHARE:
                return ""
        return time_left_text(job, now) if fraction >= UNIT_SHARE else ""

    def row_of(self, job_id: int) -> int | None:
        return self._rows.get(job_id)

    def set_jobs(self, jobs: Sequence[Any], now: datetime | None = None) -> None:
        self._now = now or datetime.now(UTC)
        jobs = list(jobs)
        for j in jobs:
            working = j.status == "running" and float(j.progress or 0.0) > 0.0
            if working and j.id not in self.work_starts:
                self.work_starts[j.id] = (self._now, float(j.progress))
                self.first_messages[j.id] = str(j.message or "")
        if [j.id for j in jobs] != [j.id for j in self.jobs]:
            self.beginResetModel()
            self.jobs = jobs
            self._rows = {j.id: i for i, j in enumerate(jobs)}
            self.endResetModel()
            return
        old = self.jobs
        self.jobs = jobs
        last = len(JOB_COLUMNS) - 1
        for row, (before, after) in enumerate(zip(old, jobs, strict=True)):
            if before != after:
                self.dataChanged.emit(self.index(row, 0), self.index(row, last))
            elif after.status == "running":  # the clock moves
                idx = self.index(row, COL_DURATION)
                self.dataChanged.emit(idx, idx)

    def status_text(self, job: Any) -> str:
        if job.status == "running" and job.cancel_requested:
            return "cancelling…"
        if getattr(job, "stalled", False):  # no progress for its stall time (worker host)
            return "stalled"
        if job.status == "running" and job.attempts > 1:
            return f"running (attempt {job.attempts})"
        return job.status

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> Any:
        if not index.isValid():
            return None
        job = self.jobs[index.row()]
        col = index.column()
        if role == JOB_ROLE:
            return job
        if role == Qt.ItemDataRole.DisplayRole:
            if col == COL_ID:
                return str(job.id)
            if col == COL_TITLE:
                return job.title
            if col == COL_STATUS:
                return self.status_text(job)
            if col == COL_PROGRESS:
                bits = [f"{job.progress:.0%}", self.time_left(job), job.message]
                return " · ".join(b for b in bits if b)
            if col == COL_DEVICE:
                return job.device or "—"
            if col == COL_MACHINE:
                return job_machine_text(job, self.machine) or "—"
            if col == COL_STARTED:
                return local_time(job.started_at or job.created_at, self._now)
            if col == COL_DURATION:
                return duration_text(job_seconds(job, self._now))
        if role == PROGRESS_ROLE and col == COL_PROGRESS:
            left = self.time_left(job)
            return job.progress, job.status, " · ".join(b for b in (left, job.message) if b)
        if role == Qt.ItemDataRole.ForegroundRole and col == COL_STATUS:
            return QBrush(QColor(STATUS_COLOURS.get(job.status, "#000000")))
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_ID, COL_DURATION):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            tip = [f"Job {job.id} ({job.kind}): {self.status_text(job)}"]
            pid, peak = getattr(job, "pid", None), getattr(job, "peak_rss", None)
            if getattr(job, "worker", ""):  # which worker claimed it
                tip.append(f"worker {job.worker}")
            if pid is not None:  # the worker process and the most memory it held
                tip.append(f"process {pid}" + (f", peak {peak // 2**20} MB" if peak else ""))
            if job.message:
                tip.append(job.message)
            if job.error:
                tip.append(job.error.splitlines()[0])
            return "\n".join(tip)
        return None


#: A long text of a running job's bar (a model of the similarity group, its seed and epoch):
#: the Progress column is at least as wide, so the time left and the step are read whole
#: (issue 28: "the job progress cell" was cut).
PROGRESS_SAMPLE = "100% · 10 min 00 s left · feature-similarity · seed 2 · epoch 10/10"


def bar_text(value: tuple[float, str, str]) -> str:
    """What a job's progress bar says: the share done, and for a running job the time left
    and its step; ``waiting`` for a queued one."""
    fraction, status, message = value
    if status == "queued":
        return "waiting"
    text = f"{fraction:.0%}"
    if message and status == "running":
        text += f" · {message}"
    return text


class ProgressDelegate(QStyledItemDelegate):
    """Paints the Progress column as a progress bar with the percentage and the job's last
    message ("blind · seed 2 · epoch 3/8"); its size hint is that text's, so a column sized
    to it shows it whole."""

    #: room the bar takes around its text: 2 px inset each side, 4 px text padding each side
    PADDING = 12

    def paint(
        self,
        painter: QPainter,
        option: QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        value = index.data(PROGRESS_ROLE)
        if value is None:
            super().paint(painter, option, index)
            return
        fraction = value[0]
        bar = QStyleOptionProgressBar()
        bar.rect = QRect(option.rect).adjusted(2, 2, -2, -2)  # type: ignore[attr-defined]
        bar.minimum = 0
        bar.maximum = 1000
        bar.progress = round(1000 * max(0.0, min(1.0, float(fraction))))
        bar.textVisible = True
        bar.text = option.fontMetrics.elidedText(  # type: ignore[attr-defined]
            bar_text(value), Qt.TextElideMode.ElideRight, bar.rect.width() - 8
        )
        # Qt 6 styles read the orientation from State_Horizontal (the option's ``orientation``
        # is gone): without it Fusion fills the bar bottom-up, a 13% fill of a row 20 pixels
        # high is a sliver under the frame and the bar looks empty
        bar.state = option.state | QStyle.StateFlag.State_Horizontal  # type: ignore[attr-defined]
        bar.palette = option.palette  # type: ignore[attr-defined]
        bar.fontMetrics = option.fontMetrics  # type: ignore[attr-defined]
        style = option.widget.style() if option.widget else QApplication.style()  # type: ignore[attr-defined]
        style.drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter, option.widget)  # type: ignore[attr-defined]

    def sizeHint(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QSize:
        size = super().sizeHint(option, index)
        value = index.data(PROGRESS_ROLE)
        if value is None:
            return size
        fm = option.fontMetrics  # type: ignore[attr-defined]
        return QSize(max(fm.horizontalAdvance(bar_text(value)) + self.PADDING, 160), size.height())
