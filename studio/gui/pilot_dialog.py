"""Puzzles ▸ Pilot study…: a curated set's puzzles as a pilot that runs from disk in a browser.

:class:`PilotDialog` chooses the set, which of its puzzles (every one by default: a lab pilots
drafts before approving them), the parts to pilot, the design (participants, puzzles each,
answers per puzzle, practice, attention checks) and the folder, says while the numbers are
typed whether they cover the puzzles, then runs :func:`studio.pilot.sets.pilot_set` — the
function ``pilot export PROJECT OUT --set N`` calls — on a worker thread (:class:`PilotJob`).
It shows the plan it wrote, and opens the folder or the experiment itself. Puzzles ▸ Import
pilot results… brings the participants' files back onto the board.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from studio.gui.export_dialog import STATUS_CHOICES, SetJobDialog
from studio.gui.jobs import ThreadJob
from studio.pilot.export import PilotOptions

if TYPE_CHECKING:
    from studio.app import Studio
    from studio.gui.settings import StudioSettings

PARTS = ("train", "val", "test")


class PilotJob(ThreadJob):
    """Runs ``pilot_set`` on a worker thread: ``progressed(done, total)`` per puzzle's
    pictures, then ``succeeded(summary)`` or ``failed(message)`` (a cancel too, in words)."""

    progressed = Signal(int, int)
    DELIVER_AFTER_CANCEL = True  # a pilot written before the cancel was noticed is written

    def __init__(
        self,
        studio: Studio,
        request: dict[str, Any],
        lock: contextlib.AbstractContextManager[Any] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(request, parent)
        self.studio = studio
        self._lock = lock

    def _errored(self, e: BaseException) -> None:
        from studio.splits import Cancelled

        if isinstance(e, Cancelled):
            self.failed.emit("The pilot was cancelled; nothing was written.")
        else:
            self._fail(e)

    def _work(self) -> dict[str, Any]:
        from studio.pilot.sets import pilot_set

        r = self.request
        return pilot_set(
            self.studio,
            r["set_id"],
            r["out_dir"],
            r["options"],
            status=r["status"],
            progress=self.progressed.emit,
            should_stop=self._stop.is_set,
            lock=self._lock,
        )


class PilotDialog(SetJobDialog, QDialog):
    """Choose what to pilot, with whom and where; write it; show the plan (see the module)."""

    #: the export ended: True when a pilot folder was written
    finished_pilot = Signal(bool)
    FOLDER_SUFFIX = "-pilot"
    FOLDER_CAPTION = "Write the pilot to"

    def __init__(
        self,
        studio: Studio,
        settings: StudioSettings,
        *,
        set_id: int | None = None,
        lock: contextlib.AbstractContextManager[Any] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.studio = studio
        self.settings = settings
        self._lock = lock
        self.job: PilotJob | None = None
        self.summary: dict[str, Any] | None = None
        self._close_when_done = False
        self._auto_folder = ""
        self._summaries: dict[tuple[int, str], list[Any]] = {}
        self.setObjectName("pilotDialog")
        self.setWindowTitle("Pilot study")
        self.setMinimumWidth(640)

        intro = QLabel(
            "Pilot a puzzle set with people before publishing it: an experiment that runs from "
            "disk in any browser (jsPsych, no network) — instructions, practice with feedback, "
            "each participant's list with attention checks — plus the same plan for PsychoPy. "
            "Bring the saved files back with <i>Puzzles ▸ Import pilot results…</i>."
        )
        intro.setWordWrap(True)

        defaults = PilotOptions()
        self.set_combo = QComboBox(objectName="pilotSet")
        self.status_combo = QComboBox(objectName="pilotStatus")
        for key, text in sorted(STATUS_CHOICES, key=lambda kt: kt[0] != "any"):
            self.status_combo.addItem(text, key)
        self.part_checks = {}
        parts_row = QHBoxLayout()
        for part in PARTS:
            box = QCheckBox(part, objectName=f"pilotPart_{part}")
            box.setChecked(part in defaults.parts)
            box.toggled.connect(self._update_coverage)
            self.part_checks[part] = box
            parts_row.addWidget(box)
        parts_row.addStretch(1)

        def spin(name: str, value: int, low: int, high: int, tip: str) -> QSpinBox:
            box = QSpinBox(objectName=name)
            box.setRange(low, high)
            box.setValue(value)
            box.setToolTip(tip)
            box.valueChanged.connect(self._update_coverage)
            return box

        self.participants = spin(
            "pilotParticipants", defaults.participants, 1, 10_000, "Lists to make: one each"
        )
        self.per_participant = spin(
            "pilotPerParticipant", defaults.per_participant, 1, 500, "Puzzles in each list"
        )
        self.responses = spin(
            "pilotResponses",
            defaults.responses_per_item,
            1,
            100,
            "The fewest answers each piloted puzzle gets (the board judges from 3)",
        )
        self.practice = spin(
            "pilotPractice", defaults.practice, 0, 20, "Practice puzzles, from the unpiloted parts"
        )
        self.practice_failures = spin(
            "pilotPracticeFailures",
            defaults.practice_failures,
            1,
            20,
            "Failed practice attempts that end a session (KiVA: 3)",
        )
        self.catch = spin("pilotCatch", defaults.catch, 0, 20, "Attention checks in each list")
        design = QHBoxLayout()
        for label, box in (
            ("participants", self.participants),
            ("× puzzles each", self.per_participant),
            ("≥ answers per puzzle", self.responses),
        ):
            design.addWidget(box)
            design.addWidget(QLabel(label))
        design.addStretch(1)
        extras = QHBoxLayout()
        for label, box in (
            ("practice", self.practice),
            ("failures end it", self.practice_failures),
            ("attention checks", self.catch),
        ):
            extras.addWidget(box)
            extras.addWidget(QLabel(label))
        extras.addStretch(1)

        self.folder_edit = QLineEdit(objectName="pilotFolder")
        self.folder_edit.setPlaceholderText("a new or empty folder")
        self.choose_button = QPushButton("Choose…", objectName="choosePilotFolder")
        self.choose_button.setAutoDefault(False)  # Enter in a field never opens a file dialog
        self.choose_button.clicked.connect(self.choose_folder)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder_edit, 1)
        folder_row.addWidget(self.choose_button)

        form = QFormLayout()
        form.addRow("Puzzle set:", self.set_combo)
        form.addRow("Pilot:", self.status_combo)
        form.addRow("Parts:", parts_row)
        form.addRow("Design:", design)
        form.addRow("", extras)
        form.addRow("Folder:", folder_row)

        self.coverage_label = QLabel("", objectName="pilotCoverage")
        self.coverage_label.setWordWrap(True)
        self._make_result_area("pilot")

        self.buttons = QDialogButtonBox()
        self.pilot_button = self.buttons.addButton(
            "Write pilot", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.pilot_button.setObjectName("pilotButton")
        self.pilot_button.setDefault(True)
        self.run_button = self.buttons.addButton(
            "Open in browser", QDialogButtonBox.ButtonRole.ActionRole
        )
        self.run_button.setObjectName("openPilotPage")
        self.run_button.setVisible(False)
        self.open_button = self.buttons.addButton(
            "Open folder", QDialogButtonBox.ButtonRole.ActionRole
        )
        self.open_button.setObjectName("openPilotFolder")
        self.open_button.setVisible(False)
        self.close_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.pilot_button.clicked.connect(self.start_pilot)
        self.run_button.clicked.connect(self.open_page)
        self.open_button.clicked.connect(self.open_folder)
        self.close_button.clicked.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.coverage_label)
        layout.addWidget(self.progress)
        layout.addWidget(self.result_label, 1)
        layout.addWidget(self.buttons)

        self._fill_sets(
            set_id,
            lambda s: f"{s.name} — {s.count} puzzles (set {s.id})",
            self.pilot_button,
            "The project has no puzzle sets yet: generate a split on the curator's board first.",
        )
        self.set_combo.currentIndexChanged.connect(self._suggest_folder)
        self.set_combo.currentIndexChanged.connect(self._update_coverage)
        self.status_combo.currentIndexChanged.connect(self._update_coverage)
        self._suggest_folder()
        self._update_coverage()

    # ---- choices -----------------------------------------------------------------------------
    def parts(self) -> tuple[str, ...]:
        return tuple(p for p in PARTS if self.part_checks[p].isChecked())

    def options(self) -> PilotOptions:
        return PilotOptions(
            participants=self.participants.value(),
            per_participant=self.per_participant.value(),
            responses_per_item=self.responses.value(),
            parts=self.parts(),
            practice=self.practice.value(),
            practice_failures=self.practice_failures.value(),
            catch=self.catch.value(),
        )

    def _update_coverage(self) -> None:
        """Whether the design covers the chosen puzzles, said before anything is written."""
        set_id = self.set_combo.currentData()
        if set_id is None:
            return
        status = self.status_combo.currentData()
        key = (int(set_id), str(status))
        if key not in self._summaries:  # once per (set, status), not per keystroke
            self._summaries[key] = self.studio.project.puzzle_summaries(
                int(set_id), status=None if status == "any" else status
            )
        stored = self._summaries[key]
        parts = set(self.parts())
        n = sum(1 for s in stored if s.split in parts)
        o = self.options()
        have, need = o.participants * o.per_participant, n * o.responses_per_item
        text = (
            f"{n} puzzles in {', '.join(sorted(parts)) or 'no part'}: {o.participants} × "
            f"{o.per_participant} = {have} answers for the {need} needed "
            f"({o.responses_per_item} each)."
        )
        ok = n > 0 and have >= need and o.per_participant <= n
        if n == 0:
            text += " Choose other parts or puzzles."
        elif o.per_participant > n:
            text += f" A list cannot hold more than the {n} puzzles."
        elif have < need:
            more = -(-need // o.per_participant)
            text += f" Too few: {more} participants would do."
        if ok and o.practice and set(PARTS) <= parts:
            text += " No practice puzzles: they come from a part left out of the pilot."
        if ok:
            text += " Puzzles that no longer pass vetting are left out when it is written."
        self.coverage_label.setStyleSheet("" if ok else "color: #b00020;")
        self.coverage_label.setText(text)
        self.pilot_button.setEnabled(ok and self.job is None)

    # ---- the export ----------------------------------------------------------------------------
    def start_pilot(self) -> None:
        if self.job is not None:
            return
        set_id = self.set_combo.currentData()
        out = self.folder_edit.text().strip()
        if set_id is None:
            return
        if not out:
            self._show_result("Choose a folder to write the pilot to.", error=True)
            return
        request = {
            "set_id": int(set_id),
            "out_dir": str(Path(out).expanduser()),
            "status": self.status_combo.currentData(),
            "options": self.options(),
        }
        self.summary = None
        self.open_button.setVisible(False)
        self.run_button.setVisible(False)
        self._show_result("Reading and vetting the set's puzzles…")
        self._set_inputs_enabled(False)
        self.progress.setRange(0, 0)
        job = PilotJob(self.studio, request, self._lock, self)
        job.progressed.connect(self._on_progress)
        job.succeeded.connect(self._on_success)
        job.failed.connect(self._on_fail)
        self.job = job
        job.start()

    def _on_progress(self, done: int, total: int) -> None:
        if total > 0:
            self._show_progress(done, total)
            self._show_result(f"Writing the pictures: {done} of {total} puzzles")

    def _after_job(self) -> None:
        self._update_coverage()

    def _on_success(self, summary: dict[str, Any]) -> None:
        self.summary = summary
        self.progress.setRange(0, 1)
        self.progress.setValue(1)
        self.settings.remember_dir("exports", Path(summary["out_dir"]).parent)
        lines = [
            f"Wrote pilot {summary['pilot_id']} of “{summary['set_name']}” to "
            f"{summary['out_dir']}: {summary['puzzles']} puzzles, {summary['practice']} "
            f"practice, {summary['catch']} attention checks"
            + (
                f"; left out {summary['left_out']} that no longer pass vetting."
                if summary["left_out"]
                else "."
            ),
            *summary["plan"],
            "Give each participant a list number; open index.html?list=N&pid=ID to skip the "
            "first screen.",
        ]
        self._show_result("\n".join(lines))
        self.open_button.setVisible(True)
        self.run_button.setVisible(True)
        self._auto_folder = ""
        self._finish()
        self.finished_pilot.emit(True)

    def _on_fail(self, message: str) -> None:
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self._show_result(message, error=True)
        self._finish()
        self.finished_pilot.emit(False)

    def _set_inputs_enabled(self, enabled: bool) -> None:
        for w in (
            self.set_combo,
            self.status_combo,
            *self.part_checks.values(),
            self.participants,
            self.per_participant,
            self.responses,
            self.practice,
            self.practice_failures,
            self.catch,
            self.folder_edit,
            self.choose_button,
            self.pilot_button,
        ):
            w.setEnabled(enabled)
        self.close_button.setText("Close" if enabled else "Cancel")

    def _out_dir(self) -> Path | None:
        return Path(self.summary["out_dir"]) if self.summary is not None else None

    def open_page(self) -> None:
        if self.summary is not None:
            page = Path(self.summary["out_dir"]) / "index.html"
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(page)))

    def _say_cancelling(self, closing: bool) -> None:
        if not closing:  # the window stays open: say why it has not closed
            self._show_result("Cancelling…")


__all__ = ["PilotDialog", "PilotJob"]
