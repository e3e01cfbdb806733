"""The curator's board's list of puzzles, as a Qt model (split out of curator_board.py,
issue 27).

Its rows are :class:`~studio.store.project.PuzzleSummary` objects — a puzzle's id, layout, rule,
concept, status, counts of findings, comment and author, never its parsed record — so a split of
10,000 puzzles loads at once; the board reads the record only for the puzzle it opens. The
columns:

- Puzzle, Layout, Rule, Concept: the puzzle's id (its part of the split and its number) and
  what it was generated from;
- Status: draft, flagged, approved or rejected, in the status's colour;
- Err.: findings from the annotations (a foil completes a rule: the puzzle is invalid);
- Warn.: image-feature warnings (a foil may complete a rule the annotations miss); those that
  do not count are named in the row's tooltip;
- Shortcut: the strongest shortcut flag from the Baselines tab (a baseline that does not see
  the whole puzzle chose the key in every seed with high confidence);
- People: people's accuracy in the set's pilots (the share of answers that chose the key, and
  how many answered), red where people fail the puzzle.

:data:`PUZZLE_ROLE` gives a row's summary (and, in :mod:`studio.gui.foil_dialog`, a
candidate's glyph).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor

from studio.gui.sheet_view import ERROR, KEY, WARNING
from studio.store.project import PuzzleSummary

PUZZLE_ROLE = Qt.ItemDataRole.UserRole + 1
COLUMNS = ("Puzzle", "Layout", "Rule", "Concept", "Status", "Err.", "Warn.", "Shortcut", "People")
COLUMN_TIPS = {
    "Puzzle": "The puzzle's id: its part of the split and its number",
    "Err.": "Findings from the annotations: a foil completes a rule (the puzzle is invalid)",
    "Warn.": "Warnings from image features: a foil may complete a rule the annotations miss",
    "Shortcut": "Shortcut-prone: a baseline that does not see the whole puzzle (context-blind"
    " or partial input) chose the key in every seed with high confidence (Baselines tab)",
    "People": "People's accuracy in the set's pilots (analogy-studio pilot import): the share"
    " of answers that chose the key, and how many answers; red where people fail it",
}
LAYOUT_COL = 1


def people_text(right: int, answers: int) -> str:
    """A People cell: the share of answers that chose the key, and how many answered."""
    return f"{right / answers:.0%} ({answers})"


CONCEPT_COL, STATUS_COL, ERRORS_COL, WARNINGS_COL, SHORTCUT_COL, PEOPLE_COL = 3, 4, 5, 6, 7, 8
#: the People column where people fail the puzzle
PEOPLE_FAIL = QColor("#b42318")
#: the Shortcut column (and the board's shortcut lines for the open puzzle)
SHORTCUT = QColor("#e65100")


def flag_text(flags: Sequence[Any]) -> str:
    """The strongest flag in a few characters: ``blind 0.91``."""
    best = max(flags, key=lambda f: f.confidence)
    return f"{best.model} {best.confidence:.2f}"


def flag_lines(flags: Sequence[Any]) -> list[str]:
    """One line per flag; an answers-only probe's flag adds why it chose (its ``reason``)."""
    return [
        f"Shortcut-prone: {f.model} chose the key in {f.seeds_correct} of {f.seeds} seeds,"
        f" mean confidence {f.confidence:.2f} (job {f.job_id})"
        + (f": {f.reason}" if getattr(f, "reason", "") else "")
        for f in sorted(flags, key=lambda f: -f.confidence)
    ]


STATUS_COLOURS = {
    "draft": QColor("#555555"),
    "flagged": ERROR,
    "approved": KEY,
    "rejected": QColor("#7b1fa2"),
}
#: the roles :meth:`PuzzleTableModel.data` answers; any other is answered at once with None
_MODEL_ROLES = frozenset(
    {
        Qt.ItemDataRole.DisplayRole,
        Qt.ItemDataRole.ForegroundRole,
        Qt.ItemDataRole.TextAlignmentRole,
        Qt.ItemDataRole.ToolTipRole,
        PUZZLE_ROLE,
    }
)


