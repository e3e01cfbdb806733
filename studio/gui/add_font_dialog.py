"""Add font: pick an installed font (or a font file) and the Unicode blocks of it to tag.

The dialog lists the fonts of :func:`studio.glyphs.system_fonts.list_system_fonts` with a search
field, and a "Browse…" button for a file; the blocks the chosen font covers are a check list with
a count each. Accepting it leaves the choice in :meth:`AddFontDialog.choice`; the window adds the
glyphs with :func:`add_glyphs_job` through its job mechanism (a worker thread with progress and
Cancel), so a large font never stalls the window.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from studio.core.errors import FontError
from studio.core.keys import GlyphKey
from studio.glyphs.fonts import read_font
from studio.glyphs.system_fonts import (
    SystemFont,
    block_counts,
    codepoints_in_blocks,
    search_fonts,
)
from studio.gui.settings import StudioSettings

if TYPE_CHECKING:
    from studio.app import Studio

FONT_FILES = "Fonts (*.ttf *.otf *.ttc *.otc);;All files (*)"
FONT_ROLE = Qt.ItemDataRole.UserRole
BLOCK_ROLE = Qt.ItemDataRole.UserRole + 1


@dataclass(frozen=True)
class FontChoice:
    """What to add: a font (installed, or the file the user browsed to: ``from_file``) and the
    names of the blocks whose glyphs are wanted."""

    font: SystemFont
    from_file: bool
    blocks: tuple[str, ...]

    @property
    def glyph_count(self) -> int:
        wanted = set(self.blocks)
        return sum(b.count for b in self.font.blocks if b.name in wanted)


def font_from_file(path: str | Path) -> SystemFont:
    """Read a font file's first face as the dialog lists it. Raises FontError naming the file."""
    info, cps = read_font(path)
    return SystemFont(
        id=info.id,
        family=info.family,
        style=info.style,
        path=info.path,
        index=info.index,
        num_codepoints=len(cps),
        blocks=block_counts(sorted(cps)),
    )


