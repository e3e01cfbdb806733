"""Small widget helpers shared by the windows."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QComboBox


def refill_combo(combo: QComboBox, all_text: str, items: Sequence[str]) -> None:
    """Replace a filter combo's items (first item: ``all_text``, data ``""``), keeping the
    current choice when it is still there, without emitting change signals."""
    current = combo.currentData()
    combo.blockSignals(True)
    combo.clear()
    combo.addItem(all_text, "")
    for it in items:
        combo.addItem(it, it)
    combo.setCurrentIndex(max(0, combo.findData(current)))
    combo.blockSignals(False)
