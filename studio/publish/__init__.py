"""Publish a curated puzzle set: the curator's output, as a benchmark folder others can load.

:func:`export_set` (in :mod:`studio.publish.export`) is the one function the CLI's
``export-set`` and the GUI's Puzzles ▸ Export benchmark… both call. No Qt here.
"""

from __future__ import annotations

from studio.publish.export import (
    STATUS_ANY,
    ExportRefused,
    ExportSummary,
    Rejected,
    export_set,
    find_set,
)

__all__ = [
    "STATUS_ANY",
    "ExportRefused",
    "ExportSummary",
    "Rejected",
    "export_set",
    "find_set",
]