class AddFontDialog(QDialog):
    """Choose a font and some of its Unicode blocks; see :meth:`choice`."""

    def __init__(
        self,
        fonts: Sequence[SystemFont],
        settings: StudioSettings,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("addFontDialog")
        self.setWindowTitle("Add font")
        self.resize(860, 560)
        self._fonts = list(fonts)
        self._file_font: SystemFont | None = None
        self._settings = settings

        self.search = QLineEdit(objectName="fontSearch")
        self.search.setPlaceholderText("Search fonts by name, file or block…")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(lambda _t: self._fill_fonts())
        self.font_list = QListWidget(objectName="fontList")
        self.font_list.currentItemChanged.connect(lambda *_: self._fill_blocks())
        self.browse_button = QPushButton("Browse…", objectName="browseFont")
        self.browse_button.setToolTip("Add a font file that is not installed (kept in the project)")
        self.browse_button.clicked.connect(lambda: self.browse())
        self.message = QLabel(objectName="addFontMessage", wordWrap=True)
        self.message.setStyleSheet("color: #b00020;")
        self.message.setVisible(False)

        left = QVBoxLayout()
        left.addWidget(QLabel("<b>Installed fonts</b>"))
        left.addWidget(self.search)
        left.addWidget(self.font_list, 1)
        row = QHBoxLayout()
        row.addWidget(QLabel("Or a font file:"))
        row.addWidget(self.browse_button)
        row.addStretch(1)
        left.addLayout(row)
        left.addWidget(self.message)

        self.block_list = QListWidget(objectName="blockList")
        self.block_list.itemChanged.connect(lambda _i: self._update_summary())
        self.all_button = QPushButton("All", objectName="allBlocks")
        self.none_button = QPushButton("None", objectName="noBlocks")
        self.all_button.clicked.connect(lambda: self._check_all(True))
        self.none_button.clicked.connect(lambda: self._check_all(False))
        self.summary = QLabel(objectName="addFontSummary", wordWrap=True)
        right = QVBoxLayout()
        head = QHBoxLayout()
        head.addWidget(QLabel("<b>Unicode blocks</b> (glyphs the font covers in each)"), 1)
        head.addWidget(self.all_button)
        head.addWidget(self.none_button)
        right.addLayout(head)
        right.addWidget(self.block_list, 1)
        right.addWidget(self.summary)

        body = QHBoxLayout()
        body.addLayout(left, 1)
        body.addLayout(right, 1)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText("Add glyphs")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addLayout(body, 1)
        lay.addWidget(self.buttons)
        self._fill_fonts()
        self.search.setFocus()

    # ---- the font list ---------------------------------------------------------------------
    def _fill_fonts(self) -> None:
        current = self.current_font()
        self.font_list.blockSignals(True)
        self.font_list.clear()
        shown = search_fonts(self._fonts, self.search.text())
        if self._file_font is not None:
            shown.insert(0, self._file_font)
        for f in shown:
            where = "  (file)" if f is self._file_font else ""
            item = QListWidgetItem(f"{f.label}  —  {f.num_codepoints:,} glyphs{where}")
            item.setData(FONT_ROLE, f)
            item.setToolTip(f"{f.path}" + (f" (face {f.index})" if f.index else ""))
            self.font_list.addItem(item)
        self.font_list.blockSignals(False)
        row = next((i for i, f in enumerate(shown) if f == current), 0 if shown else -1)
        self.font_list.setCurrentRow(row)
        self._fill_blocks()

    def select_font(self, font_id: str) -> bool:
        """Make the listed font with this id current (False when it is not listed)."""
        for i in range(self.font_list.count()):
            if self.font_list.item(i).data(FONT_ROLE).id == font_id:
                self.font_list.setCurrentRow(i)
                return True
        return False

    def current_font(self) -> SystemFont | None:
        item = self.font_list.currentItem() if hasattr(self, "font_list") else None
        return item.data(FONT_ROLE) if item is not None else None

    def browse(self, path: str | None = None) -> bool:
        """Read a font file (asked for when ``path`` is None) and list it first, selected.
        False, with the reason shown in the dialog, when it is not a font that can be read."""
        if path is None:
            path, _ = QFileDialog.getOpenFileName(
                self, "Add a font file", self._settings.dialog_dir("fonts"), FONT_FILES
            )
            if not path:
                return False
        try:
            font = font_from_file(path)
        except FontError as e:
            self.message.setText(str(e))
            self.message.setVisible(True)
            return False
        self._settings.remember_dir("fonts", path)
        self.message.setVisible(False)
        self._file_font = font
        self.search.blockSignals(True)
        self.search.clear()
        self.search.blockSignals(False)
        self._fill_fonts()
        self.font_list.setCurrentRow(0)
        return True

    # ---- the block list --------------------------------------------------------------------
    def _fill_blocks(self) -> None:
        font = self.current_font()
        self.block_list.blockSignals(True)
        self.block_list.clear()
        for b in font.blocks if font is not None else ():
            item = QListWidgetItem(f"{b.name}  ({b.count:,})")
            item.setData(BLOCK_ROLE, b.name)
            item.setToolTip(f"U+{b.first:04X}–U+{b.last:04X}: {b.count:,} glyphs in this font")
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            self.block_list.addItem(item)
        self.block_list.blockSignals(False)
        self._update_summary()

    def _check_all(self, on: bool) -> None:
        state = Qt.CheckState.Checked if on else Qt.CheckState.Unchecked
        self.block_list.blockSignals(True)
        for i in range(self.block_list.count()):
            self.block_list.item(i).setCheckState(state)
        self.block_list.blockSignals(False)
        self._update_summary()

    def set_blocks(self, names: Sequence[str]) -> None:
        """Check exactly the blocks named (the others are unchecked)."""
        wanted = {n.lower() for n in names}
        self.block_list.blockSignals(True)
        for i in range(self.block_list.count()):
            item = self.block_list.item(i)
            on = item.data(BLOCK_ROLE).lower() in wanted
            item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        self.block_list.blockSignals(False)
        self._update_summary()

    def checked_blocks(self) -> list[str]:
        return [
            self.block_list.item(i).data(BLOCK_ROLE)
            for i in range(self.block_list.count())
            if self.block_list.item(i).checkState() == Qt.CheckState.Checked
        ]

    def _update_summary(self) -> None:
        choice = self.choice()
        if choice is None:
            text = "Choose a font" if self.current_font() is None else "Check at least one block"
            self.summary.setText(text)
            self.ok_button.setEnabled(False)
            return
        n = len(choice.blocks)
        self.summary.setText(
            f"{choice.glyph_count:,} glyphs of {choice.font.label} in {n} block"
            f"{'' if n == 1 else 's'} will be added and rendered"
        )
        self.ok_button.setEnabled(True)

    def choice(self) -> FontChoice | None:
        """The font and blocks chosen, or None while there is no font or no block checked."""
        font = self.current_font()
        blocks = self.checked_blocks()
        if font is None or not blocks:
            return None
        return FontChoice(font, font is self._file_font, tuple(blocks))


def add_glyphs_job(
    studio: Studio, font_id: str, blocks: Sequence[str]
) -> Iterator[tuple[int, int]]:
    """Add the glyphs of ``font_id`` in ``blocks`` to the project, then render them: a
    generator function of (done, total) for the window's job runner. The studio fires
    ``glyphs_changed`` on the thread this runs on, where Qt views must not hear it: run it as a
    job that announces that event (:meth:`MainWindow.run_job`'s ``announce``), which holds it
    back and fires it on the GUI thread as the job ends."""
    yield (0, 0)
    cps = codepoints_in_blocks(studio.catalog.codepoint_array(font_id).tolist(), blocks)
    studio.add_glyphs(GlyphKey(cp, font_id) for cp in cps)
    yield from studio.render_all()
