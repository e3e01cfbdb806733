"""Small widget helpers shared by the windows."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QComboBox
from superqt.utils import create_worker


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


class ThreadJob(QObject):
    """One piece of long work on a worker thread, for a dialog: :meth:`start`, then exactly one
    of ``succeeded(result)`` or ``failed(message)`` (a subclass may add ``cancelled`` by
    overriding :meth:`_errored`). The job lives on the GUI thread, so its signals arrive there;
    :meth:`_work` runs on the worker and only emits (it must make no QObject). :meth:`cancel` sets
    the event :meth:`_work` passes on as ``should_stop``."""

    succeeded = Signal(object)
    failed = Signal(str)

    def __init__(self, request: Mapping[str, Any], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.request = dict(request)
        self._stop = threading.Event()
        self.worker: Any = None

    def cancel(self) -> None:
        self._stop.set()

    def start(self) -> None:
        self.worker = create_worker(
            self._work, _start_thread=False, _connect={"errored": self._errored}
        )
        self.worker.returned.connect(self.succeeded.emit)
        self.worker.start()

    def _errored(self, e: BaseException) -> None:
        self.failed.emit(str(e) or type(e).__name__)

    def _work(self) -> Any:
        raise NotImplementedError
