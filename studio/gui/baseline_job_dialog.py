"""The New baseline job dialog (split out of dashboard.py, issue 27): what a baseline job
runs on — one of the project's puzzle sets, or a split folder (not on a lab database: the
lab's workers read its sets, never a folder of this computer) — and which model groups, how
many seeds, which device and how many epochs at most. It says why the job cannot be submitted
yet; :meth:`BaselineJobDialog.params` gives the parameters ``studio.baselines.job:run_job``
reads (:class:`~studio.baselines.params.BaselineJobParams`) and
:meth:`BaselineJobDialog.job_title` the job's title in the list. The Baselines tab
(:mod:`studio.gui.dashboard`) opens it from New job… and queues the job on Submit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from studio.baselines import DEFAULT_MODELS
from studio.baselines.params import DEFAULT_SEEDS, BaselineJobParams
from studio.baselines.present import baseline_groups
from studio.gui.settings import StudioSettings

__all__ = ["DEFAULT_GROUPS", "DEVICES", "BaselineJobDialog"]

#: Devices a job may ask for (see ``studio.worker.device.choose_device``).
DEVICES = ("auto", "cpu", "cuda")
#: The model groups a new job ticks: studio.baselines' own defaults (the dialog lists every
#: group in report order; the spatial models apply to the polycube and shape-composition
#: families only).
DEFAULT_GROUPS: tuple[str, ...] = DEFAULT_MODELS


class BaselineJobDialog(QDialog):
    """Parameters of a baseline job: the source (one of the project's puzzle sets, or a split
    folder), the model groups, seeds, device and epochs. :meth:`params` is what
    ``studio.baselines.job:run_job`` reads; :meth:`job_title` names the job in the list."""

    def __init__(
        self,
        project_path: Path | None,
        puzzle_sets: Sequence[Any],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("baselineJobDialog")
        self.setWindowTitle("New baseline job")
        # None: a lab database (the job then reads the worker's own project, see
        # studio.baselines.job: a database URL is never put in the job's parameters)
        self.project_path = None if project_path is None else Path(project_path)
        self.sets = list(puzzle_sets)

        self.set_radio = QRadioButton("Puzzle set", objectName="sourceSet")
        self.dir_radio = QRadioButton("Split folder", objectName="sourceDir")
        self._source_group = QButtonGroup(self)
        self._source_group.addButton(self.set_radio)
        self._source_group.addButton(self.dir_radio)
        self.set_combo = QComboBox(objectName="sourceSetCombo")
        self.set_combo.setMinimumContentsLength(28)
        for s in self.sets:
            self.set_combo.addItem(f"{s.name} ({s.count} puzzles)", s.id)
        self.dir_edit = QLineEdit(objectName="sourceDirEdit", placeholderText="a split folder")
        browse = QPushButton("Browse…", objectName="browseSplit")
        browse.clicked.connect(self._browse)
        if self.sets:
            self.set_combo.setCurrentIndex(self.set_combo.count() - 1)  # the newest set
            self.set_radio.setChecked(True)
        else:
            self.set_radio.setEnabled(False)
            self.set_combo.addItem("No puzzle set in this project", None)
            self.dir_radio.setChecked(True)
        if self.project_path is None:
            # a lab's jobs run on its workers, which read the database's sets, never a folder
            # of this computer (a job naming one is refused: studio.baselines.job)
            lab_only = (
                "On a lab database the jobs run on the lab's workers: they read the "
                "database's puzzle sets, not a folder of this computer."
            )
            for w in (self.dir_radio, self.dir_edit, browse):
                w.setEnabled(False)
                w.setToolTip(lab_only)
        self.set_radio.toggled.connect(lambda _b: self._update())
        self.dir_edit.textChanged.connect(lambda _t: self._update())

        source = QGridLayout()
        source.addWidget(self.set_radio, 0, 0)
        source.addWidget(self.set_combo, 0, 1, 1, 2)
        source.addWidget(self.dir_radio, 1, 0)
        source.addWidget(self.dir_edit, 1, 1)
        source.addWidget(browse, 1, 2)

        self.group_boxes: dict[str, QCheckBox] = {}
        models_row = QHBoxLayout()
        for group, members in baseline_groups().items():
            box = QCheckBox(group, objectName=f"group_{group}")
            box.setChecked(group in DEFAULT_GROUPS)
            box.setToolTip(
                "\n\n".join(
                    f"{label} ({model})" + (f": {recipe}" if recipe else "")
                    for model, label, recipe in members
                )
            )
            box.toggled.connect(lambda _b: self._update())
            self.group_boxes[group] = box
            models_row.addWidget(box)
        models_row.addStretch(1)

        self.seeds_spin = QSpinBox(
            objectName="seedsSpin", minimum=1, maximum=20, value=DEFAULT_SEEDS
        )
        self.device_combo = QComboBox(objectName="deviceCombo")
        self.device_combo.addItems(DEVICES)
        self.device_combo.setToolTip(
            "auto: CUDA when torch sees a GPU, else the CPU with a core left for the studio"
        )
        self.epochs_spin = QSpinBox(objectName="epochsSpin", minimum=0, maximum=500, value=0)
        self.epochs_spin.setSpecialValueText("model default")
        self.epochs_spin.setToolTip(
            "At most this many epochs per training run (early stopping "
            "may end sooner); 'model default' leaves it to each model"
        )

        form = QFormLayout()
        form.addRow("Source", source)
        form.addRow("Models", models_row)
        form.addRow("Seeds", self.seeds_spin)
        form.addRow("Device", self.device_combo)
        form.addRow("Epochs", self.epochs_spin)

        self.problem = QLabel(objectName="jobDialogProblem")
        self.problem.setStyleSheet("color: #b00020;")
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Submit")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.problem)
        lay.addWidget(self.buttons)
        self._update()

    def _browse(self) -> None:
        start = self.dir_edit.text() or StudioSettings().dialog_dir("exports")
        path = QFileDialog.getExistingDirectory(self, "Split folder", start)
        if path:
            StudioSettings().remember_dir("exports", path)
            self.dir_edit.setText(path)
            self.dir_radio.setChecked(True)

    def groups(self) -> list[str]:
        return [g for g, box in self.group_boxes.items() if box.isChecked()]

    def problem_text(self) -> str:
        """Why the job cannot be submitted yet ("" when it can)."""
        if not self.groups():
            return "Choose at least one model group."
        if self.dir_radio.isChecked() and not self.dir_radio.isEnabled():
            return "No puzzle set in this lab database yet: curate one on the board first."
        if self.dir_radio.isChecked():
            text = self.dir_edit.text().strip()
            if not text:
                return "Choose a split folder."
            if not Path(text).is_dir():
                return f"{text} is not a folder."
        elif self.set_combo.currentData() is None:
            return "Choose a puzzle set."
        return ""

    def _update(self) -> None:
        problem = self.problem_text()
        self.problem.setText(problem)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not problem)

    def params(self) -> dict[str, Any]:
        """The job's parameters (the spec's "Baseline job params")."""
        if self.dir_radio.isChecked():
            source: dict[str, Any] = {"kind": "split-dir", "path": self.dir_edit.text().strip()}
        else:
            source = {"kind": "project-set", "set_id": int(self.set_combo.currentData())}
            if self.project_path is not None:
                source["project"] = str(self.project_path)
        epochs = self.epochs_spin.value()
        return BaselineJobParams.of(
            source,
            self.groups(),
            seeds=self.seeds_spin.value(),
            device=self.device_combo.currentText(),
            epochs=epochs or None,
        ).to_json()

    def job_title(self) -> str:
        if self.dir_radio.isChecked():
            where = f"split {Path(self.dir_edit.text().strip()).name}"
        else:
            sid = self.set_combo.currentData()
            name = next((s.name for s in self.sets if s.id == sid), str(sid))
            where = f"set “{name}”"
        return f"Baselines ({', '.join(self.groups())}) on {where}"

    def accept(self) -> None:
        if self.problem_text():
            return
        super().accept()