class PuzzleTableModel(QAbstractTableModel):
    """Rows are puzzle summaries (no record parsed, so 10,000 rows load at once); an edited
    puzzle stays in place until the filter is applied again, so a row does not jump away
    under the curator's cursor."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: list[PuzzleSummary] = []
        self._row_of: dict[str, int] = {}
        self.shortcuts: Mapping[str, Sequence[Any]] = {}
        #: puzzle id → (people who chose the key, answers) in the set's pilots (issue 29)
        self.human: Mapping[str, tuple[int, int]] = {}
        self.people_fail: frozenset[str] = frozenset()
        self.people_split: frozenset[str] = frozenset()
        #: puzzle id → its warnings that do not count, with why (set by the board)
        self.quiet_of: Callable[[str], Sequence[tuple[Any, str]]] | None = None

    def set_puzzles(
        self, puzzles: Sequence[PuzzleSummary], flags: Mapping[str, Sequence[Any]] | None = None
    ) -> None:
        self.beginResetModel()
        self.rows = list(puzzles)
        if flags is not None:
            self.shortcuts = flags
        self._reindex()
        self.endResetModel()

    def has_flags(self) -> bool:
        return bool(self.shortcuts)

    def set_flags(self, flags: Mapping[str, Sequence[Any]]) -> None:
        self.shortcuts = flags
        if self.rows:
            last = len(self.rows) - 1
            self.dataChanged.emit(self.index(0, SHORTCUT_COL), self.index(last, SHORTCUT_COL))

    def _reindex(self) -> None:
        self._row_of = {p.id: i for i, p in enumerate(self.rows)}

    def update_puzzle(self, cp: PuzzleSummary) -> None:
        row = self._row_of.get(cp.id)
        if row is None:
            return
        self.rows[row] = cp
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))

    def row_of(self, puzzle_id: str) -> int | None:
        return self._row_of.get(puzzle_id)

    def puzzle(self, row: int) -> PuzzleSummary:
        return self.rows[row]

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return COLUMN_TIPS.get(COLUMNS[section])
        return None

    def set_human(
        self,
        human: Mapping[str, tuple[int, int]],
        fail: Sequence[str],
        split: Sequence[str] = (),
    ) -> None:
        self.human, self.people_fail = human, frozenset(fail)
        self.people_split = frozenset(split)
        if self.rows:
            last = len(self.rows) - 1
            self.dataChanged.emit(self.index(0, PEOPLE_COL), self.index(last, PEOPLE_COL))

    def _cell(self, s: PuzzleSummary, col: int) -> Any:
        if col == SHORTCUT_COL:
            flags = self.shortcuts.get(s.id)
            return flag_text(flags) if flags else ""
        if col == PEOPLE_COL:
            got = self.human.get(s.id)
            return people_text(*got) if got else ""
        return (s.id, s.layout, s.rule, s.concept, s.status, s.errors, s.warnings)[col]

    def _sort_key(self, s: PuzzleSummary, col: int) -> Any:
        """People sort by their accuracy, then by how many answered (not as text: "100% (3)"
        sorted before "33% (3)"); puzzles without answers first."""
        if col == PEOPLE_COL:
            got = self.human.get(s.id)
            return (1, got[0] / got[1], got[1]) if got else (0, 0.0, 0)
        return self._cell(s, col)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> Any:
        if role not in _MODEL_ROLES or not index.isValid():
            return None  # most roles a view asks for at every paint: answered at once
        cp = self.rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            value = self._cell(cp, col)
            if col in (ERRORS_COL, WARNINGS_COL):
                return str(value) if value else ""
            return value
        if role == PUZZLE_ROLE:
            return cp
        if role == Qt.ItemDataRole.ForegroundRole:
            if col == STATUS_COL:
                return STATUS_COLOURS.get(cp.status)
            if col == ERRORS_COL and cp.errors:
                return ERROR
            if col == WARNINGS_COL and cp.warnings:
                return WARNING
            if col == SHORTCUT_COL:
                return SHORTCUT
            if col == PEOPLE_COL and cp.id in self.people_fail:
                return PEOPLE_FAIL
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (ERRORS_COL, WARNINGS_COL):
            return int(Qt.AlignmentFlag.AlignCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [f"{cp.rule} over {cp.concept} ({cp.split}): {cp.status}"]
            if cp.errors or cp.warnings:
                lines.append(f"{cp.errors} errors, {cp.warnings} warnings")
            quiet = self.quiet_of(cp.id) if self.quiet_of is not None else ()
            if quiet:
                lines.append(
                    f"{len(quiet)} image-feature warning{'s' if len(quiet) != 1 else ''} not"
                    " counted: " + ", ".join(f"{f.concept} ({why})" for f, why in quiet)
                )
            if cp.id in self.shortcuts:
                lines.extend(flag_lines(self.shortcuts[cp.id]))
            if cp.id in self.human:
                right, n = self.human[cp.id]
                fails = (
                    " — people fail it (left out of bulk approval)"
                    if cp.id in self.people_fail
                    else ""
                )
                lines.append(f"People: {right} of {n} answers chose the key{fails}")
                if cp.id in self.people_split:
                    lines.append(
                        "People split between the key and a foil (a second defensible answer?)"
                    )
            if cp.comment:
                lines.append(f"Comment: {cp.comment}")
            if cp.author:
                lines.append(f"Last changed by {cp.author}, {cp.updated_at}")
            return "\n".join(lines)
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        self.rows.sort(
            key=lambda cp: self._sort_key(cp, column),
            reverse=order == Qt.SortOrder.DescendingOrder,
        )
        self._reindex()
        self.layoutChanged.emit()
