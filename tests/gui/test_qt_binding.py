"""The Qt binding itself must survive a long session.

PySide6 6.12.0 on Python 3.11 dropped one reference to ``None`` on every call of a Python slot:
after a few thousand timer ticks or scroll events the interpreter aborted with
"Fatal Python error: none_dealloc". The pin in requirements.lock avoids it; this test fails
if a binding with that defect comes back.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QTimer


def test_python_slots_do_not_leak_references_to_none(qapp) -> None:
    calls = [0]

    def tick() -> None:
        calls[0] += 1

    timer = QTimer()
    timer.setInterval(0)
    timer.timeout.connect(tick)
    before = sys.getrefcount(None)
    timer.start()
    while calls[0] < 500:
        qapp.processEvents()
    timer.stop()
    drift = sys.getrefcount(None) - before
    # other code running in the loop moves the count by a few; a defective binding by -500
    assert drift > -100, f"None lost {-drift} references over {calls[0]} slot calls"
