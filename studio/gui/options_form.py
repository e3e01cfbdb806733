"""A form built from a family's options schema (:class:`~studio.core.family.Option`).

The Generate dialog and the Preview tab show a family's options through this one widget, so an
option defined once in the family appears in both, with its help as the tooltip and its range
on the spin box; a plugin's family gets its controls without a line of GUI code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSpinBox,
    QWidget,
)

from studio.core.family import Family, Option

#: A subset with at most this many choices is a row of check boxes; more is a checkable list.
INLINE_CHOICES = 8


class OptionsForm(QWidget):
    """One row per option of ``family`` (those with ``preview`` set, when ``preview_only``).
    ``values()`` gives every shown option's value under the generator's names; ``changed``
    fires on any edit. ``dynamic`` fills options whose choices come from the project (the
    schema's concepts); ``defaults`` overrides the family's defaults for this form."""

    changed = Signal()

    def __init__(
        self,
        family: Family,
        *,
        preview_only: bool = False,
        dynamic: Mapping[str, Sequence[str]] | None = None,
        defaults: Mapping[str, Any] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent, objectName=f"options_{family.id}")
        self.family = family
        self.layout_ = QFormLayout(self)
        self.layout_.setContentsMargins(0, 0, 0, 0)
        self._widgets: dict[str, QWidget] = {}
        self._options: dict[str, Option] = {}
        start = {**family.defaults(), **dict(family.preview if preview_only else {})}
        start.update(defaults or {})
        for o in family.options:
            if preview_only and not o.preview:
                continue
            choices = tuple((dynamic or {}).get(o.dynamic, ())) if o.dynamic else o.choices
            w = self._make(o, choices, start.get(o.name))
            w.setObjectName(f"option_{o.name}")
            w.setToolTip(o.help)
            self._widgets[o.name] = w
            self._options[o.name] = o
            if o.type == "bool":
                self.layout_.addRow("", w)
            else:
                self.layout_.addRow(o.title, w)

    # ---- widgets ---------------------------------------------------------------------------
    def _make(self, o: Option, choices: Sequence[Any], value: Any) -> QWidget:
        if o.type == "int":
            spin = QSpinBox()
            spin.setRange(int(o.minimum if o.minimum is not None else -(2**31)),
                          int(o.maximum if o.maximum is not None else 2**31 - 1))  # fmt: skip
            spin.setValue(int(value if value is not None else spin.minimum()))
            spin.valueChanged.connect(lambda _v: self.changed.emit())
            return spin
        if o.type == "float":
            dspin = QDoubleSpinBox()
            dspin.setDecimals(3)
            dspin.setSingleStep(0.05)
            dspin.setRange(o.minimum if o.minimum is not None else -1e9,
                           o.maximum if o.maximum is not None else 1e9)  # fmt: skip
            if value is None:  # "by default": shown as the special value text at the minimum
                dspin.setSpecialValueText("default")
                dspin.setValue(dspin.minimum())
            else:
                dspin.setValue(float(value))
            dspin.valueChanged.connect(lambda _v: self.changed.emit())
            return dspin
        if o.type == "bool":
            box = QCheckBox(o.title)
            box.setChecked(bool(value))
            box.toggled.connect(lambda _c: self.changed.emit())
            return box
        if o.type == "choice":
            combo = QComboBox()
            for c in choices:
                combo.addItem(str(c), c)
            combo.setCurrentIndex(max(0, combo.findData(value)))
            combo.currentIndexChanged.connect(lambda _i: self.changed.emit())
            return combo
        if o.type == "subset" and 0 < len(choices) <= INLINE_CHOICES:
            row = QWidget()
            lay = QHBoxLayout(row)
            lay.setContentsMargins(0, 0, 0, 0)
            chosen = set(value or ())
            for c in choices:
                box = QCheckBox(str(c), objectName=f"option_{o.name}_{c}")
                box.setChecked(c in chosen)
                box.toggled.connect(lambda _c: self.changed.emit())
                lay.addWidget(box)
            lay.addStretch(1)
            return row
        if o.type == "subset" and choices:
            lst = QListWidget()
            lst.setMaximumHeight(110)
            chosen = set(value or ())
            for c in choices:
                item = QListWidgetItem(str(c))
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(
                    Qt.CheckState.Checked if c in chosen else Qt.CheckState.Unchecked
                )
                lst.addItem(item)
            lst.itemChanged.connect(lambda _i: self.changed.emit())
            return lst
        edit = QLineEdit(",".join(map(str, value or ())))
        edit.setPlaceholderText("none: every one")
        edit.textChanged.connect(lambda _t: self.changed.emit())
        return edit

    # ---- values ----------------------------------------------------------------------------
    def widget(self, name: str) -> QWidget:
        return self._widgets[name]

    def names(self) -> list[str]:
        return list(self._widgets)

    def value(self, name: str) -> Any:
        o, w = self._options[name], self._widgets[name]
        if isinstance(w, QSpinBox):
            return w.value()
        if isinstance(w, QDoubleSpinBox):
            return None if w.specialValueText() and w.value() == w.minimum() else w.value()
        if isinstance(w, QCheckBox):
            return w.isChecked()
        if isinstance(w, QComboBox):
            return w.currentData()
        if isinstance(w, QListWidget):
            return tuple(
                w.item(i).text()
                for i in range(w.count())
                if w.item(i).checkState() == Qt.CheckState.Checked
            )
        if isinstance(w, QLineEdit):
            return tuple(p.strip() for p in w.text().split(",") if p.strip()) or o.default
        return tuple(b.text() for b in w.findChildren(QCheckBox) if b.isChecked())

    def values(self) -> dict[str, Any]:
        """Every shown option's value (None: the family's default applies)."""
        return {name: self.value(name) for name in self._widgets}

    def set_value(self, name: str, value: Any) -> None:
        w = self._widgets[name]
        if isinstance(w, QSpinBox | QDoubleSpinBox):
            w.setValue(value)
        elif isinstance(w, QCheckBox):
            w.setChecked(bool(value))
        elif isinstance(w, QComboBox):
            w.setCurrentIndex(max(0, w.findData(value)))
        else:
            raise TypeError(f"set_value does not handle the {name} widget")


__all__ = ["INLINE_CHOICES", "OptionsForm"]
