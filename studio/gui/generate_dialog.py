"""Puzzles ▸ Generate…: choose a family, its options (built from the family's options schema),
how many, the seed and the train/val/test shares.

Every family's split becomes a puzzle set on the curator's board, named here; the dialog gives
one :class:`~studio.generate.request.GenerationRequest` whatever the family (issue 27: it gave
split parameters for a glyph family and a folder job for the others), and the board runs it
with :meth:`studio.curation.Curator.generate_set`. A split folder — what ``analogy-studio
generate`` writes, for ``vet``, ``baseline`` and sharing — is written too when one is named.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import StudioError
from studio.core.family import Family
from studio.generate.request import DEFAULT_RATIOS, GenerationRequest
from studio.gui.options_form import OptionsForm
from studio.gui.settings import StudioSettings


class GenerateSplitDialog(QDialog):
    """The family, its options, a name for the set and, if wanted, a split folder;
    :meth:`request` gives the one request every family's generation takes."""

    def __init__(
        self,
        concepts: Sequence[str],
        parent: QWidget | None = None,
        families: Sequence[Family] | None = None,
    ) -> None:
        super().__init__(parent)
        from studio.plugins import families as registered

        self.setObjectName("generateDialog")
        self.setWindowTitle("Generate split")
        self.families = list(families if families is not None else registered())
        self.family_combo = QComboBox(objectName="familyCombo")
        for f in self.families:
            self.family_combo.addItem(f"{f.label} ({f.id})", f.id)
            self.family_combo.setItemData(self.family_combo.count() - 1, f.description, 3)
        first = next((i for i, f in enumerate(self.families) if f.default), 0)
        self.family_combo.setCurrentIndex(first)
        self.name_edit = QLineEdit(f"Split {datetime.now():%Y-%m-%d %H:%M}", objectName="splitName")
        self.folder_edit = QLineEdit(objectName="outFolder")
        self.folder_edit.setPlaceholderText("optional: also write the split folder here")
        browse = QPushButton("Browse…", objectName="browseFolder")
        browse.clicked.connect(self._browse)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder_edit, 1)
        folder_row.addWidget(browse)
        self.n_spin = QSpinBox(objectName="nSpin", minimum=1, maximum=1_000_000, value=1000)
        self.seed_spin = QSpinBox(objectName="seedSpin", minimum=0, maximum=2**31 - 1, value=1)
        ratios = QHBoxLayout()
        self.ratio_spins = []
        for name, value in zip(("train", "val", "test"), DEFAULT_RATIOS, strict=True):
            spin = QDoubleSpinBox(objectName=f"ratio_{name}", minimum=0, maximum=1, value=value)
            spin.setSingleStep(0.05)
            ratios.addWidget(QLabel(name))
            ratios.addWidget(spin)
            self.ratio_spins.append(spin)
        # one options form per family, built from its schema; the dialog and the CLI share
        # every default
        self.forms: dict[str, OptionsForm] = {}
        self.stack = QStackedWidget(objectName="familyOptions")
        for f in self.families:
            form = OptionsForm(f, dynamic={"concepts": list(concepts)})
            self.forms[f.id] = form
            self.stack.addWidget(form)

        top = QFormLayout()
        top.addRow("Family", self.family_combo)
        self.name_label = QLabel("Name")
        top.addRow(self.name_label, self.name_edit)
        self.folder_label = QLabel("Split folder")
        top.addRow(self.folder_label, folder_row)
        top.addRow("Puzzles (n)", self.n_spin)
        top.addRow("Seed", self.seed_spin)
        bottom = QFormLayout()
        bottom.addRow("Train / val / test", ratios)
        self.error_label = QLabel(objectName="paramsError", wordWrap=True)
        self.error_label.setStyleSheet("color: #c62828")
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Generate")
        self.buttons.accepted.connect(self._check_and_accept)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.stack)
        lay.addLayout(bottom)
        lay.addWidget(self.error_label)
        lay.addWidget(self.buttons)
        self.family_combo.currentIndexChanged.connect(self._family_changed)
        self._family_changed()

    # ---- the family --------------------------------------------------------------------------
    @property
    def family(self) -> Family:
        return self.families[self.family_combo.currentIndex()]

    @property
    def form(self) -> OptionsForm:
        return self.forms[self.family.id]

    def _family_changed(self) -> None:
        for form in self.forms.values():  # the stack takes the size of the page shown only
            policy = (
                QSizePolicy.Policy.Preferred if form is self.form else QSizePolicy.Policy.Ignored
            )
            form.setSizePolicy(policy, policy)
        self.stack.setCurrentWidget(self.form)
        self.error_label.clear()
        self.adjustSize()

    def _browse(self) -> None:
        settings = StudioSettings()
        start = self.folder_edit.text() or settings.dialog_dir("exports")
        path = QFileDialog.getExistingDirectory(self, "Folder for the split", start)
        if path:
            settings.remember_dir("exports", path)
            self.folder_edit.setText(path)

    def options(self) -> dict[str, Any]:
        """The family's options as entered, checked by its schema (StudioError otherwise)."""
        return self.family.resolve_options(self.form.values(), fill_recorded=True)

    def ratios(self) -> tuple[float, float, float]:
        return tuple(s.value() for s in self.ratio_spins)  # type: ignore[return-value]

    def request(self) -> GenerationRequest:
        """The generation as entered, checked (StudioError says what is wrong): the family's
        options by its schema, the folder, when one is named, new or empty."""
        folder = self.folder_edit.text().strip() or None
        if folder is not None:
            from studio.core.splitdir import check_target

            check_target(Path(folder))
        return GenerationRequest(
            self.family.id,
            self.n_spin.value(),
            self.seed_spin.value(),
            self.ratios(),
            self.options(),
            name=self.name(),
            out_dir=folder,
        ).check()

    def name(self) -> str:
        return self.name_edit.text().strip() or "Split"

    def _check_and_accept(self) -> None:
        try:
            self.request()
        except StudioError as e:
            self.error_label.setText(str(e))
            return
        self.accept()


__all__ = ["GenerateSplitDialog"]
