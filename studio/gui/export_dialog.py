"""Puzzles ▸ Export benchmark…: publish a curated puzzle set from the window.

:class:`ExportDialog` chooses the set, the status to export, the output folder and whether to
leave out puzzles that no longer pass vetting, then runs :func:`studio.publish.export_set` — the
function the CLI's ``export-set`` calls — on a worker thread (:class:`ExportJob`), with a
progress bar. It shows the result: how many puzzles went where, the ones left out or the ones
that refused the export, and a button that opens the folder.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QUrl, Signal
from PySide6.QtGui import QCloseEvent, QDesktopServices
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from studio.curation import STATUSES
from studio.gui.jobs import ThreadJob

if TYPE_CHECKING:
    from studio.app import Studio
    from studio.gui.settings import StudioSettings
    from studio.publish import ExportSummary
    from studio.store.project import PuzzleSetRecord

#: the status choices, in the order shown (approved first: the default)
STATUS_CHOICES: tuple[tuple[str, str], ...] = (
    ("approved", "Approved puzzles"),
    *((s, f"{s.capitalize()} puzzles") for s in STATUSES if s != "approved"),
    ("any", "Every puzzle of the set"),
)


def folder_name(set_name: str) -> str:
    """A folder name for a set's export: ``"My set · fold 1"`` → ``my-set-fold-1``."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", set_name).strip("-").lower()
    return slug or "benchmark"


class ExportJob(ThreadJob):
    """Runs ``export_set`` on a worker thread. ``progressed(stage, done, total)``; then exactly
    one of ``succeeded(summary)``, ``cancelled()``, ``failed(message)``. Every signal is
    delivered on the GUI thread (the job lives there; the worker only emits). :meth:`cancel`
    stops the export at the next puzzle; nothing is left on disk then (an export that was done
    before it noticed is still reported as done)."""

    progressed = Signal(str, int, int)
    DELIVER_AFTER_CANCEL = True

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

    def _work(self) -> ExportSummary:
        """Runs on the worker thread: no QObject is made here, only signals emitted."""
        from studio.publish import export_set

        r = self.request
        return export_set(
            self.studio,
            r["set_id"],
            r["out_dir"],
            status=r["status"],
            drop_invalid=r["drop_invalid"],
            progress=self.progressed.emit,
            should_stop=self._stop.is_set,
            lock=self._lock,
            info=r.get("info"),
        )


class SetFolderChoice:
    """The set-and-folder half of a dialog that writes a puzzle set somewhere (the export, the
    pilot): the chosen set's name, a folder proposed under the remembered exports folder and
    named after the set while the user has not typed another, and Choose… (a folder with
    files in it gets a new sub-folder). The dialog has ``studio``, ``settings``, ``set_combo``,
    ``folder_edit`` and ``_auto_folder``; ``FOLDER_SUFFIX`` and ``FOLDER_CAPTION`` say what
    it writes."""

    FOLDER_SUFFIX = ""
    FOLDER_CAPTION = "Export benchmark to"
    studio: Studio
    settings: StudioSettings
    set_combo: QComboBox
    folder_edit: QLineEdit
    _auto_folder: str

    def _set_name(self) -> str:
        set_id = self.set_combo.currentData()
        rec = self.studio.project.puzzle_set(int(set_id)) if set_id is not None else None
        return rec.name if rec is not None else ""

    def _named_folder(self, base: Path) -> Path:
        return _free(base / f"{folder_name(self._set_name())}{self.FOLDER_SUFFIX}")

    def _suggest_folder(self) -> None:
        """Propose ``<exports folder>/<set name>`` while the user has not typed another."""
        if self.folder_edit.text() and self.folder_edit.text() != self._auto_folder:
            return
        self._auto_folder = str(self._named_folder(Path(self.settings.dialog_dir("exports"))))
        self.folder_edit.setText(self._auto_folder)

    def choose_folder(self) -> None:
        """Pick the folder to write (a new or empty one; a folder with files in it gets a new
        sub-folder named after the set)."""
        start = Path(self.folder_edit.text() or self.settings.dialog_dir("exports"))
        if not start.is_dir():
            start = start.parent
        assert isinstance(self, QWidget)
        chosen = QFileDialog.getExistingDirectory(self, self.FOLDER_CAPTION, str(start))
        if not chosen:
            return
        path = Path(chosen)
        if path.is_dir() and any(path.iterdir()):
            path = self._named_folder(path)
        self.folder_edit.setText(str(path))


