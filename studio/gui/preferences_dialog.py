"""File ▸ Preferences…: the per-user settings of :class:`~studio.gui.settings.StudioSettings`.

What a person sets here: the annotator name stored with every tag and decision, the folders
the file dialogs start in (projects, fonts, annotations, exports), the grade from which an
image-feature warning flags a puzzle on the curator's board, and the recent-projects list. OK
writes everything at once (and only then); Cancel writes nothing.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from studio.gui.settings import FEATURE_GRADES, StudioSettings

__all__ = ["FOLDER_KINDS", "GRADE_TEXTS", "PreferencesDialog"]

#: The folders a person can set, with their labels (the ``kind`` of ``dialog_dir``).
FOLDER_KINDS: tuple[tuple[str, str], ...] = (
    ("projects", "Projects"),
    ("fonts", "Fonts"),
    ("annotations", "Annotation files"),
    ("exports", "Exports and splits"),
)
#: How each grade of image-feature warning reads in the threshold list.
GRADE_TEXTS = {
    "low": "low and above (every warning flags a puzzle)",
    "medium": "medium and above",
    "high": "high only (a rare pattern a person would see)",
}


class PreferencesDialog(QDialog):
    """The settings as a form; :meth:`accept` checks and stores them, then emits
    ``accepted`` (the window re-reads the settings then)."""

    def __init__(self, settings: StudioSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("preferencesDialog")
        self.setWindowTitle("Preferences")
        self.settings = settings

        self.name_edit = QLineEdit(settings.annotator_name() or "", objectName="annotatorName")
        self.name_edit.setPlaceholderText("your name or initials")
        self.name_edit.setToolTip(
            "Stored with every tag you make and every puzzle you approve or reject, so the "
            "project can tell annotators apart"
        )
        person = QFormLayout()
        person.addRow("Annotator name", self.name_edit)
        person_box = QGroupBox("You")
        person_box.setLayout(person)

        self.folder_edits: dict[str, QLineEdit] = {}
        folders = QFormLayout()
        for kind, label in FOLDER_KINDS:
            edit = QLineEdit(settings.dialog_dir(kind), objectName=f"folder_{kind}")
            edit.setToolTip(f"Where the file dialogs for {label.lower()} start")
            browse = QPushButton("Browse…", objectName=f"browse_{kind}")
            browse.clicked.connect(lambda _c=False, k=kind: self.browse(k))
            row = QHBoxLayout()
            row.addWidget(edit, 1)
            row.addWidget(browse)
            folders.addRow(label, row)
            self.folder_edits[kind] = edit
        folder_box = QGroupBox("Folders the file dialogs start in")
        folder_box.setLayout(folders)

        self.grade_combo = QComboBox(objectName="featureWarningMin")
        for grade in FEATURE_GRADES:
            self.grade_combo.addItem(GRADE_TEXTS.get(grade, grade), grade)
        self.grade_combo.setCurrentIndex(
            max(0, self.grade_combo.findData(settings.feature_warning_min()))
        )
        self.grade_combo.setToolTip(
            "Image-feature warnings are graded by how likely their pattern is to arise by "
            "chance; a puzzle is flagged for a warning at or above this grade"
        )
        board = QFormLayout()
        board.addRow("Image-feature warnings", self.grade_combo)
        board_box = QGroupBox("Curator's board")
        board_box.setLayout(board)

        self.recent_label = QLabel(objectName="recentCount")
        self.clear_recent_button = QPushButton("Clear the list", objectName="clearRecent")
        self.clear_recent_button.clicked.connect(self._clear_recent)
        self._clear_recent_asked = False
        recent = QHBoxLayout()
        recent.addWidget(self.recent_label, 1)
        recent.addWidget(self.clear_recent_button)
        recent_box = QGroupBox("Recent projects")
        recent_box.setLayout(recent)
        self._show_recent()

        where = QLabel(f"Settings are stored in {settings.file_name}", objectName="settingsFile")
        where.setWordWrap(True)
        where.setStyleSheet("color: #666;")

        self.problem = QLabel(objectName="preferencesProblem", wordWrap=True)
        self.problem.setStyleSheet("color: #b00020;")
        self.problem.hide()
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        lay = QVBoxLayout(self)
        for w in (person_box, folder_box, board_box, recent_box, where, self.problem):
            lay.addWidget(w)
        lay.addStretch(1)
        lay.addWidget(self.buttons)
        self.resize(640, self.sizeHint().height())

    # ---- the form ------------------------------------------------------------------------------
    def browse(self, kind: str) -> None:
        edit = self.folder_edits[kind]
        path = QFileDialog.getExistingDirectory(self, "Choose a folder", edit.text())
        if path:
            edit.setText(path)

    def _show_recent(self) -> None:
        n = 0 if self._clear_recent_asked else len(self.settings.recent_projects())
        self.recent_label.setText(
            "The list will be cleared"
            if self._clear_recent_asked
            else f"{n} project{'s' if n != 1 else ''} in File ▸ Open recent"
        )
        self.clear_recent_button.setEnabled(n > 0)

    def _clear_recent(self) -> None:
        self._clear_recent_asked = True
        self._show_recent()

    def problems(self) -> list[str]:
        """What keeps the form from being stored (an empty name, a folder that is not one)."""
        out = []
        if not self.name_edit.text().strip():
            out.append("Enter your name or initials: they are stored with every tag you make.")
        for kind, label in FOLDER_KINDS:
            text = self.folder_edits[kind].text().strip()
            if text and not Path(text).expanduser().is_dir():
                out.append(f"{label}: {text} is not a folder.")
        return out

    def accept(self) -> None:
        problems = self.problems()
        if problems:
            self.problem.setText("\n".join(problems))
            self.problem.show()
            return
        s = self.settings
        s.set_annotator_name(self.name_edit.text())
        for kind, _label in FOLDER_KINDS:
            text = self.folder_edits[kind].text().strip()
            if text and str(Path(text).expanduser()) != s.dialog_dir(kind):
                s.remember_dir(kind, Path(text).expanduser())
        s.set_feature_warning_min(str(self.grade_combo.currentData()))
        if self._clear_recent_asked:
            s.clear_recent_projects()
        super().accept()
