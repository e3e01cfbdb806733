"""Help ▸ About Analogy Studio: what it is, and the versions a bug report needs.

The versions of the heavy libraries are read from the installed distributions' metadata
(``importlib.metadata``), never by importing them: asking which torch is installed must not
load torch into the GUI process (seconds, and hundreds of megabytes).
"""

from __future__ import annotations

import platform
from importlib import metadata
from typing import TYPE_CHECKING

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import qVersion
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio import __version__

if TYPE_CHECKING:
    from studio.store.project import Project

__all__ = ["NOT_INSTALLED", "AboutDialog", "distribution_version", "version_rows"]

NOT_INSTALLED = "not installed"
#: Distributions whose versions the dialog lists, with the names people know them by.
LIBRARIES: tuple[tuple[str, str], ...] = (
    ("NumPy", "numpy"),
    ("SQLAlchemy", "SQLAlchemy"),
    ("Pillow", "pillow"),
    ("fontTools", "fonttools"),
    ("matplotlib", "matplotlib"),
    ("superqt", "superqt"),
    ("PyTorch (baselines)", "torch"),
)


def distribution_version(name: str) -> str:
    """The installed version of a distribution, from its metadata (nothing is imported)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return NOT_INSTALLED


def version_rows(project: Project | None = None) -> list[tuple[str, str]]:
    """``(component, version)`` for the About box and bug reports: the studio, its project
    and schema formats (and the open project's), Python, Qt and the libraries."""
    from studio.core.schema import FORMAT_VERSION as SCHEMA_FORMAT
    from studio.store.migrations import FORMAT_VERSION as PROJECT_FORMAT

    rows = [("Analogy Studio", __version__), ("Project format", str(PROJECT_FORMAT))]
    if project is not None:
        name = project.location if project.is_database else project.path.name
        rows.append(("Open project", f"{name} (format {project.format_version})"))
        schema = project.schema
        rows.append(("Its schema", f"{schema.id} {schema.version} (edit {project.schema_version})"))
    rows += [
        ("Schema file format", str(SCHEMA_FORMAT)),
        ("Python", f"{platform.python_version()} ({platform.python_implementation()})"),
        ("Qt", qVersion()),
        ("PySide6", pyside_version),
    ]
    rows += [(label, distribution_version(dist)) for label, dist in LIBRARIES]
    rows.append(("Platform", f"{platform.system()} {platform.release()} ({platform.machine()})"))
    return rows


class AboutDialog(QDialog):
    """What the studio is, and :func:`version_rows` in a table with a Copy button."""

    def __init__(self, project: Project | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.setWindowTitle("About Analogy Studio")
        self.rows = version_rows(project)
        title = QLabel(
            f"<h2>Analogy Studio {__version__}</h2>"
            "<p>Author visual-analogy stimuli from schema-tagged Unicode glyphs: tag glyphs, "
            "generate and vet puzzle splits, curate them and run baselines.</p>"
            "<p>Demo data: the public Unicode Analogies annotations "
            "(see resources/ua/README.md).</p>",
            objectName="aboutText",
        )
        title.setWordWrap(True)
        self.table = QTreeWidget(objectName="versionTable")
        self.table.setHeaderLabels(["Component", "Version"])
        self.table.setRootIsDecorated(False)
        for name, version in self.rows:
            QTreeWidgetItem(self.table, [name, version])
        self.table.resizeColumnToContents(0)
        rows = len(self.rows)
        self.table.setMinimumHeight(min(rows, 18) * self.table.fontMetrics().height() * 3 // 2)
        self.copy_button = QPushButton("Copy versions", objectName="copyVersions")
        self.copy_button.setToolTip("Copy the versions to the clipboard, for a bug report")
        self.copy_button.clicked.connect(self.copy_versions)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addWidget(title)
        lay.addWidget(self.table, 1)
        lay.addWidget(buttons)
        self.resize(520, 560)

    def text(self) -> str:
        """The versions as plain text, one ``component: version`` a line."""
        return "\n".join(f"{name}: {version}" for name, version in self.rows) + "\n"

    def copy_versions(self) -> None:
        QGuiApplication.clipboard().setText(self.text())