class SetJobDialog(SetFolderChoice):
    """The job half the same dialogs share (the review of issue 27: the pilot dialog had a
    copy of the export's): the sets listed for choosing, the progress bar and the result
    line, a cancel on Close or Esc while the job runs (closing waits for it to stop), and
    Open folder. The dialog has ``job``, ``summary``, ``_close_when_done``, ``progress``,
    ``result_label``, ``close_button`` and ``_set_inputs_enabled``; it says "Cancelling…"
    where it shows its stage (:meth:`_say_cancelling`) and where its result went
    (:meth:`_out_dir`)."""

    job: Any
    summary: Any
    _close_when_done: bool
    progress: QProgressBar
    result_label: QLabel

    def _make_result_area(self, prefix: str) -> None:
        self.progress = QProgressBar(objectName=f"{prefix}Progress")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.result_label = QLabel("", objectName=f"{prefix}Result")
        self.result_label.setWordWrap(True)
        self.result_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.result_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

    def _fill_sets(
        self,
        set_id: int | None,
        describe: Callable[[PuzzleSetRecord], str],
        action: QPushButton,
        none_yet: str,
    ) -> None:
        """The project's sets to choose from, ``set_id`` chosen; with none, ``none_yet`` is
        said and ``action`` is off."""
        sets = self.studio.project.puzzle_sets()
        for s in sets:
            self.set_combo.addItem(describe(s), s.id)
        if set_id is not None:
            i = self.set_combo.findData(set_id)
            if i >= 0:
                self.set_combo.setCurrentIndex(i)
        if not sets:
            self.result_label.setText(none_yet)
            action.setEnabled(False)

    def _show_result(self, text: str, error: bool = False, warn: bool = False) -> None:
        style = "color: #b00020;" if error else ("color: #8a4b00;" if warn else "")
        self.result_label.setStyleSheet(style)
        self.result_label.setText(text)

    def _show_progress(self, done: int, total: int) -> None:
        if total > 0:
            self.progress.setRange(0, total)
            self.progress.setValue(min(done, total))
        else:
            self.progress.setRange(0, 0)

    def _set_inputs_enabled(self, enabled: bool) -> None:
        raise NotImplementedError

    def _after_job(self) -> None:
        """What the dialog does again once its job ended (before it closes, if asked to)."""

    def _finish(self) -> None:
        self.job = None
        self._set_inputs_enabled(True)
        self._after_job()
        if self._close_when_done:
            QDialog.reject(self)  # type: ignore[arg-type]

    def _say_cancelling(self, closing: bool) -> None:
        """Say that the job is being cancelled (``closing``: the window is closing)."""

    def _out_dir(self) -> Path | None:
        raise NotImplementedError

    def open_folder(self) -> None:
        out = self._out_dir()
        if out is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(out)))

    def reject(self) -> None:
        """Close; while the job runs (the button reads Cancel, or Esc): cancel it."""
        if self.job is not None:
            self.job.cancel()
            self._say_cancelling(closing=False)
            return
        QDialog.reject(self)  # type: ignore[arg-type]

    def closeEvent(self, event: QCloseEvent) -> None:
        """Closing the window while the job runs cancels it, and closes once it stopped."""
        if self.job is not None:
            self._close_when_done = True
            self.job.cancel()
            self._say_cancelling(closing=True)
            event.ignore()
            return
        QDialog.closeEvent(self, event)  # type: ignore[arg-type]


class ExportDialog(SetJobDialog, QDialog):
    """Choose what to export and where, run it, show what happened (see the module)."""

    #: the export ended: True when a folder was written
    finished_export = Signal(bool)

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
        self.job: ExportJob | None = None
        self.summary: ExportSummary | None = None
        self._close_when_done = False
        self._auto_folder = ""
        self.setObjectName("exportDialog")
        self.setWindowTitle("Export benchmark")
        self.setMinimumWidth(620)

        intro = QLabel(
            "Publish a curated puzzle set as a benchmark folder: the split layout of "
            "<i>Generate</i> with each puzzle's curation history, a dataset card (README.md), "
            "Croissant metadata and a Parquet table. Glyph puzzles (sheets, UA arrays, "
            "annotations, schema) are vetted again against the current annotations; KiVA, "
            "polycube and other items (pictures, sheets) are drawn and vetted again by their "
            "family."
        )
        intro.setWordWrap(True)

        self.set_combo = QComboBox(objectName="exportSet")
        self.status_combo = QComboBox(objectName="exportStatus")
        for key, text in STATUS_CHOICES:
            self.status_combo.addItem(text, key)
        self.folder_edit = QLineEdit(objectName="exportFolder")
        self.folder_edit.setPlaceholderText("a new or empty folder")
        self.choose_button = QPushButton("Choose…", objectName="chooseExportFolder")
        self.choose_button.setAutoDefault(False)  # Enter in a field never opens a file dialog
        self.choose_button.clicked.connect(self.choose_folder)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder_edit, 1)
        folder_row.addWidget(self.choose_button)
        self.drop_check = QCheckBox(
            "Leave out puzzles that no longer pass vetting (and list them)",
            objectName="exportDropInvalid",
        )
        self.drop_check.setToolTip(
            "Unchecked, one such puzzle refuses the whole export and is named, so that it "
            "can be fixed on the curator's board first."
        )

        # what the card and Croissant say about the set (studio.publish.info)
        from studio.publish.info import COMMON_LICENSES

        self.license_combo = QComboBox(objectName="exportLicense")
        self.license_combo.setEditable(True)
        self.license_combo.addItems(["", *COMMON_LICENSES])
        line = self.license_combo.lineEdit()
        assert line is not None
        line.setPlaceholderText("an SPDX id, e.g. CC-BY-4.0 (none: others may not reuse it)")
        self.authors_edit = QLineEdit(objectName="exportAuthors")
        self.authors_edit.setPlaceholderText(
            f"names separated by ; (none: {studio.author or 'who exports it'})"
        )
        self.description_edit = QLineEdit(objectName="exportDescription")
        self.description_edit.setPlaceholderText("what the set is for, for the dataset card")
        self.cite_edit = QLineEdit(objectName="exportCite")
        self.cite_edit.setPlaceholderText("BibTeX or a sentence (none: made from the authors)")

        form = QFormLayout()
        form.addRow("Puzzle set:", self.set_combo)
        form.addRow("Export:", self.status_combo)
        form.addRow("Folder:", folder_row)
        form.addRow("", self.drop_check)
        form.addRow("Licence:", self.license_combo)
        form.addRow("Authors:", self.authors_edit)
        form.addRow("Description:", self.description_edit)
        form.addRow("Cite as:", self.cite_edit)

        self.stage_label = QLabel("", objectName="exportStage")
        self._make_result_area("export")
        self.progress.setTextVisible(True)

        self.buttons = QDialogButtonBox()
        self.export_button = self.buttons.addButton(
            "Export", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.export_button.setObjectName("exportButton")
        self.export_button.setDefault(True)
        self.open_button = self.buttons.addButton(
            "Open folder", QDialogButtonBox.ButtonRole.ActionRole
        )
        self.open_button.setObjectName("openExportFolder")
        self.open_button.setVisible(False)
        self.close_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.export_button.clicked.connect(self.start_export)
        self.open_button.clicked.connect(self.open_folder)
        self.close_button.clicked.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.stage_label)
        layout.addWidget(self.progress)
        layout.addWidget(self.result_label, 1)
        layout.addWidget(self.buttons)

        self._fill_sets(
            set_id,
            self._describe_set,
            self.export_button,
            "The project has no puzzle sets yet: generate a split on the curator's board and "
            "approve its puzzles first.",
        )
        self.set_combo.currentIndexChanged.connect(self._suggest_folder)
        self._suggest_folder()

    # ---- choices -----------------------------------------------------------------------------
    def _describe_set(self, s: PuzzleSetRecord) -> str:
        approved = len(self.studio.project.puzzle_summaries(s.id, status="approved"))
        return f"{s.name} — {s.count} puzzles, {approved} approved (set {s.id})"

    # ---- the export ----------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.job is not None

    def start_export(self) -> None:
        if self.running:
            return
        set_id = self.set_combo.currentData()
        out = self.folder_edit.text().strip()
        if set_id is None:
            return
        if not out:
            self._show_result("Choose a folder to export to.", error=True)
            return
        from studio.core.errors import StudioError
        from studio.publish.info import DatasetInfo

        try:
            info = DatasetInfo.of(
                self.license_combo.currentText(),
                self.authors_edit.text(),
                self.description_edit.text(),
                self.cite_edit.text(),
            )
        except StudioError as e:
            self._show_result(str(e), error=True)
            return
        request = {
            "set_id": int(set_id),
            "out_dir": str(Path(out).expanduser()),
            "status": self.status_combo.currentData(),
            "drop_invalid": self.drop_check.isChecked(),
            "info": info,
        }
        self.summary = None
        self.open_button.setVisible(False)
        self._show_result("")
        self._set_inputs_enabled(False)
        self.progress.setRange(0, 0)
        self.stage_label.setText("Starting…")
        job = ExportJob(self.studio, request, self._lock, self)
        job.progressed.connect(self._on_progress)
        job.succeeded.connect(self._on_success)
        job.cancelled.connect(self._on_cancel)
        job.failed.connect(self._on_fail)
        self.job = job
        job.start()

    def _on_progress(self, stage: str, done: int, total: int) -> None:
        from studio.publish.export import STAGE_TEXT

        if self.job is None:
            return
        self.stage_label.setText(STAGE_TEXT.get(stage, stage))
        self._show_progress(done, total)

    def _on_success(self, summary: ExportSummary) -> None:
        self.summary = summary
        self.progress.setRange(0, 1)
        self.progress.setValue(1)
        self.stage_label.setText("Done.")
        self.settings.remember_dir("exports", Path(summary.out_dir).parent)
        text = summary.message()
        if summary.with_warnings:
            text += f" {summary.with_warnings} of them carry image-feature warnings."
        warnings = summary.warnings()
        if warnings:  # said here, before the folder is shared, not only in the card
            text += "\n\n" + "\n".join(f"Warning: {w[0].upper()}{w[1:]}." for w in warnings)
        self._show_result(text, warn=bool(warnings))
        self.open_button.setVisible(True)
        self._auto_folder = ""
        self._finish()
        self.finished_export.emit(True)

    def _on_cancel(self) -> None:
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.stage_label.setText("Cancelled.")
        self._show_result("The export was cancelled; nothing was written.")
        self._finish()
        self.finished_export.emit(False)

    def _on_fail(self, message: str) -> None:
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.stage_label.setText("Not exported.")
        self._show_result(message, error=True)
        self._finish()
        self.finished_export.emit(False)

    def _set_inputs_enabled(self, enabled: bool) -> None:
        for w in (
            self.set_combo,
            self.status_combo,
            self.folder_edit,
            self.choose_button,
            self.drop_check,
            self.license_combo,
            self.authors_edit,
            self.description_edit,
            self.cite_edit,
            self.export_button,
        ):
            w.setEnabled(enabled)
        self.close_button.setText("Close" if enabled else "Cancel")

    def _out_dir(self) -> Path | None:
        return Path(self.summary.out_dir) if self.summary is not None else None

    def _say_cancelling(self, closing: bool) -> None:
        self.stage_label.setText("Cancelling…")


def _free(path: Path) -> Path:
    """``path``, or ``path-2``, ``path-3``… : the first that is not there or an empty folder."""
    candidate, n = path, 1
    while candidate.exists() and not (candidate.is_dir() and not any(candidate.iterdir())):
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


__all__ = ["STATUS_CHOICES", "ExportDialog", "ExportJob", "SetFolderChoice", "folder_name"]
